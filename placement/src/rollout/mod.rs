//! The rolling update planner (docs/spec/rollout.md "Rolling update"): from a
//! placement's bindings and how ready each is, which bindings to bind to the
//! latest resource snapshot, move to it, or delete in this pass.
//!
//! The rollout controller reads the placement, its latest resource snapshot,
//! its bindings and their Works, computes each binding's [`Readiness`] with
//! [`readiness`], calls [`plan_rollout`] and writes the [`RolloutAction`]s;
//! it requeues the placement at [`RolloutPlan::requeue_at`].
//!
//! Counting, for N = [`target_number`]:
//! - *ready*: Bound or Unscheduled bindings whose readiness is
//!   [`Readiness::Ready`], or [`Readiness::NotTrackable`] whose
//!   `unavailablePeriodSeconds` has passed;
//! - *failed*: [`Readiness::Failed`] (not applied),
//!   [`Readiness::Unavailable`] (applied, Available False) or
//!   [`Readiness::Applying`] (its Works' verdict for their current
//!   generation not reported yet), as KubeFleet counts a binding with a
//!   False condition, which its work generator also writes while a Work is
//!   being applied: moving it takes nothing down, and it does not hold
//!   back new clusters;
//! - *in progress*: Bound or Unscheduled bindings that are neither ready nor
//!   failed (their Works not yet those of their snapshot);
//! - Scheduled bindings count as neither (they have no Work yet).
//!
//! Decisions beyond the spec's wording:
//! - `maxUnavailable` is at least 1 whenever N > 0, so a rollout always makes
//!   progress (KubeFleet's rule); percentages round up, so this matters only
//!   for a written `0`;
//! - as in KubeFleet, every Unscheduled binding to delete and every stale
//!   Bound binding to move (but failed ones) spends `maxToRemove`, whether
//!   ready or still in progress: deletes first, then updates, each by cluster name. So
//!   the plan never takes the ready count below `N − maxUnavailable`, and a
//!   binding whose Works are not yet rewritten (or untrackable within its
//!   `unavailablePeriodSeconds`) is not moved again before the ready ones
//!   allow it;
//! - `maxToRemove = ready − (min(N, active) − maxUnavailable)`, active being
//!   the Scheduled and Bound bindings: while the scheduler cannot find N
//!   clusters (PickN unfulfilled, PickFixed naming absent clusters) the
//!   rollout does not insist on N ready ones, so ready Unscheduled bindings
//!   are not kept forever for clusters that will never come; when N are
//!   chosen this is the spec's formula;
//! - failed stale Bound bindings are always updated (rule 1), and failed
//!   Unscheduled ones deleted, without spending the budget: they take
//!   nothing down, and a budget that may never come (nothing ready) would
//!   keep them forever;
//! - both budgets are computed from the counts before this pass's actions
//!   (a deleted Unscheduled binding still counts until it is gone), which
//!   is the conservative reading;
//! - actions come in this order: failed updates, failed deletes, deletes,
//!   updates, binds;
//!   within each, by cluster name then binding name;
//! - a Bound binding is stale when it is bound to an older snapshot *or*
//!   records other override snapshots than those that apply now (OV-8);
//!   the Update action then records both the latest snapshot and the
//!   current overrides;
//! - `strategy.type: External` plans nothing (staged update runs roll out).

mod readiness;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_properties;
#[cfg(test)]
mod tests_readiness;

use fleet_api::binding::{STATE_BOUND, STATE_SCHEDULED, STATE_UNSCHEDULED};
use fleet_api::placement::{
    IntOrPercent, PlacementPolicy, RollingUpdateConfig, RolloutStrategy, DEFAULT_MAX_SURGE, DEFAULT_MAX_UNAVAILABLE,
    DEFAULT_UNAVAILABLE_PERIOD_SECONDS, EXTERNAL, PICK_FIXED, PICK_N,
};

pub use crate::time::unix_seconds;
pub use readiness::{readiness, Readiness};

