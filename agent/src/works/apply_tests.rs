//! Works-level tests of the apply strategy, driving the embedded target:
//! takeover, co-ownership, drift detection and ReportDiff.

use serde_json::json;

use super::*;
use crate::targets::embedded::{Edit, EmbeddedTarget, SimConfig};
use crate::targets::{ApplyMode, OWNER_ANNOTATION};

const OWNER: &str = "fleet-member-a/w";

fn object(v: Value) -> Object {
    serde_json::from_value(v).unwrap()
}

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app"}, "data": data})
}

fn id(name: &str) -> ResourceId {
    ResourceId::of(&object(cm(name, json!({}))))
}

/// Work `w` of cluster `a` with `strategy` as its `applyStrategy`.
fn work(generation: i64, strategy: Value, manifests: Vec<Value>) -> Object {
    object(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
        "metadata": {"name": "w", "namespace": "fleet-member-a", "generation": generation},
        "spec": {"workload": {"manifests": manifests}, "applyStrategy": strategy}
    }))
}

/// A cluster with namespace `app` (created by someone else).
fn cluster(dir: &tempfile::TempDir) -> EmbeddedTarget {
    let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
    target
        .create_unmanaged(&object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}})))
        .unwrap();
    target
}

/// Someone edits an object on the member cluster (as `fleet-agent apply` would).
async fn edit(target: &EmbeddedTarget, name: &str, data: Value) {
    target.edit(&Edit::Apply { object: Box::new(object(cm(name, data))) }).unwrap();
}

async fn data(target: &EmbeddedTarget, name: &str) -> Value {
    let live = target.get(&id(name)).await.unwrap().unwrap();
    live.rest.get("data").cloned().unwrap_or(Value::Null)
}

async fn owner_of(target: &EmbeddedTarget, name: &str) -> Option<String> {
    target.get(&id(name)).await.unwrap().unwrap().metadata.annotations.get(OWNER_ANNOTATION).cloned()
}

fn manifest(status: &WorkStatus, ordinal: i64) -> &ManifestCondition {
    status.manifest_conditions.iter().find(|m| m.identifier.ordinal == ordinal).unwrap()
}

fn condition<'a>(conditions: &'a [Condition], type_: &str) -> (&'a str, &'a str) {
    let c = conditions.iter().find(|c| c.type_ == type_).unwrap();
    (c.status.as_str(), c.reason.as_str())
}

fn applied(status: &WorkStatus, ordinal: i64) -> (&str, &str) {
    condition(&manifest(status, ordinal).conditions, CONDITION_APPLIED)
}

#[tokio::test]
async fn take_over_always_applies_and_annotates_an_existing_object() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    target.create_unmanaged(&object(cm("c", json!({"a": "theirs", "b": "kept"})))).unwrap();
    let out = apply_work(&target, &work(1, json!({}), vec![cm("c", json!({"a": "1"}))]), None, true, "t").await;
    assert_eq!(applied(&out.status, 0), ("True", "ManifestApplied"));
    assert_eq!(owner_of(&target, "c").await.as_deref(), Some(OWNER));
    assert_eq!(data(&target, "c").await, json!({"a": "1", "b": "kept"}));
    assert_eq!(out.entry.placed, vec![id("c")]);
    assert!(out.entry.last_applied(&id("c")).is_some());
}

