//! A test fleet: a hub trio plus agents on embedded targets with labels and
//! sizes, and helpers to apply YAML through fleetctl and read placements'
//! bindings.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fleet_api::Object;

use crate::objects::{condition, get};
use crate::{eventually, Hub, HubOptions};

/// How long fleet-level waits may take.
pub const WAIT: Duration = Duration::from_secs(30);

/// A member cluster of the test fleet: name, labels, nodes, CPUs per node.
pub struct Member {
    pub name: &'static str,
    pub labels: &'static [(&'static str, &'static str)],
    pub nodes: u32,
    pub cpu: u32,
}

/// A MemberCluster document for `m` heartbeating every second, with `taints` (YAML lines under spec).
pub fn member_yaml(m: &Member, taints: &str) -> String {
    let labels: Vec<String> = m.labels.iter().map(|(k, v)| format!("{k}: \"{v}\"")).collect();
    format!(
        "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata:\n  name: {}\n  labels: {{{}}}\nspec:\n  heartbeatPeriodSeconds: 1\n{taints}",
        m.name,
        labels.join(", ")
    )
}

/// Applies YAML through `fleetctl apply -f -`; panics with fleetctl's error.
pub fn apply_yaml(hub: &Hub, yaml: &str) {
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(yaml));
    assert!(out.status.success(), "apply failed: {}\n{yaml}", String::from_utf8_lossy(&out.stderr));
}

/// Starts the hub and the given members (labels applied before joining, CPU
/// allocatable = capacity, 16Gi of memory), and waits until all report
/// their properties.
pub async fn fleet(members: &[&Member]) -> Hub {
    fleet_with(members, &[]).await
}

/// [`fleet`], every agent started with the extra flags `agent_args` (such
/// as `--drift-check-interval 1s`).
pub async fn fleet_with(members: &[&Member], agent_args: &[&str]) -> Hub {
    let sized: Vec<(&Member, &str)> = members.iter().map(|m| (*m, "16Gi")).collect();
    start_fleet(&sized, agent_args).await
}

/// Like [`fleet`], with each member's allocatable (= capacity) memory.
pub async fn fleet_sized(members: &[(&Member, &str)]) -> Hub {
    start_fleet(members, &[]).await
}

async fn start_fleet(members: &[(&Member, &str)], agent_args: &[&str]) -> Hub {
    let mut hub = Hub::start(HubOptions::default()).await;
    for (m, memory) in members {
        start_member_with(&mut hub, m, memory, agent_args);
    }
    for (m, _) in members {
        wait_joined(&hub, m.name).await;
    }
    hub
}

/// Applies the member's MemberCluster and starts its agent with `memory`.
pub fn start_member(hub: &mut Hub, m: &Member, memory: &str) {
    start_member_with(hub, m, memory, &[]);
}

fn start_member_with(hub: &mut Hub, m: &Member, memory: &str, agent_args: &[&str]) {
    apply_yaml(hub, &member_yaml(m, ""));
    let nodes = m.nodes.to_string();
    let size = format!("cpu={},memory={memory}", m.cpu);
    let mut args = vec!["--sim-nodes", &nodes, "--sim-capacity", &size, "--sim-allocatable", &size];
    args.extend_from_slice(agent_args);
    hub.start_agent(m.name, &args);
}

/// Waits until the cluster joined, is healthy and reports its resources.
pub async fn wait_joined(hub: &Hub, name: &str) {
    let admin = hub.client(hub.running()[0]).await;
    eventually(&format!("{name} joined, healthy, with properties"), WAIT, || {
        let mut admin = admin.clone();
        async move {
            let mc = get(&mut admin, "mc", "", name).await.map_err(|e| e.to_string())?;
            let healthy = condition(&mc, "Healthy").is_some_and(|c| c.0 == "True");
            let joined = condition(&mc, "Joined").is_some_and(|c| c.0 == "True");
            let has_cpu = mc.status().and_then(|s| s.pointer("/resourceUsage/available/cpu")).is_some();
            if healthy && joined && has_cpu {
                Ok(())
            } else {
                Err(format!("{:?}", mc.status()))
            }
        }
    })
    .await;
}

