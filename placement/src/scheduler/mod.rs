//! The scheduler: decides which member clusters a placement goes to, and
//! which binding changes make it so.
//!
//! A pass is a pure function of a [`SchedulingRequest`] (the defaulted
//! policy, the clusters, the placement's existing bindings) and goes through
//! the [`Framework`]'s stages: eligibility → filter plugins → score plugins →
//! sort → pick. The result ([`SchedulingOutcome`]) holds every cluster's
//! decision for the policy snapshot's status and the [`BindingAction`]s the
//! node writes.
//!
//! A ResourcePlacement's PickAll and PickN passes skip clusters whose agent
//! does not report its namespace (KubeFleet's namespace affinity); PickFixed
//! names clusters outright and, as in KubeFleet, is not filtered by it.
//!
//! Rules beyond the spec, decided here:
//! - clusters are sorted by name first, so input order never matters (of two
//!   clusters with the same name, the first given is used);
//! - a cluster's primary binding is its active one, then the one under the
//!   current policy snapshot, then the first by name; other active bindings of
//!   that cluster are unscheduled, so a cluster never has two;
//! - a kept binding keeps its stored score in its decision, so it gets no
//!   action while nothing changes;
//! - PickFixed decisions carry no score; PickAll ones score 0 and 0 (as
//!   KubeFleet: neither policy scores);
//! - PickN scale-in drops not-yet-bound (Scheduled) bindings before Bound
//!   ones, then the lowest stored topology spread score, then the lowest
//!   stored affinity score, then the smallest name (the mirror of the pick
//!   tie-break, which prefers the larger name).

mod bindings;
mod framework;
mod pick;
pub(crate) mod pick_loop;
pub mod plugins;
pub mod table;
#[cfg(test)]
mod tests;

use fleet_api::binding::{ClusterDecision, ClusterScore};
use fleet_api::placement::PlacementPolicy;

pub use framework::{FilterPlugin, Framework, PickPlugin, PickVerdict, ScorePlugin};

use crate::cluster::ClusterInfo;

/// The end of every chosen cluster's reason.
pub const REASON_PICKED: &str = "picked by scheduling policy";
/// The prefix KubeFleet gives the reason of a filtered cluster (its
/// status code's name).
pub const FILTERED_PREFIX: &str = "ClusterUnschedulable, ";
/// How many not-chosen candidates the policy snapshot's status lists.
pub const MAX_NOT_CHOSEN_REPORTED: usize = 20;
/// Most entries in the policy snapshot's `targetClusters`.
pub const MAX_TARGET_CLUSTERS: usize = 1000;

/// One existing binding of the placement, as the scheduler needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExistingBinding {
    /// The binding object's name.
    pub name: String,
    /// `spec.targetCluster`.
    pub cluster: String,
    /// `Scheduled`, `Bound` or `Unscheduled`.
    pub state: String,
    /// `spec.schedulingPolicySnapshotName`.
    pub policy_snapshot: String,
    /// `spec.clusterDecision.clusterScore`.
    pub score: Option<ClusterScore>,
}

impl ExistingBinding {
    /// The scheduler's view of a stored binding (the hub's controller and
    /// `fleetctl plan` read bindings the same way).
    pub fn from_object(object: &fleet_api::Object) -> ExistingBinding {
        let spec = fleet_api::binding::spec_of(object);
        ExistingBinding {
            name: object.metadata.name.clone(),
            cluster: spec.target_cluster,
            state: spec.state,
            policy_snapshot: spec.scheduling_policy_snapshot_name,
            score: spec.cluster_decision.cluster_score,
        }
    }

    /// Whether the binding still places resources (Scheduled or Bound).
    pub fn is_active(&self) -> bool {
        self.state == fleet_api::binding::STATE_SCHEDULED || self.state == fleet_api::binding::STATE_BOUND
    }
}

/// Everything one scheduling pass reads.
#[derive(Debug, Clone, Copy)]
pub struct SchedulingRequest<'a> {
    /// The policy, defaulted.
    pub policy: &'a PlacementPolicy,
    /// PickN: from the policy snapshot's annotation (wins over `policy.number_of_clusters`).
    pub number_of_clusters: Option<i64>,
    /// Name of the current (latest) policy snapshot.
    pub policy_snapshot: &'a str,
    /// Every MemberCluster that exists, any order.
    pub clusters: &'a [ClusterInfo],
    /// Every binding of this placement, any order.
    pub bindings: &'a [ExistingBinding],
    /// A ResourcePlacement's namespace (`None` for a cluster-scoped
    /// placement): PickAll and PickN choose only clusters that have it.
    pub namespace: Option<&'a str>,
}

