//! Status folding for `applyStrategy.type: ReportDiff`: `DiffReported` in
//! place of `Applied` and `Available`, per cluster and on the placement.

use fleet_api::conditions::Condition;
use fleet_api::placement::PerClusterStatus;
use fleet_api::Object;
use serde_json::json;

use super::tests_cluster::{binding, work, OK};
use super::*;

fn report_diff_binding() -> Object {
    let mut b = binding("Bound", "web-2-snapshot");
    b.rest["spec"]["applyStrategy"] = json!({"type": "ReportDiff", "whenToTakeOver": "Never"});
    b
}

fn fold(b: &Object, works: &[Object]) -> PerClusterStatus {
    let mut entry = PerClusterStatus { cluster_name: "east".into(), ..Default::default() };
    let facts = ClusterRollout {
        cluster: "east",
        binding: b,
        works,
        latest_resource_index: Some(2),
        external: false,
        overrides_current: true,
        expected_works: 1,
        works_in_sync: true,
        rendering: &Rendering::NoOverrides,
    };
    fold_cluster(&mut entry, &facts, 5, "t1");
    entry
}

fn said(c: &Condition) -> (&str, &str, &str) {
    (c.type_.as_str(), c.status.as_str(), c.reason.as_str())
}

fn last(entry: &PerClusterStatus) -> (&str, &str, &str, &str) {
    let c = entry.conditions.last().unwrap();
    (c.type_.as_str(), c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

#[test]
fn a_cluster_reports_diff_reported_after_work_synchronized_and_never_applied() {
    let b = report_diff_binding();
    let diffs = json!([{"identifier": {"ordinal": 0, "version": "v1", "kind": "ConfigMap", "namespace": "app", "name": "cfg"},
        "conditions": [{"type": "DiffReported", "status": "True", "reason": "FoundDiff"}],
        "diffDetails": {"observationTime": "t9", "firstDiffedObservedTime": "t9", "observedInMemberClusterGeneration": 1,
                        "observedDiffs": [{"path": "/data/k", "valueInHub": "a", "valueInMember": "b"}]}}]);
    let done = work("web-work", 2, &[("DiffReported", "True", "AllManifestsDiffReported")], diffs);
    let entry = fold(&b, &[done]);
    let types: Vec<&str> = entry.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["RolloutStarted", "Overridden", "WorkSynchronized", "DiffReported"]);
    assert_eq!(said(entry.conditions.last().unwrap()), ("DiffReported", "True", "AllWorkHaveDiffReported"));
    assert!(entry.conditions.iter().all(|c| c.observed_generation == Some(5)));
    let diffed = entry.rest["diffedPlacements"].as_array().unwrap();
    assert_eq!(diffed[0]["observedDiffs"][0], json!({"path": "/data/k", "valueInHub": "a", "valueInMember": "b"}));
    assert_eq!(diffed[0]["firstDiffedObservedTime"], "t9");
    assert!(!entry.rest.contains_key("failedPlacements"));

    // Applied/Available of a Work still reporting in the other mode do not count.
    let entry = fold(&b, &[work("web-work", 2, OK, json!([]))]);
    assert_eq!(
        last(&entry),
        (
            "DiffReported",
            "Unknown",
            "DiffReportingPending",
            "Diff reporting has just started; its status is not yet to be known"
        )
    );
}

#[test]
fn a_failed_diff_report_lists_no_placements_as_kubefleet() {
    let manifests = json!([
        {"identifier": {"ordinal": 0, "version": "v1", "kind": "ConfigMap", "namespace": "app", "name": "bad"},
         "conditions": [{"type": "DiffReported", "status": "False", "reason": "Failed", "message": "unreachable"}]},
        {"identifier": {"ordinal": 1, "version": "v1", "kind": "ConfigMap", "namespace": "app", "name": "good"},
         "conditions": [{"type": "DiffReported", "status": "True", "reason": "NoDiffFound"}],
         "diffDetails": {"observationTime": "t9", "observedDiffs": []}}
    ]);
    let failed = work("web-work", 2, &[("DiffReported", "False", "SomeManifestsHaveNotReportedDiff")], manifests);
    let entry = fold(&report_diff_binding(), &[failed]);
    let (type_, status, reason, _) = last(&entry);
    assert_eq!((type_, status, reason), ("DiffReported", "False", "NotAllWorkHaveDiffReported"));
    assert!(!entry.rest.contains_key("failedPlacements"), "the Work's manifest conditions say which and why");
    assert!(!entry.rest.contains_key("diffedPlacements"));
}

#[test]
fn switching_modes_replaces_the_conditions() {
    let b = report_diff_binding();
    let mut entry = fold(&binding("Bound", "web-2-snapshot"), &[work("web-work", 2, OK, json!([]))]);
    assert_eq!(entry.conditions.len(), 5, "Applied and Available");
    let done = [work("web-work", 2, &[("DiffReported", "True", "AllManifestsDiffReported")], json!([]))];
    let facts = ClusterRollout {
        cluster: "east",
        binding: &b,
        works: &done,
        latest_resource_index: Some(2),
        external: false,
        overrides_current: true,
        expected_works: 1,
        works_in_sync: true,
        rendering: &Rendering::NoOverrides,
    };
    fold_cluster(&mut entry, &facts, 6, "t2");
    let types: Vec<&str> = entry.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["RolloutStarted", "Overridden", "WorkSynchronized", "DiffReported"]);
    // And back.
    let facts = ClusterRollout {
        binding: &binding("Bound", "web-2-snapshot"),
        works: &[work("web-work", 2, OK, json!([]))],
        ..facts
    };
    fold_cluster(&mut entry, &facts, 7, "t3");
    assert!(entry.conditions.iter().all(|c| c.type_ != "DiffReported"));
}

