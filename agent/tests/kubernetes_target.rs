//! The Kubernetes target against an in-process double of the API server,
//! for what a real server does not do on demand: answers of 5xx and a
//! conflict on a read, a server that is gone, lists longer than one page
//! (hundreds of Pods), and a bearer-token kubeconfig's header. Everything
//! else the target does is tested against a real API server in
//! `tests/tests/real_kubernetes_target.rs` and the member journeys of
//! `tests/tests/real_members.rs`.

mod apiserver_double;

use apiserver_double::{ApiServerDouble, Recorded};
use fleet_agent::targets::kubernetes::KubernetesTarget;
use fleet_agent::targets::{Applied, ApplyMode, ApplyOutcome, ApplyRequest, ResourceId, Target, TargetError};
use fleet_api::member::TARGET_PROPERTY;
use fleet_api::quantity::Quantity;
use fleet_api::Object;
use serde_json::{json, Value};

const OWNER: &str = "fleet-member-east/web-work";
const SSA: ApplyMode = ApplyMode::ServerSide { force: false };

fn object(v: Value) -> Object {
    serde_json::from_value(v).expect("a valid object")
}

fn namespace() -> Object {
    object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}))
}

async fn start() -> (ApiServerDouble, KubernetesTarget) {
    let double = ApiServerDouble::start().await;
    let target = KubernetesTarget::from_client(double.client());
    (double, target)
}

async fn apply_as(
    target: &KubernetesTarget,
    manifest: &Object,
    mode: ApplyMode,
    owner: &str,
) -> Result<Applied, TargetError> {
    target.apply(ApplyRequest { manifest, mode, owner, take_over: false }).await
}

async fn apply(target: &KubernetesTarget, manifest: &Object) -> Applied {
    apply_as(target, manifest, SSA, OWNER).await.expect("applied")
}

fn q(text: &str) -> Quantity {
    Quantity::parse(text).expect("a quantity")
}

fn id_of(manifest: &Object) -> ResourceId {
    ResourceId::of(manifest)
}

#[tokio::test]
async fn report_sums_nodes_and_pods_across_pages() {
    let (double, target) = start().await;
    for (name, cpu, memory, allocatable_cpu) in [("node-a", "4", "16Gi", "3800m"), ("node-b", "8", "32Gi", "7800m")] {
        double.create(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}), "kubelet");
        double.set_status(
            "",
            "nodes",
            "",
            name,
            json!({"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "allocatable": {"cpu": allocatable_cpu, "memory": memory, "pods": "110"}}),
        );
    }
    double.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}), "kubectl");
    // 501 running pods of 10m/1Mi (two pages of 500), one pending, two finished.
    let pod = |name: String, cpu: &str, memory: &str, phase: &str| {
        double.create(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "apps"},
                   "spec": {"containers": [{"name": "c", "image": "i",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}),
            "kube-controller-manager",
        );
        double.set_status("", "pods", "apps", &name, json!({"phase": phase}));
    };
    for i in 0..501 {
        pod(format!("run-{i:03}"), "10m", "1Mi", "Running");
    }
    pod("pending".into(), "1", "1Gi", "Pending");
    pod("done".into(), "2", "2Gi", "Succeeded");
    pod("crashed".into(), "2", "2Gi", "Failed");
    double.take_requests();

    let report = target.report(true).await.expect("report");
    assert_eq!(report.properties["kubernetes-fleet.io/node-count"], "2");
    assert_eq!(report.properties[TARGET_PROPERTY], "kubernetes");
    let usage = &report.resource_usage;
    assert_eq!(q(&usage.capacity["cpu"]), q("12"));
    assert_eq!(q(&usage.capacity["memory"]), q("48Gi"));
    assert_eq!(q(&usage.allocatable["cpu"]), q("11600m"));
    assert_eq!(q(&usage.allocatable["memory"]), q("48Gi"));
    // 11600m − (501 × 10m + 1000m) = 5590m; 48Gi − (501Mi + 1Gi).
    assert_eq!(q(&usage.available["cpu"]), q("5590m"));
    assert_eq!(q(&usage.available["memory"]), q("48Gi").saturating_sub(q("501Mi")).saturating_sub(q("1Gi")));

    let requests = double.requests();
    let pods: Vec<&Recorded> = requests.iter().filter(|r| r.path == "/api/v1/pods").collect();
    assert_eq!(pods.len(), 2, "two pages");
    assert_eq!(pods[0].param("fieldSelector"), Some("status.phase!=Succeeded,status.phase!=Failed"));
    assert_eq!(pods[0].param("limit"), Some("500"));
    assert_eq!(pods[1].param("continue"), Some("500"));
    assert!(requests.iter().any(|r| r.method == "GET" && r.path == "/api/v1/nodes"));
}

#[tokio::test]
async fn errors_become_target_errors() {
    let (double, target) = start().await;
    apply(&target, &namespace()).await;

    // 5xx: Unavailable.
    double.fail_next("/api/v1/nodes", 1, 500, "InternalError", "etcdserver: request timed out");
    let e = target.report(true).await.unwrap_err();
    assert!(matches!(&e, TargetError::Unavailable(m) if m.contains("etcdserver")), "{e}");
    double.fail_next(
        "/api/v1/namespaces/demo",
        1,
        409,
        "Conflict",
        "Operation cannot be fulfilled: the object has been modified",
    );
    let e = target.get(&id_of(&namespace())).await.unwrap_err();
    assert!(matches!(e, TargetError::Conflict(_)), "{e}");

    // No server at all: Unavailable.
    let url = double.url();
    drop(double);
    let mut config = kube::Config::new(url.parse().expect("url"));
    config.default_retry = false;
    let gone = KubernetesTarget::from_config(config).expect("target");
    let e = gone.get(&id_of(&namespace())).await.unwrap_err();
    assert!(matches!(&e, TargetError::Unavailable(m) if m.contains("could not be reached")), "{e}");
}

#[tokio::test]
async fn connects_with_a_kubeconfig() {
    let double = ApiServerDouble::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: member\n\
         clusters:\n- name: member\n  cluster:\n    server: {}\n\
         users:\n- name: agent\n  user:\n    token: secret-token\n\
         contexts:\n- name: member\n  context:\n    cluster: member\n    user: agent\n",
        double.url()
    );
    std::fs::write(&path, kubeconfig).expect("write kubeconfig");
    let target = KubernetesTarget::connect(Some(&path)).await.expect("connected");
    assert_eq!(apply(&target, &namespace()).await.outcome, ApplyOutcome::Created);
    let requests = double.requests();
    assert!(requests.iter().all(|r| r.authorization.as_deref() == Some("Bearer secret-token")), "{requests:?}");

    let e = KubernetesTarget::connect(Some(&dir.path().join("missing"))).await.unwrap_err();
    assert!(matches!(&e, TargetError::Invalid(m) if m.contains("cannot read the kubeconfig")), "{e}");
}
