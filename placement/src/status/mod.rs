//! Placement status folding (docs/spec/rollout.md "Placement status"): each chosen
//! cluster's entry in `status.placementStatuses` from its binding and Works
//! ([`fold_cluster`]), and the placement's own conditions from those entries
//! ([`fold_placement`]).
//!
//! Decisions beyond the spec's wording:
//! - a cluster's entry reads its bound index from the binding's
//!   `resourceSnapshotName` (`<placement>-<index>-snapshot`);
//! - per cluster, `Available` keeps KubeFleet's reason `WorkNotTrackable`
//!   when a Work reports it (the placement-level condition still says
//!   `ResourceAvailable`), so a user can see why a rollout waited;
//! - per cluster, Applied is Unknown/`ApplyPending` until every Work reports
//!   at its generation; Available is False/`ResourceNotAvailableYet` until
//!   every Work is available;
//! - `failedPlacements` lists manifests whose `Applied` is False when the
//!   cluster's Applied is False, and (as KubeFleet does) manifests whose
//!   `Available` is False when the cluster's Available is False; at most 100;
//! - at placement level False wins over Unknown: one failed cluster makes
//!   the condition False even while others are pending;
//! - the chain stops after the first condition that is not True; a
//!   `Scheduled` condition that is Unknown (pending) stops it at once, a False
//!   one (unfulfilled) does not, since the chosen clusters still roll out;
//! - with no chosen clusters every condition after `Scheduled` is vacuously
//!   True (messages count 0 clusters);
//! - with `strategy.type: External` (SU-13, as KubeFleet) each cluster
//!   stands on the snapshot its own binding holds: a cluster no run has
//!   reached yet is `RolloutStarted` Unknown/`RolloutStartedUnknown` with no
//!   index, one a run rolled out to an older snapshot (SU-12) is judged on
//!   that snapshot; the placement reports an index and the usual chain only
//!   when every chosen cluster holds the same one ([`common_index`]), else
//!   `RolloutStarted` Unknown/`RolloutControlledByExternalController` alone;
//! - with `applyStrategy.type: ReportDiff` (the binding's, per cluster; the
//!   placement's, for its own conditions) `DiffReported` follows
//!   `WorkSynchronized` in place of `Applied` and `Available`: True once
//!   every Work reports `DiffReported=True` at its generation, False when
//!   one reports False (then, as KubeFleet, no failed or diffed placements
//!   are listed), Unknown before. A cluster whose binding
//!   still carries another type (the change is on its way) counts as
//!   pending at placement level.

mod cluster;
mod external;
mod summary;
#[cfg(test)]
mod tests_cluster;
#[cfg(test)]
mod tests_report_diff;
#[cfg(test)]
mod tests_summary;

use fleet_api::conditions::{find, Condition};
use fleet_api::Object;

pub use cluster::{fold_cluster, snapshot_index_of_name};
pub use external::{common_index, undecided_rollout};
pub use summary::fold_placement;

/// Per-cluster (and placement-suffix) condition: the binding is bound to the latest snapshot.
pub const ROLLOUT_STARTED: &str = "RolloutStarted";
/// Overrides were applied to the cluster's copy of the resources.
pub const OVERRIDDEN: &str = "Overridden";
/// The binding's Works exist for its bound snapshot.
pub const WORK_SYNCHRONIZED: &str = "WorkSynchronized";
/// The Works were applied on the member cluster.
pub const APPLIED: &str = "Applied";
/// The applied resources are available.
pub const AVAILABLE: &str = "Available";
/// The diff of the Works from the member was reported (`ReportDiff` mode,
/// in place of `Applied` and `Available`).
pub const DIFF_REPORTED: &str = "DiffReported";
/// The conditions after `Scheduled`, in order.
pub const ROLLOUT_CONDITIONS: [&str; 5] = [ROLLOUT_STARTED, OVERRIDDEN, WORK_SYNCHRONIZED, APPLIED, AVAILABLE];
/// The conditions after `Scheduled` in `ReportDiff` mode, in order.
pub const REPORT_DIFF_CONDITIONS: [&str; 4] = [ROLLOUT_STARTED, OVERRIDDEN, WORK_SYNCHRONIZED, DIFF_REPORTED];

/// The conditions after `Scheduled` for an apply strategy that does (or
/// does not) report diffs.
pub fn rollout_conditions(report_diff: bool) -> &'static [&'static str] {
    if report_diff {
        &REPORT_DIFF_CONDITIONS
    } else {
        &ROLLOUT_CONDITIONS
    }
}

