//! Execution rules SU-2, SU-6..SU-10 and SU-12, one test each (or more).

use serde_json::json;

use fleet_api::staged::{
    StageUpdatingStatus, UpdateRunStatus, APPROVAL_REQUEST_APPROVED, PROGRESSING, REASON_PROGRESSING,
    REASON_STAGE_SUCCEEDED, REASON_STOPPED, REASON_STOPPING, REASON_STUCK, REASON_WAITING, STARTED, SUCCEEDED,
    WAIT_TIME_ELAPSED,
};

use super::testkit::*;
use super::*;
use crate::rollout::Readiness;

fn is(stage: &StageUpdatingStatus, type_: &str, status: &str) -> bool {
    stage.conditions.iter().any(|c| c.type_ == type_ && c.status == status)
}

fn one_stage(stage: serde_json::Value, n: usize) -> World {
    let mut stage = stage;
    stage["name"] = json!("only");
    stage["labelSelector"] = json!({});
    let clusters = (1..=n).map(|i| cluster(&format!("c{i}"), &[])).collect();
    World::new(clusters, strategy_json(json!([stage])))
}

#[test]
fn su_6_max_concurrency_counts_and_refills_a_freed_slot_at_once() {
    let mut w = one_stage(json!({"maxConcurrency": "50%"}), 5);
    assert_eq!(World::writes(&w.step()), ["bind:c1", "bind:c2"], "50% of 5 rounds down to 2");
    w.ready("c2");
    assert_eq!(World::writes(&w.step()), ["bind:c3"], "c2's slot goes to the next cluster in order");
    assert!(World::writes(&w.step()).is_empty());
    let mut w = one_stage(json!({"maxConcurrency": 3}), 5);
    assert_eq!(World::writes(&w.step()), ["bind:c1", "bind:c2", "bind:c3"]);
    let mut w = one_stage(json!({"maxConcurrency": "10%"}), 5);
    assert_eq!(World::writes(&w.step()), ["bind:c1"], "at least 1");
    let mut w = one_stage(json!({}), 3);
    assert_eq!(World::writes(&w.step()), ["bind:c1"], "default 1");
    for c in ["c1", "c2", "c3"] {
        w.ready(c);
        w.step();
    }
    assert!(w.succeeded());
}

#[test]
fn su_6_an_empty_stage_still_runs_its_tasks() {
    let strategy = strategy_json(json!([
        {"name": "empty", "labelSelector": {"matchLabels": {"env": "none"}},
         "beforeStageTasks": [{"type": "Approval"}], "afterStageTasks": [{"type": "TimedWait", "waitTime": "1h"}]},
        {"name": "all", "labelSelector": {}}
    ]));
    let mut w = World::new(vec![cluster("c1", &[])], strategy);
    let plan = w.step();
    assert_eq!(World::writes(&plan), ["create:app-v1-before-empty"], "its approval gates the run");
    w.approve("app-v1-before-empty");
    let plan = w.step();
    assert!(!World::writes(&plan).iter().any(|a| a.starts_with("bind:")), "waiting an hour: {plan:?}");
    assert_eq!(w.progressing(), ("False".into(), REASON_WAITING.into()));
    w.now += 3600;
    let plan = w.step();
    assert!(World::writes(&plan).iter().any(|a| a == "bind:c1"), "{plan:?}");
    let empty = w.stage("empty");
    assert!(empty.conditions.iter().any(|c| c.type_ == SUCCEEDED && c.reason == REASON_STAGE_SUCCEEDED));
    assert!(empty.start_time.is_some() && empty.end_time.is_some());
}

#[test]
fn su_6_succeeded_means_available_and_untrackable_counts() {
    let mut w = one_stage(json!({"maxConcurrency": 2}), 2);
    w.step();
    w.bindings[0].readiness = Readiness::NotTrackable { available_since: T0 };
    w.step();
    let stage = w.stage("only");
    assert!(stage.clusters[0].conditions.iter().any(|c| c.type_ == SUCCEEDED && c.is_true()));
    assert!(!stage.clusters[1].conditions.iter().any(|c| c.type_ == SUCCEEDED));
}

