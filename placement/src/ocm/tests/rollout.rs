//! ManifestWorkReplicaSet rollout plans: each strategy on a table of
//! cluster states, mandatory groups, failures, and states read from
//! ManifestWorks (deadline, soak).

use fleet_api::conditions::Condition;
use fleet_api::ocm::manifestwork::{self, ManifestWorkStatus};
use fleet_api::ocm::replicaset::RolloutStrategy;
use fleet_api::Object;
use serde_json::json;

use super::NOW;
use crate::ocm::rollout::{plan, ClusterState, RolloutCluster, ROLLOUT_STARTED_ANNOTATION};
use crate::time::rfc3339;

use ClusterState::*;

fn strategy(v: serde_json::Value) -> RolloutStrategy {
    serde_json::from_value(v).unwrap()
}

/// Clusters `(name, group index, group name, state)`.
fn clusters(list: &[(&str, usize, &str, ClusterState)]) -> Vec<RolloutCluster> {
    list.iter()
        .map(|(n, i, g, s)| RolloutCluster {
            name: n.to_string(),
            group_index: *i,
            group_name: g.to_string(),
            state: *s,
        })
        .collect()
}

#[test]
fn all_applies_everything_at_once() {
    let cs = clusters(&[("a", 0, "", ToApply), ("b", 0, "", Succeeded), ("c", 1, "", ToApply)]);
    let p = plan(&strategy(json!({"type": "All"})), &cs, 2);
    assert_eq!(p.apply, ["a", "c"]);
    assert!(!p.rolled_out);
}

#[test]
fn progressive_per_group_waits_for_each_group_and_canary_first() {
    let s = strategy(json!({"type": "ProgressivePerGroup"}));
    let mut cs = clusters(&[
        ("canary-1", 0, "canary", ToApply),
        ("x", 1, "", ToApply),
        ("y", 1, "", ToApply),
        ("z", 2, "", ToApply),
    ]);
    assert_eq!(plan(&s, &cs, 2).apply, ["canary-1"]);
    cs[0].state = Progressing { since: NOW };
    assert!(plan(&s, &cs, 2).apply.is_empty(), "waits for the canary");
    cs[0].state = Soaking { until: NOW + 10 };
    let p = plan(&s, &cs, 2);
    assert!(p.apply.is_empty(), "and for its soak");
    assert_eq!(p.requeue_at, Some(NOW + 10));
    cs[0].state = Succeeded;
    assert_eq!(plan(&s, &cs, 2).apply, ["x", "y"]);
    cs[1].state = Failed;
    cs[2].state = Succeeded;
    let p = plan(&s, &cs, 2);
    assert!(p.apply.is_empty());
    assert_eq!(p.stopped.as_deref(), Some("1 clusters failed, more than the 0 tolerated"));
    let tolerant = strategy(json!({"type": "ProgressivePerGroup", "progressivePerGroup": {"maxFailures": 1}}));
    assert_eq!(plan(&tolerant, &cs, 2).apply, ["z"]);
}

#[test]
fn progressive_keeps_max_concurrency_in_flight_after_mandatory_groups() {
    let s = strategy(json!({"type": "Progressive", "progressive": {
        "maxConcurrency": 2, "mandatoryDecisionGroups": [{"groupName": "canary"}]}}));
    let mut cs = clusters(&[
        ("c", 0, "canary", ToApply),
        ("a", 1, "", ToApply),
        ("b", 1, "", ToApply),
        ("d", 1, "", ToApply),
        ("e", 1, "", ToApply),
    ]);
    assert_eq!(plan(&s, &cs, 4).apply, ["c"], "mandatory group first");
    cs[0].state = Failed;
    let p = plan(&s, &cs, 4);
    assert!(p.apply.is_empty() && p.stopped.is_some(), "a mandatory failure stops everything");
    cs[0].state = Succeeded;
    assert_eq!(plan(&s, &cs, 4).apply, ["a", "b"]);
    cs[1].state = Progressing { since: NOW };
    cs[2].state = Succeeded;
    assert_eq!(plan(&s, &cs, 4).apply, ["d"], "one slot free");
    // Default concurrency: the largest decision group; percentages round up.
    let default = strategy(json!({"type": "Progressive"}));
    assert_eq!(plan(&default, &cs, 3).apply, ["d", "e"]);
    let percent = strategy(json!({"type": "Progressive", "progressive": {"maxConcurrency": "30%"}}));
    assert_eq!(plan(&percent, &cs, 3).apply, ["d"], "30% of 5 is 2, one in flight");
}

