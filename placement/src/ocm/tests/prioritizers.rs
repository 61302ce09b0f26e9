//! Each prioritizer's formula against hand-computed tables, truncation
//! toward zero and max = min included.

use fleet_api::ocm::addon_score::{AddOnPlacementScoreItem, AddOnPlacementScoreStatus};
use fleet_api::quantity::Quantity;
use serde_json::json;

use super::*;
use crate::ocm::{allocatable_score, balance_score, steady_score, ALLOCATABLE_CPU, ALLOCATABLE_MEMORY};

#[test]
fn balance_table() {
    // (count, maxCount, score): 2 × trunc(100 × (0.5 − count/maxCount)); no decision → 100.
    let table = [
        (0, 4, 100),
        (1, 4, 50),
        (2, 4, 0),
        (3, 4, -50),
        (4, 4, -100),
        (1, 3, 32),    // 16.67 → 16
        (2, 3, -32),   // −16.67 → −16 (toward zero, not −17)
        (3, 7, 14),    // 7.14 → 7
        (4, 7, -14),   // −7.14 → −7
        (29, 100, 42), // 21.000000000000004 in float64 → 21
        (1, 1, -100),
        (0, 0, 100),
    ];
    for (count, max, want) in table {
        assert_eq!(balance_score(count, max), want, "count {count}, max {max}");
    }
}

#[test]
fn allocatable_table() {
    let q = |s: &str| Quantity::parse(s).unwrap();
    // (value, min, max, score): trunc(((a − min)/(max − min) − 0.5) × 200); max = min → 100.
    let table = [
        ("0", "0", "100", -100),
        ("25", "0", "100", -50),
        ("50", "0", "100", 0),
        ("100", "0", "100", 100),
        ("1", "0", "3", -33), // −33.3 → −33
        ("2", "0", "3", 33),  // 33.3 → 33
        ("2", "1", "8", -71), // −71.4 → −71
        ("7", "1", "8", 71),
        ("2Gi", "1Gi", "3Gi", 0),
        ("1500m", "500m", "2500m", 0),
        ("1501m", "500m", "2500m", 0), // 0.1 → 0
        ("1499m", "500m", "2500m", 0), // −0.1 → 0
        ("4", "4", "4", 100),
        // float64 as OCM computes it: 5.8 − 4 = 1.7999999999999998, so
        // 19.99… → 19 where exact arithmetic gives 20.
        ("5800m", "4", "7", 19),
    ];
    for (a, min, max, want) in table {
        assert_eq!(allocatable_score(q(a), q(min), q(max)), want, "{a} in {min}..{max}");
    }
}

#[test]
fn steady_table() {
    assert_eq!((steady_score(true), steady_score(false)), (100, 0));
}

/// Scores of one prioritizer (Exact mode, weight 1) by cluster.
fn scores_of(fixture: &Fixture, name: &str) -> Vec<(String, i64)> {
    let outcome = fixture.run_json(json!({"prioritizerPolicy": exact(&[(name, 1)])}));
    assert_eq!(outcome.prioritizers.len(), 1);
    outcome.candidates.iter().map(|c| (c.cluster.clone(), c.scores[0])).collect()
}

