//! The rolling update rules of docs/spec/rollout.md, one named test each.

use fleet_api::placement::{IntOrString, PlacementPolicy, RollingUpdateConfig, RolloutStrategy};

use super::*;

pub(super) fn policy(kind: &str, n: Option<i64>, names: usize) -> PlacementPolicy {
    PlacementPolicy {
        placement_type: Some(kind.into()),
        number_of_clusters: n,
        cluster_names: (0..names).map(|i| format!("c{i}")).collect(),
        ..Default::default()
    }
}

pub(super) fn strategy(unavailable: IntOrString, surge: IntOrString, period: i64) -> RolloutStrategy {
    RolloutStrategy {
        type_: Some("RollingUpdate".into()),
        rolling_update: Some(RollingUpdateConfig {
            max_unavailable: Some(unavailable),
            max_surge: Some(surge),
            unavailable_period_seconds: Some(period),
        }),
        ..Default::default()
    }
}

fn pct(p: i64) -> IntOrString {
    IntOrString::Str(format!("{p}%"))
}

pub(super) fn b(cluster: &str, state: &str, snapshot: &str, readiness: Readiness) -> RolloutBinding {
    RolloutBinding {
        name: format!("web-{cluster}"),
        cluster: cluster.into(),
        state: state.into(),
        resource_snapshot: snapshot.into(),
        readiness,
        overrides_current: true,
    }
}

fn plan(policy: &PlacementPolicy, strategy: &RolloutStrategy, bindings: &[RolloutBinding], now: i64) -> RolloutPlan {
    plan_rollout(&RolloutInput {
        policy,
        number_of_clusters: None,
        strategy,
        latest_resource_snapshot: "web-1-snapshot",
        bindings,
        now,
    })
}

fn updated(plan: &RolloutPlan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            RolloutAction::Update { binding, .. } => Some(binding.clone()),
            _ => None,
        })
        .collect()
}

fn bound(plan: &RolloutPlan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            RolloutAction::Bind { binding, .. } => Some(binding.clone()),
            _ => None,
        })
        .collect()
}

fn deleted(plan: &RolloutPlan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            RolloutAction::Delete { binding } => Some(binding.clone()),
            _ => None,
        })
        .collect()
}

/// Eight ready clusters on the old snapshot `web-0-snapshot`.
fn eight_on_old() -> Vec<RolloutBinding> {
    (0..8).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-0-snapshot", Readiness::Ready)).collect()
}

/// The spec's worked example under one policy: 25 % of 8 = 2 at a time; the
/// third starts only once one of the first two is ready again.
fn worked_example(policy: &PlacementPolicy) {
    let s = strategy(pct(25), pct(25), 60);
    let mut bindings = eight_on_old();
    let first = plan(policy, &s, &bindings, 0);
    assert_eq!(updated(&first), vec!["web-c0", "web-c1"]);
    assert!(bound(&first).is_empty() && deleted(&first).is_empty());
    for binding in &mut bindings[0..2] {
        binding.resource_snapshot = "web-1-snapshot".into();
        binding.readiness = Readiness::InProgress;
    }
    assert!(plan(policy, &s, &bindings, 1).actions.is_empty(), "waits while two are unavailable");
    bindings[1].readiness = Readiness::Ready;
    assert_eq!(updated(&plan(policy, &s, &bindings, 2)), vec!["web-c2"]);
}

#[test]
fn worked_example_pick_n_8_at_25_percent_updates_two_at_a_time() {
    worked_example(&policy("PickN", Some(8), 0));
}

#[test]
fn worked_example_pick_all_with_8_chosen() {
    worked_example(&policy("PickAll", None, 0));
}

#[test]
fn worked_example_pick_fixed_with_8_names() {
    worked_example(&policy("PickFixed", None, 8));
}

#[test]
fn target_number_per_policy_type() {
    assert_eq!(target_number(&policy("PickN", Some(3), 0), None, 7), 3);
    assert_eq!(target_number(&policy("PickN", Some(3), 0), Some(5), 7), 5, "the snapshot annotation wins");
    assert_eq!(target_number(&policy("PickN", Some(-1), 0), None, 7), 0);
    assert_eq!(target_number(&policy("PickFixed", None, 4), None, 7), 4);
    assert_eq!(target_number(&policy("PickAll", None, 0), None, 7), 7);
    assert_eq!(target_number(&PlacementPolicy::default(), None, 2), 2, "PickAll is the default");
}

