//! Which OCM keys a store change wakes (called by the controllers' feed):
//!
//! - a Placement: its own changes; any cluster change (labels, properties,
//!   taints, health: the cluster cache already compares); any
//!   ManagedClusterSet or AddOnPlacementScore change; a binding change in
//!   its namespace; any PlacementDecision change (other placements' pages
//!   move Balance scores, its own pages must stay as decided);
//! - a ManifestWork: its own changes, its mirrored Works' changes (agent
//!   reports), and its cluster joining;
//! - a ManifestWorkReplicaSet: its own changes, the pages and existence of
//!   the Placements it names, and changes of its ManifestWorks.
//!
//! Soft state, rebuilt at every resync: the Placements, the ManifestWorks
//! by namespace, and each replica set's placement names.

use std::collections::{BTreeMap, BTreeSet};

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::ocm::clusterset::{BINDING_KIND, SET_KIND};
use fleet_api::ocm::decision::{self, PLACEMENT_LABEL};
use fleet_api::ocm::{addon_score, manifestwork, placement, replicaset, CLUSTER_GROUP, WORK_GROUP};
use fleet_api::{Object, ObjectKey};
use fleet_placement::ocm::delivery::MANIFESTWORK_LABEL;
use fleet_statemachine::{EventType, ListQuery, Store, WatchEvent};

use super::replicaset::REPLICASET_LABEL;
use crate::controllers::queue::WorkQueue;

/// The OCM part of the feed's soft state.
#[derive(Default)]
pub struct OcmFeed {
    placements: BTreeSet<ObjectKey>,
    manifest_works: BTreeSet<ObjectKey>,
    /// Each replica set's placement names.
    replica_sets: BTreeMap<ObjectKey, Vec<String>>,
}

impl OcmFeed {
    /// Rebuilds the soft state from the store and queues every OCM key.
    pub fn resync(&mut self, store: &Store, queue: &WorkQueue<ObjectKey>) -> Result<(), fleet_statemachine::Error> {
        *self = OcmFeed::default();
        let kinds =
            [(CLUSTER_GROUP, placement::KIND), (WORK_GROUP, manifestwork::KIND), (WORK_GROUP, replicaset::KIND)];
        for (group, kind) in kinds {
            let query = ListQuery { group: group.into(), kind: kind.into(), namespace: None, selector: None };
            for object in store.list(&query)?.0 {
                self.remember(&object);
                queue.add(ObjectKey::of(&object));
            }
        }
        Ok(())
    }

    fn remember(&mut self, object: &Object) {
        let key = ObjectKey::of(object);
        match (key.group.as_str(), key.kind.as_str()) {
            (CLUSTER_GROUP, placement::KIND) => {
                self.placements.insert(key);
            }
            (WORK_GROUP, manifestwork::KIND) => {
                self.manifest_works.insert(key);
            }
            (WORK_GROUP, replicaset::KIND) => {
                let names = replicaset::spec_of(object).placement_refs.into_iter().map(|r| r.name).collect();
                self.replica_sets.insert(key, names);
            }
            _ => {}
        }
    }

    fn forget(&mut self, key: &ObjectKey) {
        self.placements.remove(key);
        self.manifest_works.remove(key);
        self.replica_sets.remove(key);
    }

    /// Queues every Placement (in `namespace`, if given).
    fn wake_placements(&self, queue: &WorkQueue<ObjectKey>, namespace: Option<&str>) {
        for key in self.placements.iter().filter(|k| namespace.is_none_or(|ns| k.namespace == ns)) {
            queue.add(key.clone());
        }
    }

    /// Queues the replica sets naming the Placement `name` of `namespace`.
    fn wake_replica_sets(&self, queue: &WorkQueue<ObjectKey>, namespace: &str, name: &str) {
        for (key, names) in &self.replica_sets {
            if key.namespace == namespace && names.iter().any(|n| n == name) {
                queue.add(key.clone());
            }
        }
    }

    /// A cluster was added, changed in a way scheduling may see, or deleted.
    pub fn on_cluster(&self, queue: &WorkQueue<ObjectKey>, name: &str, added: bool) {
        self.wake_placements(queue, None);
        if added {
            for key in self.manifest_works.iter().filter(|k| k.namespace == name) {
                queue.add(key.clone());
            }
        }
    }

