//! The Open Cluster Management scheduler (docs/spec/ocm.md): which member
//! clusters an OCM `Placement` decides, with every candidate's score per
//! prioritizer, the decision groups and the PlacementDecision pages.
//!
//! A pass is a pure function of an [`OcmRequest`] (no clock: `now` is
//! passed in) and runs on the KubeFleet scheduler's framework and per-pass
//! [`ClusterTable`](crate::scheduler::table::ClusterTable):
//! sets (bound, existing, narrowed by `clusterSets`) → not being deleted →
//! filter plugins (predicates, taints) → prioritizers (weighted sum) →
//! best-first pick (topology spread, if any, as a pick plugin) → decision
//! scores and order (module `scores`: `sortBy`, `scoreRateLimit`) →
//! decision groups → pages of at most 100.
//!
//! Choices where the spec is silent (what an OCM user expects):
//! - Ties of equal total go to the smaller name; with spread constraints the
//!   spread score ranks first, as in KubeFleet, then the total.
//! - `numberOfClusters` unset wants every feasible cluster; a
//!   `DoNotSchedule` spread constraint that leaves some out makes the
//!   placement `NotAllDecisionsScheduled`.
//! - Spread constraints default to `maxSkew: 1` and `ScheduleAnyway` (OCM's
//!   defaults); `topologyKeyType: Claim` reads the cluster's claims.
//! - Claims are the cluster's properties as written (text), so claim
//!   selectors compare strings like label selectors do.
//! - Balance's `maxCount` is the largest count over all clusters (not only
//!   the candidates); a cluster no other placement decided scores 100.
//! - Resource prioritizers take min and max over the candidates that
//!   report the allocatable value; a candidate that does not scores 0.
//! - An AddOnPlacementScore counts until `now > validUntil`; a missing
//!   score, score name or unreadable `validUntil` counts 0.
//! - Clusters outside the eligible sets are only counted; filtered
//!   clusters are reported with their reason, the first
//!   [`MAX_EXCLUSIONS_REPORTED`] by name.
//! - A misconfiguration the admission rules should have refused (an unknown
//!   prioritizer, an unusable `clustersPerDecisionGroup`) sets
//!   `PlacementMisconfigured` and is skipped (all clusters in one group).
//! - Taints (module `taints`): a cluster that is not joined or not healthy
//!   carries `cluster.open-cluster-management.io/unreachable:NoSelect`
//!   since it stopped being available; Fleet's `NoSchedule` reads as
//!   `NoSelectIfNew`; `PreferNoSelect` never filters; `tolerationSeconds`
//!   limits a toleration of any taint that filters (`NoSelect`, and
//!   `NoSelectIfNew` on a cluster not yet decided), as OCM's controller
//!   does, and never covers a taint whose `timeAdded` is unknown.
//! - `requeue_at` is the first second at which the same inputs may decide
//!   differently (a toleration period or an add-on score running out, or
//!   held-back decision scores becoming due).

use fleet_api::conditions::Condition;
use fleet_api::ocm::placement::{DecisionGroupStatus, PlacementSpec};

use crate::cluster::ClusterInfo;

pub mod delivery;
mod groups;
mod inputs;
mod pass;
mod predicates;
mod prioritizers;
mod request;
pub mod rollout;
mod scores;
pub mod set_status;
mod sets;
mod status;
mod taints;
#[cfg(test)]
mod tests;

pub use groups::{paginate, DecisionGroup, DecisionPage};
pub use inputs::{decided_clusters, pages_of, AddOnScores, DecisionCounts};
pub use pass::schedule;
pub use predicates::REASON_NO_PREDICATE_MATCHES;
pub use prioritizers::{
    allocatable_score, balance_score, steady_score, weighted, Prioritizer, WeightedPrioritizer, ALLOCATABLE_CPU,
    ALLOCATABLE_MEMORY, MAX_SCORE,
};
pub use request::{OcmInputs, OcmObjects};
pub use scores::{decide as decide_scores, DecisionScores, RecordedScores};
pub use sets::{ClusterSet, NoSets};
pub use status::{page_changes, PageChange};