/// A cluster entry with the ReportDiff chain all True but `DiffReported`, which has `last`.
fn cluster(last: Option<&str>) -> PerClusterStatus {
    let mut conditions: Vec<Condition> = [
        (ROLLOUT_STARTED, REASON_ROLLOUT_STARTED),
        (OVERRIDDEN, REASON_NO_OVERRIDE),
        (WORK_SYNCHRONIZED, REASON_WORK_SYNCHRONIZED),
    ]
    .iter()
    .map(|(t, r)| Condition::new(t, true, r, ""))
    .collect();
    if let Some(status) = last {
        conditions.push(Condition { status: status.into(), ..Condition::new(DIFF_REPORTED, true, "", "") });
    }
    PerClusterStatus { cluster_name: "c".into(), conditions, ..Default::default() }
}

fn fold_placement_rd(clusters: &[PerClusterStatus], kind: &str) -> Vec<Condition> {
    let scheduled = Condition::new(&format!("{kind}Scheduled"), true, "SchedulingPolicyFulfilled", "found");
    let mode = Mode { external: false, report_diff: true };
    fold_placement(kind, 3, &scheduled, clusters, mode, &[], "t1")
}

fn placement_last(out: &[Condition]) -> (String, String, String, String) {
    let c = out.last().unwrap();
    (c.type_.clone(), c.status.clone(), c.reason.clone(), c.message.clone())
}

fn expect(type_: &str, status: &str, reason: &str, message: &str) -> (String, String, String, String) {
    (type_.into(), status.into(), reason.into(), message.into())
}

#[test]
fn the_placement_says_diff_reported_with_kubefleet_s_reasons_and_messages() {
    let crp = "ClusterResourcePlacement";
    let out = fold_placement_rd(&[cluster(Some("True")), cluster(Some("True"))], crp);
    let types: Vec<&str> = out.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        [
            "ClusterResourcePlacementScheduled",
            "ClusterResourcePlacementRolloutStarted",
            "ClusterResourcePlacementOverridden",
            "ClusterResourcePlacementWorkSynchronized",
            "ClusterResourcePlacementDiffReported",
        ]
    );
    assert_eq!(
        placement_last(&out),
        expect(
            "ClusterResourcePlacementDiffReported",
            "True",
            "DiffReportingCompleted",
            "Diff reporting in 2 cluster(s) has been completed"
        )
    );
    let out = fold_placement_rd(&[cluster(Some("True")), cluster(Some("Unknown")), cluster(None)], crp);
    assert_eq!(
        placement_last(&out),
        expect(
            "ClusterResourcePlacementDiffReported",
            "Unknown",
            "DiffReportingPending",
            "There are still 2 cluster(s) in the process of checking for configuration differences"
        )
    );
    let out = fold_placement_rd(&[cluster(Some("False")), cluster(Some("Unknown")), cluster(Some("False"))], crp);
    assert_eq!(
        placement_last(&out),
        expect(
            "ClusterResourcePlacementDiffReported",
            "False",
            "DiffReportingIncompleteOrFailed",
            "Diff reporting in 2 clusters is still in progress or has failed"
        )
    );
    let rp = fold_placement_rd(&[cluster(Some("True"))], "ResourcePlacement");
    assert_eq!(placement_last(&rp).0, "ResourcePlacementDiffReported");
    assert!(rp.iter().all(|c| !c.type_.ends_with("Applied") && !c.type_.ends_with("Available")));
}

#[test]
fn the_chain_stops_before_diff_reported_while_works_are_not_synchronized() {
    let mut pending = cluster(None);
    pending.conditions[2].status = "False".into();
    let out = fold_placement_rd(&[pending], "ClusterResourcePlacement");
    assert_eq!(placement_last(&out).0, "ClusterResourcePlacementWorkSynchronized");
}
