use super::*;
use crate::rollout::{follow_run, progress, Outcome};
use fleet_api::time::system_time;
use serde_json::{json, Value};

fn c(type_: &str, status: &str, reason: &str, at: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": at})
}

/// The worked example's run after canary: staging done, canary waiting for
/// its after-stage approval, production not reached.
fn run_waiting_in_canary() -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterStagedUpdateRun",
        "metadata": {"name": "app-v1"},
        "spec": {"placementName": "app", "stagedRolloutStrategyName": "three-stage", "state": "Run"},
        "status": {
            "resourceSnapshotIndexUsed": "0",
            "stagedUpdateStrategySnapshot": {"stages": [
                {"name": "staging", "afterStageTasks": [{"type": "TimedWait", "waitTime": "1h"}]},
                {"name": "canary", "afterStageTasks": [{"type": "Approval"}]},
                {"name": "production", "beforeStageTasks": [{"type": "Approval"}]}]},
            "stagesStatus": [
                {"stageName": "staging",
                 "clusters": [{"clusterName": "stg-1", "conditions": [
                     c("Started", "True", "ClusterUpdatingStarted", "2024-05-01T10:00:00Z"),
                     c("Succeeded", "True", "ClusterUpdatingSucceeded", "2024-05-01T10:00:05Z")]}],
                 "afterStageTaskStatus": [{"type": "TimedWait", "conditions": [
                     c("WaitTimeElapsed", "True", "AfterStageTaskWaitTimeElapsed", "2024-05-01T11:00:05Z")]}],
                 "conditions": [c("Succeeded", "True", "StageUpdatingSucceeded", "2024-05-01T11:00:05Z")]},
                {"stageName": "canary",
                 "clusters": [
                     {"clusterName": "can-2", "conditions": [c("Succeeded", "True", "ClusterUpdatingSucceeded", "t")]},
                     {"clusterName": "can-1", "conditions": [c("Succeeded", "True", "ClusterUpdatingSucceeded", "t")]}],
                 "afterStageTaskStatus": [{"type": "Approval", "approvalRequestName": "app-v1-after-canary",
                     "conditions": [c("ApprovalRequestCreated", "True", "StageTaskApprovalRequestCreated", "t")]}],
                 "conditions": [c("Progressing", "False", "StageUpdatingWaiting", "t")]},
                {"stageName": "production",
                 "clusters": [{"clusterName": "prod-a"}, {"clusterName": "prod-b"}, {"clusterName": "prod-c"}],
                 "beforeStageTaskStatus": [{"type": "Approval", "approvalRequestName": "app-v1-before-production"}]}],
            "deletionStageStatus": {"stageName": "kubernetes-fleet.io/deleteStage", "clusters": []},
            "conditions": [c("Initialized", "True", "UpdateRunInitializedSuccessfully", "t"),
                           c("Progressing", "False", "UpdateRunWaiting", "t")]
        }
    }))
    .unwrap()
}

#[test]
fn a_run_waiting_for_an_approval_says_which_request_to_approve() {
    let now = system_time("2024-05-01T11:10:00Z").unwrap();
    let progress = run_progress(&run_waiting_in_canary(), now);
    let states: Vec<StageState> = progress.stages.iter().map(|s| s.state).collect();
    assert_eq!(states, [StageState::Succeeded, StageState::Waiting, StageState::Pending]);
    assert_eq!(progress.run, "clusterstagedupdaterun \"app-v1\"");
    assert_eq!(progress.resource_index, "0");
    assert_eq!(
        progress.outcome,
        RunOutcome::InProgress(
            "stage canary: waiting for approval request app-v1-after-canary (fleetctl approve app-v1-after-canary)"
                .into()
        )
    );
    let production = &progress.stages[2];
    assert_eq!(task_text(&production.before[0], None), "approval request app-v1-before-production not requested yet");
    assert_eq!(
        task_text(&production.before[0], Some("team")),
        "approval request app-v1-before-production not requested yet"
    );
    assert_eq!(approve_command("r-after-x", Some("team")), "fleetctl approve r-after-x -n team");
}

#[test]
fn a_running_timed_wait_shows_the_time_left() {
    let mut run = run_waiting_in_canary();
    let status = run.rest.get_mut("status").unwrap();
    status["stagesStatus"][0]["afterStageTaskStatus"][0]["conditions"] =
        json!([c("WaitTimeElapsed", "False", "AfterStageTaskWaitTimeNotElapsed", "2024-05-01T10:00:05Z")]);
    status["stagesStatus"][0]["conditions"] = json!([c("Progressing", "False", "StageUpdatingWaiting", "t")]);
    let now = system_time("2024-05-01T10:22:53Z").unwrap();
    let progress = run_progress(&run, now);
    assert_eq!(progress.stages[0].after[0].state, TaskState::Waiting { left: Some(Duration::from_secs(37 * 60 + 12)) });
    assert_eq!(progress.outcome, RunOutcome::InProgress("stage staging: timed wait of 1h: 37m left".into()));
}

