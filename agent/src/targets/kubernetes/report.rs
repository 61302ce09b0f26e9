//! The heartbeat report of a real cluster: node count, and capacity,
//! allocatable and available CPU and memory summed over its nodes and pods.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use fleet_api::conditions::Condition;
use fleet_api::member::{HeartbeatReport, CONDITION_NAMESPACES, TARGET_PROPERTY};
use fleet_api::quantity::Quantity;
use k8s_openapi::api::core::v1::{Container, Namespace, Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kube::api::{Api, ListParams};

use super::errors::map_error;
use super::TARGET_NAME;
use crate::targets::embedded::{resource_usage, NODE_COUNT_PROPERTY};
use crate::targets::namespaces::SeenNamespace;
use crate::targets::{TargetError, OWNER_ANNOTATION};

/// The resources reported (the ones placement compares).
const RESOURCES: [&str; 2] = ["cpu", "memory"];
/// Objects asked for per list call; larger clusters are read in pages.
const PAGE_SIZE: u32 = 500;
/// Pods that hold resources: not finished (the API server filters; so do we).
const RUNNING_PODS: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// How long a read Kubernetes version is reported before it is read again
/// (a cluster upgrade shows within this long; KubeFleet uses the same).
const VERSION_TTL: Duration = Duration::from_secs(15 * 60);

/// The API server's version, read at most once per [`VERSION_TTL`].
#[derive(Debug, Default)]
pub(crate) struct VersionCache {
    read: tokio::sync::Mutex<Option<(String, Instant)>>,
}

impl VersionCache {
    /// The cluster's `gitVersion`; `None` while the server cannot say (the
    /// heartbeat goes on without the property).
    pub(crate) async fn get(&self, client: &kube::Client) -> Option<String> {
        let mut read = self.read.lock().await;
        if let Some((version, at)) = read.as_ref() {
            if at.elapsed() < VERSION_TTL {
                return Some(version.clone());
            }
        }
        match client.apiserver_version().await {
            Ok(info) => {
                *read = Some((info.git_version.clone(), Instant::now()));
                Some(info.git_version)
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot read the cluster's version");
                read.as_ref().map(|(version, _)| version.clone())
            }
        }
    }
}

/// Sums of `cpu` and `memory`.
type Sums = BTreeMap<String, Quantity>;

/// Lists nodes and unfinished pods (and namespaces, `with_namespaces`) and
/// builds the report.
pub(crate) async fn report(client: &kube::Client, with_namespaces: bool) -> Result<HeartbeatReport, TargetError> {
    let nodes: Vec<Node> = list_all(&Api::all(client.clone()), ListParams::default(), "nodes").await?;
    let pods: Vec<Pod> =
        list_all(&Api::all(client.clone()), ListParams::default().fields(RUNNING_PODS), "pods").await?;
    let mut report = build_report(&nodes, &pods, SystemTime::now());
    if !with_namespaces {
        return Ok(report);
    }
    // Without the namespace list the rest of the report still counts; the
    // cluster then takes no ResourcePlacement until the list is back.
    match namespaces(client).await {
        Ok((namespaces, condition)) => {
            report.namespaces = Some(namespaces);
            report.conditions.push(condition);
        }
        Err(e) => {
            tracing::warn!("cannot report the cluster's namespaces: {e}");
            report.conditions.push(Condition::new(CONDITION_NAMESPACES, false, "Failed", e.to_string()));
        }
    }
    Ok(report)
}

/// The cluster's namespaces, bounded (see [`crate::targets::namespaces`]):
/// read as metadata only, page by page, so thousands of namespaces cost
/// little more than their names.
async fn namespaces(client: &kube::Client) -> Result<(BTreeMap<String, String>, Condition), TargetError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(PAGE_SIZE);
    loop {
        let page = api.list_metadata(&params).await.map_err(|e| map_error("cannot list namespaces", e))?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    let seen = items.iter().filter_map(|n| {
        Some(SeenNamespace {
            name: n.metadata.name.as_deref()?,
            owner: n.metadata.annotations.as_ref().and_then(|a| a.get(OWNER_ANNOTATION)).map(String::as_str),
            terminating: n.metadata.deletion_timestamp.is_some(),
        })
    });
    Ok(crate::targets::namespaces::report(seen))
}

/// Every object of a list, page by page.
async fn list_all<K>(api: &Api<K>, params: ListParams, what: &str) -> Result<Vec<K>, TargetError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut items = Vec::new();
    let mut params = params.limit(PAGE_SIZE);
    loop {
        let page = api.list(&params).await.map_err(|e| map_error(&format!("cannot list {what}"), e))?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(items),
        }
    }
}

