//! `status` of a ClusterResourcePlacement / ResourcePlacement: its own
//! conditions, the resources it selected and one entry per chosen cluster.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conditions::Condition;
use crate::typed::{decode, encode};
use crate::Object;

/// Per-cluster condition: the cluster was chosen.
pub const PER_CLUSTER_SCHEDULED: &str = "Scheduled";

/// The placement's `Scheduled` condition type for its kind
/// (`ClusterResourcePlacementScheduled` / `ResourcePlacementScheduled`).
pub fn scheduled_condition_type(placement_kind: &str) -> String {
    format!("{placement_kind}Scheduled")
}

/// One selected resource, as listed in `status.selectedResources`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIdentifier {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// One chosen cluster's entry in `status.placementStatuses`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerClusterStatus {
    #[serde(default)]
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub observed_resource_index: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Fields later stages fill (failed, drifted, diffed placements...).
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

/// `status` of a placement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected_resources: Vec<ResourceIdentifier>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub observed_resource_index: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_statuses: Vec<PerClusterStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The status of a stored placement (empty if none yet).
pub fn status_of(object: &Object) -> PlacementStatus {
    object.status().and_then(|s| decode(s, "status").ok()).unwrap_or_default()
}

/// Writes a placement's status.
pub fn set_status(object: &mut Object, status: &PlacementStatus) {
    object.rest.insert("status".into(), encode(status));
}
