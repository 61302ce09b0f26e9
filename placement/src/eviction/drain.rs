//! What `fleetctl drain CLUSTER` and `fleetctl uncordon CLUSTER` write, so
//! the CLI only reads, proposes and waits: drain taints the cluster
//! (`NoSchedule`, so the scheduler does not pick it again, EV-7) and
//! creates one eviction per ClusterResourcePlacement on it; uncordon
//! removes the taint.
//!
//! Decisions beyond the spec's wording:
//! - the taint is KubeFleet's cordon taint (`cordon-key=cordon-value:NoSchedule`),
//!   so tolerations written for KubeFleet's drain keep working;
//! - eviction names are deterministic, `drain-eviction-<placement>-<cluster>`
//!   (a hash when that is longer than a name may be), so a drain run twice
//!   finds its own evictions: a pending one is waited for, a final one is
//!   deleted and created again (EV-1: that is how an eviction is retried);
//! - bindings of every state count (as KubeFleet's drain), except those
//!   being deleted; PickFixed placements and placements being deleted are
//!   reported as skipped, not evicted (their evictions would be refused).

use std::collections::BTreeSet;

use fleet_api::binding::{spec_of as binding_spec_of, CLUSTER_RESOURCE_BINDING};
use fleet_api::conditions::find;
use fleet_api::eviction::{eviction_status_of, EvictionSpec, CLUSTER_RESOURCE_PLACEMENT_EVICTION, EXECUTED, VALID};
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::Taint;
use fleet_api::placement::{spec_of as placement_spec_of, CLUSTER_RESOURCE_PLACEMENT, PICK_FIXED};
use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::typed::encode;
use fleet_api::{Object, ObjectMeta};
use sha2::{Digest, Sha256};

/// Key of the taint drain adds.
pub const CORDON_TAINT_KEY: &str = "cordon-key";
/// Value of the taint drain adds.
pub const CORDON_TAINT_VALUE: &str = "cordon-value";
/// Longest object name.
const MAX_NAME: usize = 253;

/// The taint drain adds and uncordon removes.
pub fn cordon_taint() -> Taint {
    Taint::new(CORDON_TAINT_KEY, CORDON_TAINT_VALUE, "NoSchedule")
}

/// `taints` with the cordon taint added; `None` when it is there already.
pub fn cordoned(taints: &[Taint]) -> Option<Vec<Taint>> {
    let taint = cordon_taint();
    if taints.iter().any(|t| t.same_as(&taint)) {
        return None;
    }
    let mut out = taints.to_vec();
    out.push(taint);
    Some(out)
}

/// `taints` without the cordon taint; `None` when it is not there.
pub fn uncordoned(taints: &[Taint]) -> Option<Vec<Taint>> {
    let taint = cordon_taint();
    if !taints.iter().any(|t| t.same_as(&taint)) {
        return None;
    }
    Some(taints.iter().filter(|t| !t.same_as(&taint)).cloned().collect())
}

/// The name of the eviction drain creates for `placement` on `cluster`.
pub fn drain_eviction_name(placement: &str, cluster: &str) -> String {
    let name = format!("drain-eviction-{placement}-{cluster}");
    if name.len() <= MAX_NAME {
        return name;
    }
    let digest = Sha256::digest(format!("{placement}/{cluster}").as_bytes());
    format!("drain-eviction-{}", &hex::encode(digest)[..16])
}

/// The eviction object drain creates.
pub fn drain_eviction(placement: &str, cluster: &str) -> Object {
    let spec = EvictionSpec { placement_name: placement.to_string(), cluster_name: cluster.to_string() };
    let mut rest = serde_json::Map::new();
    rest.insert("spec".into(), encode(&spec));
    Object {
        api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"),
        kind: CLUSTER_RESOURCE_PLACEMENT_EVICTION.to_string(),
        metadata: ObjectMeta { name: drain_eviction_name(placement, cluster), ..Default::default() },
        rest,
    }
}

/// What one `fleetctl drain` writes, in this order: `taints` first (EV-7:
/// taint, then evict, or the scheduler may pick the cluster again), then
/// the deletions of `delete_first`, then the evictions of `create`; then
/// wait for `waiting` and the created ones ([`drain_outcome`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DrainPlan {
    /// The cluster's new taints, when the cordon taint is missing.
    pub taints: Option<Vec<Taint>>,
    /// Final evictions of drain's names, to delete before creating again.
    pub delete_first: Vec<String>,
    /// Evictions to create.
    pub create: Vec<Object>,
    /// Drain's evictions still being evaluated: wait for them.
    pub waiting: Vec<String>,
    /// Placements on the cluster that are not evicted, and why.
    pub skipped: Vec<(String, String)>,
}

/// Plans a drain of `cluster` (its current `taints`) from the
/// ClusterResourcePlacements, ClusterResourceBindings and evictions read.
pub fn plan_drain(
    cluster: &str,
    taints: &[Taint],
    placements: &[Object],
    bindings: &[Object],
    evictions: &[Object],
) -> DrainPlan {
    let mut plan = DrainPlan { taints: cordoned(taints), ..Default::default() };
    let on_cluster: BTreeSet<String> = bindings
        .iter()
        .filter(|b| b.kind == CLUSTER_RESOURCE_BINDING && b.metadata.deletion_timestamp.is_none())
        .filter(|b| binding_spec_of(b).target_cluster == cluster)
        .filter_map(|b| b.metadata.labels.get(PARENT_PLACEMENT_LABEL).cloned())
        .collect();
    for name in on_cluster {
        let placement = placements.iter().find(|p| p.kind == CLUSTER_RESOURCE_PLACEMENT && p.metadata.name == name);
        let Some(placement) = placement else {
            plan.skipped.push((name, "the placement is not found".into()));
            continue;
        };
        if placement.metadata.deletion_timestamp.is_some() {
            plan.skipped.push((name, "the placement is being deleted".into()));
            continue;
        }
        if placement_spec_of(placement).policy.unwrap_or_default().placement_type() == PICK_FIXED {
            let why = "PickFixed placements cannot be evicted: remove the cluster from its clusterNames";
            plan.skipped.push((name, why.into()));
            continue;
        }
        let eviction = drain_eviction(&name, cluster);
        match evictions.iter().find(|e| e.metadata.name == eviction.metadata.name) {
            Some(existing) if !eviction_status_of(existing).is_final() => plan.waiting.push(eviction.metadata.name),
            Some(_) => {
                plan.delete_first.push(eviction.metadata.name.clone());
                plan.create.push(eviction);
            }
            None => plan.create.push(eviction),
        }
    }
    plan
}

/// Where one of drain's evictions stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrainOutcome {
    /// Not evaluated yet.
    Pending,
    /// Executed: the placement leaves the cluster.
    Executed,
    /// Valid but blocked (the message says why, e.g. the budget).
    Blocked(String),
    /// Invalid (the message says why).
    Invalid(String),
}

/// The outcome of a drain eviction, from its status.
pub fn drain_outcome(eviction: &Object) -> DrainOutcome {
    let status = eviction_status_of(eviction);
    if let Some(valid) = find(&status.conditions, VALID).filter(|c| c.status == "False") {
        return DrainOutcome::Invalid(valid.message.clone());
    }
    match find(&status.conditions, EXECUTED) {
        Some(c) if c.is_true() => DrainOutcome::Executed,
        Some(c) => DrainOutcome::Blocked(c.message.clone()),
        None => DrainOutcome::Pending,
    }
}
