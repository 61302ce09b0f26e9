//! `ManagedCluster` (`cluster.open-cluster-management.io/v1`,
//! cluster-scoped): how OCM users see a MemberCluster. It is a view, not a
//! stored kind — there is one inventory: reading a ManagedCluster reads the
//! MemberCluster of the same name ([`view_of`]); applying one writes its
//! labels and taints to that MemberCluster ([`to_member`]).
//!
//! The view shows: the labels; `spec.taints` with OCM's effects (Fleet's
//! `NoSchedule` reads as `NoSelectIfNew`, which is what it means to both
//! schedulers); `spec.hubAcceptsClient: true` and `leaseDurationSeconds`
//! (the heartbeat period); `status.capacity`/`allocatable` from the reported
//! resources; `status.clusterClaims` from the properties;
//! `status.version.kubernetes` from the `k8s.io/k8s-version` property (the
//! API server version the agent of a real cluster reports); and the
//! conditions `HubAcceptedManagedCluster`, `ManagedClusterJoined` and
//! `ManagedClusterConditionAvailable` from `Joined` and `Healthy`.
//!
//! Written through the view: labels (replacing the MemberCluster's, its
//! member-name label kept), taints (`NoSelectIfNew` stored as
//! `NoSchedule`), and `leaseDurationSeconds` as the heartbeat period;
//! `hubAcceptsClient` and `managedClusterClientConfigs` are accepted and
//! have no effect (every joined cluster is accepted; agents dial the hub).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::conditions::{find, Condition};
use crate::member::{self, Taint, CONDITION_HEALTHY, CONDITION_JOINED};
use crate::ocm::placement::EFFECT_NO_SELECT_IF_NEW;
use crate::ocm::CLUSTER_GROUP;
use crate::typed::{decode_spec, encode};
use crate::validation::ValidationError;
use crate::Object;

/// The kind.
pub const KIND: &str = "ManagedCluster";
/// Fleet's taint effect that OCM reads as `NoSelectIfNew`.
const FLEET_NO_SCHEDULE: &str = "NoSchedule";

/// `spec` of a ManagedCluster as written through the view.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedClusterSpec {
    /// Accepted; every joined cluster is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_accepts_client: Option<bool>,
    /// The heartbeat period (seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i64>,
    /// Accepted; agents dial the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_cluster_client_configs: Option<Value>,
    /// The cluster's taints, OCM effects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
}

/// Whether an object is a ManagedCluster (group and kind).
pub fn is_managed_cluster(group: &str, kind: &str) -> bool {
    group == CLUSTER_GROUP && kind == KIND
}

/// The ManagedCluster view of a stored MemberCluster.
pub fn view_of(mc: &Object) -> Object {
    let spec = member::spec_of(mc);
    let status = member::status_of(mc);
    let taints: Vec<Taint> = spec
        .taints
        .iter()
        .map(|t| {
            let effect = if t.effect == FLEET_NO_SCHEDULE { EFFECT_NO_SELECT_IF_NEW } else { t.effect.as_str() };
            Taint { effect: effect.to_string(), ..t.clone() }
        })
        .collect();
    let view_spec = ManagedClusterSpec {
        hub_accepts_client: Some(true),
        lease_duration_seconds: Some(spec.heartbeat_period()),
        managed_cluster_client_configs: None,
        taints,
    };
    let condition = |type_: &str, from: &str, reason_true: &str| {
        let source = find(&status.conditions, from);
        let mut c = match source {
            Some(s) if s.is_true() => Condition::new(type_, true, reason_true, s.message.clone()),
            Some(s) if s.status == "False" => Condition::new(type_, false, &s.reason, s.message.clone()),
            Some(s) => Condition::unknown(type_, &s.reason, s.message.clone()),
            None => Condition::unknown(type_, "NotReported", format!("the cluster has not reported {from} yet")),
        };
        c.last_transition_time = source.map(|s| s.last_transition_time.clone()).unwrap_or_default();
        c
    };
    let mut accepted =
        Condition::new("HubAcceptedManagedCluster", true, "HubClusterAdminAccepted", "Accepted by hub cluster admin");
    accepted.last_transition_time = mc.metadata.creation_timestamp.clone().unwrap_or_default();
    let conditions = vec![
        accepted,
        condition("ManagedClusterJoined", CONDITION_JOINED, "ManagedClusterJoined"),
        condition("ManagedClusterConditionAvailable", CONDITION_HEALTHY, "ManagedClusterAvailable"),
    ];
    let usage = status.resource_usage.clone().unwrap_or_default();
    let claims: Vec<Value> =
        status.properties.iter().map(|(name, p)| json!({"name": name, "value": p.value})).collect();
    let mut metadata = mc.metadata.clone();
    metadata.owner_references.clear();
    metadata.finalizers.clear();
    let mut view = Object {
        api_version: format!("{CLUSTER_GROUP}/v1"),
        kind: KIND.to_string(),
        metadata,
        rest: Default::default(),
    };
    view.rest.insert("spec".into(), encode(&view_spec));
    let mut view_status = json!({
        "conditions": encode(&conditions),
        "capacity": usage.capacity,
        "allocatable": usage.allocatable,
        "clusterClaims": claims,
    });
    // The agent of a real cluster reports its API server's version.
    if let Some(version) = status.properties.get(member::K8S_VERSION_PROPERTY) {
        view_status["version"] = json!({"kubernetes": version.value});
    }
    view.rest.insert("status".into(), view_status);
    view
}