#[tokio::test]
async fn take_over_if_no_diff_takes_an_identical_object_and_reports_a_different_one() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    target.create_unmanaged(&object(cm("same", json!({"a": "1"})))).unwrap();
    target.create_unmanaged(&object(cm("other", json!({"a": "2"})))).unwrap();
    let strategy = json!({"whenToTakeOver": "IfNoDiff"});
    let w = work(1, strategy, vec![cm("same", json!({"a": "1"})), cm("other", json!({"a": "1"}))]);
    let out = apply_work(&target, &w, None, true, "t1").await;
    assert_eq!(applied(&out.status, 0), ("True", "ManifestApplied"));
    assert_eq!(owner_of(&target, "same").await.as_deref(), Some(OWNER));
    assert_eq!(applied(&out.status, 1), ("False", "FailedToTakeOver"));
    let diff = manifest(&out.status, 1).diff_details.clone().unwrap();
    assert_eq!(diff["observedDiffs"], json!([{"path": "/data/a", "valueInHub": "1", "valueInMember": "2"}]));
    assert_eq!((diff["firstDiffedObservedTime"].as_str(), diff["observationTime"].as_str()), (Some("t1"), Some("t1")));
    assert_eq!(diff["observedInMemberClusterGeneration"], json!(1));
    assert_eq!(owner_of(&target, "other").await, None, "untouched");
    assert_eq!(data(&target, "other").await, json!({"a": "2"}));
    assert_eq!(out.entry.placed, vec![id("same")]);
    assert!(!out.settled);
}

#[tokio::test]
async fn take_over_never_is_not_taken_over_and_another_work_s_object_never_is() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    target.create_unmanaged(&object(cm("c", json!({"a": "1"})))).unwrap();
    let out = apply_work(
        &target,
        &work(1, json!({"whenToTakeOver": "Never"}), vec![cm("c", json!({"a": "1"}))]),
        None,
        true,
        "t",
    )
    .await;
    assert_eq!(applied(&out.status, 0), ("False", "NotTakenOver"));
    assert_eq!(owner_of(&target, "c").await, None);

    // Placed by another Work: not taken over even with the default Always.
    let m = object(cm("d", json!({"a": "1"})));
    let other =
        ApplyRequest { manifest: &m, mode: ApplyMode::ClientSide, owner: "fleet-member-a/other", take_over: false };
    target.apply(other).await.unwrap();
    let out = apply_work(&target, &work(1, json!({}), vec![cm("d", json!({"a": "2"}))]), None, true, "t").await;
    assert_eq!(applied(&out.status, 0), ("False", "FailedToTakeOver"));
    assert_eq!(data(&target, "d").await, json!({"a": "1"}));
}

#[tokio::test]
async fn co_owned_objects_are_applied_only_with_allow_co_ownership() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let mut owned = cm("c", json!({"a": "theirs"}));
    owned["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "parent", "uid": "p"}]);
    target.create_unmanaged(&object(owned)).unwrap();
    let manifests = vec![cm("c", json!({"a": "1"}))];
    let out = apply_work(&target, &work(1, json!({}), manifests.clone()), None, true, "t").await;
    assert_eq!(applied(&out.status, 0), ("False", "FailedToTakeOver"));
    assert_eq!(data(&target, "c").await, json!({"a": "theirs"}));
    let out = apply_work(&target, &work(2, json!({"allowCoOwnership": true}), manifests), None, true, "t").await;
    assert_eq!(applied(&out.status, 0), ("True", "ManifestApplied"));
    assert_eq!(data(&target, "c").await, json!({"a": "1"}));

    // Withdrawn, a co-owned object stays with its other owner (as the
    // garbage collector and KubeFleet leave it); one Fleet alone owns goes.
    let mine = cm("mine", json!({"a": "1"}));
    let sole = apply_work(&target, &work(3, json!({}), vec![mine]), None, true, "t").await;
    assert!(remove_work(&target, &out.entry).await.is_empty());
    assert!(target.get(&id("c")).await.unwrap().is_some(), "co-owned: left in place");
    assert!(remove_work(&target, &sole.entry).await.is_empty());
    assert!(target.get(&id("mine")).await.unwrap().is_none(), "Fleet's alone: deleted");
}

