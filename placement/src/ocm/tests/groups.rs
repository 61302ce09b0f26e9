//! Decision groups and PlacementDecision pages: sizes, names, labels, and
//! the page changes a controller writes.

use fleet_api::ocm::decision::{DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PLACEMENT_LABEL};
use serde_json::json;

use super::*;
use crate::ocm::{page_changes, PageChange};

/// (page name, group index, group name, decisions) of every page.
fn layout(outcome: &OcmOutcome) -> Vec<(String, usize, String, usize)> {
    outcome.pages.iter().map(|p| (p.name.clone(), p.group_index, p.group_name.clone(), p.decisions.len())).collect()
}

fn row(n: usize, index: usize, name: &str, count: usize) -> (String, usize, String, usize) {
    (format!("demo-decision-{n}"), index, name.to_string(), count)
}

#[test]
fn pages_hold_at_most_100_decisions() {
    let outcome = Fixture::new(plain(250)).run_json(json!({}));
    assert_eq!(layout(&outcome), [row(1, 0, "", 100), row(2, 0, "", 100), row(3, 0, "", 50)]);
    let status = &outcome.group_statuses;
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].decisions, ["demo-decision-1", "demo-decision-2", "demo-decision-3"]);
    assert_eq!(status[0].cluster_count, 250);
    // Decisions are in name order, across pages.
    let names: Vec<&str> = outcome.pages.iter().flat_map(|p| &p.decisions).map(|d| d.cluster_name.as_str()).collect();
    assert_eq!(names.len(), 250);
    assert!(names.is_sorted());
}

#[test]
fn clusters_per_group_as_percentage_or_count() {
    let f = Fixture::new(plain(10));
    // 25% of 10 rounds up to 3.
    let outcome = f.run_json(json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "25%"}}}));
    assert_eq!(layout(&outcome), [row(1, 0, "", 3), row(2, 1, "", 3), row(3, 2, "", 3), row(4, 3, "", 1)]);
    let outcome = f.run_json(json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 4}}}));
    assert_eq!(layout(&outcome), [row(1, 0, "", 4), row(2, 1, "", 4), row(3, 2, "", 2)]);
    // More than all: one group.
    let outcome = f.run_json(json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 50}}}));
    assert_eq!(layout(&outcome), [row(1, 0, "", 10)]);
    // A big group spans pages; the next group's pages continue the count.
    let outcome = Fixture::new(plain(150))
        .run_json(json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 120}}}));
    assert_eq!(layout(&outcome), [row(1, 0, "", 100), row(2, 0, "", 20), row(3, 1, "", 30)]);
    assert_eq!(outcome.group_statuses[1].decisions, ["demo-decision-3"]);
}

#[test]
fn named_groups_come_first_then_the_rest() {
    let clusters: Vec<ClusterInfo> = (0..10)
        .map(|i| {
            let tier = if i % 2 == 0 && i < 10 { "canary" } else { "main" };
            cluster(&format!("c{i:02}"), &[("tier", tier)])
        })
        .collect();
    let f = Fixture::new(clusters);
    let strategy = |per_group: serde_json::Value| {
        json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": per_group, "decisionGroups": [
            {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"tier": "canary"}}}},
            {"groupName": "all-main", "groupClusterSelector": {}}
        ]}}})
    };
    // 5 canaries; "all-main" takes the 5 others (nothing is left unnamed).
    let outcome = f.run_json(strategy(json!("100%")));
    assert_eq!(layout(&outcome), [row(1, 0, "canary", 5), row(2, 1, "all-main", 5)]);
    let canaries: Vec<&str> = outcome.pages[0].decisions.iter().map(|d| d.cluster_name.as_str()).collect();
    assert_eq!(canaries, ["c00", "c02", "c04", "c06", "c08"]);
    // Groups of at most 3 (30% of 10): a named group larger than that splits, keeping its name.
    let outcome = f.run_json(strategy(json!("30%")));
    assert_eq!(
        layout(&outcome),
        [row(1, 0, "canary", 3), row(2, 1, "canary", 2), row(3, 2, "all-main", 3), row(4, 3, "all-main", 2)]
    );
}

#[test]
fn nothing_chosen_is_one_empty_page() {
    let outcome = Fixture::new(Vec::new()).run_json(json!({}));
    assert_eq!(layout(&outcome), [row(1, 0, "", 0)]);
    assert_eq!(outcome.group_statuses[0].cluster_count, 0);
}

#[test]
fn pages_as_objects_and_their_changes() {
    let outcome = Fixture::new(plain(3)).run_json(json!({}));
    let placement: fleet_api::Object = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "demo", "namespace": "ns1", "uid": "u-1"}
    }))
    .unwrap();
    let page = outcome.pages[0].to_object(&placement);
    assert_eq!(page.metadata.namespace.as_deref(), Some("ns1"));
    assert_eq!(page.metadata.labels[PLACEMENT_LABEL], "demo");
    assert_eq!(page.metadata.labels[DECISION_GROUP_NAME_LABEL], "");
    assert_eq!(page.metadata.labels[DECISION_GROUP_INDEX_LABEL], "0");
    assert_eq!(page.metadata.owner_references[0].uid, "u-1");
    assert_eq!(
        page.status().unwrap(),
        &json!({"decisions": [
            {"clusterName": "c00", "reason": "", "score": 100},
            {"clusterName": "c01", "reason": "", "score": 100},
            {"clusterName": "c02", "reason": "", "score": 100}
        ]}),
        "Additive: Balance 100 + Steady 0"
    );
    // Stored as desired: no change. A stale page and a missing one.
    assert!(page_changes("demo", std::slice::from_ref(&page), &outcome.pages).is_empty());
    let mut stale = page.clone();
    stale.metadata.name = "demo-decision-2".into();
    let smaller = Fixture::new(plain(2)).run_json(json!({}));
    let changes = page_changes("demo", &[page, stale], &smaller.pages);
    assert_eq!(changes, [PageChange::Update(smaller.pages[0].clone()), PageChange::Delete("demo-decision-2".into())]);
    assert_eq!(page_changes("demo", &[], &smaller.pages), [PageChange::Create(smaller.pages[0].clone())]);
}
