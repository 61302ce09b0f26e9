//! Unit tests of the embedded target as an API server: metadata, merges,
//! ownership, namespaces, cascades and the heartbeat report.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::targets::last_applied::LAST_APPLIED_ANNOTATION;

const OWNER: &str = "fleet-member-a/web-work";

fn object(v: Value) -> Object {
    serde_json::from_value(v).unwrap()
}

fn open(dir: &Path) -> EmbeddedTarget {
    let config = SimConfig { ready_delay: Duration::from_secs(3600), ..SimConfig::default() };
    EmbeddedTarget::open(dir, config).unwrap()
}

async fn apply(target: &EmbeddedTarget, v: Value) -> Result<Applied, TargetError> {
    let m = object(v);
    target.apply(ApplyRequest { manifest: &m, mode: ApplyMode::ClientSide, owner: OWNER, take_over: false }).await
}

async fn apply_as(target: &EmbeddedTarget, v: Value, owner: &str, mode: ApplyMode) -> Result<Applied, TargetError> {
    let m = object(v);
    target.apply(ApplyRequest { manifest: &m, mode, owner, take_over: false }).await
}

fn ns(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "app", "labels": {"a": "1"}}, "data": data})
}

fn id(api_version: &str, kind: &str, namespace: &str, name: &str) -> ResourceId {
    ResourceId::of(&object(
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}}),
    ))
}

#[tokio::test]
async fn sets_server_metadata_and_bumps_generation_on_spec_changes_only() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    apply(&target, ns("app")).await.unwrap();
    let created = apply(&target, cm(json!({"k": "v"}))).await.unwrap();
    assert_eq!(created.outcome, ApplyOutcome::Created);
    let meta = &created.live.metadata;
    assert!(!meta.uid.is_empty() && meta.creation_timestamp.is_some());
    assert_eq!(meta.generation, 1);
    assert_eq!(meta.annotations.get(OWNER_ANNOTATION).map(String::as_str), Some(OWNER));
    let rv1 = meta.resource_version_number().unwrap();

    let same = apply(&target, cm(json!({"k": "v"}))).await.unwrap();
    assert_eq!(same.outcome, ApplyOutcome::Unchanged);
    assert_eq!(same.live, created.live);

    let mut relabeled = cm(json!({"k": "v"}));
    relabeled["metadata"]["labels"]["b"] = json!("2");
    let updated = apply(&target, relabeled).await.unwrap();
    assert_eq!(updated.outcome, ApplyOutcome::Updated);
    assert_eq!(updated.live.metadata.generation, 1, "metadata changes keep the generation");
    assert!(updated.live.metadata.resource_version_number().unwrap() > rv1);
    assert_eq!(updated.live.metadata.uid, meta.uid);

    let changed = apply(&target, cm(json!({"k": "w"}))).await.unwrap();
    assert_eq!(changed.live.metadata.generation, 2);
    assert_eq!(changed.live.metadata.labels.get("b"), None, "labels Fleet no longer sets are removed");
    assert_eq!(changed.live.metadata.creation_timestamp, meta.creation_timestamp);
}

#[tokio::test]
async fn manifest_server_fields_and_status_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    let mut m = ns("app");
    m["metadata"]["uid"] = json!("mine");
    m["metadata"]["generation"] = json!(7);
    m["metadata"]["resourceVersion"] = json!("999");
    m["status"] = json!({"phase": "Terminating"});
    let live = apply(&target, m).await.unwrap().live;
    assert_ne!(live.metadata.uid, "mine");
    assert_eq!(live.metadata.generation, 1);
    assert_eq!(live.status().unwrap()["phase"], "Active");
}