#[tokio::test]
async fn reports_are_stamped_in_milliseconds_and_conditions_in_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let mut w = work(1, json!({"whenToApply": "IfNotDrifted"}), vec![cm("c", json!({"a": "1"}))]);
    let first = apply_work(&target, &w, None, true, "t0").await;
    edit(&target, "c", json!({"a": "edited"})).await;
    work::set_status(&mut w, &first.status);
    let out = apply_work(&target, &w, Some(&first.entry), false, "2026-11-28T02:57:15.123Z").await;
    let drift = manifest(&out.status, 0).drift_details.clone().unwrap();
    assert_eq!(drift["observationTime"], json!("2026-11-28T02:57:15.123Z"));
    let applied = out.status.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).unwrap();
    assert_eq!(applied.last_transition_time, "2026-11-28T02:57:15Z");

    // The member changes again within the same second: the new report
    // still reads as later than the one it replaces.
    edit(&target, "c", json!({"a": "edited again"})).await;
    work::set_status(&mut w, &out.status);
    let again = apply_work(&target, &w, Some(&out.entry), false, "2026-11-28T02:57:15.731Z").await;
    let drift = manifest(&again.status, 0).drift_details.clone().unwrap();
    assert_eq!(drift["observationTime"], json!("2026-11-28T02:57:15.731Z"));
    assert_eq!(drift["firstDriftedObservedTime"], json!("2026-11-28T02:57:15.123Z"));
}

#[tokio::test]
async fn if_not_drifted_reports_a_live_edit_until_the_hub_changes_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let strategy = json!({"whenToApply": "IfNotDrifted"});
    let mut w = work(1, strategy.clone(), vec![cm("c", json!({"a": "1"}))]);
    let first = apply_work(&target, &w, None, true, "t0").await;
    assert!(first.settled);
    edit(&target, "c", json!({"a": "edited"})).await;

    // Checked again, the manifest unchanged: the drift is reported and left.
    work::set_status(&mut w, &first.status);
    let out = apply_work(&target, &w, Some(&first.entry), false, "t1").await;
    assert_eq!(applied(&out.status, 0), ("False", "FoundDrifts"));
    let drift = manifest(&out.status, 0).drift_details.clone().unwrap();
    assert_eq!(drift["observedDrifts"], json!([{"path": "/data/a", "valueInHub": "1", "valueInMember": "edited"}]));
    assert_eq!(drift["firstDriftedObservedTime"], json!("t1"));
    assert_eq!(drift["observedInMemberClusterGeneration"], json!(2));
    assert_eq!(data(&target, "c").await, json!({"a": "edited"}), "not overwritten");
    assert_eq!(out.entry.placed, vec![id("c")], "still placed, not pruned");
    assert!(!out.settled && out.entry.generation == 0);
    let work_applied = condition(&out.status.conditions, CONDITION_APPLIED);
    assert_eq!(work_applied, ("False", REASON_SOME_NOT_APPLIED));

    // Re-checked later with the status reported: the times are kept.
    work::set_status(&mut w, &out.status);
    let again = apply_work(&target, &w, Some(&out.entry), true, "t2").await;
    let drift = manifest(&again.status, 0).drift_details.clone().unwrap();
    assert_eq!(
        (drift["firstDriftedObservedTime"].as_str(), drift["observationTime"].as_str()),
        (Some("t1"), Some("t1")),
        "the same drift: the report (and so the Work) does not change"
    );
    assert_eq!(data(&target, "c").await, json!({"a": "edited"}), "a re-apply of the same manifest holds back too");

    // The hub changes the manifest: it is applied over the drift, as
    // KubeFleet does.
    let mut w = work(2, strategy.clone(), vec![cm("c", json!({"a": "new"}))]);
    work::set_status(&mut w, &again.status);
    let done = apply_work(&target, &w, Some(&again.entry), true, "t3").await;
    assert_eq!(applied(&done.status, 0), ("True", "ManifestApplied"));
    assert!(manifest(&done.status, 0).drift_details.is_none());
    assert_eq!(data(&target, "c").await, json!({"a": "new"}));
    assert_eq!(done.entry.last_applied(&id("c")).unwrap().manifest["data"], json!({"a": "new"}));

    // And the new manifest is held back by a drift of its own.
    edit(&target, "c", json!({"a": "edited"})).await;
    work::set_status(&mut w, &done.status);
    let held = apply_work(&target, &w, Some(&done.entry), false, "t4").await;
    assert_eq!(applied(&held.status, 0), ("False", "FoundDrifts"));
    assert_eq!(data(&target, "c").await, json!({"a": "edited"}));
}

