//! `MemberCluster`: a cluster of the fleet. An admin creates it (labels,
//! taints); its agent fills the status through heartbeats.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conditions::Condition;
use crate::typed::{decode, encode};
use crate::validation::{quote, FieldError, ValidationError};
use crate::{names, Object};

/// Every MemberCluster carries this label with its own name.
pub const MEMBER_NAME_LABEL: &str = "kubernetes-fleet.io/member-name";
/// `spec.heartbeatPeriodSeconds` when not given.
pub const DEFAULT_HEARTBEAT_PERIOD_SECONDS: i64 = 60;
/// Allowed heartbeat periods.
pub const HEARTBEAT_PERIOD_RANGE: std::ops::RangeInclusive<i64> = 1..=600;
/// Condition types of `status.conditions`.
pub const CONDITION_JOINED: &str = "Joined";
/// The cluster's agent heartbeats in time.
pub const CONDITION_HEALTHY: &str = "Healthy";
/// The agent could collect the cluster's properties.
pub const CONDITION_PROPERTIES: &str = "ClusterPropertyCollectionSucceeded";
/// The member agent's entry type in `status.agentStatus`.
pub const MEMBER_AGENT: &str = "MemberAgent";

/// The hub namespace holding a member's Work: `fleet-member-<cluster>`.
pub fn member_namespace(cluster: &str) -> String {
    format!("fleet-member-{cluster}")
}

/// Taint effects a MemberCluster accepts: Fleet's `NoSchedule`, and OCM's
/// `NoSelect` and `PreferNoSelect` written through the ManagedCluster view
/// (one inventory; OCM's `NoSelectIfNew` is stored as `NoSchedule`).
pub const TAINT_EFFECTS: &[&str] = &["NoSchedule", "NoSelect", "PreferNoSelect"];

/// A taint: clusters with taints get placements only when tolerated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Taint {
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    pub effect: String,
    /// When the taint was added (RFC 3339), as OCM's taints carry it: an
    /// OCM toleration's `tolerationSeconds` count from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

impl Taint {
    /// A taint added at an unknown time.
    pub fn new(key: &str, value: &str, effect: &str) -> Taint {
        Taint { key: key.to_string(), value: value.to_string(), effect: effect.to_string(), time_added: None }
    }

    /// Whether `other` is the same taint (key, value and effect), whenever
    /// each was added.
    pub fn same_as(&self, other: &Taint) -> bool {
        self.key == other.key && self.value == other.value && self.effect == other.effect
    }
}

/// `spec` of a MemberCluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberClusterSpec {
    /// KubeFleet's identity of the agent on the hub; accepted and kept for compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// How a DELETE of this MemberCluster is checked, as in KubeFleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_options: Option<DeleteOptions>,
}

/// `spec.deleteOptions.validationMode` values, KubeFleet's.
pub const DELETE_VALIDATION_MODES: &[&str] = &[DELETE_VALIDATION_SKIP, DELETE_VALIDATION_STRICT];
/// Skip the checks made before the MemberCluster may be deleted.
pub const DELETE_VALIDATION_SKIP: &str = "Skip";
/// Make the checks before the MemberCluster may be deleted (the default).
pub const DELETE_VALIDATION_STRICT: &str = "Strict";

/// `spec.deleteOptions` of a MemberCluster.
///
/// KubeFleet's hub webhook, in `Strict` mode, refuses the DELETE while the
/// member's namespace holds live InternalServiceExports (fleet-networking);
/// `Skip` lets it through. Fleet has no fleet-networking objects, so there is
/// nothing for `Strict` to find: both modes delete alike. The field is
/// validated, defaulted and kept so KubeFleet manifests apply unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// Work has its own `DeleteOptions`; one OpenAPI document holds both.
#[schemars(rename = "MemberClusterDeleteOptions")]
pub struct DeleteOptions {
    /// Mode of validation on delete: "Skip" or "Strict". Default is Strict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_mode: Option<String>,
}

impl MemberClusterSpec {
    /// The heartbeat period, defaulted.
    pub fn heartbeat_period(&self) -> i64 {
        self.heartbeat_period_seconds.unwrap_or(DEFAULT_HEARTBEAT_PERIOD_SECONDS)
    }
}

/// One property value as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PropertyValue {
    pub value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub observation_time: String,
}

/// Capacity, allocatable and available resources (`cpu`, `memory` quantities).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    #[serde(default)]
    pub capacity: BTreeMap<String, String>,
    #[serde(default)]
    pub allocatable: BTreeMap<String, String>,
    #[serde(default)]
    pub available: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub observation_time: String,
}

/// The status of one agent of the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_received_heartbeat: String,
}