#[test]
fn limits_scale_integers_and_percentages_rounding_up() {
    let config = |u: IntOrString, s: IntOrString| RollingUpdateConfig {
        max_unavailable: Some(u),
        max_surge: Some(s),
        unavailable_period_seconds: None,
    };
    let l = rollout_limits(&config(pct(25), pct(25)), 8, 8);
    assert_eq!((l.max_unavailable, l.max_surge, l.unavailable_period_seconds), (2, 2, 60));
    let l = rollout_limits(&config(pct(25), pct(10)), 10, 10);
    assert_eq!((l.max_unavailable, l.max_surge), (3, 1), "2.5 → 3, 1.0 → 1");
    let l = rollout_limits(&config(IntOrString::Int(3), IntOrString::Str("2".into())), 10, 10);
    assert_eq!((l.max_unavailable, l.max_surge), (3, 2));
    let l = rollout_limits(&config(IntOrString::Int(0), pct(0)), 4, 4);
    assert_eq!((l.max_unavailable, l.max_surge), (1, 0), "maxUnavailable is at least 1 when N > 0");
    let l = rollout_limits(&config(pct(25), pct(25)), 0, 0);
    assert_eq!(l.max_unavailable, 0);
    let l = rollout_limits(&RollingUpdateConfig::default(), 8, 8);
    assert_eq!((l.max_unavailable, l.max_surge), (2, 2), "defaults are 25 %");
    assert_eq!(l.min_available, 6);
    let l = rollout_limits(&RollingUpdateConfig::default(), 8, 5);
    assert_eq!((l.max_unavailable, l.min_available), (2, 3), "percentages on N, floor on what is chosen");
}

#[test]
fn unfulfilled_pick_n_does_not_keep_unscheduled_bindings_forever() {
    // PickN 4 but only two clusters are chosen; two ready Unscheduled remain.
    let bindings = vec![
        b("c0", STATE_BOUND, "web-1-snapshot", Readiness::Ready),
        b("c1", STATE_BOUND, "web-1-snapshot", Readiness::Ready),
        b("u0", STATE_UNSCHEDULED, "web-1-snapshot", Readiness::Ready),
        b("u1", STATE_UNSCHEDULED, "web-1-snapshot", Readiness::Ready),
    ];
    let s = strategy(IntOrString::Int(1), IntOrString::Int(1), 60);
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert_eq!(deleted(&p), vec!["web-u0", "web-u1"]);
}

#[test]
fn integer_max_unavailable_updates_that_many() {
    let s = strategy(IntOrString::Int(3), IntOrString::Int(1), 60);
    let p = plan(&policy("PickN", Some(8), 0), &s, &eight_on_old(), 0);
    assert_eq!(updated(&p), vec!["web-c0", "web-c1", "web-c2"]);
}

#[test]
fn percentage_max_unavailable_rounds_up() {
    let s = strategy(pct(30), pct(25), 60);
    let p = plan(&policy("PickN", Some(8), 0), &s, &eight_on_old(), 0);
    assert_eq!(updated(&p).len(), 3, "30 % of 8 = 2.4 → 3");
}

#[test]
fn first_rollout_binds_every_scheduled_binding() {
    let bindings: Vec<_> = (0..8).map(|i| b(&format!("c{i}"), STATE_SCHEDULED, "", Readiness::InProgress)).collect();
    let s = strategy(pct(25), pct(25), 60);
    let p = plan(&policy("PickN", Some(8), 0), &s, &bindings, 0);
    assert_eq!(bound(&p).len(), 8);
    assert!(p
        .actions
        .iter()
        .all(|a| matches!(a, RolloutAction::Bind { resource_snapshot, .. } if resource_snapshot == "web-1-snapshot")));
}