#[test]
fn su_6_a_cluster_already_on_the_run_snapshot_starts_without_a_write() {
    let mut w = one_stage(json!({}), 2);
    for b in &mut w.bindings {
        b.state = "Bound".into();
        b.rolled_out_under = b.policy_snapshot.clone();
        b.resource_snapshot = "app-0-snapshot".into();
        b.readiness = Readiness::Ready;
    }
    let plan = w.step();
    assert!(World::writes(&plan).is_empty());
    assert!(w.succeeded(), "both were already there: the run completes in one pass");
}

/// SU-13: a binding the scheduler moved to a new policy snapshot since a
/// run rolled it out is rolled out again (marked with the new one), even
/// on the same resources.
#[test]
fn su_6_a_binding_moved_to_a_new_policy_snapshot_is_rolled_out_again() {
    let mut w = one_stage(json!({}), 1);
    for b in &mut w.bindings {
        b.state = "Bound".into();
        b.rolled_out_under = "app-old".into();
        b.resource_snapshot = "app-0-snapshot".into();
        b.readiness = Readiness::Ready;
    }
    let plan = w.step();
    assert_eq!(World::writes(&plan), ["bind:c1"]);
    assert_eq!(w.bindings[0].rolled_out_under, "app-0");
}

#[test]
fn su_6_bind_carries_overrides_and_apply_strategy() {
    let mut w = one_stage(json!({}), 1);
    let strategy = fleet_api::work::ApplyStrategy { type_: Some("ReportDiff".into()), ..Default::default() };
    w.placement.as_mut().unwrap().spec.strategy.as_mut().unwrap().apply_strategy = Some(strategy.clone());
    w.overrides.insert("c1".into(), ClusterOverrides { cluster_resource: vec!["cro-0".into()], resource: vec![] });
    let plan = w.step();
    let bind = plan.actions.iter().find(|a| matches!(a, RunAction::Bind { .. })).unwrap();
    let stored: fleet_api::Object = serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
        "metadata": {"name": "app-c1", "resourceVersion": "7"},
        "spec": {"state": "Scheduled", "targetCluster": "c1", "schedulingPolicySnapshotName": "app-0",
                 "clusterDecision": {"clusterName": "c1", "selected": true}}
    }))
    .unwrap();
    let updated = objects::bound_binding(&stored, bind).unwrap();
    assert_eq!(
        updated.metadata.annotations.get(fleet_api::binding::ROLLED_OUT_UNDER_ANNOTATION).map(String::as_str),
        Some("app-0"),
        "the policy snapshot it was rolled out under"
    );
    let spec = fleet_api::binding::spec_of(&updated);
    assert_eq!((spec.state.as_str(), spec.resource_snapshot_name.as_str()), ("Bound", "app-0-snapshot"));
    assert_eq!(spec.cluster_resource_override_snapshots, ["cro-0"]);
    let defaulted = json!({"type": "ReportDiff", "comparisonOption": "PartialComparison",
        "whenToApply": "Always", "whenToTakeOver": "Always"});
    assert_eq!(spec.apply_strategy, Some(defaulted), "the run's strategy, defaults spelled out");
    assert_eq!(updated.metadata.resource_version, "7", "the read version is the write's precondition");
    assert_eq!(RunBinding::of(&updated, Readiness::InProgress).apply_strategy, Some(strategy.with_defaults()));
    assert!(objects::bound_binding(&stored, &RunAction::Stopped).is_none());
}

