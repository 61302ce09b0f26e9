//! The SIG-Multicluster Cluster Inventory API (`multicluster.x-k8s.io`
//! ClusterProfile), which KubeFleet publishes: one ClusterProfile per member
//! cluster, so tools that read the inventory see Fleet's members. The hub
//! derives each from its MemberCluster ([`profile_of`]); nothing else writes
//! them.
//!
//! What a profile holds, as KubeFleet fills it in:
//! - `metadata`: the member's name, in namespace [`PROFILE_NAMESPACE`],
//!   labelled `x-k8s.io/cluster-manager: KubeFleet`, owned by the
//!   MemberCluster (deleting the member deletes its profile);
//! - `spec`: `displayName` (the member's name) and `clusterManager.name`;
//! - `status.version.kubernetes` from the member's `k8s.io/k8s-version`
//!   property;
//! - `status.accessProviders`: one, named for the manager, with the member's
//!   API server (`k8s.io/cluster-entrypoint`) and CA data
//!   (`k8s.io/cluster-certificate-authority-data`), or
//!   `insecureSkipTLSVerify` when no CA was reported;
//! - `status.conditions`: `ControlPlaneHealthy` from the member's health;
//! - `status.properties`: every property the member reports (*Fleet
//!   decides*: KubeFleet leaves the list empty; the API defines it for
//!   exactly this).
//!
//! The manager name is KubeFleet's, so inventory consumers configured for a
//! KubeFleet hub work unchanged against Fleet.

use serde_json::{json, Value};

use crate::conditions::{find, Condition};
use crate::member::{
    status_of, MemberClusterStatus, CLUSTER_CA_DATA_PROPERTY, CLUSTER_ENTRYPOINT_PROPERTY, CONDITION_HEALTHY,
    K8S_VERSION_PROPERTY, MEMBER_AGENT,
};
use crate::{Object, ObjectMeta, OwnerReference};

/// The Cluster Inventory API group.
pub const CLUSTER_INVENTORY_GROUP: &str = "multicluster.x-k8s.io";
/// The kind of a profile.
pub const CLUSTER_PROFILE: &str = "ClusterProfile";
/// The served version.
pub const CLUSTER_PROFILE_VERSION: &str = "v1alpha1";
/// Where the hub keeps the profiles (KubeFleet's default namespace).
pub const PROFILE_NAMESPACE: &str = "fleet-system";
/// The label naming a profile's cluster manager.
pub const CLUSTER_MANAGER_LABEL: &str = "x-k8s.io/cluster-manager";
/// The cluster manager's name.
pub const CLUSTER_MANAGER: &str = "KubeFleet";
/// The profile's health condition.
pub const CONTROL_PLANE_HEALTHY: &str = "ControlPlaneHealthy";
/// The reason Fleet's health check gives a member that missed heartbeats.
const HEARTBEAT_TIMEOUT_REASON: &str = "HeartbeatTimeout";

/// The profile the hub keeps for `member` (a MemberCluster): metadata, spec
/// and status as the module documents, conditions without transition times
/// (the writer carries them over or stamps them).
pub fn profile_of(member: &Object) -> Object {
    let name = member.metadata.name.clone();
    let status = status_of(member);
    let property = |key: &str| status.properties.get(key).map(|p| p.value.clone());
    let mut cluster = serde_json::Map::new();
    if let Some(server) = property(CLUSTER_ENTRYPOINT_PROPERTY) {
        cluster.insert("server".into(), json!(server));
    }
    match property(CLUSTER_CA_DATA_PROPERTY) {
        Some(ca) => cluster.insert("certificate-authority-data".into(), json!(ca)),
        None => cluster.insert("insecure-skip-tls-verify".into(), json!(true)),
    };
    let properties: Vec<Value> = status
        .properties
        .iter()
        .map(|(name, p)| {
            let mut entry = json!({"name": name, "value": p.value});
            if !p.observation_time.is_empty() {
                entry["lastObservedTime"] = json!(p.observation_time);
            }
            entry
        })
        .collect();
    let mut profile_status = json!({
        "conditions": [crate::typed::encode(&control_plane_healthy(&status))],
        "accessProviders": [{"name": CLUSTER_MANAGER, "cluster": cluster}],
    });
    if let Some(version) = property(K8S_VERSION_PROPERTY) {
        profile_status["version"] = json!({"kubernetes": version});
    }
    if !properties.is_empty() {
        profile_status["properties"] = Value::Array(properties);
    }
    let mut object = Object {
        api_version: format!("{CLUSTER_INVENTORY_GROUP}/{CLUSTER_PROFILE_VERSION}"),
        kind: CLUSTER_PROFILE.into(),
        metadata: ObjectMeta {
            name: name.clone(),
            namespace: Some(PROFILE_NAMESPACE.into()),
            owner_references: vec![OwnerReference::controller_of(member)],
            ..Default::default()
        },
        rest: Default::default(),
    };
    object.metadata.labels.insert(CLUSTER_MANAGER_LABEL.into(), CLUSTER_MANAGER.into());
    object.rest.insert("spec".into(), json!({"displayName": name, "clusterManager": {"name": CLUSTER_MANAGER}}));
    object.rest.insert("status".into(), profile_status);
    object
}

