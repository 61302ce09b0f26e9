//! EV-1..EV-5 and docs/spec/eviction.md's worked example.

use serde_json::{json, Value};

use fleet_api::eviction::*;
use fleet_api::placement::PlacementPolicy;

use super::serial::{evaluate_serially, pending_in_order, Fleet};
use super::*;

fn eb(cluster: &str, available: bool) -> EvictionBinding {
    EvictionBinding {
        name: format!("web-{cluster}"),
        cluster: cluster.to_string(),
        deleting: false,
        ever_bound: true,
        failed: false,
        report_diff: false,
        available,
    }
}

fn pick_n(n: i64) -> EvictionPlacement {
    let policy: PlacementPolicy =
        serde_json::from_value(json!({"placementType": "PickN", "numberOfClusters": n})).unwrap();
    EvictionPlacement { name: "web".into(), deleting: false, policy, number_of_clusters: Some(n) }
}

fn pick_all() -> EvictionPlacement {
    EvictionPlacement {
        name: "web".into(),
        deleting: false,
        policy: PlacementPolicy::default(),
        number_of_clusters: None,
    }
}

fn budget(spec: Value) -> DisruptionBudgetSpec {
    serde_json::from_value(spec).unwrap()
}

fn spec(cluster: &str) -> EvictionSpec {
    EvictionSpec { placement_name: "web".into(), cluster_name: cluster.into() }
}

/// (Executed status, message) of evicting `cluster`.
fn run(
    placement: Option<&EvictionPlacement>,
    bindings: &[EvictionBinding],
    b: Option<&DisruptionBudgetSpec>,
    cluster: &str,
) -> EvictionOutcome {
    evaluate(&EvictionInput { spec: &spec(cluster), generation: 1, placement, bindings, budget: b, namespaced: false })
}

fn executed_message(outcome: &EvictionOutcome) -> (bool, String) {
    let c = outcome.executed.as_ref().expect("Executed set");
    (c.is_true(), c.message.clone())
}

fn eviction_object(name: &str, cluster: &str, created: &str) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacementEviction",
        "metadata": {"name": name, "generation": 1, "creationTimestamp": created},
        "spec": {"placementName": "web", "clusterName": cluster}
    }))
    .unwrap()
}

#[test]
fn worked_example_eviction_with_min_available() {
    let b = budget(json!({"minAvailable": 2}));
    let placement = pick_n(3);
    // 1. evict-b: T=3, A=3, allowed 1.
    let mut bindings = vec![eb("a", true), eb("b", true), eb("c", true)];
    let outcome = run(Some(&placement), &bindings, Some(&b), "b");
    assert_eq!(outcome.valid.message, "Eviction is valid");
    assert_eq!(outcome.valid.reason, "ClusterResourcePlacementEvictionValid");
    assert_eq!(
        executed_message(&outcome),
        (true, "Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3".into())
    );
    assert_eq!(outcome.executed.as_ref().unwrap().reason, "ClusterResourcePlacementEvictionExecuted");
    assert_eq!(outcome.delete_binding.as_deref(), Some("web-b"));
    // The scheduler picks d; it is not available yet.
    bindings.retain(|x| x.cluster != "b");
    bindings.push(eb("d", false));
    // 2. evict-c: T=3, A=2, allowed 0.
    let outcome = run(Some(&placement), &bindings, Some(&b), "c");
    assert_eq!(
        executed_message(&outcome),
        (false, "Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 2, totalPlacements: 3".into())
    );
    assert_eq!(outcome.executed.as_ref().unwrap().reason, "ClusterResourcePlacementEvictionNotExecuted");
    assert_eq!(outcome.delete_binding, None);
    // It stays so after d becomes available (EV-1): it is final.
    let mut stored = eviction_object("evict-c", "c", "2024-05-01T10:00:00Z");
    set_eviction_status(&mut stored, &outcome.status(&EvictionStatus::default(), "2024-05-01T10:00:01Z"));
    assert!(pending_in_order(std::slice::from_ref(&stored)).is_empty());
    // 3. Deleted and re-applied once d is Available: executed.
    bindings.iter_mut().for_each(|x| x.available = true);
    let outcome = run(Some(&placement), &bindings, Some(&b), "c");
    assert!(outcome.executed());
    assert_eq!(outcome.delete_binding.as_deref(), Some("web-c"));
}