/// `status` of a MemberCluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberClusterStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, PropertyValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_usage: Option<ResourceUsage>,
    /// The namespaces that exist on the cluster (name → the Work that
    /// placed it, empty when Fleet did not), at most
    /// [`MAX_REPORTED_NAMESPACES`]: a ResourcePlacement is scheduled only
    /// onto clusters listing its namespace. Absent until the agent reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_status: Vec<AgentStatus>,
}

/// The spec of a stored MemberCluster (admission guarantees it decodes).
pub fn spec_of(object: &Object) -> MemberClusterSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// The status of a stored MemberCluster (empty if none yet).
pub fn status_of(object: &Object) -> MemberClusterStatus {
    object.status().and_then(|s| decode(s, "status").ok()).unwrap_or_default()
}

/// Writes a typed status into the object.
pub fn set_status(object: &mut Object, status: &MemberClusterStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// A new MemberCluster with no labels (joining without one creates it).
pub fn new_member_cluster(name: &str) -> Object {
    let mut object = Object {
        api_version: format!("{}/v1beta1", crate::kinds::FLEET_CLUSTER_GROUP),
        kind: "MemberCluster".into(),
        metadata: crate::ObjectMeta { name: name.to_string(), ..Default::default() },
        rest: Default::default(),
    };
    object.rest.insert("spec".into(), Value::Object(Default::default()));
    object.metadata.labels.insert(MEMBER_NAME_LABEL.into(), name.to_string());
    object
}

/// Validates and defaults a MemberCluster: known fields only, heartbeat
/// period in range (default 60), taints with a known effect, a known
/// `deleteOptions.validationMode` (default Strict), and the member-name label.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let mut errors = Vec::new();
    let raw = object.spec().cloned().unwrap_or(Value::Object(Default::default()));
    let mut spec: MemberClusterSpec = match decode(&raw, "spec") {
        Ok(s) => s,
        Err(e) => return ValidationError::check(&object.kind, &object.metadata.name, vec![e]),
    };
    let period = spec.heartbeat_period();
    if !HEARTBEAT_PERIOD_RANGE.contains(&period) {
        errors.push(FieldError::invalid("spec.heartbeatPeriodSeconds", period, "must be between 1 and 600 (seconds)"));
    }
    spec.heartbeat_period_seconds = Some(period);
    for (i, taint) in spec.taints.iter().enumerate() {
        let path = format!("spec.taints[{i}]");
        if let Some(detail) = names::validate_label_key(&taint.key) {
            errors.push(FieldError::invalid(format!("{path}.key"), quote(&taint.key), detail));
        }
        if let Some(detail) = names::validate_label_value(&taint.value) {
            errors.push(FieldError::invalid(format!("{path}.value"), quote(&taint.value), detail));
        }
        if let Some(time) = taint.time_added.as_deref().filter(|t| crate::time::unix_seconds(t).is_none()) {
            errors.push(FieldError::invalid(format!("{path}.timeAdded"), quote(time), crate::time::RFC3339_DETAIL));
        }
        if !TAINT_EFFECTS.contains(&taint.effect.as_str()) {
            errors.push(FieldError::not_supported(format!("{path}.effect"), quote(&taint.effect), TAINT_EFFECTS));
        }
    }
    if let Some(options) = spec.delete_options.as_mut() {
        let mode_path = "spec.deleteOptions.validationMode";
        crate::validation::check_enum(
            &mut errors,
            mode_path,
            options.validation_mode.as_deref(),
            DELETE_VALIDATION_MODES,
        );
        // KubeFleet's CRD defaults the mode once `deleteOptions` is given;
        // doing the same keeps a read-back identical to KubeFleet's.
        options.validation_mode.get_or_insert_with(|| DELETE_VALIDATION_STRICT.to_string());
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)?;
    object.rest.insert("spec".into(), encode(&spec));
    let name = object.metadata.name.clone();
    object.metadata.labels.insert(MEMBER_NAME_LABEL.into(), name);
    Ok(())
}

/// Property naming which target the agent applies to (`embedded` or `kubernetes`).
pub const TARGET_PROPERTY: &str = "fleet.kubernetes-fleet.io/target";

/// Property naming the Kubernetes version of a real member cluster (its API
/// server's `gitVersion`), as KubeFleet's property providers name it.
pub const K8S_VERSION_PROPERTY: &str = "k8s.io/k8s-version";

/// Property naming the API server URL the agent of a real member cluster
/// talks to, as KubeFleet's property providers name it.
pub const CLUSTER_ENTRYPOINT_PROPERTY: &str = "k8s.io/cluster-entrypoint";