#[test]
fn su_7_a_failing_cluster_never_fails_the_run_but_makes_it_stuck() {
    let mut w = one_stage(json!({"maxConcurrency": 4}), 5);
    let plan = w.step();
    assert_eq!(plan.requeue_at, Some(T0 + 300));
    for b in &mut w.bindings {
        b.readiness = Readiness::Failed;
    }
    w.now = T0 + 299;
    w.step();
    assert_eq!(w.progressing(), ("True".into(), REASON_PROGRESSING.into()));
    w.now = T0 + 300;
    let plan = w.step();
    assert_eq!(w.progressing(), ("False".into(), REASON_STUCK.into()));
    assert_eq!(
        w.condition(PROGRESSING).unwrap().message,
        "The updateRun is stuck waiting for c1, c2, c3... cluster(s) in stage only to finish updating, please check placement status for potential errors"
    );
    assert!(plan.actions.iter().any(|a| matches!(a, RunAction::Stuck { .. })));
    assert!(w.condition(SUCCEEDED).is_none(), "not failed");
    assert!(World::writes(&plan).is_empty(), "failing clusters keep their slots");
    w.now = T0 + 400;
    assert!(w.step().actions.is_empty(), "stuck once, not again");
    w.ready("c2");
    assert_eq!(World::writes(&w.step()), ["bind:c5"], "c2's slot is refilled");
    assert_eq!(
        w.condition(PROGRESSING).unwrap().message,
        "The updateRun is stuck waiting for c1, c3, c4 cluster(s) in stage only to finish updating, please check placement status for potential errors"
    );
    for c in ["c1", "c3", "c4"] {
        w.ready(c);
    }
    w.step();
    assert_eq!(w.progressing(), ("True".into(), REASON_PROGRESSING.into()), "c5 updates, not yet stuck");
}

#[test]
fn su_8_after_stage_tasks_run_in_parallel() {
    let mut w =
        one_stage(json!({"afterStageTasks": [{"type": "TimedWait", "waitTime": "10m"}, {"type": "Approval"}]}), 1);
    w.step();
    w.ready("c1");
    let plan = w.step();
    assert_eq!(World::writes(&plan), ["create:app-v1-after-only"], "both start when the last cluster succeeds");
    assert_eq!(plan.requeue_at, Some(T0 + 600));
    w.approve("app-v1-after-only");
    w.now = T0 + 300;
    assert_eq!(World::writes(&w.step()), ["accept:app-v1-after-only"]);
    assert!(!w.succeeded(), "the wait is not over");
    w.now = T0 + 600;
    w.step();
    assert!(w.succeeded());

    let mut w =
        one_stage(json!({"afterStageTasks": [{"type": "TimedWait", "waitTime": "10m"}, {"type": "Approval"}]}), 1);
    w.step();
    w.ready("c1");
    w.step();
    w.now = T0 + 3600;
    w.step();
    let task = &w.stage("only").after_stage_task_status[0];
    assert!(task.conditions.iter().any(|c| c.type_ == WAIT_TIME_ELAPSED && c.is_true()));
    assert!(!w.succeeded(), "the approval is missing");
    w.approve("app-v1-after-only");
    w.step();
    assert!(w.succeeded());
}

#[test]
fn su_8_a_new_leader_ends_a_timed_wait_at_the_same_instant() {
    let mut w = one_stage(json!({"afterStageTasks": [{"type": "TimedWait", "waitTime": "1h30m"}]}), 1);
    w.step();
    w.ready("c1");
    w.now = T0 + 42;
    w.step();
    // A new leader reads the stored object (through JSON) much later.
    let stored: UpdateRunStatus = serde_json::from_value(serde_json::to_value(&w.status).unwrap()).unwrap();
    w.status = stored;
    w.now = T0 + 42 + 5399;
    let plan = w.step();
    assert_eq!(plan.requeue_at, Some(T0 + 42 + 5400));
    assert!(!w.succeeded());
    let message = &w.stage("only").after_stage_task_status[0].conditions[0].message;
    assert_eq!(message, "The wait ends at 2024-05-01T11:30:42Z");
    w.now = T0 + 42 + 5400;
    w.step();
    assert!(w.succeeded());
}