#[tokio::test]
async fn both_modes_keep_server_set_fields_and_drop_fields_no_longer_applied() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    apply(&target, ns("app")).await.unwrap();
    let svc = |selector: Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "app"},
               "spec": {"ports": [{"port": 80}], "selector": selector}})
    };
    let first = apply(&target, svc(json!({"app": "a", "tier": "web"}))).await.unwrap().live;
    let ip = first.spec().unwrap()["clusterIP"].clone();
    assert!(ip.as_str().unwrap().starts_with("10.96."));
    for mode in [ApplyMode::ServerSide { force: false }, ApplyMode::ClientSide, ApplyMode::ServerSide { force: true }] {
        let again = apply_as(&target, svc(json!({"app": "a"})), OWNER, mode).await.unwrap();
        assert_eq!(again.live.spec().unwrap()["clusterIP"], ip, "{mode:?}");
        assert_eq!(again.live.spec().unwrap()["selector"], json!({"app": "a"}), "{mode:?}");
        let recorded = again.live.metadata.annotations.get(LAST_APPLIED_ANNOTATION);
        assert_eq!(recorded.is_some(), mode == ApplyMode::ClientSide, "{mode:?}: {recorded:?}");
    }
    let again =
        apply_as(&target, svc(json!({"app": "a"})), OWNER, ApplyMode::ServerSide { force: true }).await.unwrap();
    assert_eq!(again.outcome, ApplyOutcome::Unchanged);
}

#[tokio::test]
async fn conflicts_with_other_works_and_objects_not_created_by_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    apply(&target, ns("app")).await.unwrap();
    apply(&target, cm(json!({}))).await.unwrap();
    let e = apply_as(&target, cm(json!({})), "fleet-member-a/other", ApplyMode::ServerSide { force: true })
        .await
        .unwrap_err();
    match e {
        TargetError::Conflict(m) => assert!(m.contains(OWNER) && m.contains("fleet-member-a/other"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut unmanaged = object(cm(json!({})));
    unmanaged.metadata.name = "theirs".into();
    target.create_unmanaged(&unmanaged).unwrap();
    let mut mine = cm(json!({}));
    mine["metadata"]["name"] = json!("theirs");
    match apply(&target, mine).await.unwrap_err() {
        TargetError::Conflict(m) => assert!(m.contains("not created by Fleet"), "{m}"),
        other => panic!("{other:?}"),
    }
    // System namespaces exist from the start and are not Fleet's.
    assert!(matches!(apply(&target, ns("default")).await, Err(TargetError::Conflict(_))));
}

#[tokio::test]
async fn namespaced_objects_need_their_namespace_and_invalid_objects_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    match apply(&target, cm(json!({}))).await.unwrap_err() {
        TargetError::Invalid(m) => assert!(m.contains("namespaces \"app\" not found"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut in_default = cm(json!({}));
    in_default["metadata"]["namespace"] = json!("default");
    apply(&target, in_default).await.unwrap();
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_OK", "namespace": "default"}});
    assert!(matches!(apply(&target, bad).await, Err(TargetError::Invalid(m)) if m.contains("metadata.name")));
    let e = apply(
        &target,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-", "namespace": "default"}}),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("generateName"), "{e}");
}

#[tokio::test]
async fn custom_resources_follow_their_crd_scope_and_go_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    apply(
        &target,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster", "names": {"plural": "widgets", "kind": "Widget"}}}),
    )
    .await
    .unwrap();
    let e = apply(
        &target,
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("metadata.namespace: Forbidden"), "{e}");
    apply(&target, json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})).await.unwrap();
    let crd = id("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com");
    assert!(target.delete(&crd).await.unwrap());
    assert_eq!(target.get(&id("example.com/v1", "Widget", "", "w")).await.unwrap(), None);
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_objects_and_system_ones_stay() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    apply(&target, ns("app")).await.unwrap();
    apply(&target, cm(json!({}))).await.unwrap();
    assert!(target.delete(&id("v1", "Namespace", "", "app")).await.unwrap());
    assert_eq!(target.get(&id("v1", "ConfigMap", "app", "cfg")).await.unwrap(), None);
    assert!(!target.delete(&id("v1", "Namespace", "", "app")).await.unwrap());
    assert!(matches!(target.delete(&id("v1", "Namespace", "", "default")).await, Err(TargetError::Invalid(_))));
    // Re-opening sees the deletion and keeps resourceVersions increasing.
    let before = target.list().iter().filter_map(|o| o.metadata.resource_version_number()).max().unwrap();
    drop(target);
    let target = open(dir.path());
    assert_eq!(target.get(&id("v1", "Namespace", "", "app")).await.unwrap(), None);
    let live = apply(&target, ns("app")).await.unwrap().live;
    assert!(live.metadata.resource_version_number().unwrap() > before + 1);
}

#[tokio::test]
async fn report_properties_and_resource_usage() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        SimConfig::from_flags(Some(2), Some("cpu=4,memory=8Gi"), None, Some("per-cpu-core=0.045"), None).unwrap();
    let target = EmbeddedTarget::open(dir.path(), config).unwrap();
    let report = target.report(true).await.unwrap();
    assert_eq!(report.properties[NODE_COUNT_PROPERTY], "2");
    assert_eq!(report.properties[TARGET_PROPERTY], "embedded");
    assert_eq!(report.properties[CPU_COST_PROPERTY], "0.045");
    assert!(!report.properties.contains_key(MEMORY_COST_PROPERTY));
    assert_eq!(report.resource_usage.capacity["cpu"], "8");
    assert_eq!(report.resource_usage.capacity["memory"], "16Gi");
    assert_eq!(report.resource_usage.available["memory"], "16Gi");
    // A DaemonSet runs one pod per node; more than allocatable reports 0.
    apply(&target, json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "128Mi"}}}]}}}}))
    .await
    .unwrap();
    let report = target.report(true).await.unwrap();
    assert_eq!(report.resource_usage.available["cpu"], "2");
    assert_eq!(report.resource_usage.available["memory"], "16128Mi");
    apply(
        &target,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "5"}}}]}}),
    )
    .await
    .unwrap();
    assert_eq!(target.report(true).await.unwrap().resource_usage.available["cpu"], "0");
}

