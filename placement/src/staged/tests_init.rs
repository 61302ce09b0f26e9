//! Initialization (SU-3), membership (SU-4) and order (SU-5).

use serde_json::json;

use fleet_api::staged::{NamespacedName, DELETE_STAGE_NAME, INITIALIZED, TASK_APPROVAL};

use super::testkit::*;
use super::*;

fn init_failure(w: &World) -> String {
    let plan = w.plan();
    let c = fleet_api::conditions::find(&plan.status.conditions, INITIALIZED).expect("initialization concluded");
    assert_eq!(c.status, "False", "{c:?}");
    assert!(World::writes(&plan).is_empty());
    c.message.strip_prefix("cannot continue the updateRun: failed to validate the updateRun: ").unwrap().to_string()
}

fn pending(w: &World) -> String {
    let plan = w.plan();
    assert_eq!(plan.status, w.status, "nothing written while pending");
    assert!(plan.actions.is_empty());
    plan.pending.expect("pending")
}

#[test]
fn su_3_fails_without_placement_or_external_strategy() {
    let mut w = World::example();
    w.placement = None;
    assert_eq!(init_failure(&w), "parent placement `app` not found");
    let mut w = World::example();
    if let Some(p) = &mut w.placement {
        p.spec.strategy = None;
    }
    assert_eq!(
        init_failure(&w),
        "parent placement does not have an external rollout strategy, current strategy: RollingUpdate"
    );
}

#[test]
fn su_3_fails_when_not_fully_scheduled_and_waits_for_the_scheduler() {
    let mut w = World::example();
    w.placement.as_mut().unwrap().latest_policy_snapshot.as_mut().unwrap().scheduled = Some(false);
    assert_eq!(init_failure(&w), "policy snapshot `app-0` not fully scheduled yet");
    w.placement.as_mut().unwrap().latest_policy_snapshot.as_mut().unwrap().scheduled = None;
    assert_eq!(pending(&w), "waiting for the scheduler to schedule policy snapshot `app-0`");
    w.placement.as_mut().unwrap().latest_policy_snapshot = None;
    assert_eq!(pending(&w), "no policy snapshot of placement `app` yet");
}

#[test]
fn su_3_fails_without_strategy_or_named_snapshot() {
    let mut w = World::example();
    w.strategy = None;
    assert_eq!(init_failure(&w), "referenced updateStrategy not found: `three-stage`");
    let mut w = World::example();
    w.spec.resource_snapshot_index = Some("5".into());
    assert_eq!(init_failure(&w), "no resource snapshot with index `5` is kept for placement `app`");
    w.placement.as_mut().unwrap().resource_indexes.clear();
    w.placement.as_mut().unwrap().latest_resource_index = None;
    assert_eq!(pending(&w), "no resource snapshot of placement `app` yet");
}

#[test]
fn su_3_freezes_what_the_run_needs() {
    let mut w = World::example();
    w.spec.resource_snapshot_index = None;
    w.placement = Some(placement(json!({"placementType": "PickAll"}), &[0, 1, 2]));
    w.placement.as_mut().unwrap().spec.strategy.as_mut().unwrap().apply_strategy =
        Some(fleet_api::work::ApplyStrategy { type_: Some("ServerSideApply".into()), ..Default::default() });
    let ro = NamespacedName { name: "ro-1".into(), namespace: "app".into() };
    w.overrides.insert(
        "can-1".into(),
        ClusterOverrides { cluster_resource: vec!["cro-1".into()], resource: vec![ro.clone()] },
    );
    w.bindings.push(RunBinding { state: "Unscheduled".into(), ..binding("gone-2") });
    w.bindings.push(RunBinding { state: "Unscheduled".into(), policy_snapshot: "app-old".into(), ..binding("gone-1") });
    let plan = w.step();
    assert_eq!(plan.actions[0], RunAction::Initialized);
    let s = &w.status;
    assert_eq!(s.resource_snapshot_index_used, "2", "the latest when the spec names none");
    assert_eq!(s.applied_strategy.as_ref().unwrap().type_.as_deref(), Some("ServerSideApply"));
    assert_eq!(s.staged_update_strategy_snapshot.as_ref(), w.strategy.as_ref());
    let can_1 = w.stage("canary").clusters.iter().find(|c| c.cluster_name == "can-1").unwrap();
    assert_eq!(can_1.cluster_resource_override_snapshots, ["cro-1"]);
    assert_eq!(can_1.resource_override_snapshots, [ro]);
    let deletion = s.deletion_stage_status.as_ref().unwrap();
    assert_eq!(deletion.stage_name, DELETE_STAGE_NAME);
    let deleted: Vec<&str> = deletion.clusters.iter().map(|c| c.cluster_name.as_str()).collect();
    assert_eq!(deleted, ["gone-1", "gone-2"], "sorted by name");
    let before = &w.stage("production").before_stage_task_status;
    assert_eq!(
        (before[0].type_.as_str(), before[0].approval_request_name.as_str()),
        (TASK_APPROVAL, "app-v1-before-production")
    );
    assert_eq!(w.stage("canary").after_stage_task_status[0].approval_request_name, "app-v1-after-canary");
    assert_eq!(w.stage("staging").after_stage_task_status[0].approval_request_name, "");
    // The strategy changing later does not matter.
    w.strategy = None;
    w.step();
    assert!(w.condition(INITIALIZED).unwrap().is_true());
}

