//! What the simulated cluster "runs": the pods of each workload kind and
//! the CPU and memory they request.

use std::collections::BTreeMap;

use fleet_api::quantity::Quantity;
use fleet_api::Object;
use serde_json::Value;

/// The workload kinds whose pods the simulation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    /// `apps/v1` Deployment: `spec.replicas` pods (default 1).
    Deployment,
    /// `apps/v1` StatefulSet: `spec.replicas` pods (default 1).
    StatefulSet,
    /// `apps/v1` ReplicaSet: `spec.replicas` pods (default 1).
    ReplicaSet,
    /// `apps/v1` DaemonSet: one pod per node.
    DaemonSet,
    /// `batch/v1` Job: `spec.parallelism` pods (default 1).
    Job,
    /// `v1` Pod: itself.
    Pod,
}

impl Workload {
    /// The workload kind of an object, if it is one.
    pub fn of(object: &Object) -> Option<Workload> {
        Some(match (object.group(), object.kind.as_str()) {
            ("apps", "Deployment") => Workload::Deployment,
            ("apps", "StatefulSet") => Workload::StatefulSet,
            ("apps", "ReplicaSet") => Workload::ReplicaSet,
            ("apps", "DaemonSet") => Workload::DaemonSet,
            ("batch", "Job") => Workload::Job,
            ("", "Pod") => Workload::Pod,
            _ => return None,
        })
    }

    /// Where the pod spec is, as a field path from the top of the object.
    pub fn pod_spec_path(self) -> &'static [&'static str] {
        match self {
            Workload::Pod => &["spec"],
            _ => &["spec", "template", "spec"],
        }
    }

    /// The field counting this workload's pods, if it has one.
    pub fn count_field(self) -> Option<&'static str> {
        match self {
            Workload::Deployment | Workload::StatefulSet | Workload::ReplicaSet => Some("replicas"),
            Workload::Job => Some("parallelism"),
            Workload::DaemonSet | Workload::Pod => None,
        }
    }
}

/// Follows `path` from the top-level fields of `object`.
pub(crate) fn field<'a>(object: &'a Object, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = object.rest.get(*first)?;
    for part in rest {
        value = value.get(part)?;
    }
    Some(value)
}

/// How many pods a workload runs on a cluster of `nodes` nodes.
pub(crate) fn pod_count(object: &Object, workload: Workload, nodes: u32) -> i64 {
    match workload.count_field() {
        Some(name) => field(object, &["spec", name]).and_then(Value::as_i64).unwrap_or(1).max(0),
        None if workload == Workload::DaemonSet => i64::from(nodes),
        None => 1,
    }
}

/// What one container requests of `resource`: `resources.requests`, else
/// `resources.limits` (the API server defaults requests to limits).
pub(crate) fn container_request(container: &Value, resource: &str) -> Option<Quantity> {
    let resources = container.get("resources")?;
    ["requests", "limits"]
        .iter()
        .find_map(|kind| resources.get(kind)?.get(resource)?.as_str().and_then(|s| Quantity::parse(s).ok()))
}

/// What one pod requests: the sum over its containers (init containers are
/// not counted), for `cpu` and `memory`.
pub(crate) fn pod_requests(pod_spec: Option<&Value>) -> BTreeMap<String, Quantity> {
    let mut sum = BTreeMap::new();
    let containers = pod_spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    for resource in ["cpu", "memory"] {
        let total = containers
            .into_iter()
            .flatten()
            .filter_map(|c| container_request(c, resource))
            .fold(Quantity::default(), Quantity::saturating_add);
        sum.insert(resource.to_string(), total);
    }
    sum
}

/// What a workload requests in all: pods × per-pod requests.
pub(crate) fn workload_requests(object: &Object, nodes: u32) -> Option<BTreeMap<String, Quantity>> {
    let workload = Workload::of(object)?;
    let pods = pod_count(object, workload, nodes);
    let per_pod = pod_requests(field(object, workload.pod_spec_path()));
    Some(per_pod.into_iter().map(|(k, v)| (k, v.times(pods))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    fn object(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn containers() -> Value {
        json!([
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m"}}},
            {"name": "c"}
        ])
    }

    #[test]
    fn pods_times_requests_with_limits_as_default_requests_and_no_init_containers() {
        let d = object(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 3, "template": {"spec": {"containers": containers(),
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "8"}}}]}}}}));
        let r = workload_requests(&d, 5).unwrap();
        assert_eq!(r["cpu"], q("1050m"));
        assert_eq!(r["memory"], q("64Mi").saturating_add(q("1Gi")).times(3));
    }

    #[test]
    fn pod_counts_per_kind() {
        let spec =
            json!({"template": {"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}}});
        let ds = object(json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"}, "spec": spec}));
        assert_eq!(workload_requests(&ds, 4).unwrap()["cpu"], q("4"));
        let mut job_spec = spec.clone();
        job_spec["parallelism"] = json!(2);
        let job = object(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": job_spec}));
        assert_eq!(workload_requests(&job, 4).unwrap()["cpu"], q("2"));
        let sts =
            object(json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": spec}));
        assert_eq!(workload_requests(&sts, 4).unwrap()["cpu"], q("1"), "replicas default to 1");
        let pod = object(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}]}}));
        assert_eq!(workload_requests(&pod, 4).unwrap()["memory"], q("1Gi"));
        let cm = object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}));
        assert!(workload_requests(&cm, 4).is_none());
    }
}