/// The MemberCluster a ManagedCluster document writes: `stored` (or a new
/// one) with the document's labels, taints and lease duration. Returns the
/// MemberCluster, still to be validated as one; it carries the stored
/// version, so the write is refused if the cluster changed meanwhile.
pub fn to_member(document: &Object, stored: Option<&Object>) -> Result<Object, ValidationError> {
    let spec: ManagedClusterSpec = decode_spec(document)?;
    let mut mc = stored.cloned().unwrap_or_else(|| member::new_member_cluster(&document.metadata.name));
    let mut member_spec = member::spec_of(&mc);
    member_spec.taints = spec
        .taints
        .into_iter()
        .map(|t| {
            let effect = if t.effect == EFFECT_NO_SELECT_IF_NEW { FLEET_NO_SCHEDULE.to_string() } else { t.effect };
            Taint { effect, ..t }
        })
        .collect();
    if let Some(lease) = spec.lease_duration_seconds {
        member_spec.heartbeat_period_seconds = Some(lease);
    }
    mc.metadata.labels = document.metadata.labels.clone();
    mc.rest.insert("spec".into(), encode(&member_spec));
    mc.rest.remove("status");
    Ok(mc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member() -> Object {
        serde_json::from_value(json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": "east", "labels": {"env": "prod"}, "resourceVersion": "7"},
            "spec": {"heartbeatPeriodSeconds": 5, "taints": [{"key": "gpu", "effect": "NoSchedule"}]},
            "status": {"conditions": [
                {"type": "Joined", "status": "True", "reason": "J"},
                {"type": "Healthy", "status": "Unknown", "reason": "HeartbeatTimeout"}],
                "properties": {"region": {"value": "east"}, "k8s.io/k8s-version": {"value": "v1.36.1"}},
                "resourceUsage": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}, "available": {}}}
        }))
        .unwrap()
    }

    #[test]
    fn the_view_shows_labels_taints_resources_claims_and_availability() {
        let view = view_of(&member());
        assert_eq!(view.kind, KIND);
        assert_eq!(view.metadata.labels["env"], "prod");
        let spec = view.spec().unwrap();
        assert_eq!(spec["taints"][0]["effect"], "NoSelectIfNew");
        assert_eq!(spec["leaseDurationSeconds"], 5);
        let status = view.status().unwrap();
        assert_eq!(status["allocatable"]["cpu"], "3");
        assert_eq!(status["clusterClaims"][1], json!({"name": "region", "value": "east"}));
        assert_eq!(status["version"], json!({"kubernetes": "v1.36.1"}));
        let mut unversioned = member();
        unversioned.rest["status"]["properties"].as_object_mut().unwrap().remove("k8s.io/k8s-version");
        assert!(view_of(&unversioned).status().unwrap().get("version").is_none(), "no version: none shown");
        let available = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "ManagedClusterConditionAvailable")
            .unwrap();
        assert_eq!(
            (available["status"].as_str(), available["reason"].as_str()),
            (Some("Unknown"), Some("HeartbeatTimeout"))
        );
    }

    #[test]
    fn writes_through_the_view_change_labels_and_taints_of_the_same_member() {
        let mut doc = view_of(&member());
        doc.metadata.labels.insert("tier".into(), "gold".into());
        doc.rest.insert("spec".into(), json!({"taints": [{"key": "maintenance", "effect": "NoSelect"}, {"key": "gpu", "effect": "NoSelectIfNew"}]}));
        let mc = to_member(&doc, Some(&member())).unwrap();
        assert_eq!(mc.kind, "MemberCluster");
        assert_eq!(mc.metadata.resource_version, "7", "conditional on the version read");
        assert_eq!(mc.metadata.labels["tier"], "gold");
        let spec = member::spec_of(&mc);
        assert_eq!(spec.heartbeat_period_seconds, Some(5));
        let effects: Vec<&str> = spec.taints.iter().map(|t| t.effect.as_str()).collect();
        assert_eq!(effects, ["NoSelect", "NoSchedule"]);
        doc.rest.insert("spec".into(), json!({"surprise": 1}));
        assert!(to_member(&doc, None).unwrap_err().to_string().contains("surprise"));
    }
}
