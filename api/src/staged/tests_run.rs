//! Run validation, defaults, immutability and state transitions.

use serde_json::{json, Value};

use super::*;
use crate::testing::{err, has, object};

fn run(spec: Value) -> Object {
    object(CLUSTER_STAGED_UPDATE_RUN, "app-v1", spec)
}

fn prepared(spec: Value) -> Object {
    let mut o = run(spec);
    crate::typed::prepare(&mut o).unwrap_or_else(|e| panic!("{e}"));
    o
}

fn base() -> Value {
    json!({"placementName": "app", "stagedRolloutStrategyName": "three-stage"})
}

fn with(extra: Value) -> Value {
    let mut spec = base();
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    spec
}

#[test]
fn su_2_state_defaults_to_run() {
    let o = prepared(base());
    assert_eq!(o.spec().unwrap()["state"], "Run");
    assert_eq!(run_spec_of(&o).resource_snapshot_index(), None, "absent index means the latest");
    let o = prepared(with(json!({"state": "Initialize"})));
    assert_eq!(run_spec_of(&o).state(), STATE_INITIALIZE);
    let e = err(run(with(json!({"state": "Pause"}))));
    has(&e, r#"spec.state: Unsupported value: "Pause": supported values: "Initialize", "Run", "Stop""#);
}

#[test]
fn required_fields_and_lengths() {
    let e = err(run(json!({})));
    has(&e, "spec.placementName: Required value");
    has(&e, "spec.stagedRolloutStrategyName: Required value");
    let e = err(run(with(json!({"placementName": "p".repeat(256)}))));
    has(&e, "spec.placementName: Too long: must have at most 255 bytes");
    let long = object(CLUSTER_STAGED_UPDATE_RUN, &"r".repeat(64), base());
    has(&err(long), &format!("metadata.name: Invalid value: \"{}\": metadata.name max length is 63", "r".repeat(64)));
}

#[test]
fn resource_snapshot_index_is_a_decimal() {
    let e = err(run(with(json!({"resourceSnapshotIndex": "-1"}))));
    has(&e, r#"spec.resourceSnapshotIndex: Invalid value: "-1": expected an integer >= 0"#);
    has(&err(run(with(json!({"resourceSnapshotIndex": "1a"})))), "expected an integer >= 0");
    assert_eq!(
        run_spec_of(&prepared(with(json!({"resourceSnapshotIndex": "12"})))).resource_snapshot_index(),
        Some(12)
    );
    assert_eq!(run_spec_of(&prepared(with(json!({"resourceSnapshotIndex": 3})))).resource_snapshot_index(), Some(3));
    assert_eq!(run_spec_of(&prepared(with(json!({"resourceSnapshotIndex": ""})))).resource_snapshot_index(), None);
    has(&err(run(with(json!({"resourceSnapshotIndex": -1})))), r#"Invalid value: "-1": expected an integer >= 0"#);
}

#[test]
fn unknown_fields_are_refused() {
    has(&err(run(with(json!({"strategyName": "x"})))), "spec.strategyName: Forbidden: unknown field `strategyName`");
}

#[test]
fn spec_fields_are_immutable() {
    let old = prepared(with(json!({"resourceSnapshotIndex": "0"})));
    let new = prepared(json!({"placementName": "x", "resourceSnapshotIndex": "1", "stagedRolloutStrategyName": "y"}));
    let e = crate::typed::check_update(&old, &new).unwrap_err().to_string();
    has(&e, r#"spec.placementName: Invalid value: "x": placementName is immutable"#);
    has(&e, r#"spec.resourceSnapshotIndex: Invalid value: "1": resourceSnapshotIndex is immutable"#);
    has(&e, r#"spec.stagedRolloutStrategyName: Invalid value: "y": stagedRolloutStrategyName is immutable"#);
    crate::typed::check_update(&old, &prepared(with(json!({"resourceSnapshotIndex": "0", "state": "Stop"})))).unwrap();
}

#[test]
fn su_2_state_transitions() {
    let state = |s: &str| prepared(with(json!({ "state": s })));
    let check = |from: &str, to: &str| crate::typed::check_update(&state(from), &state(to));
    for (from, to) in
        [("Initialize", "Run"), ("Run", "Stop"), ("Stop", "Run"), ("Run", "Run"), ("Initialize", "Initialize")]
    {
        check(from, to).unwrap_or_else(|e| panic!("{from}->{to}: {e}"));
    }
    has(
        &check("Initialize", "Stop").unwrap_err().to_string(),
        r#"spec.state: Invalid value: "Stop": invalid state transition: cannot transition from Initialize to Stop"#,
    );
    for from in ["Run", "Stop"] {
        let e = check(from, "Initialize").unwrap_err().to_string();
        has(&e, &format!("invalid state transition: cannot transition from {from} to Initialize"));
    }
    // Re-applying without `state` means Run: fine after Initialize.
    crate::typed::check_update(&state("Initialize"), &prepared(base())).unwrap();
}

#[test]
fn status_round_trips_with_kubefleet_field_names() {
    let status = json!({
        "policySnapshotIndexUsed": "0", "policyObservedClusterCount": 5, "resourceSnapshotIndexUsed": "0",
        "appliedStrategy": {"type": "ClientSideApply"},
        "stagedUpdateStrategySnapshot": {"stages": [{"name": "staging", "maxConcurrency": 1}]},
        "stagesStatus": [{"stageName": "staging", "startTime": "2024-05-01T10:00:00Z",
            "clusters": [{"clusterName": "stg-1", "clusterResourceOverrideSnapshots": ["cro-1"],
                "resourceOverrideSnapshots": [{"name": "ro-1", "namespace": "app"}],
                "conditions": [{"type": "Started", "status": "True", "reason": "ClusterUpdatingStarted"}]}],
            "afterStageTaskStatus": [{"type": "TimedWait"}],
            "conditions": [{"type": "Progressing", "status": "True", "reason": "StageUpdatingStarted"}]}],
        "deletionStageStatus": {"stageName": "kubernetes-fleet.io/deleteStage", "clusters": []},
        "conditions": [{"type": "Initialized", "status": "True", "reason": "UpdateRunInitializedSuccessfully"}]
    });
    let mut o = run(base());
    o.rest.insert("status".into(), status.clone());
    let typed = run_status_of(&o);
    assert_eq!(typed.stages_status[0].clusters[0].resource_override_snapshots[0].name, "ro-1");
    assert_eq!(typed.deletion_stage_status.as_ref().unwrap().stage_name, DELETE_STAGE_NAME);
    set_run_status(&mut o, &typed);
    assert_eq!(o.status().unwrap(), &status);
}

#[test]
fn namespaced_run_prepares_the_same() {
    let mut o = object(STAGED_UPDATE_RUN, "r", base());
    crate::typed::prepare(&mut o).unwrap();
    assert_eq!(o.spec().unwrap()["state"], "Run");
    assert_eq!(approval_request_kind(STAGED_UPDATE_RUN), APPROVAL_REQUEST);
    assert_eq!(strategy_kind(CLUSTER_STAGED_UPDATE_RUN), CLUSTER_STAGED_UPDATE_STRATEGY);
    assert_eq!(placement_kind(STAGED_UPDATE_RUN), "ResourcePlacement");
    assert_eq!(approval_request_name("app-v1", "canary", false), "app-v1-after-canary");
    assert_eq!(approval_request_name("app-v1", "production", true), "app-v1-before-production");
}
