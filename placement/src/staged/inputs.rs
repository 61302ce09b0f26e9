//! What a run's pass reads, in the planner's terms, and how to build it
//! from stored objects (so the controller only reads and passes).

use std::collections::BTreeMap;

use fleet_api::binding::{
    spec_of as binding_spec_of, ROLLED_OUT_UNDER_ANNOTATION, STATE_BOUND, STATE_SCHEDULED, STATE_UNSCHEDULED,
};
use fleet_api::placement::{apply_defaults, spec_of as placement_spec_of, PlacementSpec, EXTERNAL, ROLLING_UPDATE};
use fleet_api::snapshot::{
    index_of, number_of_clusters, policy_status_of, CONDITION_SCHEDULED, POLICY_INDEX_LABEL, RESOURCE_INDEX_LABEL,
};
use fleet_api::staged::{approval_spec_of, approval_status_of, ApprovalRequestSpec, NamespacedName};
use fleet_api::typed::decode;
use fleet_api::work::ApplyStrategy;
use fleet_api::Object;

use crate::rollout::Readiness;
use crate::snapshot::{latest_policy_snapshot, latest_resource_index};

/// A member cluster's name and labels (stages select clusters by label).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterLabels {
    /// The MemberCluster's name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

impl ClusterLabels {
    /// The labels of a stored MemberCluster.
    pub fn of(member: &Object) -> ClusterLabels {
        ClusterLabels { name: member.metadata.name.clone(), labels: member.metadata.labels.clone() }
    }
}

/// The override snapshots that apply to one cluster (frozen at
/// initialization, written into its binding when it updates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterOverrides {
    /// ClusterResourceOverride snapshot names.
    pub cluster_resource: Vec<String>,
    /// ResourceOverride snapshots.
    pub resource: Vec<NamespacedName>,
}

impl From<crate::overrides::Applicable> for ClusterOverrides {
    /// The overrides `overrides::applicable` found for a cluster (against
    /// the run's resource snapshot), as the run freezes them.
    fn from(applicable: crate::overrides::Applicable) -> ClusterOverrides {
        ClusterOverrides {
            cluster_resource: applicable.cluster,
            resource: applicable
                .resource
                .into_iter()
                .map(|r| NamespacedName { name: r.name, namespace: r.namespace })
                .collect(),
        }
    }
}

/// One binding of the run's placement, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBinding {
    /// The binding object's name.
    pub name: String,
    /// `spec.targetCluster`.
    pub cluster: String,
    /// `Scheduled`, `Bound` or `Unscheduled`.
    pub state: String,
    /// `spec.schedulingPolicySnapshotName`.
    pub policy_snapshot: String,
    /// The policy snapshot a run last rolled the binding out under
    /// (`ROLLED_OUT_UNDER_ANNOTATION`; `""` when none did).
    pub rolled_out_under: String,
    /// `spec.resourceSnapshotName` (`""` when never bound).
    pub resource_snapshot: String,
    /// `spec.clusterResourceOverrideSnapshots`.
    pub cluster_resource_override_snapshots: Vec<String>,
    /// `spec.resourceOverrideSnapshots`.
    pub resource_override_snapshots: Vec<NamespacedName>,
    /// `spec.applyStrategy`.
    pub apply_strategy: Option<ApplyStrategy>,
    /// Whether the binding carries a deletion timestamp.
    pub deleting: bool,
    /// Readiness of its Works *for the run's resource index* (see
    /// `rollout::readiness`); only read while the binding is in sync.
    pub readiness: Readiness,
}

impl RunBinding {
    /// The planner's view of a stored binding whose Works, read for the
    /// run's resource index, are `readiness`.
    pub fn of(object: &Object, readiness: Readiness) -> RunBinding {
        let spec = binding_spec_of(object);
        RunBinding {
            name: object.metadata.name.clone(),
            cluster: spec.target_cluster,
            state: spec.state,
            policy_snapshot: spec.scheduling_policy_snapshot_name,
            rolled_out_under: object.metadata.annotations.get(ROLLED_OUT_UNDER_ANNOTATION).cloned().unwrap_or_default(),
            resource_snapshot: spec.resource_snapshot_name,
            cluster_resource_override_snapshots: spec.cluster_resource_override_snapshots,
            resource_override_snapshots: spec
                .resource_override_snapshots
                .iter()
                .filter_map(|v| decode(v, "resourceOverrideSnapshots").ok())
                .collect(),
            apply_strategy: spec.apply_strategy.as_ref().and_then(|v| decode(v, "applyStrategy").ok()),
            deleting: object.metadata.deletion_timestamp.is_some(),
            readiness,
        }
    }

