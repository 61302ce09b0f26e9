//! The leader's cached view of the fleet's clusters, for scheduling.
//!
//! Why a cache: every controller step computes the placement's scheduling
//! decision, and reading every MemberCluster from the store and building its
//! [`ClusterInfo`] took ~16 ms per step at 1,000 clusters (the scheduling
//! pass itself takes ~0.3 ms). The feed, which already follows every
//! MemberCluster change, keeps one `ClusterInfo` per cluster here; steps read
//! the name-sorted list.
//!
//! Like a Kubernetes informer cache, the list may trail the store by the
//! events the feed has not handled yet (never more: the feed skips the
//! events its last listing already holds). That is safe in the same way:
//! the feed records a cluster change *before* it queues the placements that
//! change may move, so each of them is reconciled again against a list that
//! has it.
//!
//! The list is rebuilt lazily, by the first step that reads it after a
//! change, so a stream of cluster updates costs map updates, not one copy of
//! the fleet each.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use fleet_placement::cluster::ClusterInfo;

/// The clusters of one leadership session.
#[derive(Default)]
pub struct ClusterCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// `false` until the feed's first listing.
    listed: bool,
    clusters: BTreeMap<String, ClusterInfo>,
    /// The name-sorted list, until the next change.
    list: Option<Arc<Vec<ClusterInfo>>>,
}

impl ClusterCache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replaces every cluster (a fresh listing).
    pub fn replace_all(&self, clusters: BTreeMap<String, ClusterInfo>) {
        let mut inner = self.lock();
        *inner = Inner { listed: true, clusters, list: None };
    }

    /// Records a cluster's current view; returns the one it replaced.
    pub fn upsert(&self, name: &str, view: ClusterInfo) -> Option<ClusterInfo> {
        let mut inner = self.lock();
        if inner.clusters.get(name) == Some(&view) {
            return Some(view);
        }
        inner.list = None;
        inner.clusters.insert(name.to_string(), view)
    }

    /// Forgets a deleted cluster.
    pub fn remove(&self, name: &str) {
        let mut inner = self.lock();
        if inner.clusters.remove(name).is_some() {
            inner.list = None;
        }
    }

    /// The clusters, name-sorted; `None` before the first listing.
    pub fn get(&self) -> Option<Arc<Vec<ClusterInfo>>> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        if !inner.listed {
            return None;
        }
        Some(inner.list.get_or_insert_with(|| Arc::new(inner.clusters.values().cloned().collect())).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, env: &str) -> ClusterInfo {
        ClusterInfo { name: name.into(), labels: [("env", env)].into_iter().collect(), ..ClusterInfo::default() }
    }

    fn names(cache: &ClusterCache) -> Vec<String> {
        cache
            .get()
            .map(|l| l.iter().map(|c| format!("{}:{}", c.name, c.labels.get("env").unwrap_or(""))).collect())
            .unwrap_or_default()
    }

    #[test]
    fn lists_nothing_before_the_first_listing_then_follows_changes_in_name_order() {
        let cache = ClusterCache::default();
        assert!(cache.get().is_none(), "not listed yet: no list, not an empty one");
        cache.replace_all([("b".to_string(), cluster("b", "prod"))].into_iter().collect());
        assert_eq!(names(&cache), ["b:prod"]);
        assert_eq!(cache.upsert("a", cluster("a", "dev")), None);
        assert_eq!(names(&cache), ["a:dev", "b:prod"]);
        let before = cache.get();
        assert_eq!(cache.upsert("b", cluster("b", "prod")), Some(cluster("b", "prod")));
        assert!(Arc::ptr_eq(&before.unwrap(), &cache.get().unwrap()), "an unchanged view keeps the list");
        assert_eq!(cache.upsert("b", cluster("b", "dev")), Some(cluster("b", "prod")));
        cache.remove("a");
        assert_eq!(names(&cache), ["b:dev"]);
    }
}
