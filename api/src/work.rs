//! `Work`: the manifests one member cluster must apply, in the hub namespace
//! `fleet-member-<cluster>`, and the agent's report of how that went.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conditions::Condition;
use crate::typed::{decode, encode};
use crate::validation::{check_enum, FieldError, ValidationError};
use crate::Object;

/// Work condition: every manifest was applied.
pub const CONDITION_APPLIED: &str = "Applied";
/// Work condition: every manifest is available (or untrackable).
pub const CONDITION_AVAILABLE: &str = "Available";
/// Reasons of the Work conditions (docs/spec/rollout.md).
pub const REASON_ALL_APPLIED: &str = "AllManifestsApplied";
/// Some manifest failed to apply.
pub const REASON_SOME_NOT_APPLIED: &str = "SomeManifestsAreNotApplied";
/// Every manifest is available.
pub const REASON_ALL_AVAILABLE: &str = "AllManifestsAvailable";
/// Some manifest is not available yet.
pub const REASON_SOME_NOT_AVAILABLE: &str = "SomeManifestsAreNotAvailable";
/// Everything is available or untrackable, at least one untrackable.
pub const REASON_NOT_TRACKABLE: &str = "WorkNotTrackable";
/// Work (and manifest) condition of a `ReportDiff` Work, in place of
/// `Applied`/`Available`: the differences from the member were computed.
pub const CONDITION_DIFF_REPORTED: &str = "DiffReported";
/// `DiffReported=True`: every manifest's differences were computed.
pub const REASON_ALL_DIFF_REPORTED: &str = "AllManifestsDiffReported";
/// `DiffReported=False`: some manifest's differences could not be computed.
pub const REASON_SOME_DIFF_NOT_REPORTED: &str = "SomeManifestsHaveNotReportedDiff";
/// Manifest `DiffReported=True`: the member's object matches the manifest.
pub const REASON_NO_DIFF_FOUND: &str = "NoDiffFound";
/// Manifest `DiffReported=True`: differences are listed in `diffDetails`.
pub const REASON_FOUND_DIFF: &str = "FoundDiff";
/// Manifest `DiffReported=False`: the comparison failed (the message says why).
pub const REASON_DIFF_FAILED: &str = "Failed";
/// `applyStrategy.type` that applies nothing and reports differences.
pub const APPLY_TYPE_REPORT_DIFF: &str = "ReportDiff";

/// `spec.workload`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    #[serde(default)]
    pub manifests: Vec<Value>,
}

/// `serverSideApplyConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerSideApplyConfig {
    #[serde(default)]
    pub force: bool,
}

/// How the agent applies (docs/spec/rollout.md, "Apply strategy").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyStrategy {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison_option: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_apply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_take_over: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_co_ownership: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply_config: Option<ServerSideApplyConfig>,
}

impl ApplyStrategy {
    /// `ClientSideApply` (default), `ServerSideApply` or `ReportDiff`.
    pub fn apply_type(&self) -> &str {
        self.type_.as_deref().unwrap_or("ClientSideApply")
    }

    /// Whether the type is `ReportDiff` (nothing is applied; status speaks of `DiffReported`).
    pub fn reports_diff(&self) -> bool {
        self.apply_type() == APPLY_TYPE_REPORT_DIFF
    }

    /// The strategy with every default spelled out, as KubeFleet records
    /// it where it copies a placement's strategy (a staged update run's
    /// status): `ClientSideApply`, `PartialComparison`, `whenToApply:
    /// Always`, `whenToTakeOver: Always`, and for `ServerSideApply` a
    /// `serverSideApplyConfig` without force. The agent reads an absent
    /// field as the same default, so this changes no behaviour.
    pub fn with_defaults(&self) -> ApplyStrategy {
        let mut out = self.clone();
        let type_ = out.type_.get_or_insert_with(|| "ClientSideApply".to_string()).clone();
        out.comparison_option.get_or_insert_with(|| "PartialComparison".to_string());
        out.when_to_apply.get_or_insert_with(|| "Always".to_string());
        out.when_to_take_over.get_or_insert_with(|| "Always".to_string());
        if type_ == "ServerSideApply" {
            out.server_side_apply_config.get_or_insert_with(ServerSideApplyConfig::default);
        }
        out
    }
}

#[cfg(test)]
mod apply_strategy_tests {
    use super::*;

