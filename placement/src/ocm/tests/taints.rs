//! Taints and tolerations with OCM's effects, `tolerationSeconds`, the
//! `unreachable` taint and Fleet's `NoSchedule`.

use serde_json::json;

use super::*;

const UNREACHABLE: &str = "cluster.open-cluster-management.io/unreachable";

fn chosen(f: &Fixture, tolerations: serde_json::Value) -> Vec<String> {
    f.run_json(json!({"tolerations": tolerations})).chosen
}

#[test]
fn effects_without_tolerations() {
    let clusters = vec![
        with_taint(cluster("no-select", &[]), "k", "NoSelect", None),
        with_taint(cluster("prefer", &[]), "k", "PreferNoSelect", None),
        with_taint(cluster("if-new", &[]), "k", "NoSelectIfNew", None),
        with_taint(cluster("if-new-decided", &[]), "k", "NoSelectIfNew", None),
        with_taint(cluster("fleet-no-schedule", &[]), "k", "NoSchedule", None),
        with_taint(cluster("fleet-decided", &[]), "k", "NoSchedule", None),
        with_taint(cluster("no-select-decided", &[]), "k", "NoSelect", None),
    ];
    let f = Fixture::new(clusters).decided(&["if-new-decided", "fleet-decided", "no-select-decided"]);
    let outcome = f.run_json(json!({}));
    // PreferNoSelect never filters; NoSelectIfNew (and Fleet's NoSchedule)
    // only keeps new clusters out; NoSelect keeps even decided ones out.
    assert_eq!(outcome.chosen, ["fleet-decided", "if-new-decided", "prefer"]);
    let reasons: Vec<(&str, &str)> = outcome.excluded.iter().map(|e| (e.cluster.as_str(), e.reason.as_str())).collect();
    assert_eq!(
        reasons,
        [
            ("fleet-no-schedule", r#"cluster has taint "k:NoSelectIfNew" that is not tolerated"#),
            ("if-new", r#"cluster has taint "k:NoSelectIfNew" that is not tolerated"#),
            ("no-select", r#"cluster has taint "k:NoSelect" that is not tolerated"#),
            ("no-select-decided", r#"cluster has taint "k:NoSelect" that is not tolerated"#),
        ]
    );
}

#[test]
fn tolerations_match_key_value_and_effect() {
    let mut c = cluster("gpu", &[]);
    c.taints.push(fleet_api::member::Taint::new("dedicated", "gpu", "NoSelect"));
    let f = Fixture::new(vec![c]);
    for (tolerations, tolerated) in [
        (json!([{"key": "dedicated", "value": "gpu"}]), true),
        (json!([{"key": "dedicated", "operator": "Exists"}]), true),
        (json!([{"operator": "Exists"}]), true),
        (json!([{"key": "dedicated", "value": "gpu", "effect": "NoSelect"}]), true),
        (json!([{"key": "dedicated", "value": "gpu", "effect": "NoSelectIfNew"}]), false),
        (json!([{"key": "dedicated", "value": "cpu"}]), false),
        (json!([{"key": "other", "operator": "Exists"}]), false),
    ] {
        assert_eq!(chosen(&f, tolerations.clone()).len() == 1, tolerated, "{tolerations}");
    }
}

#[test]
fn toleration_seconds_count_from_time_added() {
    let f = Fixture::new(vec![
        with_taint(cluster("old", &[]), "k", "NoSelect", Some(NOW - 600)),
        with_taint(cluster("recent", &[]), "k", "NoSelect", Some(NOW - 100)),
        with_taint(cluster("exact", &[]), "k", "NoSelect", Some(NOW - 300)),
        with_taint(cluster("unknown", &[]), "k", "NoSelect", None),
    ]);
    let outcome = f.run_json(json!({"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 300}]}));
    // Tolerated while now < timeAdded + 300: only "recent" (until NOW + 200).
    assert_eq!(outcome.chosen, ["recent"]);
    assert_eq!(outcome.requeue_at, Some(NOW + 200));
    let expired: Vec<&str> = outcome.excluded.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(expired, [r#"the toleration of taint "k:NoSelect" has expired"#; 3]);
    // A toleration without seconds next to one with them tolerates forever.
    let outcome = f.run_json(json!({"tolerations": [
        {"key": "k", "operator": "Exists", "tolerationSeconds": 300}, {"key": "k", "operator": "Exists"}
    ]}));
    assert_eq!(outcome.chosen.len(), 4);
    assert_eq!(outcome.requeue_at, None);
}

#[test]
fn toleration_seconds_limit_every_taint_that_filters() {
    // As OCM's controller: an expired toleration no longer covers a
    // NoSelectIfNew taint of a cluster not yet decided; PreferNoSelect
    // never filters, so its toleration's seconds do not matter.
    let f = Fixture::new(vec![
        with_taint(cluster("if-new", &[]), "k", "NoSelectIfNew", Some(NOW - 600)),
        with_taint(cluster("prefer", &[]), "k", "PreferNoSelect", Some(NOW - 600)),
    ]);
    let outcome = f.run_json(json!({"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 1}]}));
    assert_eq!(outcome.chosen, ["prefer"]);
    let outcome = f.run_json(json!({"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 3600}]}));
    assert_eq!(outcome.chosen, ["if-new", "prefer"]);
}

#[test]
fn unhealthy_clusters_carry_the_unreachable_taint() {
    let mut lost = cluster("lost", &[]);
    lost.ineligible = Some("cluster is not healthy (HeartbeatTimeout)".into());
    lost.unavailable_since = Some(NOW - 60);
    let mut never = cluster("never-joined", &[]);
    never.ineligible = Some("cluster has not joined".into());
    let f = Fixture::new(vec![cluster("fine", &[]), lost, never]);
    let outcome = f.run_json(json!({}));
    assert_eq!(outcome.chosen, ["fine"]);
    assert_eq!(
        outcome.excluded[0].reason,
        format!(r#"cluster has taint "{UNREACHABLE}:NoSelect" that is not tolerated"#)
    );
    // Tolerated for 5 minutes after the heartbeat stopped; a cluster with
    // no known time is not covered by a period.
    let outcome =
        f.run_json(json!({"tolerations": [{"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 300}]}));
    assert_eq!(outcome.chosen, ["fine", "lost"]);
    assert_eq!(outcome.requeue_at, Some(NOW + 240));
    assert_eq!(chosen(&f, json!([{"key": UNREACHABLE, "operator": "Exists"}])), ["fine", "lost", "never-joined"]);
}