/// Lists objects of a kind in every namespace, with a `-l` selector.
pub async fn list(hub: &Hub, kind_name: &str, selector: &str) -> Result<Vec<Object>, String> {
    let mut admin = hub.client(hub.running()[0]).await;
    crate::objects::list_all(&mut admin, kind_name, selector).await
}

/// A placement's bindings by target cluster: (state, binding uid).
pub async fn bindings(hub: &Hub, placement: &str) -> Result<BTreeMap<String, (String, String)>, String> {
    let objects = list(hub, "crb", &format!("kubernetes-fleet.io/parent-CRP={placement}")).await?;
    let mut out = BTreeMap::new();
    for b in objects {
        let spec = fleet_api::binding::spec_of(&b);
        if out.insert(spec.target_cluster.clone(), (spec.state, b.metadata.uid.clone())).is_some() {
            return Err(format!("two bindings for cluster {}", spec.target_cluster));
        }
    }
    Ok(out)
}

/// Whether a Work is Available at its current generation.
pub fn work_available(work: &Object) -> bool {
    condition(work, "Available").is_some_and(|c| c.0 == "True" && c.2 == work.metadata.generation)
}

/// The object on the embedded target of `cluster` as JSON, if it holds it
/// (`namespace` empty for cluster-scoped kinds).
pub fn member_object(hub: &Hub, cluster: &str, kind: &str, namespace: &str, name: &str) -> Option<serde_json::Value> {
    let mut args = vec![kind, name, "-o", "json"];
    if !namespace.is_empty() {
        args.extend(["-n", namespace]);
    }
    let out = hub.inspect(cluster, &args);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten()
}

/// Whether the embedded target of `cluster` holds the object (`namespace`
/// empty for cluster-scoped kinds).
pub fn member_has(hub: &Hub, cluster: &str, kind: &str, namespace: &str, name: &str) -> bool {
    member_object(hub, cluster, kind, namespace, name).is_some()
}

/// Waits until the object is present (or gone) on the cluster's embedded target.
pub async fn wait_member(hub: &Hub, cluster: &str, kind: &str, namespace: &str, name: &str, present: bool) {
    let what = format!("{kind} {namespace}/{name} {} on {cluster}", if present { "present" } else { "gone" });
    eventually(&what, WAIT, || async {
        if member_has(hub, cluster, kind, namespace, name) == present {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await;
}

/// Samples the placement's Works until stopped, recording the most Works
/// seen unavailable at once.
pub fn watch_unavailable(
    hub: &Hub,
    placement: &str,
    node: u64,
) -> (Arc<AtomicBool>, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let worst = Arc::new(AtomicUsize::new(0));
    let selector = format!("kubernetes-fleet.io/parent-CRP={placement}");
    let endpoint = hub.endpoint(node);
    let pki = hub.pki_dir();
    let (stop_flag, worst_seen) = (stop.clone(), worst.clone());
    let task = tokio::spawn(async move {
        let client = crate::hub::admin_client(&endpoint, &pki);
        while !stop_flag.load(Ordering::SeqCst) {
            if let Ok(ws) = crate::objects::list_all(&mut client.clone(), "work", &selector).await {
                let down = ws.iter().filter(|w| !work_available(w)).count();
                worst_seen.fetch_max(down, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    (stop, worst, task)
}

/// One object read as admin through the first running node.
pub async fn get_object(hub: &Hub, kind: &str, namespace: &str, name: &str) -> Result<Object, String> {
    let mut admin = hub.client(hub.running()[0]).await;
    get(&mut admin, kind, namespace, name).await.map_err(|e| e.to_string())
}

/// A placement's status entry of `cluster` (`placementStatuses[]`; `Null` if none).
pub fn entry(placement: &Object, cluster: &str) -> serde_json::Value {
    let statuses = placement.status().and_then(|s| s.get("placementStatuses")).cloned().unwrap_or_default();
    statuses.as_array().into_iter().flatten().find(|e| e["clusterName"] == cluster).cloned().unwrap_or_default()
}

/// The item of object `kind`/`name` in an entry's list `field`
/// (`failedPlacements`, `driftedPlacements`, `diffedPlacements`).
pub fn listed<'a>(entry: &'a serde_json::Value, field: &str, kind: &str, name: &str) -> Option<&'a serde_json::Value> {
    entry[field].as_array()?.iter().find(|p| p["kind"] == kind && p["name"] == name)
}