#[test]
fn su_9_approval_requests_are_named_labelled_owned_and_accepted() {
    let mut w = one_stage(json!({"beforeStageTasks": [{"type": "Approval"}]}), 1);
    let plan = w.step();
    let create = plan.actions.iter().find(|a| matches!(a, RunAction::CreateApprovalRequest { .. })).unwrap();
    let run: fleet_api::Object = serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterStagedUpdateRun",
        "metadata": {"name": "app-v1", "uid": "u-1"}, "spec": {}
    }))
    .unwrap();
    let request = objects::approval_request(&run, create).unwrap();
    assert_eq!(request.kind, "ClusterApprovalRequest");
    assert_eq!(request.metadata.name, "app-v1-before-only");
    assert_eq!(request.metadata.labels["kubernetes-fleet.io/targetupdaterun"], "app-v1");
    assert_eq!(request.metadata.labels["kubernetes-fleet.io/isLatestUpdateRunApproval"], "true");
    assert_eq!(request.metadata.labels["kubernetes-fleet.io/targetUpdatingStage"], "only");
    assert_eq!(request.metadata.labels["kubernetes-fleet.io/taskType"], "beforeStage");
    assert_eq!(request.metadata.owner_references[0].uid, "u-1", "deleting the run deletes its requests");
    assert_eq!(request.spec().unwrap(), &json!({"parentStageRollout": "app-v1", "targetStage": "only"}));

    // A deleted request is created again; an approved one is accepted once.
    w.approvals.clear();
    assert_eq!(World::writes(&w.step()), ["create:app-v1-before-only"]);
    w.approve("app-v1-before-only");
    assert_eq!(World::writes(&w.step()), ["accept:app-v1-before-only", "bind:c1"]);
    let task = &w.stage("only").before_stage_task_status[0];
    assert!(task.conditions.iter().any(|c| c.type_ == APPROVAL_REQUEST_APPROVED && c.is_true()));
    // Revoking after acceptance changes nothing.
    w.approvals[0].approved = false;
    assert!(World::writes(&w.step()).is_empty());
    assert!(w.condition(SUCCEEDED).is_none(), "not abandoned");

    let mut stored = request.clone();
    stored.metadata.generation = 2;
    let accepted = objects::accepted_request(&stored, "2024-05-01T10:00:00Z").unwrap();
    let status = fleet_api::staged::approval_status_of(&accepted);
    assert!(status.is_accepted(2));
    assert!(objects::accepted_request(&accepted, "later").is_none(), "already accepted");
}

#[test]
fn su_9_a_request_of_that_name_for_another_run_abandons() {
    let mut w = one_stage(json!({"beforeStageTasks": [{"type": "Approval"}]}), 1);
    w.step();
    w.approvals[0].spec.parent_stage_rollout = "other".into();
    w.approve("app-v1-before-only");
    let plan = w.step();
    assert!(World::writes(&plan).is_empty());
    let failed = w.condition(SUCCEEDED).unwrap();
    assert_eq!(failed.status, "False");
    assert!(
        failed.message.contains("the approval request `app-v1-before-only` gates update run `other`"),
        "{failed:?}"
    );
}

#[test]
fn su_10_deletion_stage_removes_unchosen_clusters_then_succeeds() {
    let mut w = one_stage(json!({}), 1);
    w.bindings.push(RunBinding { state: "Unscheduled".into(), ..binding("old-1") });
    w.bindings.push(RunBinding { state: "Unscheduled".into(), ..binding("old-2") });
    w.step();
    assert!(w.bindings.iter().any(|b| b.cluster == "old-1"), "not before the last stage");
    w.ready("c1");
    let plan = w.step();
    assert_eq!(World::writes(&plan), ["delete:old-1", "delete:old-2"]);
    assert!(w.succeeded());
    let deletion = w.status.deletion_stage_status.as_ref().unwrap();
    assert!(deletion.clusters.iter().all(|c| c.conditions.iter().any(|c| c.type_ == SUCCEEDED && c.is_true())));
    assert!(w.step().actions.is_empty());
}

