//! The Kubernetes target against an in-process double of the API server
//! (no real API server can run here): the requests it makes (paths, field
//! manager, patch type, force, deletion propagation, discovery caching,
//! paging) and what it makes of the answers (outcomes, ownership, conflicts,
//! availability, the heartbeat report, errors).

mod apiserver_double;

use apiserver_double::{ApiServerDouble, Recorded, ResourceType};
use fleet_agent::target::availability::{availability, Availability};
use fleet_agent::target::kubernetes::{KubernetesTarget, DELETE_PROPAGATION, FIELD_MANAGER};
use fleet_agent::target::{
    Applied, ApplyMode, ApplyOutcome, ApplyRequest, ResourceId, Target, TargetError, OWNER_ANNOTATION,
};
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

fn config_map(data: Value) -> Object {
    object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "demo"},
                  "data": data}))
}

fn deployment(replicas: i64, image: &str) -> Object {
    object(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": image}]}}}
    }))
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

fn patches(requests: &[Recorded]) -> Vec<&Recorded> {
    requests.iter().filter(|r| r.method == "PATCH").collect()
}

fn id_of(manifest: &Object) -> ResourceId {
    ResourceId::of(manifest)
}

#[tokio::test]
async fn applies_with_server_side_apply_and_reports_outcomes() {
    let (double, target) = start().await;
    assert_eq!(target.name(), "kubernetes");

    // Create: discovery once per group-version, a GET (404), then the apply PATCH.
    let ns = apply(&target, &namespace()).await;
    assert_eq!(ns.outcome, ApplyOutcome::Created);
    let requests = double.take_requests();
    let calls: Vec<(String, String)> = requests.iter().map(|r| (r.method.clone(), r.path.clone())).collect();
    let expected = [("GET", "/api/v1"), ("GET", "/api/v1/namespaces/demo"), ("PATCH", "/api/v1/namespaces/demo")];
    assert_eq!(calls, expected.map(|(m, p)| (m.to_string(), p.to_string())));
    let patch = &requests[2];
    assert_eq!(patch.content_type.as_deref(), Some("application/apply-patch+yaml"));
    assert_eq!(patch.param("fieldManager"), Some(FIELD_MANAGER));
    assert_eq!(patch.param("force"), None, "ServerSide without force does not force");
    assert_eq!(patch.json()["metadata"]["annotations"][OWNER_ANNOTATION], OWNER);
    assert_eq!(ns.live.metadata.annotations[OWNER_ANNOTATION], OWNER);
    assert!(!ns.live.metadata.uid.is_empty() && !ns.live.metadata.resource_version.is_empty());
    assert_eq!(ns.live.status().and_then(|s| s.get("phase")), Some(&json!("Active")));

    let cm = apply(&target, &config_map(json!({"greeting": "hello", "extra": "x"}))).await;
    assert_eq!(cm.outcome, ApplyOutcome::Created);
    let web = apply_as(&target, &deployment(2, "nginx:1.27"), ApplyMode::ServerSide { force: true }, OWNER)
        .await
        .expect("applied");
    assert_eq!(web.outcome, ApplyOutcome::Created);
    assert_eq!(web.live.metadata.generation, 1);
    let requests = double.take_requests();
    let patch = patches(&requests)[1];
    assert_eq!(patch.path, "/apis/apps/v1/namespaces/demo/deployments/web");
    assert_eq!(patch.param("fieldManager"), Some("fleet-agent"));
    assert_eq!(patch.param("force"), Some("true"));
    assert_eq!(patch.content_type.as_deref(), Some("application/apply-patch+yaml"));
    assert_eq!(patch.json()["spec"]["replicas"], 2);
    // Discovery: /api/v1 is cached; apps/v1 read once.
    let discovery: Vec<&str> = requests
        .iter()
        .filter(|r| r.path == "/api/v1" || r.path.starts_with("/apis/apps/v1"))
        .map(|r| r.path.as_str())
        .collect();
    assert_eq!(discovery.iter().filter(|p| **p == "/apis/apps/v1").count(), 1, "{discovery:?}");
    assert!(!discovery.contains(&"/api/v1"), "{discovery:?}");

    // The same manifest again: nothing changes on the server.
    let again = apply(&target, &config_map(json!({"greeting": "hello", "extra": "x"}))).await;
    assert_eq!(again.outcome, ApplyOutcome::Unchanged);
    assert_eq!(again.live.metadata.resource_version, cm.live.metadata.resource_version);

    // New data: updated; a key the manifest no longer sets is removed (client-side apply semantics).
    let updated = apply_as(&target, &config_map(json!({"greeting": "bonjour"})), ApplyMode::ClientSide, OWNER)
        .await
        .expect("applied");
    assert_eq!(updated.outcome, ApplyOutcome::Updated);
    assert_ne!(updated.live.metadata.resource_version, cm.live.metadata.resource_version);
    assert_eq!(updated.live.rest["data"], json!({"greeting": "bonjour"}));
    let requests = double.take_requests();
    let patch = patches(&requests)[1];
    assert_eq!(patch.path, "/api/v1/namespaces/demo/configmaps/web-config");
    assert_eq!(patch.param("force"), Some("true"), "ClientSide applies with force");

    // get: the live object; None when absent.
    let live = target.get(&id_of(&deployment(2, "x"))).await.expect("get").expect("exists");
    assert_eq!(live.metadata.uid, web.live.metadata.uid);
    let mut missing = id_of(&config_map(json!({})));
    missing.name = "nope".into();
    assert_eq!(target.get(&missing).await.expect("get"), None);
    assert!(double.requests().iter().any(|r| r.method == "GET" && r.path == "/api/v1/namespaces/demo/configmaps/nope"));
}

