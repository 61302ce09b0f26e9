//! Step 4: the rolling update — which bindings are bound to (or moved
//! onto) the latest resource snapshot, and which unscheduled ones go, within
//! `maxUnavailable` and `maxSurge`.

use fleet_api::binding::{self, STATE_BOUND, STATE_SCHEDULED, STATE_UNSCHEDULED};
use fleet_api::snapshot as snapshot_api;
use fleet_placement::rollout::{self as rollout_plan, Readiness, RolloutAction, RolloutBinding, RolloutInput};
use fleet_placement::snapshot;
use fleet_placement::works::PARENT_RESOURCE_INDEX_LABEL;
use fleet_statemachine::Op;

use fleet_api::Object;

use super::objects::{check, delete};
use super::render::{recorded_lists, records, Rendered};
use super::scheduling::Scheduled;
use super::works::{bound_group, BindingWorks};
use super::{Step, View};
use crate::controllers::events::EventNote;

/// The rollout's decision for this pass.
pub struct Rollout {
    pub step: Option<Step>,
    /// Unix second when time alone may let the rollout go on.
    pub recheck_at: Option<i64>,
}

/// How far a binding's rollout got. A Bound binding whose Works are not
/// yet what rendering says is in progress (an override change counts). One
/// whose rendering failed keeps its previous Works but counts as failed
/// (OV-7), as KubeFleet counts it: it holds the rollout of the others back
/// within `maxUnavailable`, so a broken override stops at the first
/// clusters it reaches. A binding with nothing rendered for it (an
/// Unscheduled one, or one whose snapshot the revision limit removed) is
/// judged by the Works it still has: moving or deleting it spends the
/// budget only when it is ready, as in KubeFleet.
pub fn binding_readiness(view: &View, b: &Object, works: &BindingWorks, rendered: &Rendered) -> Readiness {
    let spec = binding::spec_of(b);
    if spec.state == STATE_SCHEDULED {
        return Readiness::InProgress;
    }
    let stored = works.get(&b.metadata.name).map(Vec::as_slice).unwrap_or_default();
    let rendering = if spec.state == STATE_UNSCHEDULED { None } else { rendered.bound.get(&b.metadata.name) };
    match rendering {
        Some(r) if r.works.is_none() => Readiness::Failed,
        Some(r) if !r.in_sync => Readiness::InProgress,
        Some(r) => match bound_group(view, &spec) {
            Some((index, _)) => rollout_plan::readiness(index, stored, r.works.as_ref().map_or(1, Vec::len)),
            None => Readiness::InProgress,
        },
        None => by_stored_works(view, &spec, stored),
    }
}

/// The readiness of a binding's stored Works, for the index they were
/// made for (from its snapshot, or their own label once the snapshot is
/// gone). With no Works nothing is placed there, so taking it down takes
/// nothing down: it counts as failed.
fn by_stored_works(view: &View, spec: &binding::BindingSpec, stored: &[Object]) -> Readiness {
    let index = bound_group(view, spec).map(|(index, _)| index).or_else(|| {
        stored.iter().filter_map(|w| w.metadata.labels.get(PARENT_RESOURCE_INDEX_LABEL)?.parse().ok()).max()
    });
    match index {
        Some(index) => rollout_plan::readiness(index, stored, 1),
        None => Readiness::Failed,
    }
}

/// Plans one rollout pass.
pub fn plan(view: &View, scheduled: &Scheduled, works: &BindingWorks, rendered: &Rendered, unix_now: i64) -> Rollout {
    let Some(latest_index) = snapshot::latest_resource_index(&view.resource_snapshots) else {
        return Rollout { step: None, recheck_at: None };
    };
    let latest = snapshot_api::resource_snapshot_name(&view.placement.metadata.name, latest_index);
    let bindings: Vec<RolloutBinding> = view
        .bindings
        .iter()
        .map(|b| {
            let spec = binding::spec_of(b);
            let readiness = binding_readiness(view, b, works, rendered);
            let overrides_current = rendered.applicable.get(&b.metadata.name).is_none_or(|a| records(&spec, a));
            RolloutBinding {
                name: b.metadata.name.clone(),
                cluster: spec.target_cluster,
                state: spec.state,
                resource_snapshot: spec.resource_snapshot_name,
                readiness,
                overrides_current,
            }
        })
        .collect();
    let strategy = view.spec.strategy.clone().unwrap_or_default();
    let plan = rollout_plan::plan_rollout(&RolloutInput {
        policy: &scheduled.policy,
        number_of_clusters: scheduled.number_of_clusters,
        strategy: &strategy,
        latest_resource_snapshot: &latest,
        bindings: &bindings,
        now: unix_now,
    });
    let apply_strategy = strategy.apply_strategy.as_ref().map(fleet_api::typed::encode);
    if plan.actions.is_empty() {
        let step = apply_strategy_step(view, &apply_strategy);
        return Rollout { step, recheck_at: plan.requeue_at };
    }
    let mut ops = vec![check(&view.placement)];
    let mut events = Vec::new();
    let by_name = view.bindings_by_name();
    for action in plan.actions {
        let name = match &action {
            RolloutAction::Bind { binding, .. }
            | RolloutAction::Update { binding, .. }
            | RolloutAction::Delete { binding } => binding.clone(),
        };
        let Some(&object) = by_name.get(name.as_str()) else { continue };
        let mut spec = binding::spec_of(object);
        match action {
            RolloutAction::Bind { resource_snapshot, .. } | RolloutAction::Update { resource_snapshot, .. } => {
                events.push(EventNote::normal(
                    "ClusterRolloutStarted",
                    format!("rolling out {resource_snapshot} to cluster {}", spec.target_cluster),
                ));
                spec.state = STATE_BOUND.to_string();
                spec.resource_snapshot_name = resource_snapshot;
                spec.apply_strategy = apply_strategy.clone();
                if let Some(applicable) = rendered.applicable.get(&name) {
                    (spec.cluster_resource_override_snapshots, spec.resource_override_snapshots) =
                        recorded_lists(applicable);
                }
                let mut updated = object.clone();
                binding::set_spec(&mut updated, &spec);
                ops.push(Op::Update { object: updated });
            }
            RolloutAction::Delete { .. } => {
                events.push(EventNote::normal(
                    "ClusterRemoved",
                    format!("removing the resources from cluster {}", spec.target_cluster),
                ));
                ops.push(delete(object));
            }
        }
    }
    Rollout { step: Some(Step { ops, events, placement: view.placement.clone() }), recheck_at: plan.requeue_at }
}

/// Bound bindings whose apply strategy differs from the placement's get the
/// new one (their Works follow in the Work step). The resources do not
/// change, so this is not counted against `maxUnavailable`. Not for
/// External placements: their bindings carry the apply strategy their
/// staged update run froze (a changed one abandons the run, SU-11).
fn apply_strategy_step(view: &View, apply_strategy: &Option<serde_json::Value>) -> Option<Step> {
    if view.is_external() {
        return None;
    }
    let mut ops = Vec::new();
    for b in &view.bindings {
        let mut spec = binding::spec_of(b);
        if spec.state != STATE_BOUND || spec.apply_strategy == *apply_strategy {
            continue;
        }
        spec.apply_strategy = apply_strategy.clone();
        let mut updated = b.clone();
        binding::set_spec(&mut updated, &spec);
        ops.push(Op::Update { object: updated });
    }
    if ops.is_empty() {
        return None;
    }
    ops.push(check(&view.placement));
    let events = vec![EventNote::normal("ApplyStrategyUpdated", "the apply strategy changed: updating the bindings")];
    Some(Step { ops, events, placement: view.placement.clone() })
}
