//! The embedded target end to end: applying a small app, readiness after the
//! configured delay, resources moving as workloads land and leave, restarts,
//! ownership, namespaces, and `fleet-agent inspect` reading the store while
//! the target is open.

use std::path::Path;
use std::time::{Duration, Instant};

use fleet_agent::inspect::inspect;
use fleet_agent::targets::availability::{availability, Availability};
use fleet_agent::targets::embedded::{EmbeddedTarget, SimConfig, STORE_DIR};
use fleet_agent::targets::{ApplyMode, ApplyOutcome, ApplyRequest, ResourceId, Target, TargetError, OWNER_ANNOTATION};
use fleet_api::quantity::Quantity;
use fleet_api::Object;
use serde_json::{json, Value};

const OWNER: &str = "fleet-member-east/web-work";
const READY_DELAY: Duration = Duration::from_millis(200);
const POLL: Duration = Duration::from_millis(20);
const DEADLINE: Duration = Duration::from_secs(10);

fn object(v: Value) -> Object {
    serde_json::from_value(v).expect("a valid object")
}

fn namespace() -> Object {
    object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}))
}

fn config_map() -> Object {
    object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "web"},
                  "data": {"greeting": "hello"}}))
}

/// 3 replicas of two containers requesting 250m+250m CPU and 128Mi+64Mi.
fn deployment() -> Object {
    object(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [
                {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}},
                {"name": "sidecar", "image": "envoy", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}
            ]}}}
    }))
}

fn config() -> SimConfig {
    SimConfig { ready_delay: READY_DELAY, ..SimConfig::default() }
}

async fn apply(
    target: &EmbeddedTarget,
    manifest: &Object,
    owner: &str,
) -> Result<fleet_agent::targets::Applied, TargetError> {
    target.apply(ApplyRequest { manifest, mode: ApplyMode::ServerSide { force: false }, owner, take_over: false }).await
}

async fn available(target: &EmbeddedTarget) -> (Quantity, Quantity) {
    let report = target.report(true).await.expect("report");
    let q = |k: &str| Quantity::parse(&report.resource_usage.available[k]).expect("a quantity");
    (q("cpu"), q("memory"))
}

async fn apply_app(target: &EmbeddedTarget) {
    for manifest in [namespace(), config_map(), deployment()] {
        let applied = apply(target, &manifest, OWNER).await.expect("apply");
        assert_eq!(applied.outcome, ApplyOutcome::Created, "{}", manifest.kind);
        assert_eq!(applied.live.metadata.annotations.get(OWNER_ANNOTATION).map(String::as_str), Some(OWNER));
    }
}

#[tokio::test]
async fn deployment_becomes_available_after_the_ready_delay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), config()).expect("open");
    apply(&target, &namespace(), OWNER).await.expect("namespace");
    let applied = apply(&target, &deployment(), OWNER).await.expect("deployment");
    // The live object returned by apply is read at the apply's own instant.
    match availability(&applied.live) {
        Availability::NotYetAvailable(why) => assert!(why.contains("0 of 3 replicas available"), "{why}"),
        other => panic!("available at once: {other:?}"),
    }
    let id = ResourceId::of(&deployment());
    let started = Instant::now();
    loop {
        let live = target.get(&id).await.expect("get").expect("exists");
        if availability(&live) == Availability::Available {
            let status = live.status().expect("status");
            assert_eq!(status["observedGeneration"], 1);
            assert_eq!(status["readyReplicas"], 3);
            assert_eq!(status["updatedReplicas"], 3);
            break;
        }
        assert!(started.elapsed() < DEADLINE, "not available after {DEADLINE:?}: {:?}", live.status());
        tokio::time::sleep(POLL).await;
    }
    assert!(started.elapsed() + Duration::from_millis(5) >= READY_DELAY / 2, "available too early");

    // A new generation is not available until its own delay has passed.
    let mut scaled = deployment();
    scaled.rest["spec"]["replicas"] = json!(4);
    let applied = apply(&target, &scaled, OWNER).await.expect("scale");
    assert_eq!(applied.outcome, ApplyOutcome::Updated);
    assert_eq!(applied.live.metadata.generation, 2);
    assert!(!availability(&applied.live).is_available());
}

#[tokio::test]
async fn available_resources_follow_workloads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), config()).expect("open");
    let (cpu0, memory0) = available(&target).await;
    assert_eq!(cpu0, Quantity::parse("11400m").expect("q"), "defaults: 3 nodes × 3800m");
    apply_app(&target).await;
    let (cpu1, memory1) = available(&target).await;
    assert_eq!(cpu0.saturating_sub(cpu1), Quantity::parse("1500m").expect("q"), "3 × (250m + 250m)");
    assert_eq!(memory0.saturating_sub(memory1), Quantity::parse("576Mi").expect("q"), "3 × (128Mi + 64Mi)");
    assert!(target.delete(&ResourceId::of(&deployment())).await.expect("delete"));
    assert_eq!(available(&target).await, (cpu0, memory0));
    assert!(!target.delete(&ResourceId::of(&deployment())).await.expect("delete again"));
}

