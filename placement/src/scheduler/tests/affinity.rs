//! Required affinity (filter) and preferred affinity (score).

use serde_json::json;

use super::*;
use crate::scheduler::plugins::sorter_share;

const CPU: &str = "resources.kubernetes-fleet.io/available-cpu";
const COST: &str = "kubernetes.azure.com/per-cpu-core-cost";
const NODES: &str = "kubernetes-fleet.io/node-count";

fn sorter_policy(property: &str, order: &str, weight: i64) -> PlacementPolicy {
    policy(json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": {"propertySorter": {"name": property, "sortOrder": order}}}
    ]}}}))
}

fn required(terms: serde_json::Value) -> PlacementPolicy {
    policy(json!({"placementType": "PickAll", "affinity": {"clusterAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": terms}}}}))
}

/// Names chosen by a PickAll with these required terms.
fn chosen_by(terms: serde_json::Value, clusters: &[ClusterInfo]) -> Vec<String> {
    let out = run(&required(terms), None, clusters, &[]);
    names(&out.chosen).into_iter().map(String::from).collect()
}

#[test]
fn worked_example_descending_cpu_sorter_gives_20_2_0() {
    let clusters = [
        with_props(cluster("a", &[]), &[(CPU, "100")]),
        with_props(cluster("b", &[]), &[(CPU, "20")]),
        with_props(cluster("c", &[]), &[(CPU, "10")]),
    ];
    let out = run(&sorter_policy(CPU, "Descending", 20), Some(1), &clusters, &[]);
    assert_eq!(affinity_of(&out.chosen, "a"), 20);
    assert_eq!(affinity_of(&out.not_chosen, "b"), 2);
    assert_eq!(affinity_of(&out.not_chosen, "c"), 0);
    assert_eq!(names(&out.not_chosen), ["b", "c"], "best first");
}

#[test]
fn worked_example_ascending_cost_sorter_gives_0_18_20() {
    let clusters = [
        with_props(cluster("a", &[]), &[(COST, "1")]),
        with_props(cluster("b", &[]), &[(COST, "0.2")]),
        with_props(cluster("c", &[]), &[(COST, "0.1")]),
    ];
    let out = run(&sorter_policy(COST, "Ascending", 20), Some(1), &clusters, &[]);
    assert_eq!(names(&out.chosen), ["c"]);
    assert_eq!(out.chosen[0].cluster_score, score(20, 0));
    assert_eq!(affinity_of(&out.not_chosen, "b"), 18);
    assert_eq!(affinity_of(&out.not_chosen, "a"), 0);
}

#[test]
fn sorter_share_rounds_half_away_from_zero_in_float64_as_kubefleet() {
    let q = |s: &str| Quantity::parse(s).unwrap();
    // 1/8 of 20 = 2.5 → 3; of −20 → −3.
    assert_eq!(sorter_share(q("1"), q("0"), q("8"), 20, true), 3);
    assert_eq!(sorter_share(q("1"), q("0"), q("8"), -20, true), -3);
    assert_eq!(sorter_share(q("7"), q("0"), q("8"), 20, false), 3);
    // max == min adds nothing.
    assert_eq!(sorter_share(q("5"), q("5"), q("5"), 20, true), 0);
    // Huge values do not overflow.
    assert_eq!(sorter_share(q("100E"), q("0"), q("100E"), 100, true), 100);
    // An exact half that float64 puts below: (1 − 5/6) × −81.
    assert_eq!(sorter_share(q("7"), q("2"), q("8"), -81, false), -13);
}

#[test]
fn sorter_extremes_count_every_cluster_but_only_matching_ones_score() {
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 98, "preference": {"labelSelector": {"matchLabels": {"env": "prod"}},
            "propertySorter": {"name": CPU, "sortOrder": "Descending"}}}
    ]}}}));
    let clusters = [
        with_props(cluster("a", &[("env", "prod")]), &[(CPU, "4")]),
        with_props(cluster("b", &[("env", "prod")]), &[(CPU, "2")]),
        with_props(cluster("c", &[("env", "dev")]), &[(CPU, "100")]),
        cluster("d", &[("env", "prod")]),
    ];
    let out = run(&p, Some(1), &clusters, &[]);
    assert_eq!(affinity_of(&out.chosen, "a"), 2, "c's 100 is the maximum: (4 − 2) / (100 − 2) of 98");
    assert_eq!(affinity_of(&out.not_chosen, "b"), 0);
    assert_eq!(affinity_of(&out.not_chosen, "c"), 0);
    assert_eq!(affinity_of(&out.not_chosen, "d"), 0);
}

#[test]
fn preferred_label_terms_add_their_weight_and_weight_zero_is_ignored() {
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 30, "preference": {"labelSelector": {"matchLabels": {"env": "prod"}}}},
        {"weight": -5, "preference": {"labelSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}},
        {"weight": 7, "preference": {}},
        {"weight": 0, "preference": {}}
    ]}}}));
    let clusters =
        [cluster("a", &[("env", "prod")]), cluster("b", &[("env", "prod"), ("gpu", "1")]), cluster("c", &[])];
    let out = run(&p, Some(1), &clusters, &[]);
    assert_eq!(affinity_of(&out.chosen, "a"), 37);
    assert_eq!(affinity_of(&out.not_chosen, "b"), 32);
    assert_eq!(affinity_of(&out.not_chosen, "c"), 7, "a term with no selectors matches every cluster");
}

