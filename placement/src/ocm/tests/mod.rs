//! OCM scheduler tests: hand-computed tables for every prioritizer, the
//! ranking rules, sets, taints, spread, groups and pages, and property
//! tests. Helpers build clusters and requests tersely.

use crate::time::rfc3339;
use fleet_api::member::Taint;
use fleet_api::ocm::placement::{apply_defaults, PlacementSpec};
use fleet_api::quantity::Quantity;
use serde_json::json;

use super::{schedule, AddOnScores, ClusterSet, DecisionCounts, OcmOutcome, OcmRequest, RecordedScores};
use crate::cluster::ClusterInfo;

mod groups;
mod prioritizers;
mod properties;
mod ranking;
mod rollout;
mod scores;
mod sets;
mod spread;
mod status;
mod taints;

/// Now, in every test (2024-05-01T10:00:00Z).
const NOW: i64 = 1_714_557_600;

/// An eligible cluster with labels.
fn cluster(name: &str, labels: &[(&str, &str)]) -> ClusterInfo {
    ClusterInfo { name: name.to_string(), labels: labels.iter().copied().collect(), ..Default::default() }
}

/// Adds claims.
fn with_claims(mut c: ClusterInfo, claims: &[(&str, &str)]) -> ClusterInfo {
    for (k, v) in claims {
        c.claims.insert(k, v);
    }
    c
}

/// Adds a property (a quantity as text).
fn with_property(mut c: ClusterInfo, name: &str, value: &str) -> ClusterInfo {
    c.properties.insert(name, Quantity::parse(value).unwrap());
    c
}

/// Adds a taint added at `added` (Unix seconds), if given.
fn with_taint(mut c: ClusterInfo, key: &str, effect: &str, added: Option<i64>) -> ClusterInfo {
    let mut taint = Taint::new(key, "", effect);
    taint.time_added = added.map(rfc3339);
    c.taints.push(taint);
    c
}

/// `n` plain clusters `c00`, `c01`, ...
fn plain(n: usize) -> Vec<ClusterInfo> {
    (0..n).map(|i| cluster(&format!("c{i:02}"), &[])).collect()
}

/// A placement spec from its JSON form, defaulted as admission does.
fn spec(v: serde_json::Value) -> PlacementSpec {
    let mut spec: PlacementSpec = serde_json::from_value(v).unwrap();
    apply_defaults(&mut spec);
    spec
}

/// Everything a request reads besides the spec; `global` bound by default.
struct Fixture {
    clusters: Vec<ClusterInfo>,
    sets: Vec<ClusterSet>,
    bound: Vec<String>,
    decided: Vec<String>,
    counts: DecisionCounts,
    addon: AddOnScores,
    recorded: RecordedScores,
    now: i64,
}

impl Fixture {
    fn new(clusters: Vec<ClusterInfo>) -> Fixture {
        Fixture {
            clusters,
            sets: Vec::new(),
            bound: vec!["global".into()],
            decided: Vec::new(),
            counts: DecisionCounts::default(),
            addon: AddOnScores::default(),
            recorded: RecordedScores::default(),
            now: NOW,
        }
    }

    fn decided(mut self, names: &[&str]) -> Fixture {
        self.decided = names.iter().map(|s| s.to_string()).collect();
        self
    }

    fn run(&self, spec: &PlacementSpec) -> OcmOutcome {
        schedule(&OcmRequest {
            placement_name: "demo",
            spec,
            clusters: &self.clusters,
            cluster_sets: &self.sets,
            bound_sets: &self.bound,
            decided: &self.decided,
            other_decisions: &self.counts,
            addon_scores: &self.addon,
            recorded: &self.recorded,
            now: self.now,
        })
    }

    /// Runs a spec given as JSON.
    fn run_json(&self, v: serde_json::Value) -> OcmOutcome {
        self.run(&spec(v))
    }
}

/// Exact mode with the given `[prioritizer, weight]` pairs (built-in names).
fn exact(prioritizers: &[(&str, i64)]) -> serde_json::Value {
    let configurations: Vec<serde_json::Value> =
        prioritizers.iter().map(|(name, w)| json!({"scoreCoordinate": {"builtIn": name}, "weight": w})).collect();
    json!({"mode": "Exact", "configurations": configurations})
}

/// The outcome's totals by cluster.
fn totals(outcome: &OcmOutcome) -> Vec<(String, i64)> {
    outcome.candidates.iter().map(|c| (c.cluster.clone(), c.total)).collect()
}