    #[test]
    fn defaults_are_spelled_out_and_given_values_kept() {
        let all = ApplyStrategy::default().with_defaults();
        assert_eq!(all.apply_type(), "ClientSideApply");
        assert_eq!(all.comparison_option.as_deref(), Some("PartialComparison"));
        assert_eq!(all.when_to_apply.as_deref(), Some("Always"));
        assert_eq!(all.when_to_take_over.as_deref(), Some("Always"));
        assert_eq!((all.server_side_apply_config, all.allow_co_ownership), (None, None));
        let given = ApplyStrategy {
            type_: Some("ServerSideApply".into()),
            when_to_take_over: Some("Never".into()),
            ..Default::default()
        }
        .with_defaults();
        assert_eq!(given.when_to_take_over.as_deref(), Some("Never"));
        assert_eq!(given.server_side_apply_config, Some(ServerSideApplyConfig { force: false }));
        assert_eq!(given.with_defaults(), given, "idempotent");
    }
}

/// `spec` of a Work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkSpec {
    #[serde(default)]
    pub workload: Workload,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_strategy: Option<ApplyStrategy>,
    /// What happens to the applied objects when the Work is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_options: Option<DeleteOptions>,
    /// Whether the agent reports the applied objects' status back
    /// (`backReportedStatus` of each manifest condition); from the
    /// placement's `strategy.reportBackStrategy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_back_strategy: Option<ReportBackStrategy>,
    /// Fields of every manifest the agent leaves as the member cluster has
    /// them (Fleet's addition, for a ManifestWork's `ignoreFields`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_fields: Vec<IgnoreFields>,
    /// Values the agent reads from every applied object into its manifest
    /// condition's `statusFeedback` (Fleet's addition, for a ManifestWork's
    /// `feedbackRules`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback_rules: Vec<crate::ocm::manifestwork::FeedbackRule>,
    /// Who the agent acts as on the member when it applies the manifests
    /// (Fleet's addition, for a ManifestWork's `executor`): a manifest the
    /// subject may not create, update, patch, get (and delete, unless the
    /// Work abandons its objects) is not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<crate::ocm::manifestwork::ManifestWorkExecutor>,
}

/// `statusFeedback` of a Work's manifest condition: the values the
/// Work's `feedbackRules` read from the object on the member, and when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkStatusFeedback {
    /// The values read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<crate::ocm::manifestwork::FeedbackValue>,
    /// When the agent read them (RFC 3339); a change goes out at most once
    /// per 30 s per Work unless the status is written anyway.
    #[serde(default)]
    pub observation_time: String,
}

/// When the agent keeps the member's value of some fields.
pub const IGNORE_ON_SPOKE_PRESENT: &str = "OnSpokePresent";
/// Only while the member changed them and the Work did not.
pub const IGNORE_ON_SPOKE_CHANGE: &str = "OnSpokeChange";

/// One `ignoreFields` entry of a Work: fields (JSON pointers) the agent
/// leaves alone, and when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IgnoreFields {
    /// `OnSpokePresent`: once the object exists on the member, these fields
    /// keep the member's values (or stay absent); `OnSpokeChange`: a field
    /// keeps the member's value while it differs from what the Work last
    /// asked and the Work still asks the same.
    pub condition: String,
    /// The fields, as RFC 6901 pointers (`/spec/replicas`).
    pub json_pointers: Vec<String>,
}

impl IgnoreFields {
    /// The field errors of the entry at `path`.
    pub fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let allowed = [IGNORE_ON_SPOKE_PRESENT, IGNORE_ON_SPOKE_CHANGE];
        if self.condition.is_empty() {
            errors.push(FieldError::required(format!("{path}.condition"), "OnSpokePresent or OnSpokeChange"));
        } else {
            check_enum(&mut errors, &format!("{path}.condition"), Some(&self.condition), &allowed);
        }
        if self.json_pointers.is_empty() {
            errors.push(FieldError::required(format!("{path}.jsonPointers"), "at least one JSON pointer is required"));
        }
        for (i, pointer) in self.json_pointers.iter().enumerate() {
            if let Err(why) = crate::ignore_paths::parse_pointer(pointer) {
                errors.push(FieldError::invalid(
                    format!("{path}.jsonPointers[{i}]"),
                    crate::validation::quote(pointer),
                    why,
                ));
            }
        }
        errors
    }
}

/// `reportBackStrategy` of a placement's strategy and of a Work (KubeFleet's):
/// whether the member's status of each placed object is mirrored to the hub.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReportBackStrategy {
    /// `Disabled` (the default: nothing is reported back) or `Mirror` (the
    /// status is copied verbatim to `destination`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// With `Mirror`, required: `WorkAPI` (into each manifest condition's
    /// `backReportedStatus` of the Work on the hub) or `OriginalResource`
    /// (also onto the hub object's own status, when the placement selects
    /// exactly one cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
}

