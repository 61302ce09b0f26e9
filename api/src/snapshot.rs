//! Resource snapshots (`ClusterResourceSnapshot` / `ResourceSnapshot`) and
//! scheduling policy snapshots (`ClusterSchedulingPolicySnapshot` /
//! `SchedulingPolicySnapshot`): immutable, numbered copies of what a
//! placement selected and of its policy, made by the leader's controllers.
//! Here are their shapes, labels, annotations and names; what goes into them
//! is decided in the `placement` crate.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::binding::ClusterDecision;
use crate::conditions::Condition;
use crate::placement::{PlacementPolicy, RESOURCE_PLACEMENT};
use crate::typed::{decode, encode};
use crate::validation::ValidationError;
use crate::Object;

/// Kind of a ClusterResourcePlacement's resource snapshots.
pub const CLUSTER_RESOURCE_SNAPSHOT: &str = "ClusterResourceSnapshot";
/// Kind of a ResourcePlacement's resource snapshots.
pub const RESOURCE_SNAPSHOT: &str = "ResourceSnapshot";
/// Kind of a ClusterResourcePlacement's policy snapshots.
pub const CLUSTER_SCHEDULING_POLICY_SNAPSHOT: &str = "ClusterSchedulingPolicySnapshot";
/// Kind of a ResourcePlacement's policy snapshots.
pub const SCHEDULING_POLICY_SNAPSHOT: &str = "SchedulingPolicySnapshot";

/// Label: the placement a snapshot or binding belongs to.
pub const PARENT_PLACEMENT_LABEL: &str = "kubernetes-fleet.io/parent-CRP";
/// Label: the index of a resource snapshot group.
pub const RESOURCE_INDEX_LABEL: &str = "kubernetes-fleet.io/resource-index";
/// Label: the index of a policy snapshot.
pub const POLICY_INDEX_LABEL: &str = "kubernetes-fleet.io/policy-index";
/// Label: `"true"` on the newest snapshot (of each sort), `"false"` on the others.
pub const IS_LATEST_LABEL: &str = "kubernetes-fleet.io/is-latest-snapshot";
/// Annotation: sha256 of a resource snapshot group's content.
pub const RESOURCE_HASH_ANNOTATION: &str = "kubernetes-fleet.io/resource-hash";
/// Annotation on the first snapshot of a group: how many snapshots the group has.
pub const NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION: &str = "kubernetes-fleet.io/number-of-resource-snapshots";
/// Annotation on a sub-snapshot: its position in the group (1-based).
pub const SUBINDEX_ANNOTATION: &str = "kubernetes-fleet.io/subindex-of-resource-snapshot";
/// Annotation on a policy snapshot: the PickN count it is scheduled for.
pub const NUMBER_OF_CLUSTERS_ANNOTATION: &str = "kubernetes-fleet.io/number-of-clusters";
/// Annotation on a policy snapshot: the placement generation it was made from.
pub const PLACEMENT_GENERATION_ANNOTATION: &str = "kubernetes-fleet.io/CRP-generation";

/// Condition type of a policy snapshot (and of the placement's mirror).
pub const CONDITION_SCHEDULED: &str = "Scheduled";
/// Reason: every cluster the policy asks for was found.
pub const REASON_FULFILLED: &str = "SchedulingPolicyFulfilled";
/// Reason: fewer clusters than the policy asks for were found.
pub const REASON_UNFULFILLED: &str = "SchedulingPolicyUnfulfilled";

/// `spec` of a resource snapshot: the selected objects, cleaned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSnapshotSpec {
    #[serde(default)]
    pub selected_resources: Vec<Value>,
}

/// `spec` of a policy snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicySnapshotSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PlacementPolicy>,
    /// Hex sha256 of the policy (without `numberOfClusters`).
    #[serde(default)]
    pub policy_hash: String,
}