/// Reason: the binding is bound to the latest snapshot.
pub const REASON_ROLLOUT_STARTED: &str = "RolloutStarted";
/// Reason: the rollout strategy holds the binding back.
pub const REASON_ROLLOUT_NOT_STARTED: &str = "RolloutNotStartedYet";
/// Reason: rollout state not reported yet.
pub const REASON_ROLLOUT_UNKNOWN: &str = "RolloutStartedUnknown";
/// Reason: an External strategy's staged update runs decide the rollout
/// (SU-13), and the clusters do not yet agree on one snapshot.
pub const REASON_ROLLOUT_EXTERNAL: &str = "RolloutControlledByExternalController";
/// Reason: no override applies.
pub const REASON_NO_OVERRIDE: &str = "NoOverrideSpecified";
/// Reason: overrides applied.
pub const REASON_OVERRIDDEN: &str = "OverriddenSucceeded";
/// Reason: an override failed.
pub const REASON_OVERRIDE_FAILED: &str = "OverriddenFailed";
/// Reason: overriding not done yet.
pub const REASON_OVERRIDE_PENDING: &str = "OverriddenPending";
/// Reason: Work generation failed (EN-8).
pub const REASON_SYNC_WORK_FAILED: &str = "SyncWorkFailed";
/// Reason: Works are current.
pub const REASON_WORK_SYNCHRONIZED: &str = "WorkSynchronized";
/// Reason: Works are missing or stale.
pub const REASON_WORK_NOT_SYNCHRONIZED: &str = "WorkNotSynchronizedYet";
/// Reason: applied.
pub const REASON_APPLY_SUCCEEDED: &str = "ApplySucceeded";
/// Reason: some apply failed.
pub const REASON_APPLY_FAILED: &str = "ApplyFailed";
/// Reason: apply not reported yet.
pub const REASON_APPLY_PENDING: &str = "ApplyPending";
/// Reason: available.
pub const REASON_AVAILABLE: &str = "ResourceAvailable";
/// Reason: not available yet.
pub const REASON_NOT_AVAILABLE: &str = "ResourceNotAvailableYet";
/// Reason: every Work reported its diff.
pub const REASON_DIFF_REPORTED: &str = "DiffReportingCompleted";
/// Reason: some Work could not report its diff.
pub const REASON_DIFF_NOT_REPORTED: &str = "DiffReportingIncompleteOrFailed";
/// Reason: diff reporting not reported yet.
pub const REASON_DIFF_PENDING: &str = "DiffReportingPending";
/// Per-cluster reason (KubeFleet's binding reasons from here on): every Work is current.
pub const CLUSTER_REASON_WORK_SYNCED: &str = "AllWorkSynced";
/// Per-cluster reason: every Work is applied.
pub const CLUSTER_REASON_APPLIED: &str = "AllWorkHaveBeenApplied";
/// Per-cluster reason: some Work failed to apply.
pub const CLUSTER_REASON_NOT_APPLIED: &str = "NotAllWorkHaveBeenApplied";
/// Per-cluster reason: every Work is available.
pub const CLUSTER_REASON_AVAILABLE: &str = "AllWorkAreAvailable";
/// Per-cluster reason: some Work is not available yet.
pub const CLUSTER_REASON_NOT_AVAILABLE: &str = "NotAllWorkAreAvailable";
/// Per-cluster reason: available, but some resource's availability is not trackable.
pub const REASON_NOT_TRACKABLE: &str = "NotAllWorkAreAvailabilityTrackable";
/// Per-cluster reason: every Work reported its diff.
pub const CLUSTER_REASON_DIFF_REPORTED: &str = "AllWorkHaveDiffReported";
/// Per-cluster reason: some Work could not report its diff.
pub const CLUSTER_REASON_DIFF_NOT_REPORTED: &str = "NotAllWorkHaveDiffReported";
/// Most entries in `failedPlacements`.
pub const MAX_FAILED_PLACEMENTS: usize = 100;

/// How the placement rolls out, as far as its conditions are concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mode {
    /// `strategy.type: External`: staged update runs decide the rollout (SU-13).
    pub external: bool,
    /// `applyStrategy.type: ReportDiff`: `DiffReported` in place of `Applied`/`Available`.
    pub report_diff: bool,
}

/// The per-cluster rollout facts the node gathers for one chosen cluster.
#[derive(Debug, Clone, Copy)]
pub struct ClusterRollout<'a> {
    /// The cluster's name.
    pub cluster: &'a str,
    /// The cluster's binding.
    pub binding: &'a Object,
    /// The binding's Works (any order).
    pub works: &'a [Object],
    /// Index of the latest resource snapshot group, if known.
    pub latest_resource_index: Option<u64>,
    /// `strategy.type: External`: the cluster is judged on the snapshot its
    /// binding holds, not on the latest (SU-13).
    pub external: bool,
    /// Whether the binding records the override snapshots that apply to
    /// its cluster now: one that does not waits for the rollout like one
    /// bound to an older snapshot (OV-8).
    pub overrides_current: bool,
    /// How many Works the binding needs (snapshot parts plus envelopes; 0
    /// is read as 1).
    pub expected_works: usize,
    /// Whether the stored Works are exactly the rendered ones (content
    /// included, so an override change counts).
    pub works_in_sync: bool,
    /// How rendering the binding's Works for its cluster went.
    pub rendering: &'a Rendering,
}

/// How rendering one binding's Works went (docs/spec/overrides.md "Status",
/// docs/spec/envelopes.md EN-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendering {
    /// Rendered; no override applies to the cluster.
    NoOverrides,
    /// Rendered through the binding's override snapshots.
    Overridden,
    /// OV-7: an override failed on this cluster (the message says which).
    OverrideFailed(String),
    /// A recorded override snapshot is not readable yet.
    OverridePending,
    /// EN-8: Work generation stopped for this placement (the message says why).
    WorkFailed(String),
}

/// `condition` with its transition time kept from `old` when the status did
/// not change, `now` otherwise (`set_condition`'s rule).
fn carried(old: &[Condition], mut condition: Condition, now: &str) -> Condition {
    condition.last_transition_time = match find(old, &condition.type_) {
        Some(existing) if existing.status == condition.status => existing.last_transition_time.clone(),
        _ => now.to_string(),
    };
    condition
}

/// `1 cluster`, `3 clusters`.
fn clusters(n: usize) -> String {
    if n == 1 {
        "1 cluster".to_string()
    } else {
        format!("{n} clusters")
    }
}