#[test]
fn max_surge_bounds_new_clusters_above_n() {
    // N = 4, surge 1: 4 ready + 2 new Scheduled (scheduler over-picked) → one bound.
    let mut bindings: Vec<_> =
        (0..4).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-1-snapshot", Readiness::Ready)).collect();
    bindings.push(b("c4", STATE_SCHEDULED, "", Readiness::InProgress));
    bindings.push(b("c5", STATE_SCHEDULED, "", Readiness::InProgress));
    let s = strategy(IntOrString::Int(1), IntOrString::Int(1), 60);
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert_eq!(bound(&p), vec!["web-c4"]);
    // An in-progress binding uses the surge too.
    bindings[0].readiness = Readiness::InProgress;
    bindings[1].readiness = Readiness::InProgress;
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert_eq!(bound(&p), vec!["web-c4"], "ready 2 + in progress 2 = 4 < 5");
    bindings.push(b("c6", STATE_BOUND, "web-1-snapshot", Readiness::InProgress));
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert!(bound(&p).is_empty(), "ready 2 + in progress 3 = N + surge");
}

#[test]
fn scale_out_binds_only_the_new_cluster() {
    let mut bindings: Vec<_> =
        (0..3).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-1-snapshot", Readiness::Ready)).collect();
    bindings.push(b("c3", STATE_SCHEDULED, "", Readiness::InProgress));
    let s = strategy(pct(25), pct(25), 60);
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert_eq!(
        p.actions,
        vec![RolloutAction::Bind { binding: "web-c3".into(), resource_snapshot: "web-1-snapshot".into() }]
    );
}

#[test]
fn failed_stale_bindings_are_always_updated() {
    // Everything is unavailable (no budget), yet failed stale ones move on.
    let mut bindings: Vec<_> =
        (0..4).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-0-snapshot", Readiness::InProgress)).collect();
    bindings[2].readiness = Readiness::Failed;
    bindings.push(b("c9", STATE_BOUND, "web-1-snapshot", Readiness::Failed));
    let s = strategy(IntOrString::Int(1), IntOrString::Int(1), 60);
    let p = plan(&policy("PickAll", None, 0), &s, &bindings, 0);
    assert_eq!(
        p.actions[0],
        RolloutAction::Update { binding: "web-c2".into(), resource_snapshot: "web-1-snapshot".into() }
    );
    assert!(!updated(&p).contains(&"web-c9".to_string()), "a failed binding on the latest snapshot stays");
}

#[test]
fn stale_bindings_spend_the_budget_unless_they_failed_or_are_unavailable() {
    let mut bindings = eight_on_old();
    bindings[5].readiness = Readiness::InProgress;
    let s = strategy(pct(25), pct(25), 60);
    let p = plan(&policy("PickN", Some(8), 0), &s, &bindings, 0);
    // ready 7 → maxToRemove 1, spent on the first stale one by cluster: c0.
    // c5 has no verdict yet: it waits, as in KubeFleet.
    assert_eq!(updated(&p), vec!["web-c0"]);
    // Unavailable (Available False) counts as failed: updated at once.
    bindings[5].readiness = Readiness::Unavailable;
    let p = plan(&policy("PickN", Some(8), 0), &s, &bindings, 0);
    assert_eq!(updated(&p), vec!["web-c5", "web-c0"]);
}

#[test]
fn a_binding_whose_works_have_no_verdict_yet_moves_without_the_budget() {
    // Three clusters, maxUnavailable 1: c0 unavailable on the old snapshot,
    // c1 and c2 with Works whose Available speaks for no generation (the
    // agent applying them, or a verdict written over). KubeFleet counts
    // them failed (its work generator writes Available False), so all
    // three move to the latest snapshot at once; nothing ready is taken down.
    let bindings = vec![
        b("c0", STATE_BOUND, "web-0-snapshot", Readiness::Unavailable),
        b("c1", STATE_BOUND, "web-0-snapshot", Readiness::Applying),
        b("c2", STATE_BOUND, "web-0-snapshot", Readiness::Applying),
    ];
    let s = strategy(IntOrString::Int(1), pct(25), 60);
    let p = plan(&policy("PickAll", None, 0), &s, &bindings, 0);
    assert_eq!(updated(&p), vec!["web-c0", "web-c1", "web-c2"]);
    // Whose Works are not yet those of its snapshot is still on its way: it spends the budget.
    let mut waiting = bindings.clone();
    waiting[1].readiness = Readiness::InProgress;
    waiting[2].readiness = Readiness::Ready;
    let p = plan(&policy("PickAll", None, 0), &s, &waiting, 0);
    assert_eq!(updated(&p), vec!["web-c0"]);
}