/// `status` of a policy snapshot: the scheduler's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicySnapshotStatus {
    /// The placement generation this status was computed for.
    #[serde(default, rename = "observedCRPGeneration", skip_serializing_if = "Option::is_none")]
    pub observed_placement_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Chosen clusters, then some not chosen, then filtered ones (≤ 1000).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_clusters: Vec<ClusterDecision>,
}

/// The snapshot kinds of a placement kind: (resource, policy).
pub fn snapshot_kinds(placement_kind: &str) -> (&'static str, &'static str) {
    if placement_kind == RESOURCE_PLACEMENT {
        (RESOURCE_SNAPSHOT, SCHEDULING_POLICY_SNAPSHOT)
    } else {
        (CLUSTER_RESOURCE_SNAPSHOT, CLUSTER_SCHEDULING_POLICY_SNAPSHOT)
    }
}

/// Name of the first (or only) resource snapshot of group `index`.
pub fn resource_snapshot_name(placement: &str, index: u64) -> String {
    format!("{placement}-{index}-snapshot")
}

/// Name of sub-snapshot `sub` (1-based) of group `index`.
pub fn resource_sub_snapshot_name(placement: &str, index: u64, sub: usize) -> String {
    format!("{placement}-{index}-{sub}")
}

/// Name of policy snapshot `index`.
pub fn policy_snapshot_name(placement: &str, index: u64) -> String {
    format!("{placement}-{index}")
}

/// The index in a snapshot's index label (resource or policy), if any.
pub fn index_of(object: &Object, label: &str) -> Option<u64> {
    object.metadata.labels.get(label).and_then(|v| v.parse().ok())
}

/// Whether a snapshot is labelled the latest.
pub fn is_latest(object: &Object) -> bool {
    object.metadata.labels.get(IS_LATEST_LABEL).is_some_and(|v| v == "true")
}

/// The spec of a stored resource snapshot.
pub fn resource_spec_of(object: &Object) -> ResourceSnapshotSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// The spec of a stored policy snapshot.
pub fn policy_spec_of(object: &Object) -> PolicySnapshotSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// The status of a stored policy snapshot.
pub fn policy_status_of(object: &Object) -> PolicySnapshotStatus {
    object.status().and_then(|s| decode(s, "status").ok()).unwrap_or_default()
}

/// Writes a policy snapshot's status.
pub fn set_policy_status(object: &mut Object, status: &PolicySnapshotStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// The `number-of-clusters` annotation of a policy snapshot.
pub fn number_of_clusters(object: &Object) -> Option<i64> {
    object.metadata.annotations.get(NUMBER_OF_CLUSTERS_ANNOTATION).and_then(|v| v.parse().ok())
}

/// Checks that a snapshot's spec has only known fields.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let raw = object.spec().cloned().unwrap_or(Value::Object(Default::default()));
    let result = match object.kind.as_str() {
        CLUSTER_RESOURCE_SNAPSHOT | RESOURCE_SNAPSHOT => decode::<ResourceSnapshotSpec>(&raw, "spec").map(|_| ()),
        _ => decode::<PolicySnapshotSpec>(&raw, "spec").map(|_| ()),
    };
    match result {
        Ok(()) => Ok(()),
        Err(e) => ValidationError::check(&object.kind, &object.metadata.name, vec![e]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kubefleet() {
        assert_eq!(resource_snapshot_name("web", 0), "web-0-snapshot");
        assert_eq!(resource_sub_snapshot_name("web", 2, 1), "web-2-1");
        assert_eq!(policy_snapshot_name("web", 3), "web-3");
        assert_eq!(snapshot_kinds("ResourcePlacement"), (RESOURCE_SNAPSHOT, SCHEDULING_POLICY_SNAPSHOT));
    }

    #[test]
    fn refuses_unknown_snapshot_fields() {
        let mut o: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ClusterSchedulingPolicySnapshot",
            "metadata": {"name": "web-0"}, "spec": {"policyHsh": "x"}
        }))
        .unwrap();
        let e = prepare(&mut o).unwrap_err().to_string();
        assert!(e.contains("policyHsh"), "{e}");
    }
}
