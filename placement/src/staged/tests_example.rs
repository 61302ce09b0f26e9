//! docs/spec/staged-updates.md's worked example, step by step.

use fleet_api::staged::{
    APPROVAL_REQUEST_CREATED, INITIALIZED, REASON_PROGRESSING, REASON_RUN_SUCCEEDED, REASON_STAGE_SUCCEEDED,
    REASON_WAITING, SUCCEEDED,
};

use super::testkit::*;

fn names(stage: &fleet_api::staged::StageUpdatingStatus) -> Vec<&str> {
    stage.clusters.iter().map(|c| c.cluster_name.as_str()).collect()
}

#[test]
fn worked_example_staged_rollout() {
    let mut w = World::example();

    // 1. Stages: staging [stg-1]; canary [can-2, can-1]; production
    //    [prod-a, prod-b, prod-c]; deletion stage empty. stg-1 gets index 0.
    let plan = w.step();
    assert!(w.condition(INITIALIZED).unwrap().is_true());
    assert_eq!(names(w.stage("staging")), ["stg-1"]);
    assert_eq!(names(w.stage("canary")), ["can-2", "can-1"]);
    assert_eq!(names(w.stage("production")), ["prod-a", "prod-b", "prod-c"]);
    assert!(w.status.deletion_stage_status.as_ref().unwrap().clusters.is_empty());
    assert_eq!(w.status.resource_snapshot_index_used, "0");
    assert_eq!(w.status.policy_snapshot_index_used, "0");
    assert_eq!(w.status.policy_observed_cluster_count, Some(6));
    assert_eq!(World::writes(&plan), ["bind:stg-1"]);
    assert_eq!(w.bound_to(0), ["stg-1"]);

    // 2. Once stg-1 is Available, UpdateRunWaiting; 1h later staging succeeds.
    assert!(World::writes(&w.step()).is_empty(), "nothing while stg-1 updates");
    w.ready("stg-1");
    let plan = w.step();
    assert_eq!(w.progressing(), ("False".into(), REASON_WAITING.into()));
    assert_eq!(
        w.condition("Progressing").unwrap().message,
        "The updateRun is waiting for after-stage tasks in stage staging to complete"
    );
    assert_eq!(plan.requeue_at, Some(T0 + 3600));
    w.now = T0 + 3599;
    assert!(World::writes(&w.step()).is_empty());
    assert_eq!(w.bound_to(0), ["stg-1"]);

    // 3. can-2, then can-1; then ClusterApprovalRequest app-v1-after-canary.
    w.now = T0 + 3600;
    let plan = w.step();
    assert!(w.stage("staging").conditions.iter().any(|c| c.type_ == SUCCEEDED && c.is_true()));
    assert_eq!(World::writes(&plan), ["bind:can-2"]);
    w.ready("can-2");
    assert_eq!(World::writes(&w.step()), ["bind:can-1"]);
    w.ready("can-1");
    assert_eq!(World::writes(&w.step()), ["create:app-v1-after-canary"]);
    assert_eq!(w.bound_to(0), ["can-1", "can-2", "stg-1"]);

    // 4. fleetctl approve app-v1-after-canary: canary succeeds;
    //    app-v1-before-production is created; production waits.
    w.approve("app-v1-after-canary");
    let plan = w.step();
    assert_eq!(World::writes(&plan), ["accept:app-v1-after-canary", "create:app-v1-before-production"]);
    assert_eq!(
        w.condition("Progressing").unwrap().message,
        "The updateRun is waiting for before-stage tasks in stage production to complete"
    );
    let task = &w.stage("production").before_stage_task_status[0];
    assert!(task.conditions.iter().any(|c| c.type_ == APPROVAL_REQUEST_CREATED && c.is_true()));

    // 5. After approval prod-a and prod-b update together; prod-c starts
    //    when one is Available. All Available: Succeeded True.
    w.approve("app-v1-before-production");
    assert_eq!(World::writes(&w.step()), ["accept:app-v1-before-production", "bind:prod-a", "bind:prod-b"]);
    assert_eq!(w.progressing(), ("True".into(), REASON_PROGRESSING.into()));
    w.ready("prod-b");
    assert_eq!(World::writes(&w.step()), ["bind:prod-c"]);
    w.ready("prod-a");
    w.ready("prod-c");
    w.step();
    assert!(w.succeeded());
    assert_eq!(w.condition(SUCCEEDED).unwrap().message, "All stages are completed successfully");
    assert_eq!(w.progressing(), ("False".into(), REASON_RUN_SUCCEEDED.into()));
    assert_eq!(w.bound_to(0).len(), 6);
    assert!(w.step().actions.is_empty(), "a finished run does nothing");
    let deletion = w.status.deletion_stage_status.as_ref().unwrap();
    assert!(deletion
        .conditions
        .iter()
        .any(|c| c.type_ == SUCCEEDED && c.is_true() && c.reason == REASON_STAGE_SUCCEEDED));
}

#[test]
fn worked_example_nothing_reaches_a_cluster_before_step_2() {
    let mut w = World::example();
    w.spec.state = Some("Initialize".into());
    w.step();
    assert!(w.bound_to(0).is_empty());
    assert!(w.condition(INITIALIZED).unwrap().is_true());
}

#[test]
fn worked_example_with_an_unplaced_cluster_fails_initialization() {
    let mut w = World::example();
    w.clusters.push(cluster("dev-1", &[("environment", "dev")]));
    w.bindings.push(binding("dev-1"));
    let plan = w.step();
    let initialized = w.condition(INITIALIZED).unwrap();
    assert_eq!(initialized.status, "False");
    assert_eq!(initialized.reason, "UpdateRunInitializedFailed");
    assert_eq!(
        initialized.message,
        "cannot continue the updateRun: failed to validate the updateRun: some clusters are not placed in any stage, total 1, showing up to 10: dev-1"
    );
    assert!(World::writes(&plan).is_empty());
    assert!(w.step().actions.is_empty(), "initialization failure is terminal");
}
