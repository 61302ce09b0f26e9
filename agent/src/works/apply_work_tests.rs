//! Unit tests of [`apply_work`]: refusals, waves, withdrawals and the
//! Work's own conditions, on the embedded target.

use super::*;
use crate::targets::embedded::{EmbeddedTarget, SimConfig};
use serde_json::json;

fn work(manifests: Vec<serde_json::Value>) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
        "metadata": {"name": "w", "namespace": "fleet-member-a", "generation": 1},
        "spec": {"workload": {"manifests": manifests}}
    }))
    .unwrap()
}

fn work_condition<'a>(status: &'a WorkStatus, type_: &str) -> &'a Condition {
    status.conditions.iter().find(|c| c.type_ == type_).unwrap()
}

fn applied(status: &WorkStatus, ordinal: i64) -> (String, String) {
    let m = status.manifest_conditions.iter().find(|m| m.identifier.ordinal == ordinal).unwrap();
    let c = m.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).unwrap();
    (c.status.clone(), c.reason.clone())
}

#[tokio::test]
async fn generate_name_and_duplicates_are_refused_with_reasons_and_the_rest_applies_in_waves() {
    let dir = tempfile::tempdir().unwrap();
    let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
    // The ConfigMap comes before its Namespace in the Work: waves fix the order.
    let w = work(vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g-", "namespace": "n"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}),
    ]);
    let out = apply_work(&target, &w, None, true, "t").await;
    assert_eq!(applied(&out.status, 0), ("True".into(), "ManifestApplied".into()));
    assert_eq!(applied(&out.status, 1), ("True".into(), "ManifestApplied".into()));
    assert_eq!(applied(&out.status, 2), ("False".into(), "FoundGenerateName".into()));
    assert_eq!(applied(&out.status, 3), ("False".into(), "Duplicated".into()));
    let work_applied = out.status.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).unwrap();
    assert_eq!((work_applied.status.as_str(), work_applied.reason.as_str()), ("False", REASON_SOME_NOT_APPLIED));
    assert!(!out.settled);
    assert_eq!(out.entry.placed.len(), 2, "{:?}", out.entry.placed);
}

#[tokio::test]
async fn manifests_dropped_from_a_work_are_deleted_in_reverse_waves() {
    let dir = tempfile::tempdir().unwrap();
    let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}});
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}});
    let first = apply_work(&target, &work(vec![ns.clone(), cm]), None, true, "t").await;
    assert!(first.settled);
    let second = apply_work(&target, &work(vec![ns]), Some(&first.entry), true, "t").await;
    assert_eq!(second.entry.placed.len(), 1);
    let id = ResourceId {
        group: "".into(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: "n".into(),
        name: "c".into(),
    };
    assert!(target.get(&id).await.unwrap().is_none());
}

#[tokio::test]
async fn an_untrackable_work_is_available_from_the_application_of_its_generation() {
    let dir = tempfile::tempdir().unwrap();
    let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
    let job = |image: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                   "containers": [{"name": "c", "image": image}]}}}})
    };
    let first = apply_work(&target, &work(vec![job("a")]), None, true, "2026-01-01T00:00:00Z").await;
    let available = work_condition(&first.status, CONDITION_AVAILABLE);
    assert_eq!(
        (available.reason.as_str(), available.last_transition_time.as_str()),
        (REASON_NOT_TRACKABLE, "2026-01-01T00:00:00Z")
    );

    let mut same = work(vec![job("a")]);
    work::set_status(&mut same, &first.status);
    let again = apply_work(&target, &same, Some(&first.entry), true, "2026-01-01T00:01:00Z").await;
    let available = work_condition(&again.status, CONDITION_AVAILABLE);
    assert_eq!(available.last_transition_time, "2026-01-01T00:00:00Z", "the same generation keeps its time");

    let mut next = work(vec![job("b")]);
    next.metadata.generation = 2;
    work::set_status(&mut next, &again.status);
    let updated = apply_work(&target, &next, Some(&again.entry), true, "2026-01-01T00:02:00Z").await;
    let available = work_condition(&updated.status, CONDITION_AVAILABLE);
    assert_eq!(
        (available.status.as_str(), available.observed_generation, available.last_transition_time.as_str()),
        ("True", Some(2), "2026-01-01T00:02:00Z"),
        "a new generation is available from its own application"
    );
}
