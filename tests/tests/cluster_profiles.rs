//! The Cluster Inventory API: the hub keeps one ClusterProfile per member
//! cluster in `fleet-system`, as KubeFleet publishes them, readable with
//! stock kubectl; it follows the member's health and goes with it.

use std::time::Duration;

use fleet_tests::eventually;
use fleet_tests::fleet::{start_member, wait_joined, Member};
use fleet_tests::kube::KubeHub;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);

/// The profile of `name` as kubectl reads it, if it exists.
fn profile(hub: &KubeHub, name: &str) -> Option<Value> {
    let out = hub.kubectl(&["get", "clusterprofiles.multicluster.x-k8s.io", "-n", "fleet-system", name, "-o", "json"]);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten()
}

fn healthy(profile: &Value) -> (String, String) {
    let conditions = profile["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let c = conditions.iter().find(|c| c["type"] == "ControlPlaneHealthy").cloned().unwrap_or_default();
    (c["status"].as_str().unwrap_or("").to_string(), c["reason"].as_str().unwrap_or("").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_member_has_a_profile_that_follows_its_health_and_goes_with_it() {
    let mut hub = KubeHub::start().await;
    for name in ["east", "west"] {
        // Heartbeats every second, so a stopped agent is soon noticed.
        start_member(&mut hub.hub, &Member { name, labels: &[], nodes: 2, cpu: 4 }, "8Gi");
    }
    for name in ["east", "west"] {
        wait_joined(&hub.hub, name).await;
    }
    let east = eventually("east's profile, healthy", WAIT, || async {
        match profile(&hub, "east") {
            Some(p) if healthy(&p).0 == "True" => Ok(p),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(healthy(&east), ("True".into(), "MemberClusterAPIServerHealthy".into()));
    assert_eq!(east["metadata"]["labels"]["x-k8s.io/cluster-manager"], "KubeFleet");
    assert_eq!(east["spec"]["clusterManager"]["name"], "KubeFleet");
    assert_eq!(east["spec"]["displayName"], "east");
    assert_eq!(east["metadata"]["ownerReferences"][0]["kind"], "MemberCluster");
    let properties = east["status"]["properties"].as_array().cloned().unwrap_or_default();
    assert!(properties.iter().any(|p| p["name"] == "kubernetes-fleet.io/node-count"), "{properties:?}");

    let listed = hub.kubectl_ok(&["get", "clusterprofiles", "-n", "fleet-system", "-o", "name"]);
    assert_eq!(listed.lines().count(), 2, "one per member: {listed}");

    // A member whose agent stops loses its heartbeat, as KubeFleet reports it.
    hub.hub.kill_agent("west");
    eventually("west's heartbeat lost", WAIT, || async {
        match profile(&hub, "west").map(|p| healthy(&p)) {
            Some((status, reason)) if status == "False" && reason == "MemberAgentHeartbeatLost" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // Someone else's edit is put back.
    let out = hub.kubectl(&["label", "clusterprofile", "-n", "fleet-system", "east", "x-k8s.io/cluster-manager-"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eventually("east relabelled", WAIT, || async {
        match profile(&hub, "east") {
            Some(p) if p["metadata"]["labels"]["x-k8s.io/cluster-manager"] == "KubeFleet" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // Deleting the member deletes its profile.
    hub.kubectl_ok(&["delete", "membercluster", "west", "--wait=false"]);
    eventually("west's profile gone", WAIT, || async {
        match profile(&hub, "west") {
            None => Ok(()),
            Some(p) => Err(format!("still there: {p}")),
        }
    })
    .await;
    assert!(profile(&hub, "east").is_some(), "the other member keeps its profile");
}
