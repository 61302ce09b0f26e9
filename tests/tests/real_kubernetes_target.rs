//! The agent's Kubernetes target driven directly against a real API server
//! (a `realkube` cluster): server-side apply outcomes and managed fields,
//! ownership and field-manager conflicts, deletion with the real garbage
//! collector and namespace finalizer, availability from the real controllers,
//! custom resources once their CRD is established, the heartbeat report from
//! real Nodes and Pods, and a kubeconfig with a client certificate over TLS.
//! The requests the agent makes are read from the API server's audit log.
//!
//! Faults a real server does not produce on demand (5xx answers, a conflict
//! on a read, an unreachable server) and lists longer than a page stay with
//! the API double in `agent/tests/kubernetes_target.rs`.

use std::time::Duration;

use fleet_agent::targets::availability::{availability, Availability};
use fleet_agent::targets::kubernetes::{KubernetesTarget, AGENT_USER_AGENT, FIELD_MANAGER};
use fleet_agent::targets::{
    Applied, ApplyMode, ApplyOutcome, ApplyRequest, ResourceId, Target, TargetError, OWNER_ANNOTATION,
};
use fleet_api::quantity::Quantity;
use fleet_api::Object;
use fleet_tests::eventually;
use fleet_tests::realkube::{ClusterOptions, RealCluster};
use serde_json::{json, Value};

const OWNER: &str = "fleet-member-east/web-work";
const SSA: ApplyMode = ApplyMode::ServerSide { force: false };
const WAIT: Duration = Duration::from_secs(60);

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
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": image,
                                     "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]}}}
    }))
}

