//! Abandonment (SU-11): each cause ends the run with Succeeded False.

use serde_json::json;

use fleet_api::staged::{PROGRESSING, REASON_CLUSTER_FAILED, REASON_RUN_FAILED, REASON_STAGE_FAILED, SUCCEEDED};

use super::testkit::*;
use super::*;

/// A run of the worked example, canary updating can-2.
fn running() -> World {
    let mut w = World::example();
    w.step();
    w.ready("stg-1");
    w.step();
    w.now = T0 + 3600;
    w.step();
    assert_eq!(w.bound_to(0), ["can-2", "stg-1"]);
    w
}

/// Asserts the run was abandoned for `cause` and does nothing more.
fn abandoned(w: &mut World, cause: &str) {
    let plan = w.step();
    assert!(World::writes(&plan).is_empty(), "{:?}", plan.actions);
    let succeeded = w.condition(SUCCEEDED).expect("Succeeded set");
    assert_eq!((succeeded.status.as_str(), succeeded.reason.as_str()), ("False", REASON_RUN_FAILED));
    assert_eq!(succeeded.message, format!("cannot continue the updateRun: {cause}"));
    let progressing = w.condition(PROGRESSING).unwrap();
    assert_eq!(progressing.message, "The stages are aborted due to a non-recoverable error");
    assert!(plan.actions.contains(&RunAction::Abandoned { message: succeeded.message.clone() }));
    assert!(w.step().actions.is_empty(), "terminal");
}

#[test]
fn su_11_placement_gone_or_no_longer_external() {
    let mut w = running();
    w.placement = None;
    abandoned(&mut w, "parent placement `app` not found");
    let mut w = running();
    w.placement.as_mut().unwrap().spec.strategy.as_mut().unwrap().type_ = Some("RollingUpdate".into());
    abandoned(&mut w, "parent placement does not have an external rollout strategy, current strategy: RollingUpdate");
}

#[test]
fn su_11_new_policy_snapshot() {
    let mut w = running();
    let snapshot = w.placement.as_mut().unwrap().latest_policy_snapshot.as_mut().unwrap();
    snapshot.index = Some(1);
    snapshot.name = "app-1".into();
    abandoned(&mut w, "the policy snapshot index used in the updateRun is outdated, latest: 1, recorded: 0");
    let stage = w.stage("canary");
    assert!(stage
        .conditions
        .iter()
        .any(|c| c.type_ == SUCCEEDED && c.status == "False" && c.reason == REASON_STAGE_FAILED));
    assert!(w.stage("production").conditions.is_empty(), "stages not entered are left alone");
}

#[test]
fn su_11_pick_n_count_changed() {
    let mut w = World::example();
    w.placement = Some(placement(json!({"placementType": "PickN", "numberOfClusters": 6}), &[0]));
    w.step();
    w.placement.as_mut().unwrap().latest_policy_snapshot.as_mut().unwrap().number_of_clusters = Some(7);
    abandoned(&mut w, "the cluster count initialized in the updateRun is outdated, latest: 7, recorded: 6");
}

#[test]
fn su_11_a_cluster_joined_a_pick_all_placement() {
    let mut w = running();
    w.clusters.push(cluster("prod-d", &[("environment", "production"), ("order", "4")]));
    w.bindings.push(binding("prod-d"));
    abandoned(
        &mut w,
        "the clusters of stage `production` changed since the updateRun was initialized: recorded [prod-a, prod-b, prod-c], now [prod-a, prod-b, prod-c, prod-d]",
    );
}

#[test]
fn su_11_a_cluster_left_or_moved() {
    let mut w = running();
    w.bindings.iter_mut().find(|b| b.cluster == "prod-c").unwrap().state = "Unscheduled".into();
    abandoned(
        &mut w,
        "the clusters of stage `production` changed since the updateRun was initialized: recorded [prod-a, prod-b, prod-c], now [prod-a, prod-b]",
    );
    let mut w = running();
    w.clusters.iter_mut().find(|c| c.name == "prod-c").unwrap().labels.insert("environment".into(), "dev".into());
    abandoned(
        &mut w,
        "the stages cannot be recomputed: some clusters are not placed in any stage, total 1, showing up to 10: prod-c",
    );
}

#[test]
fn su_11_a_changed_sorting_label_does_not_abandon() {
    let mut w = running();
    w.clusters.iter_mut().find(|c| c.name == "prod-c").unwrap().labels.insert("order".into(), "x".into());
    w.step();
    assert!(w.condition(SUCCEEDED).is_none());
}

#[test]
fn su_11_apply_strategy_changed() {
    let mut w = running();
    let strategy = fleet_api::work::ApplyStrategy { type_: Some("ServerSideApply".into()), ..Default::default() };
    w.placement.as_mut().unwrap().spec.strategy.as_mut().unwrap().apply_strategy = Some(strategy);
    abandoned(&mut w, "the apply strategy of the placement changed since the updateRun was initialized");
}

#[test]
fn su_11_binding_changed_by_another_run() {
    let mut w = running();
    w.bindings.iter_mut().find(|b| b.cluster == "can-2").unwrap().resource_snapshot = "app-1-snapshot".into();
    let cause = "the binding of the updating cluster `can-2` in the stage `canary` is not up-to-date with the desired status, please check the status of binding `app-can-2` and see if there is a concurrent updateRun referencing the same placement and updating the same cluster";
    abandoned(&mut w, cause);
    let can_2 = &w.stage("canary").clusters[0];
    let failed = can_2.conditions.iter().find(|c| c.type_ == SUCCEEDED).unwrap();
    assert_eq!(
        (failed.status.as_str(), failed.reason.as_str(), failed.message.as_str()),
        ("False", REASON_CLUSTER_FAILED, cause)
    );
}

#[test]
fn su_11_checked_while_only_initialized() {
    let mut w = World::example();
    w.spec.state = Some("Initialize".into());
    w.step();
    w.placement = None;
    abandoned(&mut w, "parent placement `app` not found");
}
