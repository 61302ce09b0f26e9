use super::render::{cluster_table, success_line, verdict_text, PlainPrinter, TerminalBars};
use super::*;
use serde_json::json;

fn condition(type_: &str, status: &str, reason: &str, generation: i64) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "observedGeneration": generation, "message": ""})
}

/// Per-cluster conditions: the first `true_count` of the rollout order True
/// at `generation`, then `last` (type, status, reason) if given.
fn conditions(true_count: usize, last: Option<(&str, &str)>, generation: i64) -> Value {
    let mut list: Vec<Value> =
        CONDITION_ORDER[..true_count].iter().map(|t| condition(t, "True", t, generation)).collect();
    if let Some((status, reason)) = last {
        list.push(condition(CONDITION_ORDER[true_count], status, reason, generation));
    }
    Value::Array(list)
}

fn placement(kind: &str, generation: i64, placement_conditions: Value, clusters: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
        "metadata": {"name": "web", "generation": generation},
        "spec": {},
        "status": {"observedResourceIndex": "2", "conditions": placement_conditions, "placementStatuses": clusters}
    }))
    .unwrap()
}

fn placement_conditions(kind: &str, true_count: usize, generation: i64) -> Value {
    Value::Array(
        CONDITION_ORDER[..true_count].iter().map(|t| condition(&format!("{kind}{t}"), "True", t, generation)).collect(),
    )
}

const CRP: &str = "ClusterResourcePlacement";

#[test]
fn stages_follow_the_first_condition_not_true() {
    let entry = |conds: Value| json!({"clusterName": "c", "observedResourceIndex": "1", "conditions": conds});
    let stage = |conds: Value| cluster_progress(&entry(conds), 3, false).stage;
    assert_eq!(stage(json!([])), Stage::Pending);
    assert_eq!(stage(conditions(1, None, 3)), Stage::Scheduled);
    assert_eq!(stage(conditions(1, Some(("False", "RolloutNotStartedYet")), 3)), Stage::Scheduled);
    assert_eq!(stage(conditions(2, None, 3)), Stage::RolloutStarted);
    assert_eq!(stage(conditions(3, None, 3)), Stage::Overridden);
    assert_eq!(stage(conditions(4, Some(("Unknown", "ApplyPending")), 3)), Stage::WorkSynchronized);
    assert_eq!(stage(conditions(4, Some(("False", "ApplyPending")), 3)), Stage::WorkSynchronized);
    assert_eq!(stage(conditions(5, Some(("False", "ResourceNotAvailableYet")), 3)), Stage::Applied);
    assert_eq!(stage(conditions(6, None, 3)), Stage::Available);
    assert_eq!(stage(conditions(4, Some(("False", "ApplyFailed")), 3)), Stage::Failed);
    assert_eq!(stage(conditions(2, Some(("False", "OverriddenFailed")), 3)), Stage::Failed);
    // Conditions of an older generation do not count: a stale success is
    // not progress, a stale failure not a failure.
    assert_eq!(stage(conditions(6, None, 2)), Stage::Pending);
    assert_eq!(stage(conditions(4, Some(("False", "ApplyFailed")), 2)), Stage::Pending);

    let c = cluster_progress(&entry(conditions(3, None, 3)), 3, false);
    assert_eq!((c.cluster.as_str(), c.resource_index.as_deref()), ("c", Some("1")));
    assert_eq!(c.detail, "waiting for WorkSynchronized");
    let c = cluster_progress(&entry(conditions(5, Some(("False", "ResourceNotAvailableYet")), 3)), 3, false);
    assert_eq!(c.detail, "Available=False (ResourceNotAvailableYet)");
}

#[test]
fn a_failed_cluster_names_its_first_failed_object() {
    let mut cluster = json!({"clusterName": "west-1", "conditions": conditions(4, Some(("False", "ApplyFailed")), 3)});
    cluster["failedPlacements"] = json!([
        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "app", "name": "web",
         "condition": {"type": "Applied", "status": "False", "reason": "ManifestApplyFailed", "message": "immutable"}},
        {"version": "v1", "kind": "ConfigMap", "namespace": "app", "name": "cfg",
         "condition": {"type": "Applied", "status": "False"}}
    ]);
    let ok = json!({"clusterName": "east-1", "observedResourceIndex": "2", "conditions": conditions(6, None, 3)});
    let p = progress(&placement(CRP, 3, placement_conditions(CRP, 4, 3), json!([ok, cluster])));
    assert_eq!(p.clusters[1].stage, Stage::Failed);
    let why = "cluster west-1: apps/v1/Deployment app/web: Applied=False (ManifestApplyFailed): immutable";
    assert_eq!(p.outcome, Outcome::Failed(why.to_string()));
    assert_eq!(verdict_text(&p).unwrap(), format!("rollout of clusterresourceplacement \"web\" failed: {why}"),);
    assert_eq!(p.summary(), "1/2 clusters available");
}