#[tokio::test]
async fn objects_survive_a_restart_and_reapplying_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), config()).expect("open");
    apply_app(&target).await;
    let before = target.get(&ResourceId::of(&deployment())).await.expect("get").expect("exists");
    drop(target);

    let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), config()).expect("reopen");
    let after = target.get(&ResourceId::of(&deployment())).await.expect("get").expect("kept");
    assert_eq!(after.metadata, before.metadata);
    assert_eq!(after.spec(), before.spec());
    for manifest in [namespace(), config_map(), deployment()] {
        let applied = apply(&target, &manifest, OWNER).await.expect("reapply");
        assert_eq!(applied.outcome, ApplyOutcome::Unchanged, "{}", manifest.kind);
    }
    let again = target.get(&ResourceId::of(&deployment())).await.expect("get").expect("exists");
    assert_eq!(again.metadata.resource_version, before.metadata.resource_version);
}

#[tokio::test]
async fn another_work_conflicts_and_a_missing_namespace_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), config()).expect("open");
    match apply(&target, &config_map(), OWNER).await {
        Err(TargetError::Invalid(message)) => {
            assert!(message.contains("namespaces \"web\" not found"), "{message}")
        }
        other => panic!("expected a missing-namespace error, got {other:?}"),
    }
    apply_app(&target).await;
    match apply(&target, &config_map(), "fleet-member-east/other-work").await {
        Err(TargetError::Conflict(message)) => {
            assert!(message.contains(OWNER) && message.contains("other-work"), "{message}")
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The conflicting apply changed nothing.
    let live = target.get(&ResourceId::of(&config_map())).await.expect("get").expect("exists");
    assert_eq!(live.metadata.annotations.get(OWNER_ANNOTATION).map(String::as_str), Some(OWNER));
}

fn inspect_text(dir: &Path, kind: Option<&str>, name: Option<&str>, namespace: Option<&str>) -> String {
    inspect(dir, kind, name, namespace, false, false).expect("inspect")
}

#[tokio::test]
async fn inspect_reads_the_store_while_the_target_is_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), config()).expect("open");
    apply_app(&target).await;

    let table = inspect_text(dir.path(), Some("deploy"), None, Some("web"));
    let mut lines = table.lines();
    assert_eq!(
        lines.next().map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"])
    );
    let row = lines.next().expect("a row");
    assert!(row.starts_with("web ") && row.contains("0/3"), "{table}");

    let started = Instant::now();
    while !inspect_text(dir.path(), Some("deployments"), Some("web"), Some("web")).contains("3/3") {
        assert!(started.elapsed() < DEADLINE, "inspect never showed 3/3");
        tokio::time::sleep(POLL).await;
    }

    let all = inspect(dir.path(), Some("cm"), None, None, true, false).expect("inspect -A");
    assert!(all.starts_with("NAMESPACE") && all.contains("web-config"), "{all}");
    let summary = inspect_text(dir.path(), None, None, None);
    for name in ["web-config", "web", "kube-system"] {
        assert!(summary.contains(name), "{name} in {summary}");
    }

    let one: Value = serde_json::from_str(
        &inspect(dir.path(), Some("deploy"), Some("web"), Some("web"), false, true).expect("json"),
    )
    .expect("json");
    assert_eq!(one["metadata"]["name"], "web");
    assert_eq!(one["status"]["availableReplicas"], 3);
    let list: Value =
        serde_json::from_str(&inspect(dir.path(), Some("ns"), None, None, false, true).expect("json")).expect("json");
    assert_eq!(list["kind"], "List");
    assert!(list["items"].as_array().expect("items").iter().any(|i| i["metadata"]["name"] == "web"));

    // Readers and the writer at the same time: every read sees whole objects.
    let reader_dir = dir.path().to_path_buf();
    let reader = std::thread::spawn(move || {
        for _ in 0..50 {
            let text = inspect(&reader_dir, Some("cm"), None, Some("web"), false, true).expect("concurrent inspect");
            let list: Value = serde_json::from_str(&text).expect("whole JSON");
            assert!(list["items"].as_array().is_some());
        }
    });
    for i in 0..50 {
        let mut changed = config_map();
        changed.rest["data"]["counter"] = json!(i.to_string());
        apply(&target, &changed, OWNER).await.expect("update while reading");
    }
    reader.join().expect("reader thread");
}