/// One change to the placement's bindings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingAction {
    /// New binding, state Scheduled.
    Create {
        /// The target cluster.
        cluster: String,
        /// The binding's `clusterDecision`.
        decision: ClusterDecision,
    },
    /// Existing binding kept: set its policy snapshot name to the current one and its decision; `revive` = it was
    /// Unscheduled and becomes Scheduled again.
    Update {
        /// The binding's name.
        binding: String,
        /// Its target cluster.
        cluster: String,
        /// The new `clusterDecision`.
        decision: ClusterDecision,
        /// Whether the binding was Unscheduled and becomes Scheduled.
        revive: bool,
    },
    /// Existing active binding no longer chosen: set state Unscheduled.
    Unschedule {
        /// The binding's name.
        binding: String,
        /// Its target cluster.
        cluster: String,
    },
}

/// The result of one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulingOutcome {
    /// Selected, with scores; reason [`picked_reason`]; sorted by cluster name.
    pub chosen: Vec<ClusterDecision>,
    /// Candidates not picked, best first, with their scores: the best
    /// [`MAX_NOT_CHOSEN_REPORTED`] only (all a status shows; building every
    /// one would dominate a pass over 10,000 clusters).
    pub not_chosen: Vec<ClusterDecision>,
    /// Filtered, ineligible or missing clusters, sorted by name, with the
    /// filter's reason after [`FILTERED_PREFIX`] (at most
    /// [`MAX_TARGET_CLUSTERS`], the first by name: all a status can list).
    pub filtered: Vec<ClusterDecision>,
    /// Whether the policy got every cluster it asks for.
    pub fulfilled: bool,
    /// The `Scheduled` condition's message.
    pub message: String,
    /// PickN already has the N clusters it asks for: nothing is picked, so
    /// nothing is judged (`not_chosen` and `filtered` are empty), and the
    /// policy snapshot keeps the unchosen clusters the pass that picked
    /// reported (as KubeFleet's scheduler, whose status comes from its last
    /// scheduling cycle), unless the placement changed since that pass:
    /// KubeFleet reruns for the change and reports the chosen ones alone.
    pub settled: bool,
    /// Only real changes: a binding already in the desired state gets no action.
    pub actions: Vec<BindingAction>,
}

impl SchedulingOutcome {
    /// The policy snapshot's `targetClusters`: chosen, then up to 20
    /// not-chosen candidates, then the filtered; at most 1000 entries.
    pub fn target_clusters(&self) -> Vec<ClusterDecision> {
        let not_chosen = self.not_chosen.iter().take(MAX_NOT_CHOSEN_REPORTED);
        self.chosen.iter().chain(not_chosen).chain(&self.filtered).take(MAX_TARGET_CLUSTERS).cloned().collect()
    }
}

/// The reason of a candidate that was not picked (KubeFleet's text).
pub fn not_chosen_reason(cluster: &str, score: &ClusterScore) -> String {
    format!(
        "Cluster \"{cluster}\" does not score high enough (affinity score: {}, topology spread score: {})",
        score.affinity_score, score.topology_spread_score
    )
}

/// The reason of a chosen cluster (KubeFleet's text): with the scores when
/// the policy scores (PickAll's are 0), without for PickFixed.
pub fn picked_reason(cluster: &str, score: Option<&ClusterScore>) -> String {
    match score {
        Some(s) => format!(
            "Successfully scheduled resources for placement in \"{cluster}\" (affinity score: {}, topology spread score: {}): {REASON_PICKED}",
            s.affinity_score, s.topology_spread_score
        ),
        None => format!("Successfully scheduled resources for placement in \"{cluster}\": {REASON_PICKED}"),
    }
}

/// The `Scheduled` condition's message (KubeFleet's text), counting the
/// clusters chosen.
pub fn scheduled_message(fulfilled: bool, chosen: usize) -> String {
    if fulfilled {
        format!("found all cluster needed as specified by the scheduling policy, found {chosen} cluster(s)")
    } else {
        format!("could not find all clusters needed as specified by the scheduling policy, found {chosen} cluster(s) instead")
    }
}

/// Runs one scheduling pass with the plugins the request's policy calls for.
pub fn schedule(request: &SchedulingRequest) -> SchedulingOutcome {
    Framework::for_policy(request.policy, request.namespace).schedule(request)
}