fn pairs(list: &[(&str, i64)]) -> Vec<(String, i64)> {
    list.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

#[test]
fn resource_prioritizers_read_allocatable_over_the_candidates() {
    let clusters = vec![
        with_property(with_property(cluster("a", &[]), ALLOCATABLE_CPU, "1"), ALLOCATABLE_MEMORY, "4Gi"),
        with_property(with_property(cluster("b", &[]), ALLOCATABLE_CPU, "2"), ALLOCATABLE_MEMORY, "4Gi"),
        with_property(cluster("c", &[]), ALLOCATABLE_CPU, "4"),
        cluster("d", &[]),
    ];
    let f = Fixture::new(clusters);
    // CPU: min 1, max 4 → a −100, b trunc(−33.3) = −33, c 100; d reports none → 0.
    assert_eq!(scores_of(&f, "ResourceAllocatableCPU"), pairs(&[("a", -100), ("b", -33), ("c", 100), ("d", 0)]));
    // Memory: max = min among those reporting → 100; the others 0.
    assert_eq!(scores_of(&f, "ResourceAllocatableMemory"), pairs(&[("a", 100), ("b", 100), ("c", 0), ("d", 0)]));
}

#[test]
fn balance_and_steady_read_decisions() {
    let mut f = Fixture::new(plain(4)).decided(&["c01", "c03"]);
    for (cluster, n) in [("c00", 3), ("c01", 1), ("c02", 2)] {
        for _ in 0..n {
            f.counts.add(cluster);
        }
    }
    // maxCount 3: c00 −100, c01 32, c02 −32, c03 (no decision) 100.
    assert_eq!(scores_of(&f, "Balance"), pairs(&[("c00", -100), ("c01", 32), ("c02", -32), ("c03", 100)]));
    assert_eq!(scores_of(&f, "Steady"), pairs(&[("c00", 0), ("c01", 100), ("c02", 0), ("c03", 100)]));
}

#[test]
fn addon_scores_count_until_valid_until() {
    let status = |value: i64, valid_until: Option<i64>| AddOnPlacementScoreStatus {
        scores: vec![AddOnPlacementScoreItem { name: "cpuratio".into(), value }],
        valid_until: valid_until.map(rfc3339),
        ..Default::default()
    };
    let mut f = Fixture::new(plain(6));
    f.addon.insert("c00", "default", status(70, None));
    f.addon.insert("c01", "default", status(-40, Some(NOW))); // valid through now
    f.addon.insert("c02", "default", status(90, Some(NOW - 1))); // expired
    f.addon.insert("c03", "other", status(50, None)); // another resource
    f.addon.insert("c04", "default", status(150, Some(NOW + 60))); // clamped
    let spec = spec(json!({"prioritizerPolicy": {"mode": "Exact", "configurations": [
        {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "default", "scoreName": "cpuratio"}}}
    ]}}));
    let outcome = f.run(&spec);
    assert_eq!(outcome.prioritizers[0].prioritizer.name(), "AddOn/default/cpuratio");
    let got: Vec<(String, i64)> = outcome.candidates.iter().map(|c| (c.cluster.clone(), c.scores[0])).collect();
    assert_eq!(got, pairs(&[("c00", 70), ("c01", -40), ("c02", 0), ("c03", 0), ("c04", 100), ("c05", 0)]));
    // The next change by itself: c01's score stops counting one second after now.
    assert_eq!(outcome.requeue_at, Some(NOW + 1));
}

#[test]
fn additive_adds_balance_and_steady_exact_does_not() {
    let f = Fixture::new(plain(2));
    let names = |o: &OcmOutcome| -> Vec<(String, i64)> {
        o.prioritizers.iter().map(|w| (w.prioritizer.name(), w.weight)).collect()
    };
    assert_eq!(names(&f.run_json(json!({}))), pairs(&[("Balance", 1), ("Steady", 1)]));
    let additive = f.run_json(json!({"prioritizerPolicy": {"configurations": [
        {"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}},
        {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 3},
        {"scoreCoordinate": {"builtIn": "Balance"}, "weight": 0}
    ]}}));
    assert_eq!(names(&additive), pairs(&[("Steady", 3), ("ResourceAllocatableMemory", 1)]));
    let exact_mode = f.run_json(json!({"prioritizerPolicy": exact(&[("ResourceAllocatableCPU", -2)])}));
    assert_eq!(names(&exact_mode), pairs(&[("ResourceAllocatableCPU", -2)]));
    let none = f.run_json(json!({"prioritizerPolicy": exact(&[])}));
    assert!(none.prioritizers.is_empty());
    assert!(none.candidates.iter().all(|c| c.total == 0 && c.scores.is_empty()));
}

#[test]
fn weights_from_minus_ten_to_ten_multiply_scores() {
    let mut f = Fixture::new(plain(3)).decided(&["c02"]);
    f.counts.add("c00");
    f.counts.add("c00");
    f.counts.add("c01");
    // Balance (max 2): c00 −100, c01 0, c02 100. Steady: c02 100.
    for (wb, ws) in [(-10, 10), (10, -10), (1, 1), (-1, 0), (0, -3), (7, 2)] {
        let outcome = f.run_json(json!({"prioritizerPolicy": exact(&[("Balance", wb), ("Steady", ws)])}));
        let want =
            vec![("c00".to_string(), -100 * wb), ("c01".to_string(), 0), ("c02".to_string(), 100 * wb + 100 * ws)];
        assert_eq!(totals(&outcome), want, "weights {wb}, {ws}");
    }
}
