//! Namespace affinity: a ResourcePlacement goes only where its namespace is.

use serde_json::json;

use super::*;

fn with_namespaces(mut c: ClusterInfo, names: &[&str]) -> ClusterInfo {
    let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    names.sort();
    c.namespaces = NamespaceInventory::Listed(names);
    c
}

fn collecting_without_a_list(mut c: ClusterInfo) -> ClusterInfo {
    c.namespaces = NamespaceInventory::Unavailable;
    c
}

fn run_in(p: &PlacementPolicy, namespace: Option<&str>, clusters: &[ClusterInfo]) -> SchedulingOutcome {
    schedule(&SchedulingRequest {
        policy: p,
        number_of_clusters: None,
        policy_snapshot: SNAP,
        clusters,
        bindings: &[],
        namespace,
    })
}

fn fleet() -> Vec<ClusterInfo> {
    vec![
        with_namespaces(cluster("a", &[]), &["app", "default"]),
        with_namespaces(cluster("b", &[]), &["default"]),
        collecting_without_a_list(cluster("c", &[])),
        with_namespaces(cluster("d", &[("env", "prod")]), &["app"]),
    ]
}

#[test]
fn a_resource_placement_goes_only_where_its_namespace_is() {
    let out = run_in(&policy(json!({"placementType": "PickAll"})), Some("app"), &fleet());
    assert_eq!(names(&out.chosen), ["a", "d"]);
    assert_eq!(names(&out.filtered), ["b", "c"]);
    assert_eq!(reason_of(&out.filtered, "b"), "ClusterUnschedulable, target namespace does not exist on cluster");
    assert_eq!(reason_of(&out.filtered, "c"), "ClusterUnschedulable, cluster has no namespace information available");

    let out = run_in(&policy(json!({"placementType": "PickN", "numberOfClusters": 3})), Some("app"), &fleet());
    assert_eq!(names(&out.chosen), ["a", "d"]);
    assert!(!out.fulfilled, "only two clusters have the namespace");
}

#[test]
fn a_cluster_that_does_not_collect_namespaces_is_not_filtered_by_them() {
    let mut clusters = fleet();
    clusters.push(cluster("e", &[]));
    let out = run_in(&policy(json!({"placementType": "PickAll"})), Some("app"), &clusters);
    assert_eq!(names(&out.chosen), ["a", "d", "e"]);
}

#[test]
fn cluster_placements_and_pick_fixed_ignore_namespaces() {
    let out = run_in(&policy(json!({"placementType": "PickAll"})), None, &fleet());
    assert_eq!(names(&out.chosen), ["a", "b", "c", "d"]);
    let fixed = policy(json!({"placementType": "PickFixed", "clusterNames": ["b", "c"]}));
    let out = run_in(&fixed, Some("app"), &fleet());
    assert_eq!(names(&out.chosen), ["b", "c"]);
}

#[test]
fn required_affinity_speaks_before_namespace_affinity() {
    let p = policy(json!({"placementType": "PickAll", "affinity": {"clusterAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
            {"labelSelector": {"matchLabels": {"env": "prod"}}}]}}}}));
    let out = run_in(&p, Some("app"), &fleet());
    assert_eq!(names(&out.chosen), ["d"]);
    assert!(!reason_of(&out.filtered, "b").contains("namespace"), "{}", reason_of(&out.filtered, "b"));
}