#[test]
fn updating_clusters_finished_and_failed_runs() {
    let mut run = run_waiting_in_canary();
    let status = run.rest.get_mut("status").unwrap();
    status["stagesStatus"][1]["clusters"][1]["conditions"] =
        json!([c("Started", "True", "ClusterUpdatingStarted", "2024-05-01T11:00:10Z")]);
    status["stagesStatus"][1]["conditions"] = json!([c("Progressing", "True", "StageUpdatingStarted", "t")]);
    let progress = run_progress(&run, system_time("2024-05-01T11:00:20Z").unwrap());
    assert_eq!(progress.stages[1].state, StageState::Updating);
    assert_eq!(progress.stages[1].clusters[1].state, ClusterState::Updating { since: "2024-05-01T11:00:10Z".into() });
    assert_eq!(progress.outcome, RunOutcome::InProgress("stage canary: updating can-1 (1/2 clusters updated)".into()));

    let status = run.rest.get_mut("status").unwrap();
    status["conditions"] = json!([c("Initialized", "True", "UpdateRunInitializedSuccessfully", "t"),
        {"type": "Succeeded", "status": "False", "reason": "UpdateRunFailed", "message": "cannot continue the updateRun: x"}]);
    assert_eq!(
        run_progress(&run, SystemTime::now()).outcome,
        RunOutcome::Failed("cannot continue the updateRun: x".into())
    );
    let status = run.rest.get_mut("status").unwrap();
    status["conditions"] = json!([{"type": "Initialized", "status": "False", "reason": "UpdateRunInitializedFailed",
        "message": "cannot continue the updateRun: failed to validate the updateRun: some clusters are not placed in any stage, total 1, showing up to 10: dev-1"}]);
    let RunOutcome::Failed(why) = run_progress(&run, SystemTime::now()).outcome else { panic!("not failed") };
    assert!(why.ends_with("showing up to 10: dev-1"), "{why}");
}

fn available_everywhere(index: &str) -> Object {
    let all = |gen: i64| -> Value {
        crate::rollout::CONDITION_ORDER
            .iter()
            .map(|t| json!({"type": t, "status": "True", "observedGeneration": gen}))
            .collect()
    };
    let placement_conditions: Value = crate::rollout::CONDITION_ORDER
        .iter()
        .map(|t| json!({"type": format!("ClusterResourcePlacement{t}"), "status": "True", "observedGeneration": 1}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "app", "generation": 1},
        "spec": {"strategy": {"type": "External"}},
        "status": {"observedResourceIndex": index, "conditions": placement_conditions, "placementStatuses": [
            {"clusterName": "stg-1", "observedResourceIndex": index, "conditions": all(1)}]}
    }))
    .unwrap()
}

#[test]
fn rollout_status_of_an_external_placement_follows_its_run() {
    let placement = available_everywhere("0");
    let none = follow_run(progress(&placement), None);
    assert!(matches!(&none.outcome, Outcome::InProgress(why) if why.contains("create a staged update run")));

    let waiting = run_progress(&run_waiting_in_canary(), SystemTime::now());
    let followed = follow_run(progress(&placement), Some(&waiting));
    assert!(matches!(&followed.outcome, Outcome::InProgress(why) if why.contains("app-v1-after-canary")));
    assert!(followed
        .run
        .as_deref()
        .unwrap_or("")
        .starts_with("clusterstagedupdaterun \"app-v1\" (resource index 0): stage canary"));

    let mut done = waiting.clone();
    done.outcome = RunOutcome::Succeeded;
    assert_eq!(follow_run(progress(&placement), Some(&done)).outcome, Outcome::Complete);
    // Succeeded, but the placement still reports another index: not yet.
    let behind = available_everywhere("1");
    assert!(matches!(follow_run(progress(&behind), Some(&done)).outcome, Outcome::InProgress(_)));

    let mut failed = waiting;
    failed.outcome = RunOutcome::Failed("cannot continue the updateRun: gone".into());
    assert_eq!(
        follow_run(progress(&placement), Some(&failed)).outcome,
        Outcome::Failed("clusterstagedupdaterun \"app-v1\": cannot continue the updateRun: gone".into())
    );
}
