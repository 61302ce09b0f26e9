//! The leader's decoded, indexed override snapshots, for rendering.
//!
//! Why a cache: every placement pass renders its bindings through the
//! override snapshots that apply to them, and listing and decoding every
//! CRO and RO snapshot of the store per pass costs O(all overrides) for
//! each placement. The feed, which follows every override snapshot change,
//! keeps one [`OverrideIndex`] here; a pass takes the current index (an
//! `Arc`, no copy) and reads only the latest snapshots that may concern its
//! placement, and the ones its bindings record, by key.
//!
//! Like the [`super::clusters::ClusterCache`], the index may trail the
//! store by the events the feed has not handled yet, and that is safe the
//! same way: the feed records a snapshot change *before* it queues the
//! placements the change may concern, so each of them renders again with
//! it. A change copies the index only while a pass still holds the old one
//! (override snapshots change rarely).

use std::sync::{Arc, Mutex, MutexGuard};

use fleet_api::{Object, ObjectKey};
use fleet_placement::overrides::OverrideIndex;

/// The override snapshots of one leadership session.
#[derive(Default)]
pub struct OverrideCache {
    /// `None` until the feed's first listing.
    inner: Mutex<Option<Arc<OverrideIndex>>>,
}

impl OverrideCache {
    fn lock(&self) -> MutexGuard<'_, Option<Arc<OverrideIndex>>> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replaces every snapshot (a fresh listing).
    pub fn replace_all(&self, index: OverrideIndex) {
        *self.lock() = Some(Arc::new(index));
    }

    /// Records a created or changed snapshot.
    pub fn upsert(&self, snapshot: &Object) {
        if let Some(index) = self.lock().as_mut() {
            Arc::make_mut(index).upsert(snapshot);
        }
    }

    /// Forgets a deleted snapshot.
    pub fn remove(&self, key: &ObjectKey) {
        if let Some(index) = self.lock().as_mut() {
            Arc::make_mut(index).remove(key);
        }
    }

    /// The current snapshots; `None` before the first listing.
    pub fn get(&self) -> Option<Arc<OverrideIndex>> {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn snapshot(name: &str, latest: bool) -> Object {
        serde_json::from_value(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ClusterResourceOverrideSnapshot",
            "metadata": {"name": name, "labels": {"kubernetes-fleet.io/is-latest-snapshot": latest.to_string()}},
            "spec": {"overrideSpec": {}}}))
        .unwrap()
    }

    #[test]
    fn holds_nothing_before_the_first_listing_and_leaves_a_held_index_alone() {
        let cache = OverrideCache::default();
        cache.upsert(&snapshot("a-0", true));
        assert!(cache.get().is_none(), "not listed yet: no index, not an empty one");
        cache.replace_all(OverrideIndex::from_objects([&snapshot("a-0", true)]));
        let held = cache.get().unwrap();
        cache.upsert(&snapshot("a-1", true));
        cache.remove(&ObjectKey::of(&snapshot("a-0", true)));
        assert_eq!(held.latest_for("any").len(), 1, "a pass keeps the index it took");
        let now = cache.get().unwrap();
        assert_eq!(now.latest_for("any").iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a-1"]);
    }
}
