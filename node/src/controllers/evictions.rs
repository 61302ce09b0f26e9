//! The eviction controller (docs/spec/eviction.md): ClusterResourcePlacementEvictions
//! and (namespaced) ResourcePlacementEvictions are judged one at a time,
//! oldest first across both kinds (EV-2), each in one command —
//! its `Valid`/`Executed` status and, when it executes, the deletion of
//! the cluster's binding — carrying a check of the placement's spec, its
//! latest policy snapshot, its other bindings and its budget, so two evictions
//! never spend the same budget and a judgement on a stale view is refused
//! whole. Every evaluation ends final (EV-1), so an eviction is never
//! judged twice; a final one is never read again.
//!
//! The evictions share one queue key ([`evictions_key`]): the work queue
//! never hands a key to two workers at once, which makes the evaluation
//! serial across the whole hub.

use fleet_api::eviction::{
    budget_kind_for, budget_spec_of, eviction_spec_of, eviction_status_of, is_namespaced_kind, placement_kind_for,
    set_eviction_status, CLUSTER_RESOURCE_PLACEMENT_EVICTION, RESOURCE_PLACEMENT_EVICTION,
};
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::snapshot::number_of_clusters;
use fleet_api::ObjectKey;
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::eviction::serial::pending_in_order;
use fleet_placement::eviction::{evaluate, EvictionBinding, EvictionInput, EvictionOutcome, EvictionPlacement};
use fleet_placement::overrides::OverrideIndex;
use fleet_placement::snapshot::latest_policy_snapshot;
use fleet_statemachine::{ListQuery, Op, Store};

use super::events::EventNote;
use super::placement::objects::{check, check_spec, delete};
use super::placement::{Children, Next, Step};
use super::ControllerError;

/// The one queue key of every eviction (kind of an eviction, no name).
pub fn evictions_key() -> ObjectKey {
    ObjectKey::new(FLEET_PLACEMENT_GROUP, CLUSTER_RESOURCE_PLACEMENT_EVICTION, "", "")
}

/// Whether `key` is [`evictions_key`].
pub fn is_evictions_key(key: &ObjectKey) -> bool {
    *key == evictions_key()
}

/// The next step: the judgement of the oldest pending eviction, if any.
pub fn next_step(
    store: &Store,
    clusters: &[ClusterInfo],
    overrides: &OverrideIndex,
    now: &str,
) -> Result<Next, ControllerError> {
    let mut evictions = Vec::new();
    for kind in [CLUSTER_RESOURCE_PLACEMENT_EVICTION, RESOURCE_PLACEMENT_EVICTION] {
        let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: kind.into(), ..Default::default() };
        evictions.extend(store.list(&query)?.0);
    }
    let Some(eviction) = pending_in_order(&evictions).into_iter().next() else {
        return Ok(Next::Done { recheck_after: None });
    };
    let spec = eviction_spec_of(eviction);
    // A ResourcePlacementEviction names a ResourcePlacement of its own
    // namespace, guarded by the ResourcePlacementDisruptionBudget there.
    let namespaced = is_namespaced_kind(&eviction.kind);
    let namespace = if namespaced { eviction.metadata.namespace.as_deref().unwrap_or("") } else { "" };
    let kind = &eviction.kind;
    let placement_key =
        ObjectKey::new(FLEET_PLACEMENT_GROUP, placement_kind_for(kind), namespace, &spec.placement_name);
    let children = match store.get(&placement_key)?.0 {
        Some(placement) => Some(Children::read(store, clusters, overrides, placement)?),
        None => None,
    };
    let budget_key = ObjectKey::new(FLEET_PLACEMENT_GROUP, budget_kind_for(kind), namespace, &spec.placement_name);
    let budget = store.get(&budget_key)?.0;
    let latest_policy = children.as_ref().and_then(|c| latest_policy_snapshot(&c.view.policy_snapshots));
    let placement =
        children.as_ref().map(|c| EvictionPlacement::of(&c.view.placement, latest_policy.and_then(number_of_clusters)));
    let bindings: Vec<EvictionBinding> = children
        .as_ref()
        .map(|c| c.view.bindings.iter().map(|b| EvictionBinding::of(b, c.readiness_of(&b.metadata.name))).collect())
        .unwrap_or_default();
    let budget_spec = budget.as_ref().map(budget_spec_of);
    let outcome = evaluate(&EvictionInput {
        spec: &spec,
        generation: eviction.metadata.generation,
        placement: placement.as_ref(),
        bindings: &bindings,
        budget: budget_spec.as_ref(),
        namespaced,
    });

    let mut updated = eviction.clone();
    set_eviction_status(&mut updated, &outcome.status(&eviction_status_of(eviction), now));
    let mut ops = vec![Op::UpdateStatus { object: updated }];
    if let Some(children) = &children {
        ops.push(check_spec(&children.view.placement));
        ops.extend(latest_policy.map(check));
        for b in &children.view.bindings {
            ops.push(match &outcome.delete_binding {
                Some(name) if *name == b.metadata.name => delete(b),
                _ => check(b),
            });
        }
    }
    ops.extend(budget.as_ref().map(check));
    let events = vec![event_of(&outcome, &spec.cluster_name)];
    Ok(Next::Write(Box::new(Step { ops, events, placement: eviction.clone() })))
}

/// What is recorded about the eviction.
fn event_of(outcome: &EvictionOutcome, cluster: &str) -> EventNote {
    match &outcome.executed {
        None => EventNote::warning("EvictionInvalid", outcome.valid.message.clone()),
        Some(c) if c.is_true() => EventNote::normal("EvictionExecuted", format!("cluster {cluster}: {}", c.message)),
        Some(c) => EventNote::warning("EvictionBlocked", format!("cluster {cluster}: {}", c.message)),
    }
}

#[cfg(test)]
mod tests;
