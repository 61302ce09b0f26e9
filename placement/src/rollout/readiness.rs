//! How far one binding's rollout got, read from its Works' conditions.

use fleet_api::conditions::{find, Condition};
use fleet_api::work::{
    reports_diff, status_of, CONDITION_APPLIED, CONDITION_AVAILABLE, CONDITION_DIFF_REPORTED, REASON_NOT_TRACKABLE,
};
use fleet_api::Object;

use crate::time::unix_seconds;
use crate::works::PARENT_RESOURCE_INDEX_LABEL;

/// How far one binding's rollout got, derived from its Works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Every Work of the binding is for the binding's snapshot, Applied=True
    /// and Available=True (trackable reason) at the Work's current generation
    /// — for a `ReportDiff` Work: `DiffReported=True` at that generation.
    Ready,
    /// Applied and Available with reason `WorkNotTrackable`: counts as ready
    /// only once `now >= available_since + unavailablePeriodSeconds`.
    NotTrackable {
        /// Unix seconds of the latest `lastTransitionTime` among the
        /// untrackable Works' Applied and Available conditions.
        available_since: i64,
    },
    /// Some Work's Applied=False (`ReportDiff`: `DiffReported=False`) at its current generation.
    Failed,
    /// Applied, but some Work's Available=False at its current generation:
    /// the workload runs and is not available (a Deployment whose pods do
    /// not start). KubeFleet counts such a binding as failed: it is not
    /// ready and does not hold back the others, and a new snapshot reaches
    /// it at once.
    Unavailable,
    /// Every Work of the binding's snapshot is there, and some has not
    /// reported both Applied and Available for its current generation yet
    /// (its agent is applying it, or its conditions speak for an older
    /// generation). KubeFleet's work generator writes the binding's
    /// `Applied` (or `Available`) False meanwhile, so its rollout counts
    /// such a binding as failed: it is not ready, and moving it to a newer
    /// snapshot takes nothing down.
    Applying,
    /// Anything else: no Work yet, Works for an older snapshot or fewer
    /// than the snapshot needs, a `ReportDiff` Work whose diff is not
    /// reported at its generation yet.
    InProgress,
}

impl Readiness {
    /// Whether this counts as ready at `now` with the given unavailable period.
    pub fn is_ready(&self, now: i64, unavailable_period_seconds: i64) -> bool {
        match *self {
            Readiness::Ready => true,
            Readiness::NotTrackable { available_since } => {
                now >= available_since.saturating_add(unavailable_period_seconds)
            }
            Readiness::Failed | Readiness::Unavailable | Readiness::Applying | Readiness::InProgress => false,
        }
    }
}

/// A Work condition of `type_` that speaks for the Work's current generation.
fn current<'a>(work: &Object, conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    find(conditions, type_).filter(|c| c.observed_generation.unwrap_or(0) == work.metadata.generation)
}

/// Readiness of a binding bound to the resource group `expected_resource_index`,
/// given its Works (any order) and how many Works that group needs.
///
/// Only Works labelled with the expected index count. Any of those with
/// Applied=False at its generation makes the binding [`Readiness::Failed`]
/// (even if sibling Works are still missing); fewer than
/// `expected_work_count` (at least 1) matching Works is
/// [`Readiness::InProgress`]. A timestamp that cannot be read counts as the
/// epoch: without a time we cannot wait, and waiting forever would block the
/// rollout.
pub fn readiness(expected_resource_index: u64, works: &[Object], expected_work_count: usize) -> Readiness {
    let index = expected_resource_index.to_string();
    let matching: Vec<&Object> =
        works.iter().filter(|w| w.metadata.labels.get(PARENT_RESOURCE_INDEX_LABEL) == Some(&index)).collect();
    let statuses: Vec<_> = matching.iter().map(|w| status_of(w)).collect();
    // A ReportDiff Work speaks through DiffReported; any other through Applied.
    let outcome = |w: &Object| if reports_diff(w) { CONDITION_DIFF_REPORTED } else { CONDITION_APPLIED };
    let failed = matching
        .iter()
        .zip(&statuses)
        .any(|(w, s)| current(w, &s.conditions, outcome(w)).is_some_and(|c| c.status == "False"));
    if failed {
        return Readiness::Failed;
    }
    if matching.is_empty() || matching.len() < expected_work_count {
        return Readiness::InProgress;
    }
    let mut untrackable_since: Option<i64> = None;
    let (mut diff_pending, mut pending, mut unavailable) = (false, false, false);
    for (work, status) in matching.iter().zip(&statuses) {
        if reports_diff(work) {
            diff_pending |= !current(work, &status.conditions, CONDITION_DIFF_REPORTED).is_some_and(Condition::is_true);
            continue;
        }
        let applied = current(work, &status.conditions, CONDITION_APPLIED);
        let available = current(work, &status.conditions, CONDITION_AVAILABLE);
        let (Some(applied), Some(available)) = (applied, available) else {
            pending = true;
            continue;
        };
        if applied.is_true() && available.status == "False" {
            unavailable = true;
            continue;
        }
        if !applied.is_true() || !available.is_true() {
            pending = true;
            continue;
        }
        if available.reason == REASON_NOT_TRACKABLE {
            let since = unix_seconds(&available.last_transition_time)
                .unwrap_or(0)
                .max(unix_seconds(&applied.last_transition_time).unwrap_or(0));
            untrackable_since = Some(untrackable_since.map_or(since, |s| s.max(since)));
        }
    }
    match (unavailable, diff_pending, pending, untrackable_since) {
        (true, _, _, _) => Readiness::Unavailable,
        (false, true, _, _) => Readiness::InProgress,
        (false, false, true, _) => Readiness::Applying,
        (false, false, false, Some(available_since)) => Readiness::NotTrackable { available_since },
        (false, false, false, None) => Readiness::Ready,
    }
}
