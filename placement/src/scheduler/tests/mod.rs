//! Scheduler tests: one named test per rule of docs/spec/placement.md, plus property
//! tests. Helpers build clusters, policies and bindings tersely.

use fleet_api::binding::{ClusterDecision, ClusterScore, STATE_BOUND, STATE_SCHEDULED, STATE_UNSCHEDULED};
use fleet_api::member::Taint;
use fleet_api::placement::PlacementPolicy;
use fleet_api::quantity::Quantity;

use super::{schedule, BindingAction, ExistingBinding, SchedulingOutcome, SchedulingRequest};
use crate::cluster::{ClusterInfo, NamespaceInventory};

mod affinity;
mod kubefleet;
mod namespaces;
mod policies;
mod properties;
mod taints;
mod topology;

/// The current policy snapshot in every test.
const SNAP: &str = "web-1";
/// An older policy snapshot.
const OLD_SNAP: &str = "web-0";

/// An eligible cluster with labels.
fn cluster(name: &str, labels: &[(&str, &str)]) -> ClusterInfo {
    ClusterInfo { name: name.to_string(), labels: labels.iter().copied().collect(), ..Default::default() }
}

/// Adds properties (quantities as text).
fn with_props(mut c: ClusterInfo, props: &[(&str, &str)]) -> ClusterInfo {
    for (k, v) in props {
        c.properties.insert(k, Quantity::parse(v).unwrap());
    }
    c
}

/// Adds a taint.
fn with_taint(mut c: ClusterInfo, key: &str, value: &str) -> ClusterInfo {
    c.taints.push(Taint::new(key, value, "NoSchedule"));
    c
}

/// Makes the cluster ineligible.
fn ineligible(mut c: ClusterInfo, why: &str) -> ClusterInfo {
    c.ineligible = Some(why.to_string());
    c
}

/// Marks the cluster as leaving.
fn leaving(mut c: ClusterInfo) -> ClusterInfo {
    c.leaving = true;
    c.ineligible = Some("cluster is leaving".into());
    c
}

/// A policy from its JSON form.
fn policy(v: serde_json::Value) -> PlacementPolicy {
    serde_json::from_value(v).unwrap()
}

/// A binding.
fn binding(cluster: &str, state: &str, snapshot: &str, score: Option<ClusterScore>) -> ExistingBinding {
    ExistingBinding {
        name: format!("web-{cluster}"),
        cluster: cluster.to_string(),
        state: state.to_string(),
        policy_snapshot: snapshot.to_string(),
        score,
    }
}

fn score(affinity: i64, spread: i64) -> Option<ClusterScore> {
    Some(ClusterScore { affinity_score: affinity, topology_spread_score: spread })
}

/// One pass under [`SNAP`].
fn run(
    p: &PlacementPolicy,
    n: Option<i64>,
    clusters: &[ClusterInfo],
    bindings: &[ExistingBinding],
) -> SchedulingOutcome {
    schedule(&SchedulingRequest {
        policy: p,
        number_of_clusters: n,
        policy_snapshot: SNAP,
        clusters,
        bindings,
        namespace: None,
    })
}

/// The cluster names of decisions.
fn names(decisions: &[ClusterDecision]) -> Vec<&str> {
    decisions.iter().map(|d| d.cluster_name.as_str()).collect()
}

/// The reason given for one cluster.
fn reason_of<'a>(decisions: &'a [ClusterDecision], cluster: &str) -> &'a str {
    decisions.iter().find(|d| d.cluster_name == cluster).map(|d| d.reason.as_str()).unwrap_or("<absent>")
}

/// The affinity score of one decision.
fn affinity_of(decisions: &[ClusterDecision], cluster: &str) -> i64 {
    decisions.iter().find(|d| d.cluster_name == cluster).and_then(|d| d.cluster_score).unwrap().affinity_score
}

/// The bindings after the node applied `actions` to `old` under `snapshot`.
fn apply(old: &[ExistingBinding], actions: &[BindingAction], snapshot: &str) -> Vec<ExistingBinding> {
    let mut out = old.to_vec();
    for a in actions {
        match a {
            BindingAction::Create { cluster, decision } => out.push(ExistingBinding {
                name: format!("web-{cluster}-{}", out.len()),
                cluster: cluster.clone(),
                state: STATE_SCHEDULED.into(),
                policy_snapshot: snapshot.into(),
                score: decision.cluster_score,
            }),
            BindingAction::Update { binding, decision, revive, .. } => {
                let b = out.iter_mut().find(|b| &b.name == binding).unwrap();
                b.policy_snapshot = snapshot.into();
                b.score = decision.cluster_score;
                if *revive {
                    b.state = STATE_SCHEDULED.into();
                }
            }
            BindingAction::Unschedule { binding, .. } => {
                out.iter_mut().find(|b| &b.name == binding).unwrap().state = STATE_UNSCHEDULED.into();
            }
        }
    }
    out
}

/// The clusters of the active bindings, sorted.
fn active_clusters(bindings: &[ExistingBinding]) -> Vec<String> {
    let mut v: Vec<String> = bindings.iter().filter(|b| b.is_active()).map(|b| b.cluster.clone()).collect();
    v.sort();
    v
}

/// Marks every binding Bound (rollout happened).
fn bind_all(bindings: &mut [ExistingBinding]) {
    for b in bindings.iter_mut().filter(|b| b.state == STATE_SCHEDULED) {
        b.state = STATE_BOUND.into();
    }
}