/// One binding as the rollout planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutBinding {
    /// The binding object's name.
    pub name: String,
    /// `spec.targetCluster`.
    pub cluster: String,
    /// `Scheduled`, `Bound` or `Unscheduled`.
    pub state: String,
    /// `spec.resourceSnapshotName` (first snapshot name of the bound group),
    /// `""` if never bound.
    pub resource_snapshot: String,
    /// How far its Works got (ignored for Scheduled bindings).
    pub readiness: Readiness,
    /// Whether the override snapshots it records are the ones that apply
    /// now (OV-8: a change rolls out like a resource change).
    pub overrides_current: bool,
}

/// Everything one rollout pass needs.
#[derive(Debug, Clone, Copy)]
pub struct RolloutInput<'a> {
    /// The placement's policy, defaulted.
    pub policy: &'a PlacementPolicy,
    /// PickN's N (the policy snapshot's annotation wins over the policy).
    pub number_of_clusters: Option<i64>,
    /// The placement's strategy, defaulted.
    pub strategy: &'a RolloutStrategy,
    /// First snapshot name of the latest resource snapshot group.
    pub latest_resource_snapshot: &'a str,
    /// Every binding of the placement (any order).
    pub bindings: &'a [RolloutBinding],
    /// Unix seconds.
    pub now: i64,
}

/// One change to a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RolloutAction {
    /// A Scheduled binding becomes Bound to `resource_snapshot`.
    Bind {
        /// The binding's name.
        binding: String,
        /// The latest group's first snapshot name.
        resource_snapshot: String,
    },
    /// A Bound binding moves to `resource_snapshot`.
    Update {
        /// The binding's name.
        binding: String,
        /// The latest group's first snapshot name.
        resource_snapshot: String,
    },
    /// An Unscheduled binding is deleted (its Works go with it).
    Delete {
        /// The binding's name.
        binding: String,
    },
}

/// The result of one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutPlan {
    /// What to write, in order.
    pub actions: Vec<RolloutAction>,
    /// Earliest moment (unix s) something may change by time alone (an
    /// unavailable period ending), if any.
    pub requeue_at: Option<i64>,
}

/// The numbers a pass works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RolloutLimits {
    /// N, the base of the percentages.
    pub target: usize,
    /// `maxUnavailable` scaled on N (≥ 1 when N > 0).
    pub max_unavailable: usize,
    /// `maxSurge` scaled on N.
    pub max_surge: usize,
    /// `unavailablePeriodSeconds`.
    pub unavailable_period_seconds: i64,
    /// The ready count a pass must not go below by its own actions:
    /// `min(N, active) − maxUnavailable` (≥ 0).
    pub min_available: usize,
}

/// N: PickN → `numberOfClusters` (`number_of_clusters` wins over the
/// policy's; negative is 0), PickFixed → the number of `clusterNames`,
/// PickAll → `active_bindings` (Scheduled + Bound).
pub fn target_number(policy: &PlacementPolicy, number_of_clusters: Option<i64>, active_bindings: usize) -> usize {
    match policy.placement_type() {
        PICK_N => {
            let n = number_of_clusters.or(policy.number_of_clusters).unwrap_or(0);
            usize::try_from(n).unwrap_or(0)
        }
        PICK_FIXED => policy.cluster_names.len(),
        _ => active_bindings,
    }
}

/// A written `IntOrString`, or `default` when absent or unreadable.
fn int_or_percent(value: Option<&fleet_api::placement::IntOrString>, default: IntOrPercent) -> IntOrPercent {
    value.and_then(|v| IntOrPercent::from_int_or_string(v).ok()).unwrap_or(default)
}