#[tokio::test]
async fn namespaces_are_reported_only_when_collected() {
    let dir = tempfile::tempdir().unwrap();
    let target = open(dir.path());
    apply(&target, ns("app")).await.unwrap();
    let collected = target.report(true).await.unwrap();
    assert!(collected.namespaces.unwrap().contains_key("app"));
    assert_eq!(collected.conditions.len(), 1, "{:?}", collected.conditions);
    let not_collected = target.report(false).await.unwrap();
    assert!(not_collected.namespaces.is_none() && not_collected.conditions.is_empty(), "{not_collected:?}");
    assert_eq!(not_collected.properties, collected.properties);
}

#[test]
fn memory_is_rendered_with_binary_suffixes() {
    let q = |s: &str| Quantity::parse(s).unwrap();
    assert_eq!(format_memory(q("48Gi")), "48Gi");
    assert_eq!(format_memory(q("47.875Gi")), "49024Mi");
    assert_eq!(format_memory(q("1000")), "1000");
    assert_eq!(format_memory(q("0")), "0");
    assert_eq!(format_memory(q("1.5")), "1500m");
}

#[tokio::test]
async fn a_job_runs_until_the_ready_delay_is_over_then_completes() {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "app"},
        "spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "m", "image": "busybox"}], "restartPolicy": "Never"}}}});
    let running = tempfile::tempdir().unwrap();
    let slow = open(running.path());
    apply(&slow, ns("app")).await.unwrap();
    let live = apply(&slow, job.clone()).await.unwrap().live;
    let status = &live.rest["status"];
    assert_eq!((status["active"].as_i64(), status.get("conditions")), (Some(2), None), "{status}");

    let done = tempfile::tempdir().unwrap();
    let config = SimConfig { ready_delay: Duration::ZERO, ..SimConfig::default() };
    let fast = EmbeddedTarget::open(done.path(), config).unwrap();
    apply(&fast, ns("app")).await.unwrap();
    let live = apply(&fast, job).await.unwrap().live;
    let status = &live.rest["status"];
    assert_eq!(status["succeeded"].as_i64(), Some(2), "{status}");
    assert!(status.get("active").is_none(), "{status}");
    let complete = status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Complete").unwrap();
    assert_eq!(complete["status"], "True");
}