/// Report-back strategy types.
pub const REPORT_BACK_TYPES: &[&str] = &[REPORT_BACK_DISABLED, REPORT_BACK_MIRROR];
/// Nothing is reported back (the default).
pub const REPORT_BACK_DISABLED: &str = "Disabled";
/// The member's status is mirrored to the hub.
pub const REPORT_BACK_MIRROR: &str = "Mirror";
/// Report-back destinations.
pub const REPORT_BACK_DESTINATIONS: &[&str] = &[DESTINATION_ORIGINAL_RESOURCE, DESTINATION_WORK_API];
/// Onto the hub's original object's status.
pub const DESTINATION_ORIGINAL_RESOURCE: &str = "OriginalResource";
/// Into the Work's manifest conditions.
pub const DESTINATION_WORK_API: &str = "WorkAPI";

impl ReportBackStrategy {
    /// Whether statuses are mirrored at all.
    pub fn mirrors(&self) -> bool {
        self.type_.as_deref() == Some(REPORT_BACK_MIRROR)
    }

    /// The field errors of a strategy at `path`: known type and
    /// destination, and a destination with `Mirror` (KubeFleet's rule and
    /// message).
    pub fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_enum(&mut errors, &format!("{path}.type"), self.type_.as_deref(), REPORT_BACK_TYPES);
        check_enum(&mut errors, &format!("{path}.destination"), self.destination.as_deref(), REPORT_BACK_DESTINATIONS);
        if self.mirrors() && self.destination.as_deref().unwrap_or("").is_empty() {
            errors.push(FieldError::required(
                format!("{path}.destination"),
                "when reportBackStrategy.type is 'Mirror', a destination must be specified",
            ));
        }
        errors
    }
}

/// `backReportedStatus` of a manifest condition: the member's status of the
/// applied object, as `{apiVersion, kind, status}`, and when it was observed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackReportedStatus {
    /// `{apiVersion, kind, status}` of the object on the member.
    #[serde(default)]
    pub observed_status: Value,
    /// When the agent observed it (RFC 3339).
    #[serde(default)]
    pub observation_time: String,
}

/// `spec.deleteOptions` of a Work (from the placement's `deleteStrategy`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteOptions {
    /// `Delete` (default: the objects go with the Work) or `Abandon` (they stay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
}

impl WorkSpec {
    /// Whether deleting this Work leaves its objects on the member cluster.
    pub fn abandons_on_delete(&self) -> bool {
        self.delete_options.as_ref().and_then(|d| d.propagation_policy.as_deref()) == Some("Abandon")
    }
}

/// Names one manifest of a Work in status.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkResourceIdentifier {
    pub ordinal: i64,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
}

/// The conditions of one manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestCondition {
    pub identifier: WorkResourceIdentifier,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_details: Option<Value>,
    /// The member's status of the object, with `reportBackStrategy` Mirror.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_reported_status: Option<BackReportedStatus>,
    /// What the Work's `feedbackRules` read from the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_feedback: Option<WorkStatusFeedback>,
}

/// `status` of a Work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_conditions: Vec<ManifestCondition>,
}

/// Checks a Work status as an agent reports it: it decodes as a
/// [`WorkStatus`] (wrong types refused with their path), and every
/// condition, of the Work and of each manifest, is well-formed
/// ([`crate::conditions::validate_conditions`]); manifest ordinals are not
/// negative. The size is bounded where every write is.
pub fn validate_status(object: &Object) -> Result<(), ValidationError> {
    let status: WorkStatus = crate::typed::decode_status(object)?;
    let mut errors = crate::conditions::validate_conditions(&status.conditions, "status.conditions");
    for (i, manifest) in status.manifest_conditions.iter().enumerate() {
        let at = format!("status.manifestConditions[{i}]");
        if manifest.identifier.ordinal < 0 {
            errors.push(FieldError::invalid(
                format!("{at}.identifier.ordinal"),
                manifest.identifier.ordinal,
                "must be 0 or more",
            ));
        }
        errors.extend(crate::conditions::validate_conditions(&manifest.conditions, &format!("{at}.conditions")));
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}

/// The spec of a stored Work (admission guarantees it decodes).
pub fn spec_of(object: &Object) -> WorkSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// Whether a stored Work's `applyStrategy.type` is `ReportDiff`, read
/// without decoding its manifests (readiness and status folding ask often).
pub fn reports_diff(object: &Object) -> bool {
    object.spec().and_then(|s| s.pointer("/applyStrategy/type")).and_then(Value::as_str) == Some(APPLY_TYPE_REPORT_DIFF)
}

/// Label: the namespace of the ResourcePlacement a Work belongs to (RP
/// only); the placement's name is in `snapshot::PARENT_PLACEMENT_LABEL`.
pub const PARENT_NAMESPACE_LABEL: &str = "kubernetes-fleet.io/parent-placement-namespace";

/// The placement a Work was rendered for, as its labels name it: the agent
/// stamps it on what it applies, and `fleetctl origin` reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementRef {
    /// `ClusterResourcePlacement` or `ResourcePlacement`.
    pub kind: String,
    /// The ResourcePlacement's namespace; empty for a ClusterResourcePlacement.
    pub namespace: String,
    /// The placement's name.
    pub name: String,
}