#[test]
fn the_placement_applied_false_is_a_failure_too() {
    let mut conds = placement_conditions(CRP, 4, 5);
    if let Some(list) = conds.as_array_mut() {
        list.push(json!({"type": "ClusterResourcePlacementApplied", "status": "False", "reason": "ApplyFailed",
                         "observedGeneration": 5, "message": "failed to apply to 1 cluster"}));
    }
    let p = progress(&placement(CRP, 5, conds, json!([])));
    assert_eq!(
        p.outcome,
        Outcome::Failed("ClusterResourcePlacementApplied=False (ApplyFailed): failed to apply to 1 cluster".into())
    );
}

#[test]
fn complete_only_when_available_at_the_current_generation() {
    let clusters =
        json!([{"clusterName": "east-1", "observedResourceIndex": "2", "conditions": conditions(6, None, 4)}]);
    let done = progress(&placement(CRP, 4, placement_conditions(CRP, 6, 4), clusters.clone()));
    assert_eq!(done.outcome, Outcome::Complete);
    assert!(verdict_text(&done).is_none());
    assert_eq!(
        success_line(&done),
        "clusterresourceplacement \"web\" successfully rolled out (1/1 clusters available)\n"
    );

    let stale = progress(&placement(CRP, 5, placement_conditions(CRP, 6, 4), clusters));
    assert_eq!(
        stale.outcome,
        Outcome::InProgress("waiting for generation 5 to be observed (the status is of generation 4)".into())
    );

    let rp = "ResourcePlacement";
    let rp_done = progress(&placement(rp, 1, placement_conditions(rp, 6, 1), json!([])));
    assert_eq!(rp_done.outcome, Outcome::Complete);
    assert_eq!(rp_done.placement, "resourceplacement \"web\"");
}

#[test]
fn in_progress_says_what_it_waits_for() {
    let clusters: Vec<Value> = (0..5)
        .map(|i| json!({"clusterName": format!("m{i}"), "observedResourceIndex": "1", "conditions": conditions((i + 2).min(6), None, 2)}))
        .collect();
    let p = progress(&placement(CRP, 2, placement_conditions(CRP, 3, 2), Value::Array(clusters)));
    assert_eq!(
        p.outcome,
        Outcome::InProgress(
            "1/5 clusters available; waiting for m0 (RolloutStarted), m1 (Overridden), m2 (WorkSynchronized) and 1 more; \
             ClusterResourcePlacementWorkSynchronized not reported yet"
                .into()
        )
    );
    let fresh = progress(&placement(CRP, 1, json!([]), json!([])));
    assert_eq!(
        fresh.outcome,
        Outcome::InProgress("0/0 clusters available; ClusterResourcePlacementScheduled not reported yet".into())
    );
    assert_eq!(
        verdict_text(&fresh).unwrap(),
        "rollout of clusterresourceplacement \"web\" is not complete: 0/0 clusters available; \
         ClusterResourcePlacementScheduled not reported yet"
    );
}

fn three_clusters(generation: i64) -> Object {
    placement(
        CRP,
        generation,
        placement_conditions(CRP, 4, generation),
        json!([
            {"clusterName": "east-1", "observedResourceIndex": "2", "conditions": conditions(6, None, generation)},
            {"clusterName": "west-1", "observedResourceIndex": "1", "conditions": conditions(3, None, generation)},
            {"clusterName": "north-1", "conditions": conditions(5, Some(("False", "ResourceNotAvailableYet")), generation)}
        ]),
    )
}

#[test]
fn the_table_and_plain_lines() {
    let p = progress(&three_clusters(2));
    let table: Vec<String> = cluster_table(&p).render().lines().map(|l| l.trim_end().to_string()).collect();
    assert_eq!(
        table,
        [
            "CLUSTER   RESOURCE-INDEX   STAGE        DETAIL",
            "east-1    2/2              Available",
            "west-1    1/2              Overridden   waiting for WorkSynchronized",
            "north-1   -/2              Applied      Available=False (ResourceNotAvailableYet)",
        ]
    );
    let mut printer = PlainPrinter::new();
    assert_eq!(
        printer.update(&p),
        "\
east-1: Available (resource index 2/2)
west-1: Overridden (resource index 1/2): waiting for WorkSynchronized
north-1: Applied (resource index -/2): Available=False (ResourceNotAvailableYet)
1/3 clusters available
"
    );
    // Nothing changed: nothing printed.
    assert_eq!(printer.update(&p), "");
    // Only what changed, then the summary.
    let mut next = three_clusters(2);
    next.rest["status"]["placementStatuses"][2]["conditions"] = conditions(6, None, 2);
    next.rest["status"]["placementStatuses"][2]["observedResourceIndex"] = json!("2");
    if let Some(list) = next.rest["status"]["placementStatuses"].as_array_mut() {
        list.remove(1);
    }
    assert_eq!(
        printer.update(&progress(&next)),
        "north-1: Available (resource index 2/2)\nwest-1: no longer chosen\n2/2 clusters available\n"
    );
}

