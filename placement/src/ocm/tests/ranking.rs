//! Ranking and choosing: total descending, ties by name ascending, the first
//! `numberOfClusters`, and what Steady's weight does when a better cluster
//! joins.

use serde_json::json;

use super::*;
use crate::ocm::ALLOCATABLE_CPU;

fn cpu(name: &str, value: &str) -> ClusterInfo {
    with_property(cluster(name, &[]), ALLOCATABLE_CPU, value)
}

#[test]
fn ties_go_to_the_smaller_name() {
    // Everything scores the same: the first names win, whatever the input order.
    let mut clusters = plain(5);
    clusters.reverse();
    let outcome = Fixture::new(clusters).run_json(json!({"numberOfClusters": 2}));
    assert_eq!(outcome.chosen, ["c00", "c01"]);
    let left: Vec<Option<&str>> = outcome.candidates.iter().map(|c| c.left_out.as_deref()).collect();
    assert_eq!(left[..3], [None, None, Some("not among the 2 best-ranked clusters")]);
}

#[test]
fn higher_totals_win_then_names() {
    let clusters = vec![cpu("a", "1"), cpu("b", "4"), cpu("c", "4"), cpu("d", "2")];
    let f = Fixture::new(clusters);
    let outcome =
        f.run_json(json!({"numberOfClusters": 2, "prioritizerPolicy": exact(&[("ResourceAllocatableCPU", 1)])}));
    // Scores: a −100, b 100, c 100, d trunc(−33.3) = −33: b and c tie, both beat d.
    assert_eq!(totals(&outcome), [("a".into(), -100), ("b".into(), 100), ("c".into(), 100), ("d".into(), -33)]);
    assert_eq!(outcome.chosen, ["b", "c"]);
    let outcome =
        f.run_json(json!({"numberOfClusters": 3, "prioritizerPolicy": exact(&[("ResourceAllocatableCPU", -1)])}));
    assert_eq!(outcome.chosen, ["a", "b", "d"], "negative weight prefers the least; b beats c by name");
}

#[test]
fn number_of_clusters_unset_zero_and_too_many() {
    let f = Fixture::new(plain(3));
    let all = f.run_json(json!({}));
    assert_eq!(all.chosen.len(), 3);
    assert_eq!(all.satisfied.reason, "AllDecisionsScheduled");
    // As OCM's controller: deciding no cluster is NoManagedClusterMatched,
    // even when none was asked for.
    let none = f.run_json(json!({"numberOfClusters": 0}));
    assert!(none.chosen.is_empty());
    assert_eq!((none.satisfied.status.as_str(), none.satisfied.reason.as_str()), ("False", "NoManagedClusterMatched"));
    let short = f.run_json(json!({"numberOfClusters": 5}));
    assert_eq!(short.chosen.len(), 3);
    assert_eq!(
        (short.satisfied.status.as_str(), short.satisfied.reason.as_str(), short.satisfied.message.as_str()),
        ("False", "NotAllDecisionsScheduled", "2 cluster decisions unscheduled")
    );
}

#[test]
fn a_better_cluster_replaces_a_chosen_one_unless_steady_holds_it() {
    // "a" was chosen; "z" joins with far more CPU.
    let f = Fixture::new(vec![cpu("a", "2"), cpu("b", "1"), cpu("z", "64")]).decided(&["a"]);
    let by_cpu = |steady: i64| {
        json!({"numberOfClusters": 1, "prioritizerPolicy": {"configurations": [
            {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 1},
            {"scoreCoordinate": {"builtIn": "Steady"}, "weight": steady},
            {"scoreCoordinate": {"builtIn": "Balance"}, "weight": 0}
        ]}})
    };
    // CPU: a trunc(((1/63) − 0.5) × 200) = −96, z 100; Steady 1 adds 100 to a: 4 < 100.
    let outcome = f.run_json(by_cpu(1));
    assert_eq!(totals(&outcome), [("a".into(), 4), ("b".into(), -100), ("z".into(), 100)]);
    assert_eq!(outcome.chosen, ["z"]);
    assert!(outcome.decisions_changed(&["a".into()]));
    // Steady weighted 3: a 204 > z 100, the decision holds.
    let outcome = f.run_json(by_cpu(3));
    assert_eq!(outcome.chosen, ["a"]);
    assert!(!outcome.decisions_changed(&["a".into()]));
}
