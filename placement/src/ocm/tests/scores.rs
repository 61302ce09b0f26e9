//! Decision scores through a whole pass: each decision holds its cluster's
//! total, `sortBy: Score` orders groups and pages best first, and
//! `scoreRateLimit` holds back score changes that leave the choice as it is
//! (with a requeue when they fall due).

use serde_json::json;

use super::*;
use crate::ocm::ALLOCATABLE_CPU;

fn cpu(name: &str, value: &str) -> ClusterInfo {
    with_property(cluster(name, &[]), ALLOCATABLE_CPU, value)
}

/// Every page's decisions as `name:score`, in page order.
fn decisions(outcome: &OcmOutcome) -> Vec<String> {
    outcome.pages.iter().flat_map(|p| &p.decisions).map(|d| format!("{}:{}", d.cluster_name, d.score)).collect()
}

fn by_cpu(sort_by: &str, limit: &str) -> serde_json::Value {
    json!({"numberOfClusters": 3, "sortBy": sort_by, "scoreRateLimit": limit,
           "prioritizerPolicy": exact(&[("ResourceAllocatableCPU", 2)])})
}

fn recorded(pairs: &[(&str, i64)], updated: Option<i64>) -> RecordedScores {
    RecordedScores { scores: pairs.iter().map(|(n, s)| (n.to_string(), *s)).collect(), updated }
}

#[test]
fn decisions_hold_totals_in_the_order_sort_by_asks() {
    // CPU 1/4/2/3: −100, 100, −33, 33, weight 2.
    let f = Fixture::new(vec![cpu("a", "1"), cpu("b", "4"), cpu("c", "2"), cpu("d", "3")]);
    let by_name = f.run_json(by_cpu("ClusterName", "1m"));
    assert_eq!(decisions(&by_name), ["b:200", "c:-66", "d:66"]);
    assert_eq!(by_name.score_update_time, Some(NOW));
    let by_score = f.run_json(by_cpu("Score", "1m"));
    assert_eq!(decisions(&by_score), ["b:200", "d:66", "c:-66"]);
    assert_eq!(by_score.chosen, ["b", "c", "d"], "the chosen clusters stay in name order");
    let status = by_score.status(&Default::default(), 1, "2024-05-01T10:00:00Z");
    assert_eq!(status.last_score_update_time.as_deref(), Some("2024-05-01T10:00:00Z"));
}

#[test]
fn sort_by_score_fills_groups_best_first() {
    let clusters = (1..=6).map(|i| cpu(&format!("c{i}"), &i.to_string())).collect();
    let f = Fixture::new(clusters);
    let outcome = f.run_json(json!({"sortBy": "Score", "prioritizerPolicy": exact(&[("ResourceAllocatableCPU", 1)]),
        "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 2}}}));
    let groups: Vec<Vec<&str>> =
        outcome.groups.iter().map(|g| g.clusters.iter().map(String::as_str).collect()).collect();
    assert_eq!(groups, [["c6", "c5"], ["c4", "c3"], ["c2", "c1"]]);
}

#[test]
fn score_changes_of_the_same_clusters_wait_for_the_rate_limit() {
    let mut f =
        Fixture::new(vec![cpu("a", "1"), cpu("b", "4"), cpu("c", "2"), cpu("d", "3")]).decided(&["b", "c", "d"]);
    // Written 20 s ago with other scores: held for 40 s more.
    f.recorded = recorded(&[("b", 200), ("c", -10), ("d", 50)], Some(NOW - 20));
    let held = f.run_json(by_cpu("Score", "1m"));
    assert_eq!(decisions(&held), ["b:200", "d:50", "c:-10"]);
    assert_eq!((held.score_update_time, held.requeue_at), (Some(NOW - 20), Some(NOW + 40)));
    // The candidates' scores are the latest pass's all the same.
    assert_eq!(totals(&held)[2], ("c".into(), -66));
    // Due: written.
    f.now = NOW + 40;
    let written = f.run_json(by_cpu("Score", "1m"));
    assert_eq!(decisions(&written), ["b:200", "d:66", "c:-66"]);
    assert_eq!((written.score_update_time, written.requeue_at), (Some(NOW + 40), None));
}

#[test]
fn a_new_choice_writes_its_scores_at_once() {
    let mut f =
        Fixture::new(vec![cpu("a", "1"), cpu("b", "4"), cpu("c", "2"), cpu("d", "3")]).decided(&["a", "b", "c"]);
    f.recorded = recorded(&[("a", -200), ("b", 200), ("c", -66)], Some(NOW - 1));
    let outcome = f.run_json(by_cpu("ClusterName", "1h"));
    assert_eq!(decisions(&outcome), ["b:200", "c:-66", "d:66"]);
    assert_eq!(outcome.score_update_time, Some(NOW));
}
