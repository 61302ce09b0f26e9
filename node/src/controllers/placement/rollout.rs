//! Step 4: the rolling update — which bindings are bound to (or moved
//! onto) the latest resource snapshot, and which unscheduled ones go, within
//! `maxUnavailable` and `maxSurge`.

use fleet_api::binding::{self, STATE_BOUND, STATE_SCHEDULED};
use fleet_api::snapshot as snapshot_api;
use fleet_placement::rollout::{self as rollout_plan, Readiness, RolloutAction, RolloutBinding, RolloutInput};
use fleet_placement::snapshot;
use fleet_statemachine::Op;

use super::objects::{check, delete};
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

/// Plans one rollout pass.
pub fn plan(view: &View, scheduled: &Scheduled, works: &BindingWorks, unix_now: i64) -> Rollout {
    let Some(latest_index) = snapshot::latest_resource_index(&view.resource_snapshots) else {
        return Rollout { step: None, recheck_at: None };
    };
    let latest = snapshot_api::resource_snapshot_name(&view.placement.metadata.name, latest_index);
    let bindings: Vec<RolloutBinding> = view
        .bindings
        .iter()
        .map(|b| {
            let spec = binding::spec_of(b);
            let readiness = if spec.state == STATE_SCHEDULED {
                Readiness::InProgress
            } else {
                match bound_group(view, &spec) {
                    Some((index, group)) => rollout_plan::readiness(
                        index,
                        works.get(&b.metadata.name).map(Vec::as_slice).unwrap_or_default(),
                        group.len(),
                    ),
                    None => Readiness::InProgress,
                }
            };
            RolloutBinding {
                name: b.metadata.name.clone(),
                cluster: spec.target_cluster,
                state: spec.state,
                resource_snapshot: spec.resource_snapshot_name,
                readiness,
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
    for action in plan.actions {
        let name = match &action {
            RolloutAction::Bind { binding, .. }
            | RolloutAction::Update { binding, .. }
            | RolloutAction::Delete { binding } => binding.clone(),
        };
        let Some(object) = view.bindings.iter().find(|b| b.metadata.name == name) else { continue };
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
/// change, so this is not counted against `maxUnavailable`.
fn apply_strategy_step(view: &View, apply_strategy: &Option<serde_json::Value>) -> Option<Step> {
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