    /// Scheduled or Bound, and not being deleted.
    pub fn is_active(&self) -> bool {
        !self.deleting && (self.state == STATE_SCHEDULED || self.state == STATE_BOUND)
    }

    /// Unscheduled and not being deleted.
    pub fn is_unscheduled(&self) -> bool {
        !self.deleting && self.state == STATE_UNSCHEDULED
    }
}

/// An approval request of the run's scope, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunApproval {
    /// The request's name.
    pub name: String,
    /// Its spec (which run and stage it gates).
    pub spec: ApprovalRequestSpec,
    /// `Approved` True at its generation.
    pub approved: bool,
    /// `ApprovalAccepted` True at its generation.
    pub accepted: bool,
}

impl RunApproval {
    /// The planner's view of a stored approval request.
    pub fn of(object: &Object) -> RunApproval {
        let status = approval_status_of(object);
        let generation = object.metadata.generation;
        RunApproval {
            name: object.metadata.name.clone(),
            spec: approval_spec_of(object),
            approved: status.is_approved(generation),
            accepted: status.is_accepted(generation),
        }
    }
}

/// The latest policy snapshot of the run's placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySnapshotFacts {
    /// Its name (`<placement>-<index>`).
    pub name: String,
    /// Its index label, if readable.
    pub index: Option<u64>,
    /// The `number-of-clusters` annotation (PickN).
    pub number_of_clusters: Option<i64>,
    /// The scheduler's verdict for the placement's current generation:
    /// `None` while it has not scheduled it yet, else whether the policy
    /// is fulfilled.
    pub scheduled: Option<bool>,
}

/// The run's placement and its snapshots, as the planner sees them.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlacement {
    /// The placement's name.
    pub name: String,
    /// Its spec, defaulted.
    pub spec: PlacementSpec,
    /// Its latest policy snapshot, if any.
    pub latest_policy_snapshot: Option<PolicySnapshotFacts>,
    /// The indexes of its resource snapshot groups that exist.
    pub resource_indexes: Vec<u64>,
    /// The latest resource snapshot group's index, if any.
    pub latest_resource_index: Option<u64>,
}

impl RunPlacement {
    /// The facts of a stored placement (`None` when it is being deleted:
    /// a run treats that as gone) from its policy and resource snapshots.
    pub fn read(
        placement: &Object,
        policy_snapshots: &[Object],
        resource_snapshots: &[Object],
    ) -> Option<RunPlacement> {
        if placement.metadata.deletion_timestamp.is_some() {
            return None;
        }
        let mut spec = placement_spec_of(placement);
        apply_defaults(&mut spec);
        let latest_policy_snapshot = latest_policy_snapshot(policy_snapshots).map(|s| {
            let status = policy_status_of(s);
            let current = status.observed_placement_generation.unwrap_or(0) >= placement.metadata.generation;
            let verdict = fleet_api::conditions::find(&status.conditions, CONDITION_SCHEDULED).map(|c| c.is_true());
            PolicySnapshotFacts {
                name: s.metadata.name.clone(),
                index: index_of(s, POLICY_INDEX_LABEL),
                number_of_clusters: number_of_clusters(s),
                scheduled: verdict.filter(|_| current),
            }
        });
        let mut resource_indexes: Vec<u64> =
            resource_snapshots.iter().filter_map(|s| index_of(s, RESOURCE_INDEX_LABEL)).collect();
        resource_indexes.sort_unstable();
        resource_indexes.dedup();
        Some(RunPlacement {
            name: placement.metadata.name.clone(),
            spec,
            latest_policy_snapshot,
            resource_indexes,
            latest_resource_index: latest_resource_index(resource_snapshots),
        })
    }

    /// `spec.strategy.type`, defaulted.
    pub fn strategy_type(&self) -> &str {
        self.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()).unwrap_or(ROLLING_UPDATE)
    }

    /// Whether rollout is handed to staged update runs.
    pub fn is_external(&self) -> bool {
        self.strategy_type() == EXTERNAL
    }

    /// `spec.strategy.applyStrategy` with its defaults spelled out, as a
    /// run records it and hands it to bindings.
    pub fn apply_strategy(&self) -> ApplyStrategy {
        self.spec.strategy.as_ref().and_then(|s| s.apply_strategy.as_ref()).cloned().unwrap_or_default().with_defaults()
    }
}