    /// Handles an event of an OCM kind or of a mirrored Work; returns whether it was one.
    pub fn on_event(&mut self, event: &WatchEvent, queue: &WorkQueue<ObjectKey>) -> bool {
        let key = &event.key;
        let object = &event.object;
        let deleted = event.event_type == EventType::Deleted;
        match (key.group.as_str(), key.kind.as_str()) {
            (CLUSTER_GROUP, placement::KIND) => {
                if deleted {
                    self.forget(key);
                } else {
                    self.remember(object);
                    queue.add(key.clone());
                }
                self.wake_replica_sets(queue, &key.namespace, &key.name);
            }
            (CLUSTER_GROUP, decision::KIND) => {
                self.wake_placements(queue, None);
                if let Some(placement) = object.metadata.labels.get(PLACEMENT_LABEL) {
                    self.wake_replica_sets(queue, &key.namespace, placement);
                }
            }
            (CLUSTER_GROUP, SET_KIND | addon_score::KIND) => self.wake_placements(queue, None),
            (CLUSTER_GROUP, BINDING_KIND) => self.wake_placements(queue, Some(&key.namespace)),
            (WORK_GROUP, manifestwork::KIND | replicaset::KIND) => {
                if deleted {
                    self.forget(key);
                } else {
                    self.remember(object);
                    queue.add(key.clone());
                }
                if let Some((namespace, name)) =
                    object.metadata.labels.get(REPLICASET_LABEL).and_then(|id| id.split_once('.'))
                {
                    queue.add(ObjectKey::new(WORK_GROUP, replicaset::KIND, namespace, name));
                }
            }
            (FLEET_PLACEMENT_GROUP, "Work") => {
                let Some(name) = object.metadata.labels.get(MANIFESTWORK_LABEL) else { return false };
                let Some(cluster) = key.namespace.strip_prefix("fleet-member-") else { return false };
                queue.add(ObjectKey::new(WORK_GROUP, manifestwork::KIND, cluster, name));
            }
            (CLUSTER_GROUP, _) | (WORK_GROUP, _) => {}
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn event(event_type: EventType, object: serde_json::Value) -> WatchEvent {
        let object: Object = serde_json::from_value(object).unwrap();
        WatchEvent {
            event_type,
            key: ObjectKey::of(&object),
            object: Arc::new(object),
            resource_version: 1,
            size: 0,
            previous: None,
        }
    }

    async fn drain(queue: &WorkQueue<ObjectKey>) -> Vec<String> {
        let mut keys = Vec::new();
        while !queue.is_empty() {
            let key = queue.next().await;
            queue.done(&key);
            keys.push(format!("{}/{}/{}", key.kind, key.namespace, key.name));
        }
        keys.sort();
        keys
    }

    #[tokio::test]
    async fn changes_wake_the_placements_replica_sets_and_manifestworks_they_concern() {
        let queue = WorkQueue::new();
        let mut feed = OcmFeed::default();
        let placement = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p", "namespace": "ns1"}});
        let other = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "q", "namespace": "ns2"}});
        let mwrs = json!({"apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": "web", "namespace": "ns1"}, "spec": {"placementRefs": [{"name": "p"}]}});
        let mw = json!({"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "web", "namespace": "east", "labels": {REPLICASET_LABEL: "ns1.web"}}});
        for o in [&placement, &other, &mwrs, &mw] {
            assert!(feed.on_event(&event(EventType::Added, o.clone()), &queue));
        }
        assert_eq!(
            drain(&queue).await,
            ["ManifestWork/east/web", "ManifestWorkReplicaSet/ns1/web", "Placement/ns1/p", "Placement/ns2/q"]
        );

        let binding = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "prod", "namespace": "ns2"}, "spec": {"clusterSet": "prod"}});
        feed.on_event(&event(EventType::Added, binding), &queue);
        assert_eq!(drain(&queue).await, ["Placement/ns2/q"], "bindings wake their namespace");

        let page = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
            "metadata": {"name": "p-decision-1", "namespace": "ns1", "labels": {PLACEMENT_LABEL: "p"}}});
        feed.on_event(&event(EventType::Modified, page), &queue);
        assert_eq!(
            drain(&queue).await,
            ["ManifestWorkReplicaSet/ns1/web", "Placement/ns1/p", "Placement/ns2/q"],
            "pages move Balance everywhere and the rollouts of their placement"
        );

        let work = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "mw.web", "namespace": "fleet-member-east", "labels": {MANIFESTWORK_LABEL: "web"}}});
        assert!(feed.on_event(&event(EventType::Modified, work), &queue));
        assert_eq!(drain(&queue).await, ["ManifestWork/east/web"]);
        let plain = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "crp-work", "namespace": "fleet-member-east"}});
        assert!(!feed.on_event(&event(EventType::Modified, plain), &queue), "left to the placement feed");

        feed.on_cluster(&queue, "east", true);
        assert_eq!(drain(&queue).await, ["ManifestWork/east/web", "Placement/ns1/p", "Placement/ns2/q"]);
    }
}
