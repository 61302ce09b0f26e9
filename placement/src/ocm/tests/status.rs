//! The spec's example end to end, the Placement's status and conditions,
//! and the ScoreUpdate message.

use fleet_api::conditions::find;
use fleet_api::ocm::clusterset::CLUSTER_SET_LABEL;
use fleet_api::ocm::placement::PlacementStatus;
use serde_json::json;

use super::*;
use crate::ocm::ALLOCATABLE_MEMORY;

/// The Placement example of docs/spec/ocm.md (its two placeholders filled in, as
/// in `fleet_api`'s example test).
const EXAMPLE: &str = include_str!("../../../../api/src/ocm/tests/placement-example.yaml");

fn member(name: &str, tier: &str, memory: &str) -> ClusterInfo {
    let labels = [("vendor", "OpenShift"), ("tier", tier), (CLUSTER_SET_LABEL, "clusterset1")];
    with_property(with_claims(cluster(name, &labels), &[("region", "east")]), ALLOCATABLE_MEMORY, memory)
}

#[test]
fn the_spec_example_end_to_end() {
    let mut objects = fleet_api::parse::parse_documents("ocm.md", EXAMPLE).unwrap();
    fleet_api::typed::prepare(&mut objects[0]).unwrap();
    let spec = fleet_api::ocm::placement::spec_of(&objects[0]);
    let mut west = member("w1", "main", "64Gi");
    west.claims.insert("region", "west");
    let mut maintained = member("m1", "main", "64Gi");
    maintained.taints.push(fleet_api::member::Taint::new("maintenance", "true", "NoSelect"));
    let mut f = Fixture::new(vec![
        member("c1", "canary", "16Gi"),
        member("c2", "main", "32Gi"),
        member("c3", "main", "8Gi"),
        west,
        maintained,
    ])
    .decided(&["c3"]);
    f.sets = vec![ClusterSet { name: "clusterset1".into(), spec: Default::default() }];
    f.bound = vec!["clusterset1".into(), "global".into()];
    f.addon.insert(
        "c1",
        "default",
        serde_json::from_value(json!({"scores": [{"name": "cpuratio", "value": 80}]})).unwrap(),
    );
    let outcome = f.run(&spec);
    assert_eq!(outcome.eligible_sets, ["clusterset1"]);
    let names: Vec<String> =
        outcome.prioritizers.iter().map(|w| format!("{}x{}", w.prioritizer.name(), w.weight)).collect();
    assert_eq!(names, ["Balancex1", "Steadyx3", "ResourceAllocatableMemoryx1", "AddOn/default/cpuratiox1"]);
    // Candidates m1 (tolerated), c1, c2, c3 (w1 fails the claim). Memory over
    // 8..64Gi: c1 trunc(−71.4) = −71, c2 trunc(−14.3) = −14, c3 −100, m1 100.
    // Balance 100 each (no other placement); Steady 300 for c3; AddOn 80 for c1.
    let scores: Vec<(String, Vec<i64>, i64)> =
        outcome.candidates.iter().map(|c| (c.cluster.clone(), c.scores.clone(), c.total)).collect();
    assert_eq!(
        scores,
        [
            ("c1".into(), vec![100, 0, -71, 80], 109),
            ("c2".into(), vec![100, 0, -14, 0], 86),
            ("c3".into(), vec![100, 100, -100, 0], 300),
            ("m1".into(), vec![100, 0, 100, 0], 200),
        ]
    );
    assert_eq!(outcome.chosen, ["c3", "m1"]);
    assert_eq!(outcome.excluded[0].cluster, "w1");
    assert_eq!(outcome.score_message(), "c1:109 c2:86 c3:300 m1:200");
    // Groups of ceil(25% × 2) = 1; no chosen cluster is a canary.
    let groups: Vec<(usize, &str, Vec<String>)> =
        outcome.groups.iter().map(|g| (g.index, g.name.as_str(), g.clusters.clone())).collect();
    assert_eq!(groups, [(0, "", vec!["c3".to_string()]), (1, "", vec!["m1".to_string()])]);
    assert!(outcome.satisfied.is_true());
}

#[test]
fn status_carries_counts_groups_and_conditions() {
    let f = Fixture::new(plain(3));
    let outcome = f.run_json(json!({"numberOfClusters": 2}));
    let status = outcome.status(&PlacementStatus::default(), 4, "t1");
    assert_eq!(status.number_of_selected_clusters, 2);
    assert_eq!(status.decision_groups, outcome.group_statuses);
    let satisfied = find(&status.conditions, "PlacementSatisfied").unwrap();
    assert_eq!((satisfied.status.as_str(), satisfied.reason.as_str()), ("True", "AllDecisionsScheduled"));
    assert_eq!((satisfied.observed_generation, satisfied.last_transition_time.as_str()), (Some(4), "t1"));
    let misconfigured = find(&status.conditions, "PlacementMisconfigured").unwrap();
    assert_eq!(
        (misconfigured.status.as_str(), misconfigured.reason.as_str(), misconfigured.message.as_str()),
        ("False", "Succeedconfigured", "Placement configurations check pass")
    );
    // Unchanged status keeps its transition time; a change stamps the new one.
    let again = outcome.status(&status, 4, "t2");
    assert_eq!(find(&again.conditions, "PlacementSatisfied").unwrap().last_transition_time, "t1");
    let short = f.run_json(json!({"numberOfClusters": 4})).status(&status, 5, "t3");
    let satisfied = find(&short.conditions, "PlacementSatisfied").unwrap();
    assert_eq!((satisfied.status.as_str(), satisfied.last_transition_time.as_str()), ("False", "t3"));
}

#[test]
fn misconfiguration_admission_would_refuse_is_reported_and_skipped() {
    // A spec that never went through admission.
    let spec: PlacementSpec = serde_json::from_value(json!({
        "prioritizerPolicy": {"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "Cheapest"}}]},
        "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "half"}}
    }))
    .unwrap();
    let outcome = Fixture::new(plain(3)).run(&spec);
    assert_eq!(outcome.chosen.len(), 3);
    assert!(outcome.prioritizers.is_empty());
    assert_eq!(outcome.groups.len(), 1);
    assert!(outcome.misconfigured.is_true());
    assert_eq!(
        outcome.misconfigured.message,
        "prioritizer configuration 0 names no known prioritizer; clustersPerDecisionGroup \"half\": must be an integer or a percentage (e.g. \"25%\")"
    );
}