#[test]
fn worked_example_budget_variants() {
    let bindings = vec![eb("a", true), eb("b", true), eb("c", true)];
    let placement = pick_n(3);
    for (spec, allowed) in [
        (json!({"maxUnavailable": 1}), true),
        (json!({"maxUnavailable": 0}), false),
        (json!({"minAvailable": 3}), false),
        (json!({"minAvailable": "100%"}), false),
        (json!({"minAvailable": "50%"}), true),
    ] {
        let b = budget(spec.clone());
        assert_eq!(run(Some(&placement), &bindings, Some(&b), "b").executed(), allowed, "{spec}");
    }
    let none = run(Some(&placement), &bindings, None, "b");
    assert_eq!(
        executed_message(&none),
        (true, "Eviction is allowed, no ClusterResourcePlacementDisruptionBudget specified".into())
    );
    let mut failed = bindings.clone();
    failed[1].failed = true;
    let b = budget(json!({"minAvailable": 3}));
    let outcome = run(Some(&placement), &failed, Some(&b), "b");
    assert_eq!(executed_message(&outcome), (true, "Eviction is allowed, placement has failed".into()));
    assert_eq!(outcome.delete_binding.as_deref(), Some("web-b"));
}

#[test]
fn worked_example_pick_fixed_and_pick_all() {
    let fixed: PlacementPolicy =
        serde_json::from_value(json!({"placementType": "PickFixed", "clusterNames": ["x"]})).unwrap();
    let placement =
        EvictionPlacement { name: "fixed".into(), deleting: false, policy: fixed, number_of_clusters: None };
    let outcome = run(Some(&placement), &[eb("x", true)], None, "x");
    assert_eq!(outcome.valid.status, "False");
    assert_eq!(
        outcome.valid.message,
        "Found ClusterResourcePlacement with PickFixed placement type targeted by eviction"
    );
    assert_eq!(outcome.executed, None, "an invalid eviction has only Valid");
    let b = budget(json!({"minAvailable": 2}));
    let all = run(Some(&pick_all()), &[eb("a", true), eb("b", true), eb("c", true)], Some(&b), "b");
    assert!(all.executed(), "PickAll, minAvailable 2, 3 available: allowed 1");
}

#[test]
fn ev_1_final_evictions_are_not_evaluated_again() {
    let mut executed = eviction_object("e1", "a", "2024-05-01T10:00:00Z");
    let outcome = run(Some(&pick_all()), &[eb("a", true)], None, "a");
    set_eviction_status(&mut executed, &outcome.status(&EvictionStatus::default(), "t"));
    let mut invalid = eviction_object("e2", "zz", "2024-05-01T10:00:00Z");
    set_eviction_status(&mut invalid, &run(None, &[], None, "zz").status(&EvictionStatus::default(), "t"));
    let fresh = eviction_object("e3", "a", "2024-05-01T10:00:00Z");
    let all = [executed, invalid, fresh];
    let pending: Vec<&str> = pending_in_order(&all).iter().map(|e| e.metadata.name.as_str()).collect();
    assert_eq!(pending, ["e3"]);
}

#[test]
fn ev_2_serial_oldest_first_then_name_never_spending_the_budget_twice() {
    let evictions = [
        eviction_object("evict-z", "c", "2024-05-01T10:00:00Z"),
        eviction_object("evict-b", "b", "2024-05-01T10:00:05Z"),
        eviction_object("evict-a", "a", "2024-05-01T10:00:00Z"),
    ];
    let mut fleet = Fleet::default();
    fleet.placements.insert("web".into(), pick_n(3));
    fleet.bindings.insert("web".into(), vec![eb("a", true), eb("b", true), eb("c", true)]);
    fleet.budgets.insert("web".into(), budget(json!({"minAvailable": 2})));
    let outcomes = evaluate_serially(&evictions, &mut fleet);
    let order: Vec<(&str, bool)> = outcomes.iter().map(|(n, o)| (n.as_str(), o.executed())).collect();
    assert_eq!(order, [("evict-a", true), ("evict-z", false), ("evict-b", false)]);
    assert_eq!(
        executed_message(&outcomes[1].1).1,
        "Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 2, totalPlacements: 2"
    );
    assert_eq!(fleet.bindings["web"].len(), 2, "the executed eviction's binding is gone");
}

#[test]
fn ev_3_validity_in_order() {
    let bindings = [eb("a", true)];
    let check = |placement: Option<&EvictionPlacement>, bindings: &[EvictionBinding], cluster: &str, want: &str| {
        let outcome = run(placement, bindings, None, cluster);
        assert_eq!((outcome.valid.status.as_str(), outcome.valid.reason.as_str()), ("False", REASON_INVALID));
        assert_eq!(outcome.valid.message, want);
        assert!(outcome.executed.is_none() && outcome.delete_binding.is_none());
    };
    check(None, &bindings, "a", "Failed to find ClusterResourcePlacement targeted by eviction");
    let deleting = EvictionPlacement { deleting: true, ..pick_all() };
    check(Some(&deleting), &bindings, "a", "Found deleting ClusterResourcePlacement targeted by eviction");
    check(
        Some(&pick_all()),
        &bindings,
        "b",
        "Failed to find scheduler decision for placement in cluster targeted by eviction",
    );
    let two = [eb("a", true), EvictionBinding { name: "web-a-2".into(), ..eb("a", true) }];
    check(
        Some(&pick_all()),
        &two,
        "a",
        "Found more than one scheduler decision for placement in cluster targeted by eviction",
    );
    assert_eq!(run(Some(&pick_all()), &bindings, None, "a").valid.observed_generation, Some(1));
}