#[tokio::test]
async fn refuses_objects_it_does_not_own_and_reports_field_conflicts() {
    let (double, target) = start().await;
    apply(&target, &namespace()).await;

    // Created by someone else (no owner annotation): a Conflict, and no write.
    double.create(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "demo"},
               "data": {"owner": "kubectl"}}),
        "kubectl",
    );
    double.take_requests();
    let e = apply_as(&target, &config_map(json!({"a": "b"})), ApplyMode::ClientSide, OWNER).await.unwrap_err();
    assert!(
        matches!(&e, TargetError::Conflict(m) if m.contains("web-config") && m.contains("not created by Fleet")),
        "{e}"
    );
    assert!(patches(&double.requests()).is_empty(), "an unowned object is not written to");
    let kept = double.object("", "configmaps", "demo", "web-config").expect("still there");
    assert_eq!(kept["data"], json!({"owner": "kubectl"}));

    // Placed by another Work: a Conflict naming it.
    apply(&target, &deployment(2, "nginx")).await;
    let e = apply_as(&target, &deployment(2, "nginx"), SSA, "fleet-member-east/other-work").await.unwrap_err();
    assert!(matches!(&e, TargetError::Conflict(m) if m.contains("fleet-member-east/web-work")), "{e}");

    // Someone scaled our Deployment with their own field manager: server-side
    // apply without force is refused by the server (409), with force it wins.
    double.create(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"},
               "spec": {"replicas": 5}}),
        "kubectl-scale",
    );
    let e = apply_as(&target, &deployment(2, "nginx"), SSA, OWNER).await.unwrap_err();
    assert!(
        matches!(&e, TargetError::Conflict(m) if m.contains("kubectl-scale") && m.contains(".spec.replicas") && m.contains("409")),
        "{e}"
    );
    let forced =
        apply_as(&target, &deployment(2, "nginx"), ApplyMode::ServerSide { force: true }, OWNER).await.expect("forced");
    assert_eq!(forced.outcome, ApplyOutcome::Updated);
    assert_eq!(forced.live.spec().and_then(|s| s.get("replicas")), Some(&json!(2)));
}

#[tokio::test]
async fn deletes_with_background_propagation() {
    let (double, target) = start().await;
    apply(&target, &namespace()).await;
    apply(&target, &deployment(1, "nginx")).await;
    double.take_requests();

    let id = id_of(&deployment(1, "nginx"));
    assert!(target.delete(&id).await.expect("deleted"));
    let requests = double.take_requests();
    let delete: Vec<&Recorded> = requests.iter().filter(|r| r.method == "DELETE").collect();
    assert_eq!(delete.len(), 1);
    assert_eq!(delete[0].path, "/apis/apps/v1/namespaces/demo/deployments/web");
    let policy = delete[0].json()["propagationPolicy"].clone();
    assert_eq!(policy, json!("Background"), "DeleteOptions body: {}", delete[0].json());
    assert_eq!(DELETE_PROPAGATION, "Background");
    assert_eq!(double.object("apps", "deployments", "demo", "web"), None);
    assert_eq!(target.get(&id).await.expect("get"), None);

    // Already gone: false. A kind the server does not serve: nothing to delete.
    assert!(!target.delete(&id).await.expect("delete"));
    let widget = ResourceId {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Widget".into(),
        namespace: "demo".into(),
        name: "w".into(),
    };
    assert!(!target.delete(&widget).await.expect("delete"));
    assert_eq!(target.get(&widget).await.expect("get"), None);

    // Cluster-scoped: the namespace (and, on the server, what is in it).
    assert!(target.delete(&id_of(&namespace())).await.expect("deleted"));
    assert!(double.requests().iter().any(|r| r.method == "DELETE" && r.path == "/api/v1/namespaces/demo"));
}

