//! Topology spread constraints.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn spread(n: i64, constraints: serde_json::Value) -> PlacementPolicy {
    policy(json!({"placementType": "PickN", "numberOfClusters": n, "topologySpreadConstraints": constraints}))
}

/// Chosen clusters per value of `key`.
fn per_domain(out: &SchedulingOutcome, clusters: &[ClusterInfo], key: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for d in &out.chosen {
        let c = clusters.iter().find(|c| c.name == d.cluster_name).unwrap();
        *counts.entry(c.labels.get(key).unwrap_or_default().to_string()).or_default() += 1;
    }
    counts
}

fn regional(regions: &[(&str, usize)]) -> Vec<ClusterInfo> {
    let mut v = Vec::new();
    for (region, count) in regions {
        for i in 0..*count {
            v.push(cluster(&format!("{region}-{i}"), &[("region", region)]));
        }
    }
    v
}

#[test]
fn do_not_schedule_spreads_five_over_three_regions_as_2_2_1() {
    let clusters = regional(&[("east", 4), ("west", 4), ("north", 4)]);
    // A strong preference for east must not break the spread.
    let mut p = spread(5, json!([{"maxSkew": 1, "topologyKey": "region", "whenUnsatisfiable": "DoNotSchedule"}]));
    p.affinity = Some(
        serde_json::from_value(json!({"clusterAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"labelSelector": {"matchLabels": {"region": "east"}}}}]}}))
        .unwrap(),
    );
    let out = run(&p, None, &clusters, &[]);
    assert!(out.fulfilled, "{}", out.message);
    let counts: Vec<usize> = per_domain(&out, &clusters, "region").into_values().collect();
    let mut sorted = counts.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 2, 2], "{counts:?}");
    assert_eq!(per_domain(&out, &clusters, "region")["east"], 2, "east is preferred when the spread allows");
}

#[test]
fn do_not_schedule_filters_clusters_that_would_exceed_max_skew() {
    let clusters = regional(&[("east", 3), ("west", 1)]);
    let p = spread(4, json!([{"maxSkew": 1, "topologyKey": "region"}]));
    let out = run(&p, None, &clusters, &[]);
    assert_eq!(out.chosen.len(), 3);
    assert!(!out.fulfilled);
    assert_eq!(
        out.message,
        "could not find all clusters needed as specified by the scheduling policy, found 3 cluster(s) instead"
    );
    assert_eq!(out.filtered.len(), 1);
    assert_eq!(
        out.filtered[0].reason,
        "ClusterUnschedulable, violated doNotSchedule topology spread constraint \"region\" (max skew 1)"
    );
}

#[test]
fn schedule_anyway_scores_a_violation_minus_1000_but_still_picks() {
    let clusters = regional(&[("east", 3), ("west", 1)]);
    let p = spread(4, json!([{"maxSkew": 1, "topologyKey": "region", "whenUnsatisfiable": "ScheduleAnyway"}]));
    let out = run(&p, None, &clusters, &[]);
    assert!(out.fulfilled);
    let spreads: Vec<i64> = out.chosen.iter().map(|d| d.cluster_score.unwrap().topology_spread_score).collect();
    assert!(spreads.contains(&-1000), "{spreads:?}");
}

#[test]
fn spread_score_is_plus_one_lowering_minus_one_raising_zero_unchanged() {
    let clusters = regional(&[("east", 1), ("west", 1)]);
    let p = spread(2, json!([{"maxSkew": 2, "topologyKey": "region"}]));
    let out = run(&p, None, &clusters, &[]);
    // First pick raises the skew 0 → 1 (−1), the second lowers it 1 → 0 (+1).
    let mut spreads: Vec<i64> = out.chosen.iter().map(|d| d.cluster_score.unwrap().topology_spread_score).collect();
    spreads.sort();
    assert_eq!(spreads, [-1, 1]);
    // With a single domain every count is the largest: as KubeFleet, each
    // placement counts as raising the skew (−1), and is allowed.
    let one = regional(&[("east", 2)]);
    let out = run(&spread(2, json!([{"topologyKey": "region"}])), None, &one, &[]);
    assert!(out.chosen.iter().all(|d| d.cluster_score.unwrap().topology_spread_score == -1));
}

#[test]
fn clusters_without_the_topology_key_score_zero_and_are_never_filtered() {
    let mut clusters = regional(&[("east", 3), ("west", 1)]);
    clusters.push(cluster("plain-a", &[]));
    clusters.push(cluster("plain-b", &[]));
    let out = run(&spread(6, json!([{"topologyKey": "region"}])), None, &clusters, &[]);
    assert_eq!(out.chosen.len(), 5, "a third east cluster would make the skew 2");
    for name in ["plain-a", "plain-b"] {
        let d = out.chosen.iter().find(|d| d.cluster_name == name).unwrap();
        assert_eq!(d.cluster_score.unwrap().topology_spread_score, 0);
    }
}

#[test]
fn kept_clusters_count_from_the_start() {
    let clusters = regional(&[("east", 3), ("west", 3)]);
    let bindings =
        [binding("east-0", STATE_BOUND, SNAP, score(0, 0)), binding("east-1", STATE_BOUND, SNAP, score(0, 0))];
    let out = run(&spread(4, json!([{"topologyKey": "region"}])), None, &clusters, &bindings);
    assert_eq!(per_domain(&out, &clusters, "region")["west"], 2);
    assert!(out.fulfilled);
}

#[test]
fn an_unbalanced_start_is_judged_as_kubefleet_judges_it() {
    // Three kept in east (skew 3): a west pick lowers the skew to 2, still
    // over maxSkew 1, so DoNotSchedule rejects it (KubeFleet's rule);
    // ScheduleAnyway scores it −1000 and picks it.
    let clusters = regional(&[("east", 3), ("west", 3)]);
    let bindings: Vec<ExistingBinding> =
        (0..3).map(|i| binding(&format!("east-{i}"), STATE_BOUND, SNAP, score(0, 0))).collect();
    let out = run(&spread(5, json!([{"topologyKey": "region"}])), None, &clusters, &bindings);
    assert_eq!(names(&out.chosen), ["east-0", "east-1", "east-2"]);
    assert!(!out.fulfilled);
    let soft = json!([{"topologyKey": "region", "whenUnsatisfiable": "ScheduleAnyway"}]);
    let out = run(&spread(5, soft), None, &clusters, &bindings);
    assert_eq!(per_domain(&out, &clusters, "region")["west"], 2);
}

#[test]
fn several_constraints_add_up_and_any_do_not_schedule_rejects() {
    let mut clusters = Vec::new();
    for (region, zones) in [("east", ["e1", "e2"]), ("west", ["w1", "w2"])] {
        for zone in zones {
            for i in 0..2 {
                clusters.push(cluster(&format!("{zone}-{i}"), &[("region", region), ("zone", zone)]));
            }
        }
    }
    let p = spread(4, json!([{"topologyKey": "region"}, {"topologyKey": "zone"}]));
    let out = run(&p, None, &clusters, &[]);
    assert!(out.fulfilled);
    assert!(per_domain(&out, &clusters, "zone").values().all(|&c| c == 1));
    assert!(per_domain(&out, &clusters, "region").values().all(|&c| c == 2));
}

#[test]
fn clusters_not_chosen_report_the_scores_of_the_round_they_lost() {
    // One cluster per region, N = 2: the first pick raises the skew (−1 for
    // all; the tie goes to the larger name, west), the second keeps it (0 for
    // east and central; east wins on name). central lost that round with 0,
    // not with the +1 it would get after east was placed.
    let clusters = regional(&[("east", 1), ("west", 1), ("central", 1)]);
    let p = spread(2, json!([{"maxSkew": 1, "topologyKey": "region"}]));
    let out = run(&p, None, &clusters, &[]);
    let chosen: Vec<&str> = out.chosen.iter().map(|d| d.cluster_name.as_str()).collect();
    assert_eq!(chosen, ["east-0", "west-0"]);
    assert_eq!(out.not_chosen.len(), 1);
    assert_eq!(out.not_chosen[0].cluster_name, "central-0");
    assert_eq!(out.not_chosen[0].cluster_score, score(0, 0));
    assert_eq!(
        out.not_chosen[0].reason,
        "Cluster \"central-0\" does not score high enough (affinity score: 0, topology spread score: 0)"
    );
}
