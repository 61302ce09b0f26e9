//! `ClusterResourcePlacementStatus`: the namespaced copy of a
//! ClusterResourcePlacement's status that the hub keeps when the placement's
//! `statusReportingScope` is `NamespaceAccessible`, so that whoever may read
//! the selected namespace may read how its placement is doing. KubeFleet's
//! layout: `sourceStatus` (the placement's status without its
//! `ClusterResourcePlacementStatusSynced` condition) and `lastUpdatedTime`,
//! at the top level of the object (there is no `spec` or `status`).
//!
//! Only the hub's placement controller writes these objects.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::object::OwnerReference;
use crate::typed::{decode, encode};
use crate::{Object, ObjectMeta};

use super::{PlacementSpec, PlacementStatus, CLUSTER_RESOURCE_PLACEMENT, NAMESPACE_ACCESSIBLE};

/// Kind of the namespaced status mirror.
pub const CLUSTER_RESOURCE_PLACEMENT_STATUS: &str = "ClusterResourcePlacementStatus";
/// The placement condition saying whether the mirror is up to date.
pub const STATUS_SYNCED_CONDITION: &str = "ClusterResourcePlacementStatusSynced";
/// Reason of a True [`STATUS_SYNCED_CONDITION`].
pub const REASON_STATUS_SYNC_SUCCEEDED: &str = "StatusSyncSucceeded";
/// Reason of a False [`STATUS_SYNCED_CONDITION`].
pub const REASON_STATUS_SYNC_FAILED: &str = "StatusSyncFailed";

/// The typed top-level fields of a ClusterResourcePlacementStatus.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStatusMirror {
    /// The ClusterResourcePlacement's status, copied by the hub (without
    /// its `ClusterResourcePlacementStatusSynced` condition).
    #[serde(default)]
    pub source_status: PlacementStatus,
    /// When the hub last wrote this object (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_updated_time: String,
}

/// Whether a ClusterResourcePlacement with `spec` mirrors its status.
pub fn is_namespace_accessible(kind: &str, spec: &PlacementSpec) -> bool {
    kind == CLUSTER_RESOURCE_PLACEMENT && spec.status_reporting_scope() == NAMESPACE_ACCESSIBLE
}

/// The namespace a namespace-accessible placement mirrors its status into:
/// the name its one `Namespace` selector gives (`None` when that selector
/// names none, e.g. selects by label).
pub fn mirror_namespace(spec: &PlacementSpec) -> Option<&str> {
    spec.resource_selectors
        .iter()
        .find(|s| s.kind == "Namespace")
        .and_then(|s| s.name.as_deref())
        .filter(|n| !n.is_empty())
}

/// The status a mirror carries: the placement's, without the condition
/// about the mirror itself.
pub fn source_status(status: &PlacementStatus) -> PlacementStatus {
    let mut copy = status.clone();
    copy.conditions.retain(|c| c.type_ != STATUS_SYNCED_CONDITION);
    copy
}

/// The typed fields of a stored mirror (empty when they do not decode).
pub fn mirror_of(object: &Object) -> PlacementStatusMirror {
    let raw = Value::Object(object.rest.clone().into_iter().collect());
    decode(&raw, "").unwrap_or_default()
}

/// The mirror of `placement` in `namespace` carrying `status`, written at
/// `now`, owned by the placement (so it goes when the placement does).
pub fn build_mirror(placement: &Object, namespace: &str, status: &PlacementStatus, now: &str) -> Object {
    let metadata = ObjectMeta {
        name: placement.metadata.name.clone(),
        namespace: Some(namespace.to_string()),
        owner_references: vec![OwnerReference::controller_of(placement)],
        ..Default::default()
    };
    let fields = PlacementStatusMirror { source_status: source_status(status), last_updated_time: now.to_string() };
    let rest = match encode(&fields) {
        Value::Object(map) => map,
        _ => Default::default(),
    };
    Object {
        api_version: format!("{}/v1beta1", crate::kinds::FLEET_PLACEMENT_GROUP),
        kind: CLUSTER_RESOURCE_PLACEMENT_STATUS.to_string(),
        metadata,
        rest,
    }
}