#[test]
fn an_applying_binding_does_not_hold_back_new_clusters() {
    // N = 3 + surge 1: two ready, one applying, two new: the applying one
    // does not count against the surge, as KubeFleet counts it failed.
    let mut bindings: Vec<_> =
        (0..2).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-1-snapshot", Readiness::Ready)).collect();
    bindings.push(b("c2", STATE_BOUND, "web-1-snapshot", Readiness::Applying));
    bindings.push(b("c3", STATE_SCHEDULED, "", Readiness::InProgress));
    bindings.push(b("c4", STATE_SCHEDULED, "", Readiness::InProgress));
    let s = strategy(IntOrString::Int(1), IntOrString::Int(1), 60);
    let p = plan(&policy("PickN", Some(3), 0), &s, &bindings, 0);
    assert_eq!(bound(&p), vec!["web-c3", "web-c4"]);
    bindings[2].readiness = Readiness::InProgress;
    let p = plan(&policy("PickN", Some(3), 0), &s, &bindings, 0);
    assert_eq!(bound(&p), vec!["web-c3"]);
}

#[test]
fn unscheduled_deletion_is_bounded_by_max_to_remove_and_comes_first() {
    // N = 4 (PickN), 4 ready Bound stale + 3 ready Unscheduled: ready 7, min available 3 → remove 4.
    let mut bindings: Vec<_> =
        (0..4).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-0-snapshot", Readiness::Ready)).collect();
    for c in ["u1", "u2", "u3"] {
        bindings.push(b(c, STATE_UNSCHEDULED, "web-0-snapshot", Readiness::Ready));
    }
    let s = strategy(IntOrString::Int(1), IntOrString::Int(1), 60);
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert_eq!(deleted(&p), vec!["web-u1", "web-u2", "web-u3"]);
    assert_eq!(updated(&p), vec!["web-c0"], "what is left of the budget goes to updates");
    let deletes_first = p.actions.iter().position(|a| matches!(a, RolloutAction::Update { .. }));
    assert_eq!(deletes_first, Some(3));
    // Three Bound ready + one Unscheduled ready: only 1 to remove, the deletion.
    let mut few: Vec<_> = bindings[1..5].to_vec();
    few.push(b("c9", STATE_SCHEDULED, "", Readiness::InProgress));
    let p = plan(&policy("PickN", Some(4), 0), &s, &few, 0);
    assert_eq!((deleted(&p), updated(&p)), (vec!["web-u1".to_string()], vec![]));
}

#[test]
fn unscheduled_bindings_are_deleted_within_the_budget_unless_they_failed() {
    let mut bindings: Vec<_> =
        (0..4).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-1-snapshot", Readiness::Ready)).collect();
    bindings.push(b("u1", STATE_UNSCHEDULED, "web-0-snapshot", Readiness::InProgress));
    bindings.push(b("u2", STATE_UNSCHEDULED, "web-0-snapshot", Readiness::InProgress));
    bindings.push(b("u3", STATE_UNSCHEDULED, "web-0-snapshot", Readiness::Unavailable));
    let s = strategy(IntOrString::Int(1), IntOrString::Int(1), 60);
    // ready 4, min available 3: one removal, the first by cluster; the
    // failed one goes at once, taking nothing down.
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert_eq!(deleted(&p), vec!["web-u3", "web-u1"]);
    // With nothing ready there is no budget: the others wait, as in KubeFleet.
    for binding in &mut bindings[..4] {
        binding.readiness = Readiness::InProgress;
    }
    let p = plan(&policy("PickN", Some(4), 0), &s, &bindings, 0);
    assert_eq!(deleted(&p), vec!["web-u3"]);
}