#[test]
fn pick_all_ignores_preferred_terms_and_scores_zero() {
    let p = policy(json!({"placementType": "PickAll", "affinity": {"clusterAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 30, "preference": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]}}}));
    let out = run(&p, None, &[cluster("a", &[("env", "prod")]), cluster("b", &[])], &[]);
    assert_eq!(names(&out.chosen), ["a", "b"]);
    assert!(out.chosen.iter().all(|d| d.cluster_score == score(0, 0)));
}

#[test]
fn required_terms_are_ored_and_absent_required_matches_all() {
    let clusters = [cluster("a", &[("env", "prod")]), cluster("b", &[("env", "dev")]), cluster("c", &[])];
    let terms = json!([{"labelSelector": {"matchLabels": {"env": "prod"}}},
                       {"labelSelector": {"matchLabels": {"env": "dev"}}}]);
    assert_eq!(chosen_by(terms, &clusters), ["a", "b"]);
    let out = run(&required(json!([{"labelSelector": {"matchLabels": {"env": "prod"}}}])), None, &clusters, &[]);
    assert_eq!(
        reason_of(&out.filtered, "b"),
        "ClusterUnschedulable, cluster does not match with any of the required cluster affinity terms"
    );
    let all = run(&policy(json!({"placementType": "PickAll"})), None, &clusters, &[]);
    assert_eq!(names(&all.chosen), ["a", "b", "c"]);
}

#[test]
fn a_term_needs_both_its_label_selector_and_its_property_selector() {
    let clusters = [
        with_props(cluster("a", &[("env", "prod")]), &[(NODES, "5")]),
        with_props(cluster("b", &[("env", "dev")]), &[(NODES, "5")]),
        with_props(cluster("c", &[("env", "prod")]), &[(NODES, "1")]),
    ];
    let terms = json!([{"labelSelector": {"matchLabels": {"env": "prod"}},
        "propertySelector": {"matchExpressions": [{"name": NODES, "operator": "Ge", "values": ["5"]}]}}]);
    assert_eq!(chosen_by(terms, &clusters), ["a"]);
}

#[test]
fn property_selector_fails_a_cluster_lacking_the_property() {
    let clusters = [with_props(cluster("a", &[]), &[(NODES, "3")]), cluster("b", &[])];
    let terms = |op: &str| json!([{"propertySelector": {"matchExpressions": [{"name": NODES, "operator": op, "values": ["100"]}]}}]);
    assert_eq!(chosen_by(terms("Lt"), &clusters), ["a"]);
    assert_eq!(chosen_by(terms("Ne"), &clusters), ["a"], "even Ne needs the property");
}

#[test]
fn property_operators_compare_exact_quantities() {
    let clusters = [
        with_props(cluster("low", &[]), &[(CPU, "500m")]),
        with_props(cluster("mid", &[]), &[(CPU, "1")]),
        with_props(cluster("high", &[]), &[(CPU, "1.5")]),
    ];
    let with = |op: &str| {
        chosen_by(
            json!([{"propertySelector": {"matchExpressions": [{"name": CPU, "operator": op, "values": ["1000m"]}]}}]),
            &clusters,
        )
    };
    assert_eq!(with("Gt"), ["high"]);
    assert_eq!(with("Ge"), ["high", "mid"]);
    assert_eq!(with("Lt"), ["low"]);
    assert_eq!(with("Le"), ["low", "mid"]);
    assert_eq!(with("Eq"), ["mid"]);
    assert_eq!(with("Ne"), ["high", "low"]);
}

#[test]
fn property_expressions_are_anded_and_unparsable_values_match_nothing() {
    let clusters = [
        with_props(cluster("a", &[]), &[(NODES, "5"), (CPU, "8")]),
        with_props(cluster("b", &[]), &[(NODES, "5"), (CPU, "2")]),
    ];
    let terms = json!([{"propertySelector": {"matchExpressions": [
        {"name": NODES, "operator": "Eq", "values": ["5"]}, {"name": CPU, "operator": "Gt", "values": ["4"]}]}}]);
    assert_eq!(chosen_by(terms, &clusters), ["a"]);
    let bad =
        json!([{"propertySelector": {"matchExpressions": [{"name": NODES, "operator": "Ge", "values": ["lots"]}]}}]);
    assert!(chosen_by(bad, &clusters).is_empty());
}

#[test]
fn label_selector_operators_in_notin_exists_doesnotexist() {
    let clusters =
        [cluster("a", &[("region", "east")]), cluster("b", &[("region", "west")]), cluster("c", &[("zone", "1")])];
    let with = |op: &str, values: serde_json::Value| {
        let mut e = json!({"key": "region", "operator": op});
        if !values.is_null() {
            e["values"] = values;
        }
        chosen_by(json!([{"labelSelector": {"matchExpressions": [e]}}]), &clusters)
    };
    assert_eq!(with("In", json!(["east"])), ["a"]);
    assert_eq!(with("NotIn", json!(["east"])), ["b", "c"]);
    assert_eq!(with("Exists", serde_json::Value::Null), ["a", "b"]);
    assert_eq!(with("DoesNotExist", serde_json::Value::Null), ["c"]);
}

#[test]
fn preferred_terms_use_label_operators_too() {
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 1, "affinity": {"clusterAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"labelSelector": {"matchExpressions": [
                {"key": "region", "operator": "NotIn", "values": ["west"]}]}}}]}}}));
    let out = run(&p, None, &[cluster("a", &[("region", "west")]), cluster("b", &[("region", "east")])], &[]);
    assert_eq!(names(&out.chosen), ["b"]);
}