#[tokio::test]
async fn always_overwrites_a_live_edit_without_reporting_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let mut w = work(1, json!({}), vec![cm("c", json!({"a": "1"}))]);
    let first = apply_work(&target, &w, None, true, "t0").await;
    work::set_status(&mut w, &first.status);
    edit(&target, "c", json!({"a": "edited"})).await;

    // A re-check of the unchanged Work finds the drift and writes over it;
    // nothing is left to report (as KubeFleet, which reports what remains
    // after the write).
    let out = apply_work(&target, &w, Some(&first.entry), false, "t1").await;
    assert_eq!(applied(&out.status, 0), ("True", "ManifestApplied"));
    assert!(manifest(&out.status, 0).drift_details.is_none());
    assert_eq!(data(&target, "c").await, json!({"a": "1"}), "overwritten in the same pass");
    assert!(out.settled && out.entry.generation == 1);

    // A hub change is not a drift: the new manifest is applied, nothing reported.
    let changed =
        apply_work(&target, &work(2, json!({}), vec![cm("c", json!({"a": "2"}))]), Some(&out.entry), true, "t3").await;
    assert!(manifest(&changed.status, 0).drift_details.is_none());
    assert_eq!(data(&target, "c").await, json!({"a": "2"}));
}

#[tokio::test]
async fn an_object_deleted_on_the_member_is_created_again_at_the_next_check() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let w = work(1, json!({}), vec![cm("c", json!({"a": "1"}))]);
    let first = apply_work(&target, &w, None, true, "t0").await;
    target.delete(&id("c")).await.unwrap();
    let out = apply_work(&target, &w, Some(&first.entry), false, "t1").await;
    assert_eq!(applied(&out.status, 0), ("True", "ManifestApplied"));
    assert_eq!(data(&target, "c").await, json!({"a": "1"}));
    assert!(out.settled);
}

#[tokio::test]
async fn report_diff_changes_nothing_and_reports_every_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    target.create_unmanaged(&object(cm("differs", json!({"a": "2"})))).unwrap();
    target.create_unmanaged(&object(cm("same", json!({"a": "1"})))).unwrap();
    let mut generate_name = cm("", json!({}));
    generate_name["metadata"] = json!({"generateName": "g-", "namespace": "app"});
    let manifests = vec![
        cm("differs", json!({"a": "1"})),
        cm("same", json!({"a": "1"})),
        cm("missing", json!({"a": "1"})),
        generate_name,
    ];
    let before = target.list();
    let w = work(3, json!({"type": "ReportDiff"}), manifests.clone());
    let out = apply_work(&target, &w, None, true, "t").await;
    assert_eq!(target.list(), before, "nothing written");
    let diffs = |o: i64| manifest(&out.status, o).diff_details.clone().unwrap()["observedDiffs"].clone();
    assert_eq!(diffs(0), json!([{"path": "/data/a", "valueInHub": "1", "valueInMember": "2"}]));
    assert_eq!(diffs(1), json!([]));
    assert_eq!(diffs(2), json!([{"path": "/", "valueInHub": "(the whole object)"}]));
    assert!(manifest(&out.status, 1).diff_details.as_ref().unwrap().get("firstDiffedObservedTime").is_none());
    assert!(manifest(&out.status, 3).diff_details.is_none(), "not compared");
    let reported = |o: i64| condition(&manifest(&out.status, o).conditions, CONDITION_DIFF_REPORTED);
    assert_eq!(reported(0), ("True", "FoundDiff"));
    assert_eq!(reported(1), ("True", "NoDiffFound"));
    assert_eq!(reported(2), ("True", "FoundDiff"));
    assert_eq!(reported(3), ("False", "Failed"));
    let work_reported = condition(&out.status.conditions, CONDITION_DIFF_REPORTED);
    assert_eq!(work_reported, ("False", "SomeManifestsHaveNotReportedDiff"));
    assert!(!out.settled && out.entry.generation == 0);

    // Without the bad manifest every diff is reported; no Applied/Available anywhere.
    let mut w2 = work(4, json!({"type": "ReportDiff"}), manifests[..3].to_vec());
    work::set_status(&mut w2, &out.status);
    let out = apply_work(&target, &w2, None, true, "t").await;
    let work_reported = condition(&out.status.conditions, CONDITION_DIFF_REPORTED);
    assert_eq!(work_reported, ("True", "AllManifestsDiffReported"));
    let types: Vec<&str> = out.status.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["DiffReported"]);
    for m in &out.status.manifest_conditions {
        let types: Vec<&str> = m.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["DiffReported"]);
    }
    assert!(out.settled);
    assert_eq!(out.entry.generation, 4);
    assert!(out.entry.placed.is_empty());

    // Switching the Work to an apply type drops DiffReported again.
    let mut w5 = work(5, json!({}), manifests[..3].to_vec());
    work::set_status(&mut w5, &out.status);
    let applied_out = apply_work(&target, &w5, None, true, "t").await;
    let types: Vec<&str> = applied_out.status.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["Applied", "Available"]);
    assert!(applied_out
        .status
        .manifest_conditions
        .iter()
        .all(|m| m.conditions.iter().all(|c| c.type_ != CONDITION_DIFF_REPORTED)));
}

