//! What one OCM scheduling pass reads besides the Placement and the
//! clusters, derived from the stored objects: built here once, so the hub's
//! controller and `fleetctl plan` schedule from the very same inputs.

use fleet_api::ocm::clusterset;
use fleet_api::ocm::placement::PlacementSpec;
use fleet_api::Object;

use super::inputs::{decided_clusters, pages_of, AddOnScores, DecisionCounts};
use super::scores::RecordedScores;
use super::sets::ClusterSet;
use super::OcmRequest;
use crate::cluster::ClusterInfo;

/// The stored objects an OCM pass reads.
#[derive(Debug, Clone, Copy)]
pub struct OcmObjects<'a> {
    /// Every ManagedClusterSet.
    pub sets: &'a [Object],
    /// ManagedClusterSetBindings (those of other namespaces are ignored).
    pub set_bindings: &'a [Object],
    /// PlacementDecision pages of every placement.
    pub pages: &'a [Object],
    /// Every AddOnPlacementScore.
    pub scores: &'a [Object],
}

/// The decoded inputs of one pass for one Placement.
#[derive(Debug, Clone)]
pub struct OcmInputs {
    cluster_sets: Vec<ClusterSet>,
    bound_sets: Vec<String>,
    decided: Vec<String>,
    other_decisions: DecisionCounts,
    addon_scores: AddOnScores,
    recorded: RecordedScores,
}

impl OcmInputs {
    /// The inputs for the Placement `name` in `namespace`.
    pub fn from_objects(namespace: &str, name: &str, objects: OcmObjects<'_>) -> OcmInputs {
        OcmInputs {
            cluster_sets: objects.sets.iter().map(ClusterSet::from_object).collect(),
            bound_sets: objects
                .set_bindings
                .iter()
                .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
                .map(|b| clusterset::binding_spec_of(b).cluster_set)
                .collect(),
            decided: decided_clusters(pages_of(objects.pages, namespace, name)),
            other_decisions: DecisionCounts::from_pages(objects.pages, namespace, name),
            addon_scores: AddOnScores::from_objects(objects.scores),
            recorded: RecordedScores::from_pages(pages_of(objects.pages, namespace, name), None),
        }
    }

    /// The same inputs with the Placement's `status.lastScoreUpdateTime`
    /// (Unix seconds), from which `scoreRateLimit` counts.
    pub fn with_last_score_update(mut self, at: Option<i64>) -> OcmInputs {
        self.recorded.updated = at;
        self
    }

    /// The clusters the Placement's own decisions name, in page order.
    pub fn decided(&self) -> &[String] {
        &self.decided
    }

    /// The scheduling request of the Placement `placement_name` at `now`
    /// (Unix seconds).
    pub fn request<'a>(
        &'a self,
        placement_name: &'a str,
        spec: &'a PlacementSpec,
        clusters: &'a [ClusterInfo],
        now: i64,
    ) -> OcmRequest<'a> {
        OcmRequest {
            placement_name,
            spec,
            clusters,
            cluster_sets: &self.cluster_sets,
            bound_sets: &self.bound_sets,
            decided: &self.decided,
            other_decisions: &self.other_decisions,
            addon_scores: &self.addon_scores,
            recorded: &self.recorded,
            now,
        }
    }
}
