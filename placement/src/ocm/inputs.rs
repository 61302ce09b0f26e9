//! What the OCM prioritizers read besides the clusters, indexed once per
//! pass: other placements' decision counts (Balance) and the add-on scores
//! (AddOn).

use std::collections::{HashMap, HashSet};

use crate::time::unix_seconds;
use fleet_api::ocm::addon_score::{self, AddOnPlacementScoreStatus};
use fleet_api::ocm::decision::{self, PLACEMENT_LABEL};
use fleet_api::Object;

use crate::scheduler::plugins::FnvBuild;

/// A set of cluster names (the placement's current decisions).
pub(crate) type NameSet<'a> = HashSet<&'a str, FnvBuild>;

/// How many decisions of *other* placements name each cluster (Balance).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionCounts {
    counts: HashMap<String, i64, FnvBuild>,
    max: i64,
}

/// The PlacementDecision pages of the Placement `name` in `namespace` among
/// `pages`: what that Placement decided last (the hub's controller and
/// `fleetctl plan` read it the same way).
pub fn pages_of<'a>(pages: &'a [Object], namespace: &str, name: &str) -> Vec<&'a Object> {
    pages
        .iter()
        .filter(|p| {
            p.metadata.namespace.as_deref() == Some(namespace)
                && p.metadata.labels.get(PLACEMENT_LABEL).map(String::as_str) == Some(name)
        })
        .collect()
}

/// The clusters the pages name, in page order.
pub fn decided_clusters<'a>(pages: impl IntoIterator<Item = &'a Object>) -> Vec<String> {
    pages.into_iter().flat_map(|p| decision::status_of(p).decisions).map(|d| d.cluster_name).collect()
}

impl DecisionCounts {
    /// Counts the decisions of every PlacementDecision page except those of
    /// the placement `placement` in `namespace` (the one being scheduled).
    pub fn from_pages<'o>(pages: impl IntoIterator<Item = &'o Object>, namespace: &str, placement: &str) -> Self {
        let mut counts = DecisionCounts::default();
        for page in pages {
            let ours = page.metadata.namespace.as_deref() == Some(namespace)
                && page.metadata.labels.get(PLACEMENT_LABEL).map(String::as_str) == Some(placement);
            if !ours {
                for d in decision::status_of(page).decisions {
                    counts.add(&d.cluster_name);
                }
            }
        }
        counts
    }

    /// Counts one more decision naming `cluster`.
    pub fn add(&mut self, cluster: &str) {
        let count = self.counts.entry(cluster.to_string()).or_insert(0);
        *count += 1;
        self.max = self.max.max(*count);
    }

    /// Decisions naming `cluster`.
    pub fn count(&self, cluster: &str) -> i64 {
        self.counts.get(cluster).copied().unwrap_or(0)
    }

    /// The largest count of any cluster.
    pub fn max(&self) -> i64 {
        self.max
    }
}

/// One cluster's AddOnPlacementScore of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ScoreEntry {
    /// `validUntil` in Unix seconds; `Some(i64::MIN)` when unreadable (so
    /// it counts as expired).
    valid_until: Option<i64>,
    status: AddOnPlacementScoreStatus,
}

/// Every AddOnPlacementScore, by name (the prioritizer's `resourceName`)
/// and namespace (the cluster).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddOnScores {
    by_resource: HashMap<String, HashMap<String, ScoreEntry, FnvBuild>, FnvBuild>,
}

/// A score read for one cluster: its value and, when it will expire, when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScoreReading {
    /// −100..100; 0 when missing or expired.
    pub(crate) value: i64,
    /// The first second at which the value stops counting (a later pass
    /// must look again), if it has not yet.
    pub(crate) expires_at: Option<i64>,
}

impl AddOnScores {
    /// Indexes stored AddOnPlacementScores (namespace = cluster, name =
    /// resource name).
    pub fn from_objects<'o>(objects: impl IntoIterator<Item = &'o Object>) -> Self {
        let mut scores = AddOnScores::default();
        for o in objects {
            let cluster = o.metadata.namespace.as_deref().unwrap_or_default();
            scores.insert(cluster, &o.metadata.name, addon_score::status_of(o));
        }
        scores
    }

    /// Adds (or replaces) the scores named `resource` of `cluster`.
    pub fn insert(&mut self, cluster: &str, resource: &str, status: AddOnPlacementScoreStatus) {
        let valid_until = status.valid_until.as_deref().map(|t| unix_seconds(t).unwrap_or(i64::MIN));
        self.by_resource
            .entry(resource.to_string())
            .or_default()
            .insert(cluster.to_string(), ScoreEntry { valid_until, status });
    }

    /// Every score of the AddOnPlacementScore `resource` of `cluster` as
    /// (name, value), as stored (expired or not), for a `celSelector`'s
    /// `scores`; `None` when the cluster has none of that name.
    pub(crate) fn list(&self, cluster: &str, resource: &str) -> Option<Vec<(String, i64)>> {
        let entry = self.by_resource.get(resource)?.get(cluster)?;
        Some(entry.status.scores.iter().map(|s| (s.name.clone(), s.value)).collect())
    }

    /// The score `score` of the AddOnPlacementScore `resource` of `cluster`
    /// at `now`: 0 when missing or when `now` is past `validUntil`; values
    /// outside −100..100 are clamped.
    pub(crate) fn read(&self, resource: &str, score: &str, cluster: &str, now: i64) -> ScoreReading {
        let missing = ScoreReading { value: 0, expires_at: None };
        let Some(entry) = self.by_resource.get(resource).and_then(|by_cluster| by_cluster.get(cluster)) else {
            return missing;
        };
        if entry.valid_until.is_some_and(|until| now > until) {
            return missing;
        }
        let value = entry.status.score(score).unwrap_or(0).clamp(-100, 100);
        ScoreReading { value, expires_at: entry.valid_until.map(|until| until.saturating_add(1)) }
    }
}