/// The report for these nodes and pods (pods that finished are ignored).
pub(crate) fn build_report(nodes: &[Node], pods: &[Pod], now: SystemTime) -> HeartbeatReport {
    let mut capacity = Sums::new();
    let mut allocatable = Sums::new();
    for status in nodes.iter().filter_map(|n| n.status.as_ref()) {
        add_all(&mut capacity, status.capacity.as_ref());
        add_all(&mut allocatable, status.allocatable.as_ref());
    }
    let mut requested = Sums::new();
    for pod in pods.iter().filter(|p| holds_resources(p)) {
        if let Some(spec) = &pod.spec {
            for (resource, q) in pod_requests(spec) {
                add(&mut requested, &resource, q);
            }
        }
    }
    let mut properties = BTreeMap::new();
    properties.insert(NODE_COUNT_PROPERTY.to_string(), nodes.len().to_string());
    properties.insert(TARGET_PROPERTY.to_string(), TARGET_NAME.to_string());
    HeartbeatReport {
        properties,
        resource_usage: resource_usage(&capacity, &allocatable, &requested, now),
        conditions: Vec::new(),
        namespaces: None,
    }
}

/// Not `Succeeded` or `Failed` (pending and running pods hold their requests).
fn holds_resources(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    phase != "Succeeded" && phase != "Failed"
}

/// What a pod requests, as the scheduler counts it: the sum over its
/// containers, at least the largest init container (they run one at a time,
/// before the others), plus the pod overhead.
pub(crate) fn pod_requests(spec: &PodSpec) -> Sums {
    let mut sums = Sums::new();
    for container in &spec.containers {
        for (resource, q) in container_requests(container) {
            add(&mut sums, &resource, q);
        }
    }
    for init in spec.init_containers.iter().flatten() {
        for (resource, q) in container_requests(init) {
            let sum = sums.entry(resource).or_default();
            *sum = (*sum).max(q);
        }
    }
    add_all(&mut sums, spec.overhead.as_ref());
    sums
}

/// The cpu and memory requests of one container.
fn container_requests(container: &Container) -> Sums {
    let mut sums = Sums::new();
    add_all(&mut sums, container.resources.as_ref().and_then(|r| r.requests.as_ref()));
    sums
}

/// Adds the cpu and memory of a resource list (other resources and
/// quantities that do not parse are skipped).
fn add_all(sums: &mut Sums, list: Option<&BTreeMap<String, KubeQuantity>>) {
    for (resource, quantity) in list.into_iter().flatten() {
        if !RESOURCES.contains(&resource.as_str()) {
            continue;
        }
        match Quantity::parse(&quantity.0) {
            Ok(q) => add(sums, resource, q),
            Err(e) => tracing::warn!("ignoring {resource} {e}"),
        }
    }
}

fn add(sums: &mut Sums, resource: &str, q: Quantity) {
    let sum = sums.entry(resource.to_string()).or_default();
    *sum = sum.saturating_add(q);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn requests_count_containers_init_containers_and_overhead() {
        let spec: PodSpec = serde_json::from_value(json!({
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi", "ephemeral-storage": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
                {"name": "c"}
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1", "memory": "32Mi"}}}],
            "overhead": {"cpu": "10m"}
        }))
        .unwrap();
        let sums = pod_requests(&spec);
        assert_eq!(sums.len(), 2);
        assert_eq!(sums["cpu"], q("1010m"));
        assert_eq!(sums["memory"], q("64Mi"));
    }

    #[test]
    fn report_sums_nodes_and_unfinished_pods() {
        let node = |cpu: &str, memory: &str| -> Node {
            serde_json::from_value(json!({"metadata": {"name": "n"}, "status": {
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                "allocatable": {"cpu": "1", "memory": "1Gi"}}}))
            .unwrap()
        };
        let pod = |phase: &str, cpu: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
                "status": {"phase": phase}}))
            .unwrap()
        };
        let nodes = [node("2", "4Gi"), node("4", "8Gi")];
        let pods = [pod("Running", "500m"), pod("Pending", "250m"), pod("Succeeded", "1"), pod("Failed", "1")];
        let report = build_report(&nodes, &pods, SystemTime::UNIX_EPOCH);
        assert_eq!(report.properties[NODE_COUNT_PROPERTY], "2");
        assert_eq!(report.properties[TARGET_PROPERTY], "kubernetes");
        let usage = &report.resource_usage;
        assert_eq!(q(&usage.capacity["cpu"]), q("6"));
        assert_eq!(usage.capacity["memory"], "12Gi");
        assert_eq!(q(&usage.allocatable["cpu"]), q("2"));
        assert_eq!(q(&usage.available["cpu"]), q("1250m"));
        assert_eq!(usage.available["memory"], "2Gi");
        // More requested than allocatable: nothing available, never negative.
        let report = build_report(&nodes[..1], &[pod("Running", "3")], SystemTime::UNIX_EPOCH);
        assert_eq!(q(&report.resource_usage.available["cpu"]), Quantity::default());
    }
}