#[test]
fn not_trackable_counts_as_ready_after_the_unavailable_period() {
    let mut bindings = eight_on_old();
    bindings[7].readiness = Readiness::NotTrackable { available_since: 1000 };
    bindings[6].readiness = Readiness::NotTrackable { available_since: 1010 };
    let s = strategy(pct(25), pct(25), 60);
    let pick = policy("PickN", Some(8), 0);
    // At 1030 neither has waited 60 s: ready 6 → no budget, and nothing
    // moves (the untrackable two wait out their period first, as in
    // KubeFleet). Requeue at the first period end.
    let p = plan(&pick, &s, &bindings, 1030);
    assert!(p.actions.is_empty());
    assert_eq!(p.requeue_at, Some(1060));
    // Make them current: the ready count alone then decides.
    for binding in &mut bindings[6..8] {
        binding.resource_snapshot = "web-1-snapshot".into();
    }
    let p = plan(&pick, &s, &bindings, 1030);
    assert!(p.actions.is_empty());
    assert_eq!(p.requeue_at, Some(1060));
    let p = plan(&pick, &s, &bindings, 1060);
    assert_eq!(updated(&p), vec!["web-c0"], "c7 is ready now: ready 7 → one more may go");
    assert_eq!(p.requeue_at, Some(1070));
    let p = plan(&pick, &s, &bindings, 1070);
    assert_eq!(updated(&p), vec!["web-c0", "web-c1"]);
    assert_eq!(p.requeue_at, None);
}

#[test]
fn external_strategy_does_nothing() {
    let mut s = strategy(pct(25), pct(25), 60);
    s.type_ = Some("External".into());
    let mut bindings = eight_on_old();
    bindings.push(b("c9", STATE_SCHEDULED, "", Readiness::InProgress));
    let p = plan(&policy("PickAll", None, 0), &s, &bindings, 0);
    assert_eq!(p, RolloutPlan::default());
}

#[test]
fn actions_follow_cluster_order_whatever_the_input_order() {
    let mut bindings = eight_on_old();
    bindings.reverse();
    let s = strategy(pct(25), pct(25), 60);
    assert_eq!(updated(&plan(&policy("PickN", Some(8), 0), &s, &bindings, 0)), vec!["web-c0", "web-c1"]);
}

#[test]
fn replacing_a_cluster_binds_the_new_one_and_deletes_the_old() {
    // PickN 1: c0 unscheduled (ready), c1 scheduled.
    let bindings = vec![
        b("c0", STATE_UNSCHEDULED, "web-1-snapshot", Readiness::Ready),
        b("c1", STATE_SCHEDULED, "", Readiness::InProgress),
    ];
    let s = strategy(pct(25), pct(25), 60);
    let p = plan(&policy("PickN", Some(1), 0), &s, &bindings, 0);
    assert_eq!(deleted(&p), vec!["web-c0"]);
    assert_eq!(bound(&p), vec!["web-c1"]);
}

/// OV-8: a change of the overrides that apply (same resource snapshot) rolls
/// out like a resource change, within `maxUnavailable`.
#[test]
fn ov_8_an_override_change_rolls_out_within_max_unavailable() {
    let s = strategy(pct(25), pct(25), 60);
    let mut bindings: Vec<RolloutBinding> =
        (0..8).map(|i| b(&format!("c{i}"), STATE_BOUND, "web-1-snapshot", Readiness::Ready)).collect();
    assert!(plan(&policy("PickAll", None, 0), &s, &bindings, 0).actions.is_empty(), "nothing stale");
    for binding in &mut bindings {
        binding.overrides_current = false;
    }
    let first = plan(&policy("PickAll", None, 0), &s, &bindings, 0);
    assert_eq!(updated(&first), vec!["web-c0", "web-c1"]);
    for binding in &mut bindings[0..2] {
        binding.overrides_current = true;
        binding.readiness = Readiness::InProgress;
    }
    assert!(plan(&policy("PickAll", None, 0), &s, &bindings, 1).actions.is_empty(), "waits while two are down");
}
