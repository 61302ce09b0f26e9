//! `status` of a ManifestWork: the work's conditions and, per manifest, its
//! identity, conditions and status feedback.

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;

/// `status` of a ManifestWork, written from the agent's reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkStatus {
    /// `Applied`, `Available`, `Progressing`, `Degraded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Per manifest.
    #[serde(default)]
    pub resource_status: ManifestResourceStatus,
}

/// `status.resourceStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestResourceStatus {
    /// One entry per manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<ManifestCondition>,
}

/// The state of one manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestCondition {
    /// Which manifest.
    #[serde(default)]
    pub resource_meta: ManifestResourceMeta,
    /// Values read back by the feedback rules.
    #[serde(default, skip_serializing_if = "StatusFeedback::is_empty")]
    pub status_feedback: StatusFeedback,
    /// `Applied`, `Available`, ...
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Identifies a manifest: its position and its object.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestResourceMeta {
    /// Index in `spec.workload.manifests`.
    #[serde(default)]
    pub ordinal: i64,
    /// API group.
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Lowercase plural.
    #[serde(default)]
    pub resource: String,
    /// Object name.
    #[serde(default)]
    pub name: String,
    /// Object namespace (empty for cluster-scoped objects).
    #[serde(default)]
    pub namespace: String,
}

/// `statusFeedback`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusFeedback {
    /// The reported values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<FeedbackValue>,
}

impl StatusFeedback {
    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// One reported value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackValue {
    /// The rule's name for it.
    #[serde(default)]
    pub name: String,
    /// The value.
    #[serde(default)]
    pub field_value: FieldValue,
}

/// A typed value: exactly one of the fields is set, as `type` says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldValue {
    /// `Integer`, `String`, `Boolean` or `JsonRaw`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// With `Integer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integer: Option<i64>,
    /// With `String`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// With `Boolean`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    /// With `JsonRaw`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_raw: Option<String>,
}