/// `ControlPlaneHealthy` from a member's status, with KubeFleet's reasons.
pub fn control_plane_healthy(status: &MemberClusterStatus) -> Condition {
    let reported = status.agent_status.iter().any(|a| a.type_ == MEMBER_AGENT);
    match find(&status.conditions, CONDITION_HEALTHY) {
        _ if !reported => Condition::unknown(
            CONTROL_PLANE_HEALTHY,
            "MemberAgentReportedNoStatus",
            "The Fleet member agent has not reported its status yet",
        ),
        None => Condition::unknown(
            CONTROL_PLANE_HEALTHY,
            "MemberAgentReportedNoHealthInfo",
            "The Fleet member agent has reported its status, but the health condition is missing",
        ),
        Some(h) if h.status == "Unknown" && h.reason == HEARTBEAT_TIMEOUT_REASON => Condition::new(
            CONTROL_PLANE_HEALTHY,
            false,
            "MemberAgentHeartbeatLost",
            "The Fleet member agent has lost its heartbeat connection to the Fleet hub cluster",
        ),
        Some(h) if h.status == "Unknown" => Condition::unknown(
            CONTROL_PLANE_HEALTHY,
            "MemberAgentReportedNoHealthInfo",
            "The Fleet member agent health check result is out of date or unknown",
        ),
        Some(h) if h.status == "False" => Condition::new(
            CONTROL_PLANE_HEALTHY,
            false,
            "MemberClusterAPIServerUnhealthy",
            "The Fleet member agent reports that the API server is unhealthy",
        ),
        Some(_) => Condition::new(
            CONTROL_PLANE_HEALTHY,
            true,
            "MemberClusterAPIServerHealthy",
            "The Fleet member agent reports that the API server is healthy",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(status: Value) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": "east", "uid": "u-1"}, "spec": {}, "status": status
        }))
        .unwrap()
    }

    fn healthy(status: &str, reason: &str) -> Value {
        json!({
            "conditions": [{"type": "Healthy", "status": status, "reason": reason, "message": "", "lastTransitionTime": "t"}],
            "agentStatus": [{"type": "MemberAgent", "conditions": []}],
            "properties": {
                "k8s.io/k8s-version": {"value": "v1.36.3", "observationTime": "t1"},
                "k8s.io/cluster-entrypoint": {"value": "https://10.0.0.1:6443"},
                "kubernetes-fleet.io/node-count": {"value": "3"}
            }
        })
    }

    #[test]
    fn a_profile_names_its_member_version_server_and_properties() {
        let profile = profile_of(&member(healthy("True", "Healthy")));
        assert_eq!(profile.api_version, "multicluster.x-k8s.io/v1alpha1");
        assert_eq!(profile.metadata.namespace.as_deref(), Some("fleet-system"));
        assert_eq!(profile.metadata.labels.get("x-k8s.io/cluster-manager").map(String::as_str), Some("KubeFleet"));
        assert_eq!(profile.metadata.owner_references[0].uid, "u-1", "deleting the member deletes it");
        assert_eq!(profile.rest["spec"], json!({"displayName": "east", "clusterManager": {"name": "KubeFleet"}}));
        let status = &profile.rest["status"];
        assert_eq!(status["version"], json!({"kubernetes": "v1.36.3"}));
        assert_eq!(
            status["accessProviders"],
            json!([{"name": "KubeFleet", "cluster": {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": true}}]),
            "no CA reported: insecureSkipTLSVerify, as KubeFleet"
        );
        assert_eq!(
            status["properties"][0],
            json!({"name": "k8s.io/cluster-entrypoint", "value": "https://10.0.0.1:6443"})
        );
        assert_eq!(status["properties"][1]["lastObservedTime"], json!("t1"));
        assert_eq!(status["conditions"][0]["type"], json!("ControlPlaneHealthy"));
        assert_eq!(status["conditions"][0]["status"], json!("True"));
    }

    #[test]
    fn health_maps_to_kubefleet_reasons() {
        let reason = |status: Value| {
            let c = control_plane_healthy(&status_of(&member(status)));
            (c.status, c.reason)
        };
        let pair = |s: &str, r: &str| (s.to_string(), r.to_string());
        assert_eq!(reason(json!({})), pair("Unknown", "MemberAgentReportedNoStatus"));
        assert_eq!(
            reason(json!({"agentStatus": [{"type": "MemberAgent", "conditions": []}]})),
            pair("Unknown", "MemberAgentReportedNoHealthInfo")
        );
        assert_eq!(reason(healthy("True", "Healthy")), pair("True", "MemberClusterAPIServerHealthy"));
        assert_eq!(reason(healthy("False", "Unhealthy")), pair("False", "MemberClusterAPIServerUnhealthy"));
        assert_eq!(reason(healthy("Unknown", "HeartbeatTimeout")), pair("False", "MemberAgentHeartbeatLost"));
        assert_eq!(reason(healthy("Unknown", "Other")), pair("Unknown", "MemberAgentReportedNoHealthInfo"));
    }
}