/// A real cluster (with its audit log) and a target on its admin kubeconfig.
async fn start() -> (RealCluster, KubernetesTarget) {
    let options =
        ClusterOptions { nodes: 2, node_cpu: "4".into(), node_memory: "8Gi".into(), audit: true, ..Default::default() };
    let cluster =
        tokio::task::spawn_blocking(move || RealCluster::start_with("target", &options)).await.expect("start");
    let target = KubernetesTarget::connect(Some(&cluster.kubeconfig)).await.expect("connected");
    (cluster, target)
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

/// `(verb, requestURI)` of every request the agent's target made so far.
fn agent_requests(cluster: &RealCluster) -> Vec<(String, String)> {
    cluster
        .audit_events()
        .iter()
        .filter(|e| e["userAgent"].as_str().is_some_and(|agent| agent.starts_with(AGENT_USER_AGENT)))
        .map(|e| {
            let uri = e["requestURI"].as_str().unwrap_or_default().trim_end_matches('?');
            (e["verb"].as_str().unwrap_or_default().to_string(), uri.to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_with_server_side_apply_and_reports_outcomes() {
    let (cluster, target) = start().await;

    let ns = apply(&target, &namespace()).await;
    assert_eq!(ns.outcome, ApplyOutcome::Created);
    assert_eq!(ns.live.metadata.annotations[OWNER_ANNOTATION], OWNER);
    assert_eq!(ns.live.status().and_then(|s| s.get("phase")), Some(&json!("Active")), "the real server's default");

    let cm = apply(&target, &config_map(json!({"greeting": "hello", "extra": "x"}))).await;
    assert_eq!(cm.outcome, ApplyOutcome::Created);
    let web = apply_as(&target, &deployment(2, "nginx:1.27"), ApplyMode::ServerSide { force: true }, OWNER)
        .await
        .expect("applied");
    assert_eq!(web.outcome, ApplyOutcome::Created);
    assert_eq!(web.live.metadata.generation, 1);
    // The server records Fleet's fields under its field manager, as an apply.
    let shown = cluster.kubectl_ok(&["get", "deployment", "web", "-n", "demo", "-o", "json", "--show-managed-fields"]);
    let live: Value = serde_json::from_str(&shown).expect("json");
    let managers: Vec<(&str, &str)> = live["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| (m["manager"].as_str().unwrap_or_default(), m["operation"].as_str().unwrap_or_default()))
        .collect();
    assert!(managers.contains(&(FIELD_MANAGER, "Apply")), "{managers:?}");
    assert_eq!(live["spec"]["strategy"]["type"], "RollingUpdate", "server defaults are kept");

    // The same manifest again: nothing changes on the server.
    let again = apply(&target, &config_map(json!({"greeting": "hello", "extra": "x"}))).await;
    assert_eq!(again.outcome, ApplyOutcome::Unchanged);
    assert_eq!(again.live.metadata.resource_version, cm.live.metadata.resource_version);

    // New data under ClientSide: a key the manifest no longer sets is removed.
    let updated = apply_as(&target, &config_map(json!({"greeting": "bonjour"})), ApplyMode::ClientSide, OWNER)
        .await
        .expect("applied");
    assert_eq!(updated.outcome, ApplyOutcome::Updated);
    assert_eq!(updated.live.rest["data"], json!({"greeting": "bonjour"}));

    // get: the live object; None when absent.
    let got = target.get(&ResourceId::of(&deployment(2, "x"))).await.expect("get").expect("exists");
    assert_eq!(got.metadata.uid, web.live.metadata.uid);
    let mut missing = ResourceId::of(&config_map(json!({})));
    missing.name = "nope".into();
    assert_eq!(target.get(&missing).await.expect("get"), None);

    // What went over the wire: applies as PATCHes with Fleet's field
    // manager; discovery of a group-version read once and then cached.
    // (The audit log is written as each answer completes: poll for it.)
    let patched = |requests: &[(String, String)], path: &str| {
        requests.iter().any(|(v, uri)| {
            v == "patch" && uri.starts_with(path) && uri.contains(&format!("fieldManager={FIELD_MANAGER}"))
        })
    };
    let requests = eventually("the agent's requests in the audit log", WAIT, || async {
        let requests = agent_requests(&cluster);
        let seen = patched(&requests, "/apis/apps/v1/namespaces/demo/deployments/web?")
            && patched(&requests, "/api/v1/namespaces/demo/configmaps/web-config?")
            && requests.iter().any(|(_, uri)| uri.ends_with("/configmaps/nope"));
        if seen {
            Ok(requests)
        } else {
            Err(format!("{requests:?}"))
        }
    })
    .await;
    let discovery = requests.iter().filter(|(_, uri)| uri == "/apis/apps/v1").count();
    assert_eq!(discovery, 1, "{requests:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_objects_it_does_not_own_and_reports_field_conflicts() {
    let (cluster, target) = start().await;
    apply(&target, &namespace()).await;

    // Created by someone else (no owner annotation): a Conflict, and no write.
    cluster.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: demo}\ndata: {owner: kubectl}\n",
    );
    let e = apply_as(&target, &config_map(json!({"a": "b"})), ApplyMode::ClientSide, OWNER).await.unwrap_err();
    assert!(
        matches!(&e, TargetError::Conflict(m) if m.contains("web-config") && m.contains("not created by Fleet")),
        "{e}"
    );
    assert_eq!(
        cluster.get("configmap", "demo", "web-config").map(|c| c["data"].clone()),
        Some(json!({"owner": "kubectl"}))
    );

    // Placed by another Work: a Conflict naming it.
    apply(&target, &deployment(2, "nginx")).await;
    let e = apply_as(&target, &deployment(2, "nginx"), SSA, "fleet-member-east/other-work").await.unwrap_err();
    assert!(matches!(&e, TargetError::Conflict(m) if m.contains("fleet-member-east/web-work")), "{e}");

    // Someone scaled the Deployment with kubectl: server-side apply without
    // force is refused by the real server (409 naming the manager and the
    // field), and with force Fleet's value wins.
    cluster.kubectl_ok(&["scale", "deployment", "web", "-n", "demo", "--replicas", "5"]);
    let e = apply_as(&target, &deployment(2, "nginx"), SSA, OWNER).await.unwrap_err();
    assert!(
        matches!(&e, TargetError::Conflict(m) if m.contains("kubectl") && m.contains(".spec.replicas") && m.contains("409")),
        "{e}"
    );
    let forced =
        apply_as(&target, &deployment(2, "nginx"), ApplyMode::ServerSide { force: true }, OWNER).await.expect("forced");
    assert_eq!(forced.outcome, ApplyOutcome::Updated);
    assert_eq!(forced.live.spec().and_then(|s| s.get("replicas")), Some(&json!(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_in_the_background_and_the_cluster_collects_dependents() {
    let (cluster, target) = start().await;
    apply(&target, &namespace()).await;
    apply(&target, &deployment(1, "nginx")).await;
    let replica_sets = || cluster.kubectl_ok(&["get", "replicasets", "-n", "demo", "-o", "name"]);
    eventually("the Deployment's ReplicaSet exists", WAIT, || async {
        let names = replica_sets();
        if names.trim().is_empty() {
            Err("none yet".to_string())
        } else {
            Ok(())
        }
    })
    .await;

    let id = ResourceId::of(&deployment(1, "nginx"));
    assert!(target.delete(&id).await.expect("deleted"));
    assert_eq!(target.get(&id).await.expect("get"), None, "gone at once (background propagation)");
    eventually("the garbage collector removed the ReplicaSet", WAIT, || async {
        let names = replica_sets();
        if names.trim().is_empty() {
            Ok(())
        } else {
            Err(names)
        }
    })
    .await;
    let deletes = eventually("the delete in the audit log", WAIT, || async {
        let deletes: Vec<String> =
            agent_requests(&cluster).into_iter().filter(|(v, _)| v == "delete").map(|(_, uri)| uri).collect();
        if deletes.is_empty() {
            Err("none yet".to_string())
        } else {
            Ok(deletes)
        }
    })
    .await;
    assert_eq!(deletes, ["/apis/apps/v1/namespaces/demo/deployments/web"]);

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

    // The Namespace: Terminating while the controller manager finalizes it, then gone.
    cluster.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: left, namespace: demo}\n");
    assert!(target.delete(&ResourceId::of(&namespace())).await.expect("deleted"));
    eventually("the namespace finalized", WAIT, || async {
        match target.get(&ResourceId::of(&namespace())).await {
            Ok(None) => Ok(()),
            Ok(Some(ns)) => Err(format!("{:?}", ns.status())),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
}

fn not_yet(a: Availability) -> String {
    match a {
        Availability::NotYetAvailable(reason) => reason,
        other => panic!("expected not yet available, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_becomes_available_as_the_real_controllers_progress() {
    let (_cluster, target) = start().await;
    assert_eq!(availability(&apply(&target, &namespace()).await.live), Availability::Available);
    let applied = apply(&target, &deployment(2, "nginx:1.27")).await;
    assert!(not_yet(availability(&applied.live)).contains("observed generation 0"));
    let id = ResourceId::of(&deployment(2, "x"));
    let wait_available = |what: &'static str| {
        let (target, id) = (target.clone(), id.clone());
        async move {
            eventually(what, WAIT, || async {
                let live = target.get(&id).await.map_err(|e| e.to_string())?.ok_or("gone")?;
                match availability(&live) {
                    Availability::Available => Ok(live),
                    other => Err(format!("{other:?}")),
                }
            })
            .await
        }
    };
    let live = wait_available("web available").await;
    assert_eq!(live.status().and_then(|s| s.get("readyReplicas")), Some(&json!(2)));

    // A new image: generation 2, not available until the rollout is observed and done.
    let rolled = apply(&target, &deployment(2, "nginx:1.28")).await;
    assert_eq!(rolled.outcome, ApplyOutcome::Updated);
    assert_eq!(rolled.live.metadata.generation, 2);
    assert!(!availability(&rolled.live).is_available());
    let live = wait_available("web rolled out").await;
    assert_eq!(live.status().and_then(|s| s.get("observedGeneration")), Some(&json!(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_become_appliable_once_their_crd_is_established() {
    let (cluster, target) = start().await;
    apply(&target, &namespace()).await;
    let widget = object(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                               "metadata": {"name": "w", "namespace": "demo"}, "spec": {"size": 3}}));
    let e = apply_as(&target, &widget, SSA, OWNER).await.unwrap_err();
    assert!(matches!(&e, TargetError::NotServed(m) if m.contains("Widget") && m.contains("example.com/v1")), "{e}");

    cluster.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
    );
    let applied = eventually("the Widget applied once its CRD is served", WAIT, || async {
        apply_as(&target, &widget, SSA, OWNER).await.map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(applied.outcome, ApplyOutcome::Created);
    assert_eq!(availability(&applied.live), Availability::NotTrackable);
    assert_eq!(cluster.get("widget", "demo", "w").map(|w| w["spec"]["size"].clone()), Some(json!(3)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_from_the_real_server_become_target_errors() {
    let (_cluster, target) = start().await;
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
}

fn q(text: &str) -> Quantity {
    Quantity::parse(text).expect("a quantity")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_sums_real_nodes_and_the_pods_that_hold_resources() {
    let (cluster, target) = start().await;
    let report = target.report(true).await.expect("report");
    assert_eq!(report.properties["kubernetes-fleet.io/node-count"], "2");
    let usage = &report.resource_usage;
    assert_eq!((q(&usage.capacity["cpu"]), q(&usage.capacity["memory"])), (q("8"), q("16Gi")));
    assert_eq!(q(&usage.available["cpu"]), q("8"));
    // The namespaces, for ResourcePlacements' namespace affinity.
    let namespaces = report.namespaces.clone().expect("namespaces reported");
    assert!(namespaces.contains_key("default") && namespaces.contains_key("kube-system"), "{namespaces:?}");
    let condition = report.conditions.iter().find(|c| c.type_ == "NamespaceCollectionSucceeded").expect("condition");
    assert_eq!(condition.status, "True", "{condition:?}");

    // Two running Pods of 250m and a finished Job's Pod: only the running count.
    apply(&target, &namespace()).await;
    apply(&target, &deployment(2, "nginx")).await;
    cluster.apply("apiVersion: batch/v1\nkind: Job\nmetadata: {name: once, namespace: demo}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox, resources: {requests: {cpu: \"2\"}}}]\n");
    eventually("the Job finished and the web Pods hold their requests", WAIT, || async {
        let done = cluster.get("job", "demo", "once").is_some_and(|j| j["status"]["succeeded"] == 1);
        let report = target.report(true).await.map_err(|e| e.to_string())?;
        let available = q(&report.resource_usage.available["cpu"]);
        // The namespace Fleet placed names its Work.
        let placed_by = report.namespaces.as_ref().and_then(|n| n.get("demo")).cloned().unwrap_or_default();
        if done && available == q("7500m") && !placed_by.is_empty() {
            Ok(())
        } else {
            Err(format!("job done {done}, available cpu {available:?}, demo placed by {placed_by:?}"))
        }
    })
    .await;
}

/// An image the cluster cannot pull keeps a workload from becoming
/// available, as a kubelet does (`--unpullable-images` of realkube): a
/// rollout to it never completes, its Pod waits with `ErrImagePull`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_that_cannot_be_pulled_keeps_a_deployment_unavailable() {
    let options = ClusterOptions { unpullable_images: vec!["no-such-image:1".into()], ..Default::default() };
    let cluster = tokio::task::spawn_blocking(move || RealCluster::start_with("pull", &options)).await.expect("start");
    let target = KubernetesTarget::connect(Some(&cluster.kubeconfig)).await.expect("connected");
    apply(&target, &namespace()).await;
    apply(&target, &deployment(1, "no-such-image:1")).await;
    let waiting = eventually("the Pod waits on its image", WAIT, || async {
        let out = cluster.kubectl(&["get", "pods", "-n", "demo", "-o", "json"]);
        let pods: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        let statuses = pods["items"][0]["status"]["containerStatuses"].clone();
        match statuses[0]["state"]["waiting"]["reason"].as_str() {
            Some("ErrImagePull") => Ok(pods["items"][0].clone()),
            _ => Err(statuses.to_string()),
        }
    })
    .await;
    assert_eq!(waiting["status"]["phase"], "Pending");
    let ready = waiting["status"]["conditions"].as_array().cloned().unwrap_or_default();
    assert!(ready.iter().any(|c| c["type"] == "Ready" && c["status"] == "False"), "{ready:?}");
    let live = target.get(&ResourceId::of(&deployment(1, "x"))).await.expect("read").expect("exists");
    assert!(!availability(&live).is_available(), "{:?}", live.status());

    // Any other image becomes Ready as before.
    apply(&target, &deployment(1, "nginx:1.27")).await;
    eventually("web available on a pullable image", WAIT, || async {
        let live = target.get(&ResourceId::of(&deployment(1, "x"))).await.map_err(|e| e.to_string())?;
        match live.as_ref().map(availability) {
            Some(Availability::Available) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_claiming_the_standard_storage_class_becomes_available() {
    let (_cluster, target) = start().await;
    apply(&target, &namespace()).await;
    let stateful_set = object(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "demo"},
        "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:17",
                                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "storageClassName": "standard", "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}]}
    }));
    apply(&target, &stateful_set).await;
    let id = ResourceId::of(&stateful_set);
    eventually("db available", WAIT, || async {
        let live = target.get(&id).await.map_err(|e| e.to_string())?.ok_or("gone")?;
        match availability(&live) {
            Availability::Available => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let claim = ResourceId {
        group: String::new(),
        version: "v1".into(),
        kind: "PersistentVolumeClaim".into(),
        namespace: "demo".into(),
        name: "data-db-0".into(),
    };
    let live = target.get(&claim).await.expect("read the claim").expect("the claim exists");
    assert_eq!(live.status().and_then(|s| s.get("phase")), Some(&json!("Bound")));
}
