//! ManifestWorkReplicaSet rollouts (docs/spec/ocm.md): over one placement's
//! decided clusters, which get the current template now, and whether the
//! rollout is done. Pure: every clock reading is passed in, and every time
//! a decision depends on is read from stored objects (the ManifestWork's
//! rollout start annotation and its conditions' transition times), so a new
//! leader continues where the old one stopped.
//!
//! A cluster's state comes from its ManifestWork ([`ClusterState::of`]):
//! - `ToApply`: no ManifestWork, or one with an older template;
//! - `Progressing`: the current template is not yet applied and available
//!   at the ManifestWork's generation — `TimedOut` once it has been so for
//!   longer than `progressDeadline` since the rollout started there;
//! - `Failed`: `Degraded`, or `Applied` False, at the current generation;
//! - `Soaking` then `Succeeded`: applied and available, and `minSuccessTime`
//!   passed since the later of the two conditions' transitions.
//!
//! The plan ([`plan`]), after the mandatory decision groups (all their
//! clusters at once; every one must succeed, no failure tolerated):
//! - `All`: every cluster at once;
//! - `Progressive`: clusters in decision-group then name order, at most
//!   `maxConcurrency` in flight (progressing or soaking; default: the
//!   largest decision group);
//! - `ProgressivePerGroup`: one decision group after another, the next
//!   starting when every cluster of the current one succeeded or failed.
//!
//! Failed and timed-out clusters count as failures; once more than
//! `maxFailures` (a count, or a percentage of the clusters rounded up)
//! failed, no further cluster is started.

use fleet_api::conditions::{find, Condition};
use fleet_api::ocm::manifestwork::{
    self, CONDITION_APPLIED, CONDITION_AVAILABLE, CONDITION_DEGRADED, CONDITION_PROGRESSING,
};

use fleet_api::ocm::replicaset::{
    ManifestWorkReplicaSetSummary, RolloutConfig, RolloutStrategy, ROLLOUT_ALL, ROLLOUT_PROGRESSIVE_PER_GROUP,
};
use fleet_api::placement::IntOrPercent;
use fleet_api::Object;

use crate::time::unix_seconds;

/// Annotation on a ManifestWork: when the rollout of its current template
/// started on its cluster (RFC 3339, the proposer's clock).
pub const ROLLOUT_STARTED_ANNOTATION: &str = "ocm.kubernetes-fleet.io/rollout-started";

/// Where one cluster stands in the rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    /// Needs the current template.
    ToApply,
    /// Has it, not yet applied and available (since the given second).
    Progressing { since: i64 },
    /// Progressing for longer than the deadline.
    TimedOut,
    /// Failed to apply.
    Failed,
    /// Applied and available; waits until the given second (minSuccessTime).
    Soaking { until: i64 },
    /// Done.
    Succeeded,
}

impl ClusterState {
    /// The state of a cluster whose ManifestWork is `work` (if any) and
    /// whose spec should be `template`, at `now` (Unix seconds).
    pub fn of(work: Option<&Object>, template: &serde_json::Value, config: &RolloutConfig, now: i64) -> ClusterState {
        let Some(work) = work else { return ClusterState::ToApply };
        if work.spec() != Some(template) {
            return ClusterState::ToApply;
        }
        let generation = work.metadata.generation;
        let status = manifestwork::status_of(work);
        let current =
            |type_: &str| find(&status.conditions, type_).filter(|c| c.observed_generation == Some(generation));
        let is_true = |type_: &str| current(type_).is_some_and(Condition::is_true);
        if is_true(CONDITION_DEGRADED) || current(CONDITION_APPLIED).is_some_and(|c| !c.is_true()) {
            return ClusterState::Failed;
        }
        if is_true(CONDITION_APPLIED) && is_true(CONDITION_AVAILABLE) {
            let at = [CONDITION_APPLIED, CONDITION_AVAILABLE]
                .iter()
                .filter_map(|t| current(t).and_then(|c| unix_seconds(&c.last_transition_time)))
                .max()
                .unwrap_or(0);
            let until = at.saturating_add(config.min_success_seconds());
            return if now < until { ClusterState::Soaking { until } } else { ClusterState::Succeeded };
        }
        let since =
            work.metadata.annotations.get(ROLLOUT_STARTED_ANNOTATION).and_then(|t| unix_seconds(t)).unwrap_or(now);
        match config.progress_deadline_seconds() {
            Some(deadline) if now > since.saturating_add(deadline) => ClusterState::TimedOut,
            _ => ClusterState::Progressing { since },
        }
    }

    /// Whether the cluster holds a rollout slot (Progressive's concurrency).
    fn in_flight(&self) -> bool {
        matches!(self, ClusterState::Progressing { .. } | ClusterState::Soaking { .. })
    }

    /// Whether the cluster counts as a failure.
    fn failed(&self) -> bool {
        matches!(self, ClusterState::Failed | ClusterState::TimedOut)
    }

    /// Whether the cluster is finished (succeeded or failed).
    fn finished(&self) -> bool {
        self.failed() || *self == ClusterState::Succeeded
    }
}