#[test]
fn su_3_observed_cluster_count_per_policy_type() {
    let mut w = World::example();
    w.placement = Some(placement(json!({"placementType": "PickN", "numberOfClusters": 6}), &[0]));
    w.step();
    assert_eq!(w.status.policy_observed_cluster_count, Some(6));
    let mut w = World::example();
    w.placement = Some(placement(json!({"placementType": "PickN", "numberOfClusters": 7}), &[0]));
    assert_eq!(init_failure(&w), "the number of selected bindings 6 is not equal to the observed cluster count 7");
    let names = ["stg-1", "can-1", "can-2", "prod-a", "prod-b", "prod-c"];
    let mut w = World::example();
    w.placement = Some(placement(json!({"placementType": "PickFixed", "clusterNames": names}), &[0]));
    w.step();
    assert_eq!(w.status.policy_observed_cluster_count, Some(6));
}

#[test]
fn su_3_waits_while_a_binding_has_an_older_policy_snapshot() {
    let mut w = World::example();
    w.bindings[0].policy_snapshot = "app-old".into();
    assert_eq!(
        pending(&w),
        "binding `app-stg-1` still belongs to policy snapshot `app-old`, waiting for the scheduler"
    );
    let mut w = World::example();
    w.bindings.clear();
    assert_eq!(init_failure(&w), "no scheduled or to-be-deleted bindings found for the latest policy snapshot `app-0`");
}

#[test]
fn su_4_a_cluster_in_two_stages_fails() {
    let strategy = strategy_json(json!([
        {"name": "a", "labelSelector": {"matchLabels": {"env": "x"}}},
        {"name": "b", "labelSelector": {}}
    ]));
    let mut w = World::new(vec![cluster("c1", &[("env", "x")]), cluster("c2", &[])], strategy);
    assert_eq!(init_failure(&w), "cluster \"c1\" appears in more than one stages");
    w.clusters[0].labels.clear();
    w.step();
    assert_eq!(w.stage("a").clusters.len(), 0, "a stage may be empty");
    assert_eq!(w.stage("b").clusters.len(), 2, "an empty selector selects all");
}

#[test]
fn su_4_unplaced_clusters_are_listed_sorted_up_to_ten() {
    let strategy = strategy_json(json!([{"name": "a", "labelSelector": {"matchLabels": {"env": "x"}}}]));
    let clusters = (0..12).rev().map(|i| cluster(&format!("dev-{i:02}"), &[])).collect();
    let w = World::new(clusters, strategy);
    assert_eq!(
        init_failure(&w),
        "some clusters are not placed in any stage, total 12, showing up to 10: dev-00, dev-01, dev-02, dev-03, dev-04, dev-05, dev-06, dev-07, dev-08, dev-09"
    );
    let no_selector = strategy_json(json!([{"name": "a"}]));
    let w = World::new(vec![cluster("z", &[]), cluster("y", &[])], no_selector);
    assert_eq!(init_failure(&w), "some clusters are not placed in any stage, total 2, showing up to 10: y, z");
}

#[test]
fn su_5_order_by_sorting_label_then_name() {
    let strategy = strategy_json(json!([{"name": "a", "labelSelector": {}, "sortingLabelKey": "order"}]));
    let clusters = vec![
        cluster("d", &[("order", "10")]),
        cluster("c", &[("order", "2")]),
        cluster("b", &[("order", "2")]),
        cluster("a", &[("order", "3")]),
    ];
    let mut w = World::new(clusters, strategy);
    w.step();
    let order: Vec<&str> = w.stage("a").clusters.iter().map(|c| c.cluster_name.as_str()).collect();
    assert_eq!(order, ["b", "c", "a", "d"], "integers, not text: 10 after 3");
    let by_name = strategy_json(json!([{"name": "a", "labelSelector": {}}]));
    let mut w = World::new(vec![cluster("b", &[("order", "1")]), cluster("a", &[("order", "2")])], by_name);
    w.step();
    let order: Vec<&str> = w.stage("a").clusters.iter().map(|c| c.cluster_name.as_str()).collect();
    assert_eq!(order, ["a", "b"]);
}

#[test]
fn su_5_missing_or_non_integer_sorting_label_fails() {
    let mut w = World::example();
    w.clusters.push(cluster("can-3", &[("environment", "canary")]));
    w.bindings.push(binding("can-3"));
    assert_eq!(init_failure(&w), "the sorting label \"order:\" on cluster \"can-3\" is not valid");
    w.clusters.last_mut().unwrap().labels.insert("order".into(), "first".into());
    assert_eq!(init_failure(&w), "the sorting label \"order:first\" on cluster \"can-3\" is not valid");
}

#[test]
fn su_2_initializes_once_in_any_state() {
    for state in ["Initialize", "Stop", "Run"] {
        let mut w = World::example();
        w.spec.state = Some(state.into());
        let plan = w.step();
        assert_eq!(plan.actions[0], RunAction::Initialized, "{state}");
        assert_eq!(!w.bound_to(0).is_empty(), state == "Run", "{state}: only Run executes");
        let again = w.step();
        assert!(!again.actions.contains(&RunAction::Initialized), "{state}: once");
    }
}

#[test]
fn su_3_overrides_come_from_the_applicable_ones() {
    let applicable = crate::overrides::Applicable {
        cluster: vec!["cro-1".into()],
        resource: vec![crate::overrides::NamespacedName { namespace: "app".into(), name: "ro-1".into() }],
    };
    let frozen = ClusterOverrides::from(applicable);
    assert_eq!(frozen.cluster_resource, ["cro-1"]);
    assert_eq!(frozen.resource, [NamespacedName { name: "ro-1".into(), namespace: "app".into() }]);
}
