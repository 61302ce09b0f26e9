//! What a placement's status (and a Work's) says about a rollout.

use fleet_api::Object;
use serde_json::Value;

use super::{APPLIED_CONDITION, AVAILABLE_CONDITION};
use crate::placement_latency::SCHEDULED_CONDITION;

/// What one version of a placement says about its rollout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutState {
    /// `ClusterResourcePlacementScheduled` is True at the placement's generation.
    pub scheduled: bool,
    /// `ClusterResourcePlacementApplied` is True at the placement's generation.
    pub applied: bool,
    /// `ClusterResourcePlacementAvailable` is True at the placement's generation.
    pub available: bool,
    /// `status.observedResourceIndex`.
    pub index: Option<String>,
    /// Entries in `status.placementStatuses`.
    pub clusters: usize,
    /// Entries whose `observedResourceIndex` equals [`RolloutState::index`].
    pub clusters_at_index: usize,
    /// Entries whose `Available` condition is True at the placement's generation.
    pub clusters_available: usize,
}

fn condition_true(conditions: Option<&Value>, type_: &str, generation: i64) -> bool {
    conditions.and_then(Value::as_array).is_some_and(|cs| {
        cs.iter().any(|c| {
            c["type"] == type_ && c["status"] == "True" && c["observedGeneration"].as_i64() == Some(generation)
        })
    })
}

impl RolloutState {
    /// Reads the state from a placement.
    pub fn of(placement: &Object) -> Self {
        let generation = placement.metadata.generation;
        let Some(status) = placement.status() else { return Self::default() };
        let conditions = status.get("conditions");
        let index = status.get("observedResourceIndex").and_then(Value::as_str).map(str::to_string);
        let entries = status.get("placementStatuses").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let at_index = entries
            .iter()
            .filter(|e| index.is_some() && e["observedResourceIndex"].as_str() == index.as_deref())
            .count();
        let available = entries.iter().filter(|e| condition_true(e.get("conditions"), "Available", generation)).count();
        Self {
            scheduled: condition_true(conditions, SCHEDULED_CONDITION, generation),
            applied: condition_true(conditions, APPLIED_CONDITION, generation),
            available: condition_true(conditions, AVAILABLE_CONDITION, generation),
            index,
            clusters: entries.len(),
            clusters_at_index: at_index,
            clusters_available: available,
        }
    }

    /// At least `clusters` entries, every one at the placement's index.
    fn everywhere(&self, clusters: usize) -> bool {
        self.index.is_some() && self.clusters >= clusters && self.clusters_at_index == self.clusters
    }

    /// Applied at the placement's generation, on every one of at least
    /// `clusters` entries at the placement's index.
    pub fn applied_on(&self, clusters: usize) -> bool {
        self.applied && self.everywhere(clusters)
    }

    /// Available at the placement's generation, on every one of at least
    /// `clusters` entries at the placement's index, each entry Available.
    pub fn done_on(&self, clusters: usize) -> bool {
        self.available && self.everywhere(clusters) && self.clusters_available == self.clusters
    }
}

/// The Available condition of a Work is True at its generation.
pub fn work_available(work: &Object) -> bool {
    condition_true(work.status().and_then(|s| s.get("conditions")), "Available", work.metadata.generation)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rollout_latency::placement_document;

    fn placement(generation: i64, status: Value) -> Object {
        let mut doc = placement_document("p", "ns", "r");
        doc["metadata"]["generation"] = json!(generation);
        doc["status"] = status;
        Object::from_json(&serde_json::to_vec(&doc).unwrap()).unwrap()
    }

    fn entry(index: &str, available: bool, generation: i64) -> Value {
        let status = if available { "True" } else { "False" };
        json!({"clusterName": "c", "observedResourceIndex": index,
               "conditions": [{"type": "Available", "status": status, "observedGeneration": generation}]})
    }

    fn status(index: &str, available_gen: i64, entries: Vec<Value>) -> Value {
        json!({
            "observedResourceIndex": index,
            "conditions": [
                {"type": SCHEDULED_CONDITION, "status": "True", "observedGeneration": available_gen},
                {"type": APPLIED_CONDITION, "status": "True", "observedGeneration": available_gen},
                {"type": AVAILABLE_CONDITION, "status": "True", "observedGeneration": available_gen},
            ],
            "placementStatuses": entries,
        })
    }

    #[test]
    fn done_needs_every_entry_at_the_index_and_available_at_the_generation() {
        let done = placement(2, status("1", 2, vec![entry("1", true, 2), entry("1", true, 2)]));
        let state = RolloutState::of(&done);
        assert!(state.scheduled && state.applied && state.available);
        assert!(state.done_on(2));
        assert!(!state.done_on(3), "too few entries");

        let old_generation = placement(3, status("1", 2, vec![entry("1", true, 3), entry("1", true, 3)]));
        assert!(!RolloutState::of(&old_generation).done_on(2));

        let lagging = placement(2, status("2", 2, vec![entry("2", true, 2), entry("1", true, 2)]));
        let state = RolloutState::of(&lagging);
        assert_eq!(state.clusters_at_index, 1);
        assert!(!state.done_on(2) && !state.applied_on(2));

        let unavailable = placement(2, status("1", 2, vec![entry("1", true, 2), entry("1", false, 2)]));
        assert!(!RolloutState::of(&unavailable).done_on(2));
        assert!(RolloutState::of(&unavailable).applied_on(2));

        assert_eq!(RolloutState::of(&placement(1, json!({}))), RolloutState::default());
    }
}
