//! What KubeFleet's own scheduler does where the spec once said otherwise,
//! as its oracle (docs/conformance.md) found it.

use serde_json::json;

use super::*;

fn pick_n(n: i64, extra: serde_json::Value) -> PlacementPolicy {
    let mut v = json!({"placementType": "PickN", "numberOfClusters": n});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    policy(v)
}

#[test]
fn sorter_extremes_span_every_cluster_filtered_ones_too() {
    let p = pick_n(
        1,
        json!({"affinity": {"clusterAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"propertySorter": {"name": "cpu", "sortOrder": "Descending"}}}]}}}),
    );
    let clusters = [
        with_props(cluster("a", &[]), &[("cpu", "1")]),
        with_props(cluster("b", &[]), &[("cpu", "3")]),
        with_taint(with_props(cluster("c", &[]), &[("cpu", "5")]), "gpu", ""),
    ];
    let out = run(&p, None, &clusters, &[]);
    assert_eq!(names(&out.chosen), ["b"]);
    // (3 − 1) / (5 − 1) of the weight: c's 5 is the maximum though c is filtered.
    assert_eq!(out.chosen[0].cluster_score, score(50, 0));
    assert_eq!(affinity_of(&out.not_chosen, "a"), 0);
}

#[test]
fn spread_domains_span_every_cluster_and_one_domain_scores_minus_one() {
    let spread = json!({"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}]});
    // c is filtered, yet its zone y is a domain holding no cluster: placing
    // on x raises the skew.
    let clusters = [cluster("a", &[("zone", "x")]), cluster("b", &[("zone", "x")]), {
        with_taint(cluster("c", &[("zone", "y")]), "gpu", "")
    }];
    let out = run(&pick_n(1, spread.clone()), None, &clusters, &[]);
    assert_eq!(names(&out.chosen), ["b"]);
    assert_eq!(out.chosen[0].cluster_score, score(0, -1));
    // With x the only domain, every placement raises the skew too (and is
    // allowed: the skew stays 0).
    let out = run(&pick_n(2, spread), None, &clusters[..2], &[]);
    assert_eq!(names(&out.chosen), ["a", "b"]);
    assert!(out.chosen.iter().all(|d| d.cluster_score == score(0, -1)), "{:?}", out.chosen);
}

#[test]
fn pick_n_of_zero_judges_no_cluster() {
    let clusters = [cluster("a", &[]), with_taint(cluster("b", &[]), "gpu", "")];
    let out = run(&pick_n(0, json!({})), None, &clusters, &[]);
    assert!(out.chosen.is_empty() && out.not_chosen.is_empty() && out.filtered.is_empty(), "{out:?}");
    assert!(out.fulfilled);
    assert_eq!(out.message, "found all cluster needed as specified by the scheduling policy, found 0 cluster(s)");
}

#[test]
fn pick_all_scores_zero_and_pick_fixed_does_not_score() {
    let clusters = [cluster("a", &[])];
    let out = run(&policy(json!({"placementType": "PickAll"})), None, &clusters, &[]);
    assert_eq!(out.chosen[0].cluster_score, score(0, 0));
    assert_eq!(
        out.chosen[0].reason,
        "Successfully scheduled resources for placement in \"a\" (affinity score: 0, topology spread score: 0): picked by scheduling policy"
    );
    let out = run(&policy(json!({"placementType": "PickFixed", "clusterNames": ["a"]})), None, &clusters, &[]);
    assert_eq!(out.chosen[0].cluster_score, None);
    assert_eq!(
        out.chosen[0].reason,
        "Successfully scheduled resources for placement in \"a\": picked by scheduling policy"
    );
}

#[test]
fn the_last_pick_judges_the_rest_and_a_settled_pass_judges_nothing() {
    let tiers =
        [("c1", "gold"), ("c2", "silver"), ("c3", "silver"), ("c5", "silver"), ("c7", "gold"), ("c8", "silver")];
    let mut clusters: Vec<ClusterInfo> = tiers.iter().map(|(n, t)| cluster(n, &[("tier", t)])).collect();
    clusters.extend([cluster("c4", &[]), cluster("c6", &[])]);
    let p = pick_n(6, json!({"topologySpreadConstraints": [{"topologyKey": "tier", "maxSkew": 1}]}));
    let out = run(&p, None, &clusters, &[]);
    assert_eq!(names(&out.chosen), ["c1", "c4", "c5", "c6", "c7", "c8"]);
    // Judged before the last pick (c1): silver at 2, gold at 1.
    let violated = "ClusterUnschedulable, violated doNotSchedule topology spread constraint \"tier\" (max skew 1)";
    assert_eq!(reason_of(&out.filtered, "c2"), violated);
    assert_eq!(reason_of(&out.filtered, "c3"), violated);
    assert!(!out.settled);
    // The next pass has the six: nothing to pick, nothing judged.
    let bindings: Vec<ExistingBinding> =
        out.chosen.iter().map(|d| binding(&d.cluster_name, STATE_BOUND, SNAP, d.cluster_score)).collect();
    let again = run(&p, None, &clusters, &bindings);
    assert!(again.settled && again.not_chosen.is_empty() && again.filtered.is_empty(), "{again:?}");
    assert_eq!(names(&again.chosen), names(&out.chosen));
}