/// Property holding the certificate authority of a real member cluster's
/// API server (base64 of its PEM), as KubeFleet's property providers name it.
pub const CLUSTER_CA_DATA_PROPERTY: &str = "k8s.io/cluster-certificate-authority-data";

/// What an agent reports on every heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatReport {
    /// Property name → quantity (node count, costs, the target...).
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    #[serde(default)]
    pub resource_usage: ResourceUsage,
    /// The agent's own conditions (e.g. whether it applies Work).
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Namespaces on the cluster (name → placing Work's name, or empty),
    /// at most [`MAX_REPORTED_NAMESPACES`]; `None` from an agent that does
    /// not report them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<BTreeMap<String, String>>,
}

/// Most namespaces a MemberCluster's status lists. KubeFleet's namespace
/// tracker stops at the same number; it keeps a cluster with thousands of
/// namespaces from turning its MemberCluster into a large object that every
/// heartbeat change and every scheduling pass reads (200 names of at most
/// 63 characters, each with a Work name, stay under about 25 KiB).
pub const MAX_REPORTED_NAMESPACES: usize = 200;

/// Agent condition saying whether every namespace fit in the report
/// (KubeFleet's type, reasons `Succeeded` and `Degraded`).
pub const CONDITION_NAMESPACES: &str = "NamespaceCollectionSucceeded";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(spec: Value) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": "east-1", "labels": {"region": "east"}}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn defaults_period_and_adds_the_member_name_label() {
        let mut o = mc(json!({}));
        prepare(&mut o).unwrap();
        assert_eq!(spec_of(&o).heartbeat_period_seconds, Some(60));
        assert_eq!(o.metadata.labels.get(MEMBER_NAME_LABEL).map(String::as_str), Some("east-1"));
        assert_eq!(o.metadata.labels.get("region").map(String::as_str), Some("east"));
    }

    #[test]
    fn refuses_out_of_range_periods_bad_effects_and_unknown_fields() {
        let mut o = mc(json!({"heartbeatPeriodSeconds": 0, "taints": [{"key": "k", "effect": "NoExecute"}]}));
        let e = prepare(&mut o).unwrap_err().to_string();
        assert!(e.contains("spec.heartbeatPeriodSeconds: Invalid value: 0: must be between 1 and 600"), "{e}");
        assert!(e.contains("spec.taints[0].effect: Unsupported value: \"NoExecute\""), "{e}");
        let mut o = mc(json!({"taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "yesterday"}]}));
        let e = prepare(&mut o).unwrap_err().to_string();
        assert!(
            e.contains("spec.taints[0].timeAdded: Invalid value: \"yesterday\": must be an RFC 3339 timestamp"),
            "{e}"
        );
        let mut o = mc(json!({"taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "2024-05-01T10:00:00Z"}]}));
        prepare(&mut o).unwrap();
        assert_eq!(spec_of(&o).taints[0].time_added.as_deref(), Some("2024-05-01T10:00:00Z"));
        let mut o = mc(json!({"heartbeatPeriod": 5}));
        let e = prepare(&mut o).unwrap_err().to_string();
        assert!(e.contains("heartbeatPeriod") && e.contains("unknown field"), "{e}");
    }

    #[test]
    fn delete_options_take_kubefleets_modes_and_default_to_strict() {
        let mut o = mc(json!({"deleteOptions": {"validationMode": "Skip"}}));
        prepare(&mut o).unwrap();
        let options = spec_of(&o).delete_options.unwrap();
        assert_eq!(options.validation_mode.as_deref(), Some("Skip"));

        let mut o = mc(json!({"deleteOptions": {}}));
        prepare(&mut o).unwrap();
        let options = spec_of(&o).delete_options.unwrap();
        assert_eq!(options.validation_mode.as_deref(), Some("Strict"));

        // Absent stays absent, as KubeFleet's CRD defaults only inside the object.
        let mut o = mc(json!({}));
        prepare(&mut o).unwrap();
        assert_eq!(spec_of(&o).delete_options, None);
        assert!(o.spec().and_then(|s| s.get("deleteOptions")).is_none());

        let mut o = mc(json!({"deleteOptions": {"validationMode": "Lenient"}}));
        let e = prepare(&mut o).unwrap_err().to_string();
        assert!(e.contains("MemberCluster \"east-1\""), "{e}");
        assert!(
            e.contains(
                "spec.deleteOptions.validationMode: Unsupported value: \"Lenient\": supported values: \"Skip\", \"Strict\""
            ),
            "{e}"
        );

        let mut o = mc(json!({"deleteOptions": {"propagationPolicy": "Orphan"}}));
        let e = prepare(&mut o).unwrap_err().to_string();
        assert!(e.contains("propagationPolicy") && e.contains("unknown field"), "{e}");
    }
}
