//! The serde types of a ManifestWork's `spec` (OCM's field names); also the
//! template of a ManifestWorkReplicaSet.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `spec` of a ManifestWork: the manifests and how to apply and delete them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestWorkSpec {
    /// The manifests.
    #[serde(default)]
    pub workload: ManifestsTemplate,
    /// What deleting the ManifestWork does to the applied objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
    /// Per-resource update strategy and status feedback.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_configs: Vec<ManifestConfigOption>,
    /// Whose identity applies the manifests on the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<ManifestWorkExecutor>,
}

/// `spec.workload`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestsTemplate {
    /// Whole Kubernetes objects.
    #[serde(default)]
    pub manifests: Vec<Value>,
}

/// `spec.deleteOption`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteOption {
    /// `Foreground` (default: objects go with the work), `Orphan` (all stay)
    /// or `SelectivelyOrphan` (the listed ones stay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
    /// With `SelectivelyOrphan`: which objects stay.
    #[serde(default, rename = "selectivelyOrphans", skip_serializing_if = "Option::is_none")]
    pub selectively_orphan: Option<SelectivelyOrphan>,
    /// Deletes the work this long after its `Complete` turned True (≥ 0).
    #[serde(default, rename = "ttlSecondsAfterFinished", skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// `deleteOption.selectivelyOrphans`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectivelyOrphan {
    /// The objects left in place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphaning_rules: Vec<ResourceIdentifier>,
}

/// Names one applied object by group, resource (plural), namespace and name.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceIdentifier {
    /// API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// Lowercase plural, e.g. `deployments` (required).
    #[serde(default)]
    pub resource: String,
    /// Object name (required).
    #[serde(default)]
    pub name: String,
    /// Empty for cluster-scoped objects.
    #[serde(default)]
    pub namespace: String,
}

/// `spec.manifestConfigs[]`: options for one applied object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestConfigOption {
    /// The object these options are for (required).
    #[serde(default)]
    pub resource_identifier: ResourceIdentifier,
    /// Status fields reported back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback_rules: Vec<FeedbackRule>,
    /// How the object is updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    /// Conditions derived from the object (`WellKnownConditions` or
    /// `CEL`), evaluated by the hub on the status the agent mirrors back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub condition_rules: Vec<ConditionRule>,
    /// `Poll` (default) or `Watch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_scrape_type: Option<String>,
}

/// A status feedback rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FeedbackRule {
    /// `WellKnownStatus` or `JSONPaths`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// With `JSONPaths`: the fields to report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_paths: Vec<JsonPath>,
}

/// One reported field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsonPath {
    /// The name the value is reported under.
    #[serde(default)]
    pub name: String,
    /// The API version to read the object as (optional).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The JSON path in the object.
    #[serde(default)]
    pub path: String,
}

/// A condition rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConditionRule {
    /// The condition type to set.
    #[serde(default)]
    pub condition: String,
    /// `WellKnownConditions` or `CEL`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// With `CEL`: expressions over `object`, all true for True.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cel_expressions: Vec<String>,
    /// Message of the condition.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A CEL expression over `object` and `result` giving the message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message_expression: String,
}

/// `manifestConfigs[].updateStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateStrategy {
    /// `Update` (default), `CreateOnly`, `ServerSideApply` or `ReadOnly`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Server-side apply options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<ServerSideApplyConfig>,
}

/// `updateStrategy.serverSideApply`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerSideApplyConfig {
    /// Take over fields other managers own.
    #[serde(default)]
    pub force: bool,
    /// Field manager; must start with `work-agent`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_manager: String,
    /// Fields the hub does not overwrite.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_fields: Vec<IgnoreField>,
}

/// Fields server-side apply leaves alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IgnoreField {
    /// `OnSpokePresent` (default) or `OnSpokeChange`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// The fields as plain JSON paths (`.spec.replicas`,
    /// `.metadata.annotations['example.com/x']`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_paths: Vec<String>,
    /// The fields as RFC 6901 JSON pointers (`/spec/replicas`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_pointers: Vec<String>,
}

/// `spec.executor`: who the member's agent acts as when it applies the
/// manifests, so the member's own RBAC limits what a ManifestWork may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestWorkExecutor {
    /// Who applies.
    #[serde(default)]
    pub subject: ExecutorSubject,
}

/// `executor.subject`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutorSubject {
    /// `ServiceAccount`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// The service account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountRef>,
}

/// A service account on the member cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAccountRef {
    /// Its namespace.
    #[serde(default)]
    pub namespace: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

impl ServiceAccountRef {
    /// The user name the member's API server knows the service account by.
    pub fn user_name(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }

    /// The groups every service account of its namespace is in, as the
    /// member's API server authenticates it.
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{}", self.namespace),
            "system:authenticated".to_string(),
        ]
    }
}