impl PlacementRef {
    /// The placement of a Work, from its labels; `None` for a Work no
    /// placement rendered (an OCM ManifestWork's, say).
    pub fn of_work(work: &Object) -> Option<PlacementRef> {
        let labels = &work.metadata.labels;
        let name = labels.get(crate::snapshot::PARENT_PLACEMENT_LABEL).filter(|n| !n.is_empty())?;
        let (kind, namespace) = match labels.get(PARENT_NAMESPACE_LABEL).filter(|n| !n.is_empty()) {
            Some(ns) => (crate::placement::RESOURCE_PLACEMENT, ns.clone()),
            None => (crate::placement::CLUSTER_RESOURCE_PLACEMENT, String::new()),
        };
        Some(PlacementRef { kind: kind.to_string(), namespace, name: name.clone() })
    }
}

impl std::fmt::Display for PlacementRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// The status of a stored Work.
pub fn status_of(object: &Object) -> WorkStatus {
    object.status().and_then(|s| decode(s, "status").ok()).unwrap_or_default()
}

/// Writes a typed status into the object.
pub fn set_status(object: &mut Object, status: &WorkStatus) {
    object.rest.insert("status".into(), encode(status));
}

const APPLY_TYPES: &[&str] = &["ClientSideApply", "ServerSideApply", APPLY_TYPE_REPORT_DIFF];
const COMPARISONS: &[&str] = &["PartialComparison", "FullComparison"];
const WHEN_TO_APPLY: &[&str] = &["Always", "IfNotDrifted"];
const WHEN_TO_TAKE_OVER: &[&str] = &["Always", "IfNoDiff", "Never"];

/// Checks that each manifest (found at `path[i]`) is an object with
/// `apiVersion`, `kind` and `metadata`: what an agent needs to apply it.
/// Shared by Fleet's Work and OCM's ManifestWork.
pub fn validate_manifests(manifests: &[Value], path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, manifest) in manifests.iter().enumerate() {
        let path = format!("{path}[{i}]");
        let Some(map) = manifest.as_object() else {
            errors.push(FieldError::invalid(path, "<value>", "must be an object"));
            continue;
        };
        for field in ["apiVersion", "kind"] {
            if map.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                errors.push(FieldError::required(format!("{path}.{field}"), format!("{field} is required")));
            }
        }
        if !map.get("metadata").is_some_and(Value::is_object) {
            errors.push(FieldError::required(format!("{path}.metadata"), "metadata is required"));
        }
    }
    errors
}