#[tokio::test]
async fn switching_to_report_diff_keeps_what_the_work_placed() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let first = apply_work(&target, &work(1, json!({}), vec![cm("c", json!({"a": "1"}))]), None, true, "t").await;
    let mut w = work(2, json!({"type": "ReportDiff"}), vec![cm("c", json!({"a": "1"}))]);
    work::set_status(&mut w, &first.status);
    let out = apply_work(&target, &w, Some(&first.entry), true, "t").await;
    assert!(target.get(&id("c")).await.unwrap().is_some(), "not pruned");
    assert_eq!(out.entry.placed, first.entry.placed);
    let types: Vec<&str> = out.status.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["DiffReported"], "Applied and Available are gone");
    assert_eq!(manifest(&out.status, 0).conditions.len(), 1);
}

#[tokio::test]
async fn full_comparison_drift_ignores_server_defaults_but_not_added_fields() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let strategy = json!({"whenToApply": "IfNotDrifted", "comparisonOption": "FullComparison"});
    // A Service: the cluster fills in type, clusterIP and ports' defaults.
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "app"},
        "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}});
    let first =
        apply_work(&target, &work(1, strategy.clone(), vec![svc.clone(), cm("c", json!({"a": "1"}))]), None, true, "t")
            .await;
    assert!(first.settled, "{:?}", first.status);
    let out = apply_work(
        &target,
        &work(2, strategy.clone(), vec![svc.clone(), cm("c", json!({"a": "1"}))]),
        Some(&first.entry),
        true,
        "t",
    )
    .await;
    assert_eq!(applied(&out.status, 0), ("True", "ManifestApplied"), "server defaults are not drift");
    // A field added on the member is a drift under full comparison.
    edit(&target, "c", json!({"a": "1", "added": "x"})).await;
    let out =
        apply_work(&target, &work(3, strategy, vec![svc, cm("c", json!({"a": "1"}))]), Some(&out.entry), true, "t")
            .await;
    assert_eq!(applied(&out.status, 1), ("False", "FoundDrifts"));
    let drift = manifest(&out.status, 1).drift_details.clone().unwrap();
    assert_eq!(drift["observedDrifts"], json!([{"path": "/data/added", "valueInMember": "x"}]));
}