#[test]
fn ev_4_execution_first_match_wins() {
    let placement = pick_n(3);
    let strict = budget(json!({"maxUnavailable": 0}));
    let deleting = [EvictionBinding { deleting: true, failed: true, ..eb("a", true) }];
    let outcome = run(Some(&placement), &deleting, Some(&strict), "a");
    assert_eq!(
        executed_message(&outcome),
        (true, "Eviction is allowed, resources propagated by placement is currently being removed from cluster targeted by eviction".into())
    );
    assert_eq!(outcome.delete_binding, None, "nothing else to do");
    let never = [EvictionBinding { ever_bound: false, failed: true, ..eb("a", false) }];
    assert_eq!(
        executed_message(&run(Some(&placement), &never, None, "a")),
        (false, "Eviction is blocked, placement has not propagated resources to target cluster yet".into())
    );
    let diff = [EvictionBinding { report_diff: true, ..eb("a", true) }, eb("b", true)];
    assert_eq!(
        executed_message(&run(Some(&placement), &diff, Some(&strict), "a")).1,
        "Eviction is allowed, placement has failed"
    );
    let misconfigured = "Eviction is blocked by misconfigured ClusterResourcePlacementDisruptionBudget, either MaxUnavailable is specified or MinAvailable is specified as a percentage for PickAll ClusterResourcePlacement";
    for spec in [json!({"maxUnavailable": 5}), json!({"minAvailable": "10%"})] {
        let b = budget(spec);
        assert_eq!(
            executed_message(&run(Some(&pick_all()), &[eb("a", true)], Some(&b), "a")),
            (false, misconfigured.into())
        );
    }
}

#[test]
fn ev_5_budget_arithmetic() {
    let policy = pick_n(4).policy;
    // T = 4 (every binding, any state, the target included), A = 3: the
    // unavailable one is an involuntary disruption that counts.
    let bindings = [eb("a", true), eb("b", true), eb("c", false), eb("d", true)];
    let allowed = |spec: Value| match allowance(&policy, Some(4), &budget(spec), &bindings) {
        Allowance::Counted { available, total, allowed } => {
            assert_eq!((available, total), (3, 4));
            allowed
        }
        Allowance::Misconfigured => panic!("misconfigured"),
    };
    assert_eq!(allowed(json!({"maxUnavailable": 2})), 1, "2 - (4 - 3)");
    assert_eq!(allowed(json!({"maxUnavailable": "25%"})), 0, "25% of 4 = 1");
    assert_eq!(allowed(json!({"maxUnavailable": "30%"})), 1, "30% of 4 = 1.2, rounded up to 2");
    assert_eq!(allowed(json!({"minAvailable": 1})), 2);
    assert_eq!(allowed(json!({"minAvailable": "50%"})), 1, "3 - 2");
    assert_eq!(allowed(json!({"minAvailable": "51%"})), 0, "51% of 4 = 2.04, rounded up to 3");
    assert_eq!(allowed(json!({})), 0, "neither field allows nothing");
    let annotated = allowance(&policy, Some(8), &budget(json!({"minAvailable": "25%"})), &bindings);
    assert_eq!(
        annotated,
        Allowance::Counted { available: 3, total: 4, allowed: 1 },
        "N from the annotation: 25% of 8 = 2"
    );
    let all = PlacementPolicy::default();
    let d0 = allowance(&all, None, &budget(json!({"minAvailable": 1})), &bindings);
    assert_eq!(d0, Allowance::Counted { available: 3, total: 4, allowed: 2 });
    assert_eq!(allowance(&all, None, &budget(json!({"maxUnavailable": 1})), &bindings), Allowance::Misconfigured);
    let neither = run(Some(&pick_n(4)), &bindings, Some(&budget(json!({}))), "a");
    assert_eq!(
        executed_message(&neither).1,
        "Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 4"
    );
}