/// The summary of `works` (a replica set's ManifestWorks, or one
/// placement's share of them) for `desired_total` decided clusters:
/// counts by condition (True at any generation, as OCM counts them), and
/// `updated`, those holding their current template (`is_current`) with
/// `Applied` True at their current generation.
pub fn summary<'a>(
    works: impl Iterator<Item = &'a Object>,
    is_current: impl Fn(&Object) -> bool,
    desired_total: usize,
) -> ManifestWorkReplicaSetSummary {
    let mut s = ManifestWorkReplicaSetSummary {
        desired_total: i64::try_from(desired_total).unwrap_or(i64::MAX),
        ..Default::default()
    };
    for work in works {
        let status = manifestwork::status_of(work);
        let condition = |t: &str| find(&status.conditions, t);
        let is_true = |t: &str| i64::from(condition(t).is_some_and(Condition::is_true));
        s.total += 1;
        s.applied += is_true(CONDITION_APPLIED);
        s.available += is_true(CONDITION_AVAILABLE);
        s.degraded += is_true(CONDITION_DEGRADED);
        s.progressing += is_true(CONDITION_PROGRESSING);
        let applied_now = condition(CONDITION_APPLIED)
            .is_some_and(|c| c.is_true() && c.observed_generation == Some(work.metadata.generation));
        s.updated += i64::from(applied_now && is_current(work));
    }
    s
}

/// One decided cluster of the placement and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutCluster {
    /// The cluster's name.
    pub name: String,
    /// Its decision group's index.
    pub group_index: usize,
    /// Its decision group's name (empty for unnamed groups).
    pub group_name: String,
    /// Where it stands.
    pub state: ClusterState,
}

/// What to do now for one placement's clusters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutPlan {
    /// Clusters that get the current template now (create or update).
    pub apply: Vec<String>,
    /// Every cluster succeeded.
    pub rolled_out: bool,
    /// Why the rollout does not go on (too many failures), if so.
    pub stopped: Option<String>,
    /// The first second at which time alone changes a state.
    pub requeue_at: Option<i64>,
}

/// Plans one placement's rollout. `clusters` are in decision-group index,
/// then name order; `largest_group` is the largest decision group's size.
pub fn plan(strategy: &RolloutStrategy, clusters: &[RolloutCluster], largest_group: usize) -> RolloutPlan {
    let config = strategy.config();
    let total = clusters.len();
    let mut out = RolloutPlan {
        rolled_out: clusters.iter().all(|c| c.state == ClusterState::Succeeded),
        requeue_at: requeue_at(clusters, &config),
        ..RolloutPlan::default()
    };
    let mandatory = |c: &RolloutCluster| {
        config.mandatory_decision_groups.iter().any(|g| {
            if !g.group_name.is_empty() {
                g.group_name == c.group_name
            } else {
                g.group_index == Some(c.group_index as i64)
            }
        })
    };
    let (first, rest): (Vec<&RolloutCluster>, Vec<&RolloutCluster>) = clusters.iter().partition(|c| mandatory(c));
    if !first.is_empty() {
        out.apply.extend(first.iter().filter(|c| c.state == ClusterState::ToApply).map(|c| c.name.clone()));
        if let Some(failed) = first.iter().find(|c| c.state.failed()) {
            out.stopped = Some(format!("cluster {} of a mandatory decision group failed", failed.name));
            return out;
        }
        if !first.iter().all(|c| c.state == ClusterState::Succeeded) {
            return out;
        }
    }
    let tolerated = max_failures(&config, total);
    let failures = rest.iter().filter(|c| c.state.failed()).count();
    let too_many = |failures: usize| {
        (failures > tolerated).then(|| format!("{failures} clusters failed, more than the {tolerated} tolerated"))
    };
    let to_apply = rest.iter().filter(|c| c.state == ClusterState::ToApply).map(|c| c.name.clone());
    match strategy.type_() {
        ROLLOUT_ALL => out.apply.extend(to_apply),
        ROLLOUT_PROGRESSIVE_PER_GROUP => {
            let mut groups: Vec<usize> = rest.iter().map(|c| c.group_index).collect();
            groups.dedup();
            for g in groups {
                let members: Vec<&&RolloutCluster> = rest.iter().filter(|c| c.group_index == g).collect();
                if members.iter().any(|c| c.state == ClusterState::ToApply) {
                    let names = members.iter().filter(|c| c.state == ClusterState::ToApply).map(|c| c.name.clone());
                    out.apply.extend(names);
                    break;
                }
                if !members.iter().all(|c| c.state.finished()) {
                    break;
                }
                let failed_so_far = rest.iter().filter(|c| c.group_index <= g && c.state.failed()).count();
                if let Some(why) = too_many(failed_so_far) {
                    out.stopped = Some(why);
                    break;
                }
            }
        }
        _ => {
            if let Some(why) = too_many(failures) {
                out.stopped = Some(why);
                return out;
            }
            let limit = max_concurrency(&config, total, largest_group);
            let busy = rest.iter().filter(|c| c.state.in_flight()).count();
            out.apply.extend(to_apply.take(limit.saturating_sub(busy)));
        }
    }
    out
}

/// `maxFailures` over `total` clusters (default 0).
fn max_failures(config: &RolloutConfig, total: usize) -> usize {
    config.max_failures.as_ref().and_then(|v| IntOrPercent::from_int_or_string(v).ok()).map_or(0, |v| v.scaled(total))
}

/// `maxConcurrency` over `total` clusters; default (or 0): the largest
/// decision group, at least one.
fn max_concurrency(config: &RolloutConfig, total: usize, largest_group: usize) -> usize {
    let configured = config
        .max_concurrency
        .as_ref()
        .and_then(|v| IntOrPercent::from_int_or_string(v).ok())
        .map(|v| v.scaled(total))
        .filter(|n| *n > 0);
    configured.unwrap_or(largest_group).max(1)
}

/// The first second at which a soak ends or a deadline passes.
fn requeue_at(clusters: &[RolloutCluster], config: &RolloutConfig) -> Option<i64> {
    let deadline = config.progress_deadline_seconds();
    clusters
        .iter()
        .filter_map(|c| match c.state {
            ClusterState::Soaking { until } => Some(until),
            ClusterState::Progressing { since } => deadline.map(|d| since.saturating_add(d).saturating_add(1)),
            _ => None,
        })
        .min()
}