#[tokio::test]
async fn always_with_full_comparison_keeps_reporting_what_the_member_added() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let strategy = json!({"comparisonOption": "FullComparison"});
    let w = work(1, strategy, vec![cm("c", json!({"a": "1"}))]);
    let first = apply_work(&target, &w, None, true, "t0").await;
    assert!(first.settled, "{:?}", first.status);
    let mut labelled = cm("c", json!({"a": "edited"}));
    labelled["metadata"]["labels"] = json!({"team": "x"});
    target.edit(&Edit::Apply { object: Box::new(object(labelled)) }).unwrap();

    let out = apply_work(&target, &w, Some(&first.entry), false, "t1").await;
    assert_eq!(applied(&out.status, 0), ("True", "ManifestApplied"));
    assert_eq!(data(&target, "c").await, json!({"a": "1"}), "the managed field is put back");
    let reported = |status: &WorkStatus| manifest(status, 0).drift_details.clone().map(|d| d["observedDrifts"].clone());
    assert_eq!(reported(&out.status), Some(json!([{"path": "/metadata/labels/team", "valueInMember": "x"}])));
    // The write left the label, so the next check still reports it alone.
    let next = apply_work(&target, &w, Some(&out.entry), false, "t2").await;
    assert_eq!(reported(&next.status), Some(json!([{"path": "/metadata/labels/team", "valueInMember": "x"}])));
}

/// Secret `name` in namespace `app` with `data` (base64 values).
fn secret(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "app"}, "data": data})
}

/// base64 of "hub-value-1f3a" and "member-value-9c2e": neither may appear in any status.
const HUB_B64: &str = "aHViLXZhbHVlLTFmM2E=";
const MEMBER_B64: &str = "bWVtYmVyLXZhbHVlLTljMmU=";
const REDACTED: &str = crate::works::redact::REDACTED;

fn no_secret_in(status: &WorkStatus) {
    let text = serde_json::to_string(status).unwrap();
    for leak in [HUB_B64, MEMBER_B64, "hub-value-1f3a", "member-value-9c2e"] {
        assert!(!text.contains(leak), "{leak} in {text}");
    }
}

#[tokio::test]
async fn secret_drift_is_redacted_and_a_config_map_beside_it_keeps_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let strategy = json!({"whenToApply": "IfNotDrifted"});
    let manifests = vec![secret("s", json!({"password": HUB_B64})), cm("c", json!({"a": "1"}))];
    let first = apply_work(&target, &work(1, strategy.clone(), manifests.clone()), None, true, "t0").await;
    assert!(first.settled);
    target.edit(&Edit::Apply { object: Box::new(object(secret("s", json!({"password": MEMBER_B64})))) }).unwrap();
    edit(&target, "c", json!({"a": "edited"})).await;

    let out = apply_work(&target, &work(2, strategy, manifests), Some(&first.entry), true, "t1").await;
    assert_eq!(applied(&out.status, 0), ("False", "FoundDrifts"));
    let drift = manifest(&out.status, 0).drift_details.clone().unwrap();
    assert_eq!(
        drift["observedDrifts"],
        json!([{"path": "/data/password", "valueInHub": REDACTED, "valueInMember": REDACTED}])
    );
    let cm_drift = manifest(&out.status, 1).drift_details.clone().unwrap();
    assert_eq!(cm_drift["observedDrifts"], json!([{"path": "/data/a", "valueInHub": "1", "valueInMember": "edited"}]));
    no_secret_in(&out.status);

    // Under Always with full comparison, a key the member added stays after
    // the write, and is reported redacted too.
    let added = secret("s", json!({"password": MEMBER_B64, "extra": MEMBER_B64}));
    target.edit(&Edit::Apply { object: Box::new(object(added)) }).unwrap();
    let always = apply_work(
        &target,
        &work(3, json!({"comparisonOption": "FullComparison"}), vec![secret("s", json!({"password": HUB_B64}))]),
        Some(&out.entry),
        true,
        "t2",
    )
    .await;
    let drift = manifest(&always.status, 0).drift_details.clone().unwrap();
    assert_eq!(drift["observedDrifts"], json!([{"path": "/data/extra", "valueInMember": REDACTED}]));
    no_secret_in(&always.status);
}