/// Validates a Work: known fields only, each manifest an object with
/// `apiVersion`, `kind` and `metadata`, apply strategy values from the spec.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let raw = object.spec().cloned().unwrap_or(Value::Object(Default::default()));
    let spec: WorkSpec = match decode(&raw, "spec") {
        Ok(s) => s,
        Err(e) => return ValidationError::check(&object.kind, &object.metadata.name, vec![e]),
    };
    let mut errors = validate_manifests(&spec.workload.manifests, "spec.workload.manifests");
    if let Some(s) = &spec.apply_strategy {
        check_enum(&mut errors, "spec.applyStrategy.type", s.type_.as_deref(), APPLY_TYPES);
        check_enum(&mut errors, "spec.applyStrategy.comparisonOption", s.comparison_option.as_deref(), COMPARISONS);
        check_enum(&mut errors, "spec.applyStrategy.whenToApply", s.when_to_apply.as_deref(), WHEN_TO_APPLY);
        check_enum(&mut errors, "spec.applyStrategy.whenToTakeOver", s.when_to_take_over.as_deref(), WHEN_TO_TAKE_OVER);
    }
    if let Some(d) = &spec.delete_options {
        check_enum(
            &mut errors,
            "spec.deleteOptions.propagationPolicy",
            d.propagation_policy.as_deref(),
            &["Delete", "Abandon"],
        );
    }
    if let Some(r) = &spec.report_back_strategy {
        errors.extend(r.validate("spec.reportBackStrategy"));
    }
    for (i, ignore) in spec.ignore_fields.iter().enumerate() {
        errors.extend(ignore.validate(&format!("spec.ignoreFields[{i}]")));
    }
    if let Some(executor) = &spec.executor {
        errors.extend(crate::ocm::manifestwork::validate_executor(executor, "spec.executor"));
    }
    for (i, rule) in spec.feedback_rules.iter().enumerate() {
        let path = format!("spec.feedbackRules[{i}]");
        check_enum(&mut errors, &format!("{path}.type"), Some(&rule.type_), &["WellKnownStatus", "JSONPaths"]);
        for (j, p) in rule.json_paths.iter().enumerate() {
            if let Err(why) = crate::ocm::manifestwork::feedback::parse(&p.path) {
                errors.push(FieldError::invalid(
                    format!("{path}.jsonPaths[{j}].path"),
                    crate::validation::quote(&p.path),
                    why,
                ));
            }
        }
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_status_is_checked_field_by_field() {
        let work = |status: Value| -> Object {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
                "metadata": {"name": "w", "namespace": "fleet-member-a"}, "status": status,
            }))
            .expect("a Work")
        };
        let good = serde_json::json!({"conditions": [
            {"type": "Applied", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "manifestConditions": [{"identifier": {"ordinal": 0, "kind": "ConfigMap", "name": "x"},
                "conditions": [{"type": "Available", "status": "Unknown"}]}]});
        assert!(validate_status(&work(good)).is_ok());
        let bad = serde_json::json!({"conditions": [
            {"type": "Applied", "status": "Yes"}, {"type": "Applied", "status": "True", "lastTransitionTime": "now"}],
            "manifestConditions": [{"identifier": {"ordinal": -1}, "conditions": [{"type": "", "status": "True"}]}]});
        let text = validate_status(&work(bad)).unwrap_err().to_string();
        for part in [
            "status.conditions[0].status",
            "\"Yes\"",
            "status.conditions[1].type",
            "status.conditions[1].lastTransitionTime",
            "status.manifestConditions[0].identifier.ordinal",
            "status.manifestConditions[0].conditions[0].type",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        let floats = serde_json::json!({"conditions": [1.5, 2.5]});
        assert!(validate_status(&work(floats)).unwrap_err().to_string().contains("status.conditions"));
    }
    use serde_json::json;

    fn work(spec: Value) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "fleet-member-a"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn accepts_manifests_and_strategies_from_the_spec() {
        let mut w = work(json!({"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
        ]}, "applyStrategy": {"type": "ServerSideApply", "serverSideApplyConfig": {"force": true}}}));
        prepare(&mut w).unwrap();
        assert_eq!(spec_of(&w).apply_strategy.unwrap().apply_type(), "ServerSideApply");
    }

    #[test]
    fn names_every_bad_manifest_and_value() {
        let mut w = work(json!({"workload": {"manifests": [{"kind": "ConfigMap", "metadata": {}}, 5]},
            "applyStrategy": {"type": "Replace"}}));
        let e = prepare(&mut w).unwrap_err().to_string();
        assert!(e.contains("spec.workload.manifests[0].apiVersion: Required value"), "{e}");
        assert!(e.contains("spec.workload.manifests[1]: Invalid value"), "{e}");
        assert!(e.contains("spec.applyStrategy.type: Unsupported value: \"Replace\""), "{e}");
        let mut w = work(json!({"workload": {"manifest": []}}));
        assert!(prepare(&mut w).unwrap_err().to_string().contains("spec.workload.manifest"));
    }

    #[test]
    fn an_executor_is_checked_as_a_manifestworks() {
        let sa = |namespace: &str| json!({"subject": {"type": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": "deployer"}}});
        let mut w = work(json!({"workload": {"manifests": []}, "executor": sa("app")}));
        prepare(&mut w).expect("a service account executor");
        let mut w = work(json!({"workload": {"manifests": []}, "executor": sa("Bad_NS")}));
        let e = prepare(&mut w).unwrap_err().to_string();
        assert!(e.contains("spec.executor.subject.serviceAccount.namespace: Invalid value: \"Bad_NS\""), "{e}");
        let mut w = work(json!({"workload": {"manifests": []}, "executor": {"subject": {"type": "User"}}}));
        let e = prepare(&mut w).unwrap_err().to_string();
        assert!(e.contains("spec.executor.subject.type: Unsupported value: \"User\""), "{e}");
        assert!(e.contains("spec.executor.subject.serviceAccount: Required value"), "{e}");
    }
}