fn not_yet(a: Availability) -> String {
    match a {
        Availability::NotYetAvailable(reason) => reason,
        other => panic!("expected not yet available, got {other:?}"),
    }
}

#[tokio::test]
async fn a_deployment_becomes_available_when_its_status_says_so() {
    let (double, target) = start().await;
    assert_eq!(availability(&apply(&target, &namespace()).await.live), Availability::Available);
    let applied = apply(&target, &deployment(2, "nginx:1.27")).await;
    let id = id_of(&deployment(2, "x"));
    // No status yet: the controller has not seen it.
    assert!(not_yet(availability(&applied.live)).contains("observed generation 0"));

    // The controller observed it; one of two replicas is available.
    double.set_status(
        "apps",
        "deployments",
        "demo",
        "web",
        json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1,
               "unavailableReplicas": 1}),
    );
    let live = target.get(&id).await.expect("get").expect("exists");
    let reason = not_yet(availability(&live));
    assert!(reason.contains("1 of 2 replicas available") && reason.contains("1 replicas unavailable"), "{reason}");

    // Both available.
    let full = json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
                      "availableReplicas": 2});
    double.set_status("apps", "deployments", "demo", "web", full);
    let live = target.get(&id).await.expect("get").expect("exists");
    assert_eq!(availability(&live), Availability::Available);

    // A new image: generation 2, not observed yet, so not available until the controller catches up.
    let rolled = apply(&target, &deployment(2, "nginx:1.28")).await;
    assert_eq!(rolled.outcome, ApplyOutcome::Updated);
    assert_eq!(rolled.live.metadata.generation, 2);
    assert!(not_yet(availability(&rolled.live)).contains("not yet the current generation 2"));
    double.set_status(
        "apps",
        "deployments",
        "demo",
        "web",
        json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}),
    );
    let live = target.get(&id).await.expect("get").expect("exists");
    assert!(availability(&live).is_available());
}

fn q(text: &str) -> Quantity {
    Quantity::parse(text).expect("a quantity")
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

    let report = target.report().await.expect("report");
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
async fn custom_resources_become_appliable_once_served() {
    let (double, target) = start().await;
    apply(&target, &namespace()).await;
    let widget = object(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                               "metadata": {"name": "w", "namespace": "demo"}, "spec": {"size": 3}}));
    let e = apply_as(&target, &widget, SSA, OWNER).await.unwrap_err();
    assert!(matches!(&e, TargetError::Invalid(m) if m.contains("Widget") && m.contains("example.com/v1")), "{e}");

    // The CRD is established: the next apply re-reads discovery and succeeds.
    double.serve(ResourceType::new("example.com", "v1", "Widget", "widgets", true));
    let applied = apply_as(&target, &widget, SSA, OWNER).await.expect("applied");
    assert_eq!(applied.outcome, ApplyOutcome::Created);
    assert!(double
        .requests()
        .iter()
        .any(|r| r.method == "PATCH" && r.path == "/apis/example.com/v1/namespaces/demo/widgets/w"));
    assert_eq!(availability(&applied.live), Availability::NotTrackable);
}

#[tokio::test]
async fn errors_become_target_errors() {
    let (double, target) = start().await;
    apply(&target, &namespace()).await;

    // 422 from validation: Invalid, with the server's message.
    let mut no_selector = deployment(1, "nginx");
    if let Some(spec) = no_selector.rest.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("selector");
    }
    let e = apply_as(&target, &no_selector, SSA, OWNER).await.unwrap_err();
    assert!(
        matches!(&e, TargetError::Invalid(m) if m.contains("spec.selector: Required value") && m.contains("422")),
        "{e}"
    );

    // 404 for a namespace that does not exist: Invalid.
    let mut elsewhere = config_map(json!({}));
    elsewhere.metadata.namespace = Some("nowhere".into());
    let e = apply_as(&target, &elsewhere, SSA, OWNER).await.unwrap_err();
    assert!(matches!(&e, TargetError::Invalid(m) if m.contains(r#"namespaces "nowhere" not found"#)), "{e}");

    // A namespaced kind without a namespace: refused before any request.
    let mut unplaced = config_map(json!({}));
    unplaced.metadata.namespace = None;
    let e = apply_as(&target, &unplaced, SSA, OWNER).await.unwrap_err();
    assert!(matches!(&e, TargetError::Invalid(m) if m.contains("metadata.namespace: Required value")), "{e}");

    // 5xx: Unavailable.
    double.fail_next(1, 500, "InternalError", "etcdserver: request timed out");
    let e = target.report().await.unwrap_err();
    assert!(matches!(&e, TargetError::Unavailable(m) if m.contains("etcdserver")), "{e}");
    double.fail_next(1, 409, "Conflict", "Operation cannot be fulfilled: the object has been modified");
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