#[test]
fn bindings_are_read_from_stored_objects() {
    let binding = |state: &str, snapshot: &str, apply: Value| -> Object {
        serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
            "metadata": {"name": "web-a"},
            "spec": {"state": state, "targetCluster": "a", "resourceSnapshotName": snapshot, "applyStrategy": apply}
        }))
        .unwrap()
    };
    let bound =
        EvictionBinding::of(&binding("Bound", "web-0-snapshot", json!({"type": "ReportDiff"})), Readiness::Ready);
    assert!(bound.ever_bound && bound.available && bound.report_diff && !bound.failed);
    let failed = EvictionBinding::of(&binding("Bound", "web-0-snapshot", json!({})), Readiness::Failed);
    assert!(failed.failed && !failed.available);
    let untrackable = EvictionBinding::of(
        &binding("Bound", "web-0-snapshot", json!({})),
        Readiness::NotTrackable { available_since: 0 },
    );
    assert!(untrackable.available);
    let scheduled = EvictionBinding::of(&binding("Scheduled", "", json!({})), Readiness::Ready);
    assert!(!scheduled.ever_bound && !scheduled.available);
    assert!(!EvictionBinding::of(&binding("Unscheduled", "", json!({})), Readiness::InProgress).ever_bound);
    assert!(
        EvictionBinding::of(&binding("Unscheduled", "web-0-snapshot", json!({})), Readiness::InProgress).ever_bound
    );
}

#[test]
fn ev_4_failure_read_from_cluster_conditions() {
    let c = |t: &str, s: bool, r: &str| Condition::new(t, s, r, "m");
    assert!(!has_failed(&[c("Applied", false, "ApplyPending"), c("Available", false, "ResourceNotAvailableYet")]));
    assert!(!has_failed(&[
        c("WorkSynchronized", false, "WorkNotSynchronizedYet"),
        c("Overridden", false, "OverriddenPending")
    ]));
    assert!(has_failed(&[c("Applied", false, "ApplyFailed")]));
    assert!(has_failed(&[c("Overridden", false, "OverriddenFailed")]));
    assert!(!has_failed(&[c("Applied", true, "ApplySucceeded"), c("Scheduled", false, "Whatever")]));
}

#[test]
fn a_namespaced_eviction_follows_the_same_rules_in_its_own_words() {
    let b = budget(json!({"minAvailable": 2}));
    let bindings = [eb("a", true), eb("b", true), eb("c", true)];
    let namespaced = |placement: Option<&EvictionPlacement>, bindings: &[EvictionBinding], cluster: &str| {
        evaluate(&EvictionInput {
            spec: &spec(cluster),
            generation: 1,
            placement,
            bindings,
            budget: Some(&b),
            namespaced: true,
        })
    };
    let placement = pick_n(3);
    let allowed = namespaced(Some(&placement), &bindings, "b");
    assert_eq!(allowed.valid.reason, "ResourcePlacementEvictionValid");
    let executed = allowed.executed.as_ref().unwrap();
    assert_eq!(executed.reason, "ResourcePlacementEvictionExecuted");
    assert_eq!(
        executed.message,
        "Eviction is allowed by specified ResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3"
    );
    assert_eq!(allowed.delete_binding.as_deref(), Some("web-b"));

    let blocked = namespaced(Some(&placement), &bindings[..2], "b");
    assert!(!blocked.executed());
    assert_eq!(blocked.executed.as_ref().unwrap().reason, "ResourcePlacementEvictionNotExecuted");

    let missing = namespaced(None, &bindings, "b");
    assert_eq!(missing.valid.reason, "ResourcePlacementEvictionInvalid");
    assert_eq!(missing.valid.message, "Failed to find ResourcePlacement targeted by eviction");
}

#[test]
fn serial_evaluation_keys_namespaced_placements_by_namespace() {
    let mut e = eviction_object("evict-a", "a", "2024-05-01T10:00:00Z");
    e.kind = "ResourcePlacementEviction".into();
    e.metadata.namespace = Some("team".into());
    assert_eq!(super::serial::placement_key(&e), "team/web");
    let mut fleet = Fleet::default();
    // A ClusterResourcePlacement named like it is not the one it evicts from.
    fleet.placements.insert("web".into(), pick_n(3));
    fleet.bindings.insert("web".into(), vec![eb("a", true)]);
    let outcomes = evaluate_serially(std::slice::from_ref(&e), &mut fleet);
    assert_eq!(outcomes[0].1.valid.message, "Failed to find ResourcePlacement targeted by eviction");
    fleet.placements.insert("team/web".into(), pick_n(3));
    fleet.bindings.insert("team/web".into(), vec![eb("a", true)]);
    let outcomes = evaluate_serially(std::slice::from_ref(&e), &mut fleet);
    assert!(outcomes[0].1.executed(), "{:?}", outcomes[0].1);
}