/// The limits of a rolling update on `target` clusters, `active` of which
/// are chosen (Scheduled or Bound) now.
pub fn rollout_limits(config: &RollingUpdateConfig, target: usize, active: usize) -> RolloutLimits {
    let unavailable = int_or_percent(config.max_unavailable.as_ref(), DEFAULT_MAX_UNAVAILABLE).scaled(target);
    let max_unavailable = if target > 0 { unavailable.max(1) } else { unavailable };
    let max_surge = int_or_percent(config.max_surge.as_ref(), DEFAULT_MAX_SURGE).scaled(target);
    let unavailable_period_seconds = config.unavailable_period_seconds.unwrap_or(DEFAULT_UNAVAILABLE_PERIOD_SECONDS);
    let min_available = target.min(active).saturating_sub(max_unavailable);
    RolloutLimits { target, max_unavailable, max_surge, unavailable_period_seconds, min_available }
}

/// The limits of `input`'s pass.
pub fn limits_of(input: &RolloutInput) -> RolloutLimits {
    let active = input.bindings.iter().filter(|b| b.state == STATE_SCHEDULED || b.state == STATE_BOUND).count();
    let target = target_number(input.policy, input.number_of_clusters, active);
    rollout_limits(&input.strategy.rolling_update.clone().unwrap_or_default(), target, active)
}

/// One pass of the rolling update; see the module documentation for the
/// rules and how bindings are counted.
pub fn plan_rollout(input: &RolloutInput) -> RolloutPlan {
    if input.strategy.type_.as_deref() == Some(EXTERNAL) {
        return RolloutPlan::default();
    }
    let limits = limits_of(input);
    let latest = input.latest_resource_snapshot;
    let mut sorted: Vec<&RolloutBinding> = input.bindings.iter().collect();
    sorted.sort_by(|a, b| a.cluster.cmp(&b.cluster).then_with(|| a.name.cmp(&b.name)));

    let (mut ready, mut in_progress) = (0usize, 0usize);
    let mut requeue_at: Option<i64> = None;
    let (mut failed_updates, mut failed_deletes) = (Vec::new(), Vec::new());
    let (mut deletes, mut updates, mut to_bind) = (Vec::new(), Vec::new(), Vec::new());
    for b in sorted {
        if b.state == STATE_SCHEDULED {
            to_bind.push(b);
            continue;
        }
        if b.state != STATE_BOUND && b.state != STATE_UNSCHEDULED {
            continue;
        }
        let is_ready = b.readiness.is_ready(input.now, limits.unavailable_period_seconds);
        let failed = matches!(b.readiness, Readiness::Failed | Readiness::Unavailable | Readiness::Applying);
        if is_ready {
            ready += 1;
        } else if !failed {
            in_progress += 1;
        }
        if let (Readiness::NotTrackable { available_since }, false) = (b.readiness, is_ready) {
            let at = available_since.saturating_add(limits.unavailable_period_seconds);
            requeue_at = Some(requeue_at.map_or(at, |r| r.min(at)));
        }
        match (b.state == STATE_UNSCHEDULED, b.resource_snapshot == latest && b.overrides_current, failed) {
            (true, _, true) => failed_deletes.push(b),
            (true, _, false) => deletes.push(b),
            (false, true, _) => {}
            (false, false, true) => failed_updates.push(b),
            (false, false, false) => updates.push(b),
        }
    }

    let mut max_to_remove = ready.saturating_sub(limits.min_available);
    let max_to_add = (limits.target + limits.max_surge).saturating_sub(ready + in_progress);

    let update =
        |b: &RolloutBinding| RolloutAction::Update { binding: b.name.clone(), resource_snapshot: latest.into() };
    let delete = |b: &RolloutBinding| RolloutAction::Delete { binding: b.name.clone() };
    let mut actions: Vec<RolloutAction> = failed_updates.into_iter().map(update).collect();
    actions.extend(failed_deletes.into_iter().map(delete));
    let deletes: Vec<_> = deletes.into_iter().take(max_to_remove).collect();
    max_to_remove -= deletes.len();
    actions.extend(deletes.into_iter().map(delete));
    actions.extend(updates.into_iter().take(max_to_remove).map(update));
    actions.extend(
        to_bind
            .into_iter()
            .take(max_to_add)
            .map(|b| RolloutAction::Bind { binding: b.name.clone(), resource_snapshot: latest.into() }),
    );
    RolloutPlan { actions, requeue_at }
}