#[test]
fn su_12_rollback_is_a_new_run_at_an_older_kept_index() {
    let mut w = one_stage(json!({"maxConcurrency": 2}), 2);
    w.placement = Some(placement(json!({"placementType": "PickAll"}), &[0, 1]));
    w.spec.resource_snapshot_index = Some("1".into());
    w.step();
    w.ready("c1");
    w.ready("c2");
    w.step();
    assert!(w.succeeded());
    assert_eq!(w.bound_to(1), ["c1", "c2"]);
    // Roll back: a new run naming index 0.
    w.run_name = "app-v0".into();
    w.spec.resource_snapshot_index = Some("0".into());
    w.status = UpdateRunStatus::default();
    for b in &mut w.bindings {
        b.readiness = Readiness::InProgress;
    }
    assert_eq!(World::writes(&w.step()), ["bind:c1", "bind:c2"]);
    assert_eq!(w.bound_to(0), ["c1", "c2"]);
}

#[test]
fn su_2_stop_lets_updating_clusters_finish_and_run_resumes() {
    let mut w = one_stage(json!({"maxConcurrency": 2}), 4);
    w.step();
    w.spec.state = Some("Stop".into());
    w.generation = 2;
    let plan = w.step();
    assert!(World::writes(&plan).is_empty());
    assert_eq!(w.progressing(), ("Unknown".into(), REASON_STOPPING.into()));
    w.ready("c1");
    assert!(World::writes(&w.step()).is_empty(), "no new cluster while stopping");
    w.ready("c2");
    let plan = w.step();
    assert!(plan.actions.contains(&RunAction::Stopped));
    assert_eq!(w.progressing(), ("False".into(), REASON_STOPPED.into()));
    assert_eq!(w.condition(PROGRESSING).unwrap().message, "The update run has been stopped");
    assert_eq!(w.condition(PROGRESSING).unwrap().observed_generation, Some(2));
    assert!(is(w.stage("only"), PROGRESSING, "False"));
    assert!(w.step().actions.is_empty());
    w.spec.state = Some("Run".into());
    w.generation = 3;
    assert_eq!(World::writes(&w.step()), ["bind:c3", "bind:c4"]);
    assert_eq!(w.progressing(), ("True".into(), REASON_PROGRESSING.into()));
    assert!(is(w.stage("only"), PROGRESSING, "True"));
}

#[test]
fn su_2_stop_creates_no_approval_and_starts_no_wait() {
    let mut w = one_stage(json!({"afterStageTasks": [{"type": "Approval"}]}), 1);
    w.step();
    w.spec.state = Some("Stop".into());
    w.ready("c1");
    let plan = w.step();
    assert!(World::writes(&plan).is_empty());
    assert_eq!(w.progressing(), ("False".into(), REASON_STOPPED.into()));
    w.spec.state = Some("Run".into());
    assert_eq!(World::writes(&w.step()), ["create:app-v1-after-only"]);
    assert_eq!(w.progressing(), ("False".into(), REASON_WAITING.into()));
}

#[test]
fn a_cluster_is_started_once_and_keeps_its_start_time() {
    let mut w = one_stage(json!({}), 1);
    w.step();
    let started = |w: &World| w.stage("only").clusters[0].conditions.iter().find(|c| c.type_ == STARTED).cloned();
    let first = started(&w).unwrap();
    w.now = T0 + 100;
    assert!(w.step().actions.is_empty());
    assert_eq!(started(&w), Some(first));
    assert_eq!(w.log.iter().filter(|a| matches!(a, RunAction::Bind { .. })).count(), 1);
}