#[tokio::test]
async fn secret_diffs_are_redacted_in_report_diff_and_in_a_refused_takeover_also_from_an_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let target = cluster(&dir);
    let mut theirs = secret("theirs", json!({"password": MEMBER_B64}));
    theirs["stringData"] = json!({"token": "member-value-9c2e"});
    target.create_unmanaged(&object(theirs)).unwrap();
    let mut ours = secret("theirs", json!({"password": HUB_B64}));
    ours["stringData"] = json!({"token": "hub-value-1f3a"});
    let manifests = vec![ours, secret("missing", json!({"password": HUB_B64})), cm("c", json!({"a": "1"}))];

    // An envelope's Work carries the wrapped objects as plain manifests,
    // only labelled as such: the same rule applies to them.
    let mut w = work(1, json!({"type": "ReportDiff"}), manifests.clone());
    w.metadata.labels.insert(fleet_api::envelope::ENVELOPE_WORK_LABEL.into(), "ResourceEnvelope".into());
    let out = apply_work(&target, &w, None, true, "t").await;
    let diffs = |o: i64| manifest(&out.status, o).diff_details.clone().unwrap()["observedDiffs"].clone();
    assert_eq!(
        diffs(0),
        json!([
            {"path": "/data/password", "valueInHub": REDACTED, "valueInMember": REDACTED},
            {"path": "/stringData/token", "valueInHub": REDACTED, "valueInMember": REDACTED},
        ])
    );
    assert_eq!(diffs(1), json!([{"path": "/", "valueInHub": "(the whole object)"}]), "a placeholder, no value");
    assert_eq!(diffs(2), json!([{"path": "/", "valueInHub": "(the whole object)"}]));
    no_secret_in(&out.status);

    let takeover =
        apply_work(&target, &work(1, json!({"whenToTakeOver": "IfNoDiff"}), manifests), None, true, "t").await;
    assert_eq!(applied(&takeover.status, 0), ("False", "FailedToTakeOver"));
    let diff = manifest(&takeover.status, 0).diff_details.clone().unwrap();
    assert_eq!(
        diff["observedDiffs"][0],
        json!({"path": "/data/password", "valueInHub": REDACTED, "valueInMember": REDACTED})
    );
    no_secret_in(&takeover.status);
}

#[test]
fn an_apply_error_quoting_a_secret_value_is_withheld_other_errors_are_kept() {
    let manifest = object(secret("s", json!({"password": HUB_B64})));
    let live = object(secret("s", json!({"password": MEMBER_B64})));
    let echoed = TargetError::Invalid("Secret \"s\" is invalid: data: Invalid value: \"member-value-9c2e\"".into());
    let message = failure_message(&echoed, &manifest, Some(&live));
    assert_eq!(message, "ManifestApplyFailed: the message is withheld as it quotes the Secret's data");
    let plain = TargetError::Invalid("namespaces \"app\" not found".into());
    assert_eq!(failure_message(&plain, &manifest, Some(&live)), "namespaces \"app\" not found");
    let config = object(cm("c", json!({"a": "member-value-9c2e"})));
    assert_eq!(failure_message(&echoed, &config, None), echoed.to_string(), "not a Secret: kept");
}

#[test]
fn failures_carry_kubefleets_manifest_reasons() {
    use crate::targets::TargetError;
    assert_eq!(failure_reason(&TargetError::NotServed("no kind Fake".into())), "DecodingErred");
    assert_eq!(failure_reason(&TargetError::Invalid("bad field".into())), "ManifestApplyFailed");
    assert_eq!(failure_reason(&TargetError::Conflict("owned".into())), "ManifestApplyFailed");
    assert_eq!(failure_reason(&TargetError::Unavailable("down".into())), "ClusterUnavailable");
}