/// How many filtered clusters an outcome names (the first by name).
pub const MAX_EXCLUSIONS_REPORTED: usize = 1000;
/// Why a cluster being deleted is not selected.
pub const REASON_DELETING: &str = "cluster is being deleted";

/// Everything one OCM scheduling pass reads.
#[derive(Debug, Clone, Copy)]
pub struct OcmRequest<'a> {
    /// The Placement's name (its pages are named after it).
    pub placement_name: &'a str,
    /// The Placement's spec, defaulted by admission.
    pub spec: &'a PlacementSpec,
    /// Every MemberCluster, any order.
    pub clusters: &'a [ClusterInfo],
    /// Every ManagedClusterSet object (`default` and `global` exist even without one).
    pub cluster_sets: &'a [ClusterSet],
    /// `spec.clusterSet` of each ManagedClusterSetBinding in the placement's namespace.
    pub bound_sets: &'a [String],
    /// The clusters the placement's current PlacementDecisions name (Steady, NoSelectIfNew).
    pub decided: &'a [String],
    /// Other placements' decisions per cluster (Balance).
    pub other_decisions: &'a DecisionCounts,
    /// Every AddOnPlacementScore (AddOn prioritizers).
    pub addon_scores: &'a AddOnScores,
    /// The scores the current decisions hold and their time (`scoreRateLimit`).
    pub recorded: &'a RecordedScores,
    /// Now, in Unix seconds (toleration periods, score expiry).
    pub now: i64,
}

/// One feasible cluster and how it scored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Candidate {
    /// The cluster's name.
    pub cluster: String,
    /// Its score per prioritizer, parallel to [`OcmOutcome::prioritizers`].
    pub scores: Vec<i64>,
    /// Σ weight × score.
    pub total: i64,
    /// The topology spread score it was judged with (0 without spread constraints).
    pub spread_score: i64,
    /// Whether it was chosen.
    pub chosen: bool,
    /// Why it was not chosen.
    pub left_out: Option<String>,
}

/// A cluster of the eligible sets that was filtered out, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclusion {
    /// The cluster's name.
    pub cluster: String,
    /// Why (being deleted, no predicate matches, a taint not tolerated).
    pub reason: String,
}

/// The result of one pass: the decisions and everything that explains them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OcmOutcome {
    /// The sets chosen from, sorted.
    pub eligible_sets: Vec<String>,
    /// The prioritizers used, with their weights.
    pub prioritizers: Vec<WeightedPrioritizer>,
    /// Every feasible cluster, in name order, with its scores.
    pub candidates: Vec<Candidate>,
    /// The chosen clusters, in name order.
    pub chosen: Vec<String>,
    /// Filtered clusters in name order (at most [`MAX_EXCLUSIONS_REPORTED`]).
    pub excluded: Vec<Exclusion>,
    /// How many clusters were filtered in all.
    pub excluded_total: usize,
    /// How many clusters are outside the eligible sets.
    pub outside_sets: usize,
    /// The decision groups.
    pub groups: Vec<DecisionGroup>,
    /// The PlacementDecision pages.
    pub pages: Vec<DecisionPage>,
    /// `status.decisionGroups`.
    pub group_statuses: Vec<DecisionGroupStatus>,
    /// `PlacementSatisfied` (no transition time yet).
    pub satisfied: Condition,
    /// `PlacementMisconfigured` (no transition time yet).
    pub misconfigured: Condition,
    /// The first second at which the same inputs may decide differently.
    pub requeue_at: Option<i64>,
    /// `status.lastScoreUpdateTime`: when the decisions' scores last changed
    /// (Unix seconds).
    pub score_update_time: Option<i64>,
}
