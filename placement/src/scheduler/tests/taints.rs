//! Taints and tolerations.

use fleet_api::placement::Toleration;
use serde_json::json;

use super::*;
use crate::scheduler::plugins::tolerates;

fn taint(key: &str, value: &str) -> Taint {
    Taint::new(key, value, "NoSchedule")
}

fn toleration(key: &str, operator: Option<&str>, value: &str, effect: &str) -> Toleration {
    Toleration { key: key.into(), operator: operator.map(String::from), value: value.into(), effect: effect.into() }
}

#[test]
fn exists_with_an_empty_key_tolerates_every_taint() {
    assert!(tolerates(&toleration("", Some("Exists"), "", ""), &taint("maintenance", "true")));
    assert!(!tolerates(&toleration("", Some("Equal"), "", ""), &taint("maintenance", "")), "empty key needs Exists");
}

#[test]
fn exists_with_a_key_ignores_the_value() {
    assert!(tolerates(&toleration("maintenance", Some("Exists"), "", ""), &taint("maintenance", "true")));
    assert!(!tolerates(&toleration("other", Some("Exists"), "", ""), &taint("maintenance", "true")));
}

#[test]
fn equal_needs_equal_values_and_is_the_default() {
    assert!(tolerates(&toleration("maintenance", Some("Equal"), "true", ""), &taint("maintenance", "true")));
    assert!(tolerates(&toleration("maintenance", None, "true", ""), &taint("maintenance", "true")));
    assert!(!tolerates(&toleration("maintenance", None, "false", ""), &taint("maintenance", "true")));
}

#[test]
fn empty_effect_matches_any_effect_and_a_set_effect_must_be_equal() {
    assert!(tolerates(&toleration("k", Some("Exists"), "", ""), &taint("k", "v")));
    assert!(tolerates(&toleration("k", Some("Exists"), "", "NoSchedule"), &taint("k", "v")));
    assert!(!tolerates(&toleration("k", Some("Exists"), "", "NoExecute"), &taint("k", "v")));
}

#[test]
fn untolerated_taint_filters_the_cluster_with_its_text() {
    let p = policy(json!({"placementType": "PickAll", "tolerations": [{"key": "dedicated", "operator": "Exists"}]}));
    let clusters = [
        with_taint(cluster("a", &[]), "maintenance", "true"),
        with_taint(cluster("b", &[]), "dedicated", "gpu"),
        cluster("c", &[]),
    ];
    let out = run(&p, None, &clusters, &[]);
    assert_eq!(names(&out.chosen), ["b", "c"]);
    assert_eq!(
        reason_of(&out.filtered, "a"),
        "ClusterUnschedulable, taint &{Key:maintenance Value:true Effect:NoSchedule} cannot be tolerated"
    );
}

#[test]
fn every_taint_must_be_tolerated() {
    let p = policy(json!({"placementType": "PickN", "numberOfClusters": 2,
        "tolerations": [{"key": "a", "operator": "Exists"}]}));
    let two = with_taint(with_taint(cluster("x", &[]), "a", "1"), "b", "");
    let out = run(&p, None, &[two, with_taint(cluster("y", &[]), "a", "2")], &[]);
    assert_eq!(names(&out.chosen), ["y"]);
    assert_eq!(
        reason_of(&out.filtered, "x"),
        "ClusterUnschedulable, taint &{Key:b Value: Effect:NoSchedule} cannot be tolerated"
    );
    assert_eq!(
        out.message,
        "could not find all clusters needed as specified by the scheduling policy, found 1 cluster(s) instead"
    );
}

#[test]
fn pick_fixed_ignores_taints_and_affinity() {
    let p = policy(json!({"placementType": "PickFixed", "clusterNames": ["a"], "affinity": {"clusterAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
            {"labelSelector": {"matchLabels": {"env": "never"}}}]}}}}));
    let out = run(&p, None, &[with_taint(cluster("a", &[]), "maintenance", "true")], &[]);
    assert_eq!(names(&out.chosen), ["a"]);
    assert!(out.fulfilled);
}