#[test]
fn done_when_every_cluster_succeeded() {
    let cs = clusters(&[("a", 0, "", Succeeded), ("b", 0, "", Succeeded)]);
    let p = plan(&strategy(json!({"type": "Progressive"})), &cs, 2);
    assert!(p.rolled_out && p.apply.is_empty() && p.requeue_at.is_none());
}

fn work(template: &serde_json::Value, started: i64, conditions: &[(&str, bool, i64)]) -> Object {
    let mut o: Object = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "w", "namespace": "a", "generation": 2,
            "annotations": {ROLLOUT_STARTED_ANNOTATION: rfc3339(started)}},
        "spec": template,
    }))
    .unwrap();
    let status = ManifestWorkStatus {
        conditions: conditions
            .iter()
            .map(|(t, s, at)| Condition {
                last_transition_time: rfc3339(*at),
                ..Condition::new(t, *s, "r", "").observing(2)
            })
            .collect(),
        ..Default::default()
    };
    manifestwork::set_status(&mut o, &status);
    o
}

#[test]
fn states_come_from_the_manifestwork_and_stored_times() {
    let template = json!({"workload": {"manifests": []}});
    let other =
        json!({"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}});
    let config = strategy(json!({"type": "Progressive", "progressive": {
        "minSuccessTime": "1m", "progressDeadline": "5m"}}))
    .config();
    let state = |w: Option<&Object>| ClusterState::of(w, &template, &config, NOW);
    assert_eq!(state(None), ToApply);
    assert_eq!(state(Some(&work(&other, NOW, &[]))), ToApply, "an older template");
    assert_eq!(state(Some(&work(&template, NOW - 10, &[]))), Progressing { since: NOW - 10 });
    assert_eq!(state(Some(&work(&template, NOW - 301, &[]))), TimedOut);
    assert_eq!(state(Some(&work(&template, NOW, &[("Applied", false, NOW)]))), Failed);
    let done = [("Applied", true, NOW - 100), ("Available", true, NOW - 30)];
    assert_eq!(state(Some(&work(&template, NOW - 200, &done))), Soaking { until: NOW + 30 });
    let long_done = [("Applied", true, NOW - 100), ("Available", true, NOW - 90)];
    assert_eq!(state(Some(&work(&template, NOW - 200, &long_done))), Succeeded);
}

#[test]
fn summary_counts_conditions_desired_clusters_and_updated_works() {
    let template = json!({"workload": {"manifests": []}});
    let older = json!({"workload": {"manifests": [{"kind": "ConfigMap"}]}});
    // (spec, generation, Applied status and its observed generation, Available)
    let work = |spec: &serde_json::Value, generation: i64, applied: Option<(bool, i64)>, available: bool| {
        let mut conditions = Vec::new();
        if let Some((ok, observed)) = applied {
            conditions.push(Condition::new("Applied", ok, "R", "").observing(observed));
        }
        conditions.push(Condition::new("Available", available, "R", ""));
        let mut w: Object = serde_json::from_value(json!({"apiVersion": "work.open-cluster-management.io/v1",
            "kind": "ManifestWork", "metadata": {"name": "web", "namespace": "c", "generation": generation},
            "spec": spec}))
        .unwrap();
        manifestwork::set_status(&mut w, &ManifestWorkStatus { conditions, ..Default::default() });
        w
    };
    let works = [
        work(&template, 2, Some((true, 2)), true),  // updated
        work(&template, 3, Some((true, 2)), false), // applied, not at its generation yet
        work(&older, 1, Some((true, 1)), true),     // an older template
        work(&template, 1, Some((false, 1)), false),
    ];
    let s = crate::ocm::rollout::summary(works.iter(), |w| w.spec() == Some(&template), 5);
    assert_eq!((s.total, s.applied, s.available, s.updated, s.desired_total), (4, 3, 2, 1, 5));
    assert_eq!((s.degraded, s.progressing), (0, 0));
    let none = crate::ocm::rollout::summary(std::iter::empty(), |w| w.spec() == Some(&template), 2);
    assert_eq!((none.total, none.desired_total, none.updated), (0, 2, 0));
}