#[test]
fn terminal_bars_follow_the_clusters() {
    let mut bars = TerminalBars::with_draw_target(indicatif::ProgressDrawTarget::hidden());
    bars.update(&progress(&three_clusters(2)));
    let mut fewer = three_clusters(2);
    if let Some(list) = fewer.rest["status"]["placementStatuses"].as_array_mut() {
        list.truncate(1);
    }
    bars.update(&progress(&fewer));
    bars.finish();
}

#[test]
fn a_complete_status_of_an_older_resource_index_is_still_in_progress() {
    let clusters =
        json!([{"clusterName": "east-1", "observedResourceIndex": "0", "conditions": conditions(6, None, 4)}]);
    let mut object = placement(CRP, 4, placement_conditions(CRP, 6, 4), clusters);
    object.rest.get_mut("status").unwrap()["observedResourceIndex"] = json!("0");
    assert_eq!(progress(&object).outcome, Outcome::Complete);
    let held = require_latest_index(progress(&object), Some(1));
    assert!(
        matches!(&held.outcome, Outcome::InProgress(why) if why.contains("resource index 1") && why.contains("east-1"))
    );
    assert_eq!(require_latest_index(progress(&object), Some(0)).outcome, Outcome::Complete);
    assert_eq!(require_latest_index(progress(&object), None).outcome, Outcome::Complete);
}

/// A ReportDiff placement: per-cluster conditions of [`REPORT_DIFF_ORDER`],
/// the first `true_count` True, then `last` for the next.
fn report_diff_placement(placement_true: usize, clusters: &[(usize, Option<(&str, &str)>)]) -> Object {
    let generation = 2;
    let per_cluster = |(true_count, last): (usize, Option<(&str, &str)>)| {
        let mut list: Vec<Value> =
            REPORT_DIFF_ORDER[..true_count].iter().map(|t| condition(t, "True", t, generation)).collect();
        if let Some((status, reason)) = last {
            list.push(condition(REPORT_DIFF_ORDER[true_count], status, reason, generation));
        }
        Value::Array(list)
    };
    let entries: Vec<Value> = clusters
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"clusterName": format!("m{i}"), "observedResourceIndex": "2", "conditions": per_cluster(*c)}))
        .collect();
    let conds: Vec<Value> = REPORT_DIFF_ORDER[..placement_true]
        .iter()
        .map(|t| condition(&format!("{CRP}{t}"), "True", t, generation))
        .collect();
    let mut object = placement(CRP, generation, Value::Array(conds), Value::Array(entries));
    object.rest.insert("spec".into(), json!({"strategy": {"applyStrategy": {"type": "ReportDiff"}}}));
    object
}

#[test]
fn a_report_diff_placement_is_done_when_diffs_are_reported_and_says_so() {
    let done = progress(&report_diff_placement(5, &[(5, None), (5, None)]));
    assert!(done.report_diff);
    assert_eq!(done.outcome, Outcome::Complete);
    assert_eq!(done.clusters[0].stage, Stage::DiffReported);
    assert_eq!(done.summary(), "2/2 clusters diff reported");
    assert_eq!(
        success_line(&done),
        "clusterresourceplacement \"web\" successfully reported its diffs (2/2 clusters diff reported)\n"
    );
    let mut printer = PlainPrinter::new();
    let text = printer.update(&done);
    assert!(text.starts_with("m0: DiffReported (resource index 2/2)\n"), "{text}");
    assert!(!text.contains("vailable") && !text.contains("Applied"), "{text}");

    let pending = progress(&report_diff_placement(4, &[(5, None), (4, Some(("Unknown", "DiffReportingPending")))]));
    assert_eq!(pending.clusters[1].stage, Stage::WorkSynchronized);
    assert_eq!(
        pending.outcome,
        Outcome::InProgress(
            "1/2 clusters diff reported; waiting for m1 (WorkSynchronized); \
             ClusterResourcePlacementDiffReported not reported yet"
                .into()
        )
    );

    let failed = progress(&report_diff_placement(4, &[(4, Some(("False", "DiffReportingIncompleteOrFailed")))]));
    assert_eq!(failed.clusters[0].stage, Stage::Failed);
    assert!(matches!(&failed.outcome, Outcome::Failed(why) if why.contains("DiffReported=False")), "{failed:?}");

    // A placement that applies is not done at DiffReported.
    let mut applying = report_diff_placement(5, &[(5, None)]);
    applying.rest.insert("spec".into(), json!({}));
    let p = progress(&applying);
    assert!(!p.report_diff && p.clusters[0].stage == Stage::WorkSynchronized);
}
