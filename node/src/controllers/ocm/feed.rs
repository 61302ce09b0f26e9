//! Which OCM keys a store change wakes (called by the controllers' feed):
//!
//! - a Placement: its own changes; any cluster change (labels, properties,
//!   taints, health: the cluster cache already compares); any
//!   ManagedClusterSet or AddOnPlacementScore change; a binding change in
//!   its namespace; a change of its own PlacementDecision pages (they must
//!   stay as decided); and, only when its prioritizers weight `Balance`
//!   (Additive mode's default does), a change of the clusters another
//!   placement's pages decide: Balance scores count those decisions, and
//!   the status reports every candidate's scores, so they move with them
//!   even when the choice does not. A page write that leaves its decided
//!   clusters as they were (a label change, an empty page created or
//!   deleted) wakes only its owner;
//! - a ManifestWork: its own changes, its mirrored Works' changes (agent
//!   reports), and its cluster joining;
//! - a ManifestWorkReplicaSet: its own changes, the pages and existence of
//!   the Placements it names, changes of its ManifestWorks, and, when its
//!   template names a cluster's variables, any cluster change;
//! - a ManagedClusterSet: its own changes and any cluster change (its
//!   `ClusterSetEmpty` counts members);
//! - a ManagedClusterSetBinding: its own changes and the creation,
//!   change or deletion of the set it names;
//! - the managed-namespaces key: any set or cluster change, and any change
//!   to one of the Works it keeps.
//!
//! Soft state, rebuilt at every resync: the Placements (and whether each
//! reads Balance), a digest of each page's decided clusters, the
//! ManifestWorks by namespace, and each replica set's placement names.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::ocm::clusterset::{BINDING_KIND, SET_KIND};
use fleet_api::ocm::decision::{self, PLACEMENT_LABEL};
use fleet_api::ocm::{addon_score, manifestwork, placement, replicaset, CLUSTER_GROUP, WORK_GROUP};
use fleet_api::{Object, ObjectKey};
use fleet_placement::ocm::delivery::MANIFESTWORK_LABEL;
use fleet_placement::ocm::set_status::MANAGED_NAMESPACES_LABEL;
use fleet_placement::ocm::{decided_clusters, weighted, Prioritizer};
use fleet_statemachine::{EventType, ListQuery, Store, WatchEvent};

use super::clusterset::managed_namespaces_key;
use super::replicaset::REPLICASET_LABEL;
use super::template_variables::uses_variables;
use crate::controllers::queue::WorkQueue;

/// The OCM part of the feed's soft state.
#[derive(Default)]
pub struct OcmFeed {
    /// Each Placement, and whether its prioritizers weight Balance (so
    /// other placements' decisions move its scores).
    placements: BTreeMap<ObjectKey, bool>,
    /// A digest of each PlacementDecision page's decided clusters (as a
    /// multiset), to tell a change of decisions from any other write.
    pages: BTreeMap<ObjectKey, u64>,
    manifest_works: BTreeSet<ObjectKey>,
    /// Each replica set's placement names, and whether it reads clusters.
    replica_sets: BTreeMap<ObjectKey, ReplicaSetRefs>,
    /// The ManagedClusterSets.
    sets: BTreeSet<ObjectKey>,
    /// The ManagedClusterSetBindings.
    bindings: BTreeSet<ObjectKey>,
}

impl OcmFeed {
    /// Rebuilds the soft state from the store and queues every OCM key.
    pub fn resync(&mut self, store: &Store, queue: &WorkQueue<ObjectKey>) -> Result<(), fleet_statemachine::Error> {
        *self = OcmFeed::default();
        let kinds = [
            (CLUSTER_GROUP, placement::KIND),
            (WORK_GROUP, manifestwork::KIND),
            (WORK_GROUP, replicaset::KIND),
            (CLUSTER_GROUP, SET_KIND),
            (CLUSTER_GROUP, BINDING_KIND),
        ];
        for (group, kind) in kinds {
            let query = ListQuery { group: group.into(), kind: kind.into(), namespace: None, selector: None };
            for object in store.list(&query)?.0 {
                self.remember(&object);
                queue.add(ObjectKey::of(&object));
            }
        }
        let query = ListQuery { group: CLUSTER_GROUP.into(), kind: decision::KIND.into(), ..Default::default() };
        for page in store.list(&query)?.0 {
            self.pages.insert(ObjectKey::of(&page), decisions_digest(&page));
        }
        queue.add(managed_namespaces_key());
        Ok(())
    }

    fn remember(&mut self, object: &Object) {
        let key = ObjectKey::of(object);
        match (key.group.as_str(), key.kind.as_str()) {
            (CLUSTER_GROUP, placement::KIND) => {
                self.placements.insert(key, reads_balance(object));
            }
            (WORK_GROUP, manifestwork::KIND) => {
                self.manifest_works.insert(key);
            }
            (WORK_GROUP, replicaset::KIND) => {
                let spec = replicaset::spec_of(object);
                let uses_variables = uses_variables(&fleet_api::typed::encode(&spec.manifest_work_template));
                let placements = spec.placement_refs.into_iter().map(|r| r.name).collect();
                self.replica_sets.insert(key, ReplicaSetRefs { placements, uses_variables });
            }
            (CLUSTER_GROUP, SET_KIND) => {
                self.sets.insert(key);
            }
            (CLUSTER_GROUP, BINDING_KIND) => {
                self.bindings.insert(key);
            }
            _ => {}
        }
    }

    fn forget(&mut self, key: &ObjectKey) {
        self.placements.remove(key);
        self.manifest_works.remove(key);
        self.replica_sets.remove(key);
        self.sets.remove(key);
        self.bindings.remove(key);
    }

    /// Remembers (or forgets) an object this controller reconciles and
    /// queues it unless deleted.
    fn on_own(&mut self, event: &WatchEvent, queue: &WorkQueue<ObjectKey>) {
        if event.event_type == EventType::Deleted {
            self.forget(&event.key);
        } else {
            self.remember(&event.object);
            queue.add(event.key.clone());
        }
    }

    /// Queues every Placement (in `namespace`, if given).
    fn wake_placements(&self, queue: &WorkQueue<ObjectKey>, namespace: Option<&str>) {
        for key in self.placements.keys().filter(|k| namespace.is_none_or(|ns| k.namespace == ns)) {
            queue.add(key.clone());
        }
    }

    /// A PlacementDecision page was written or deleted: queues the
    /// Placement it belongs to (by label, before and after, and by owner
    /// reference) and the replica sets naming it; and, when the clusters it
    /// decides changed, every other Placement that reads Balance.
    fn on_page(&mut self, event: &WatchEvent, queue: &WorkQueue<ObjectKey>) {
        let key = &event.key;
        let page = &event.object;
        let digest = decisions_digest(page);
        let before = if event.event_type == EventType::Deleted {
            self.pages.remove(key)
        } else {
            self.pages.insert(key.clone(), digest)
        };
        let empty = decisions_digest_of(Vec::new());
        let decisions_moved = match event.event_type {
            EventType::Deleted => before.unwrap_or(digest) != empty,
            _ => before.unwrap_or(empty) != digest,
        };
        let mut owners: BTreeSet<&str> = BTreeSet::new();
        owners.extend(page.metadata.labels.get(PLACEMENT_LABEL).map(String::as_str));
        if let Some(previous) = &event.previous {
            owners.extend(previous.metadata.labels.get(PLACEMENT_LABEL).map(String::as_str));
        }
        let owned = page.metadata.owner_references.iter().filter(|r| r.kind == placement::KIND);
        owners.extend(owned.map(|r| r.name.as_str()));
        for owner in &owners {
            let placement = ObjectKey::new(CLUSTER_GROUP, placement::KIND, &key.namespace, owner);
            if self.placements.contains_key(&placement) {
                queue.add(placement);
            }
            self.wake_replica_sets(queue, &key.namespace, owner);
        }
        if decisions_moved {
            for (placement, reads_balance) in &self.placements {
                if *reads_balance {
                    queue.add(placement.clone());
                }
            }
        }
    }

    /// Queues the replica sets naming the Placement `name` of `namespace`.
    fn wake_replica_sets(&self, queue: &WorkQueue<ObjectKey>, namespace: &str, name: &str) {
        for (key, refs) in &self.replica_sets {
            if key.namespace == namespace && refs.placements.iter().any(|n| n == name) {
                queue.add(key.clone());
            }
        }
    }

    /// A cluster was added, changed in a way scheduling may see, or deleted.
    pub fn on_cluster(&self, queue: &WorkQueue<ObjectKey>, name: &str, added: bool) {
        self.wake_placements(queue, None);
        for key in &self.sets {
            queue.add(key.clone());
        }
        queue.add(managed_namespaces_key());
        for (key, _) in self.replica_sets.iter().filter(|(_, refs)| refs.uses_variables) {
            queue.add(key.clone());
        }
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
            (CLUSTER_GROUP, decision::KIND) => self.on_page(event, queue),
            (CLUSTER_GROUP, addon_score::KIND) => self.wake_placements(queue, None),
            (CLUSTER_GROUP, SET_KIND) => {
                self.on_own(event, queue);
                self.wake_placements(queue, None);
                // Bindings are named after their set.
                for binding in self.bindings.iter().filter(|b| b.name == key.name) {
                    queue.add(binding.clone());
                }
                queue.add(managed_namespaces_key());
            }
            (CLUSTER_GROUP, BINDING_KIND) => {
                self.on_own(event, queue);
                self.wake_placements(queue, Some(&key.namespace));
            }
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
            (FLEET_PLACEMENT_GROUP, "Work") if object.metadata.labels.contains_key(MANAGED_NAMESPACES_LABEL) => {
                queue.add(managed_namespaces_key());
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

/// What a replica set's wake-ups depend on.
#[derive(Debug)]
struct ReplicaSetRefs {
    /// The Placements it names.
    placements: Vec<String>,
    /// Whether its template names a cluster's variables (a cluster's
    /// labels change what it gets).
    uses_variables: bool,
}

/// Whether the Placement's prioritizers weight Balance (which scores by
/// other placements' decisions).
fn reads_balance(object: &Object) -> bool {
    let spec = placement::spec_of(object);
    weighted(spec.prioritizer_policy.as_ref()).0.iter().any(|w| w.prioritizer == Prioritizer::Balance)
}

/// A digest of the clusters a page decides, as a multiset (Balance counts
/// decisions per cluster; their order does not matter to it).
fn decisions_digest(page: &Object) -> u64 {
    decisions_digest_of(decided_clusters([page]))
}

fn decisions_digest_of(mut clusters: Vec<String>) -> u64 {
    clusters.sort_unstable();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    clusters.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fleet_placement::ocm::DecisionCounts;
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn event(event_type: EventType, object: serde_json::Value) -> WatchEvent {
        event_of(event_type, serde_json::from_value(object).unwrap())
    }

    fn event_of(event_type: EventType, object: Object) -> WatchEvent {
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
        assert_eq!(
            drain(&queue).await,
            ["ManagedClusterSetBinding/ns2/prod", "Placement/ns2/q"],
            "bindings wake their namespace"
        );

        let page = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
            "metadata": {"name": "p-decision-1", "namespace": "ns1", "labels": {PLACEMENT_LABEL: "p"}}});
        feed.on_event(&event(EventType::Added, page.clone()), &queue);
        assert_eq!(
            drain(&queue).await,
            ["ManifestWorkReplicaSet/ns1/web", "Placement/ns1/p"],
            "an empty page moves no Balance count: its placement and rollouts only"
        );
        let mut decided = page.clone();
        decided["status"] = json!({"decisions": [{"clusterName": "east", "reason": ""}]});
        feed.on_event(&event(EventType::Modified, decided.clone()), &queue);
        assert_eq!(
            drain(&queue).await,
            ["ManifestWorkReplicaSet/ns1/web", "Placement/ns1/p", "Placement/ns2/q"],
            "decisions move Balance for every placement that weights it (Additive's default)"
        );
        decided["metadata"]["labels"]["extra"] = json!("x");
        feed.on_event(&event(EventType::Modified, decided.clone()), &queue);
        assert_eq!(drain(&queue).await, ["ManifestWorkReplicaSet/ns1/web", "Placement/ns1/p"], "same decisions");
        let exact = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "q", "namespace": "ns2"}, "spec": {"prioritizerPolicy": {"mode": "Exact"}}});
        feed.on_event(&event(EventType::Modified, exact), &queue);
        drain(&queue).await;
        feed.on_event(&event(EventType::Deleted, decided), &queue);
        assert_eq!(
            drain(&queue).await,
            ["ManifestWorkReplicaSet/ns1/web", "Placement/ns1/p"],
            "an Exact placement without Balance is not woken by others' decisions"
        );

        let work = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "mw.web", "namespace": "fleet-member-east", "labels": {MANIFESTWORK_LABEL: "web"}}});
        assert!(feed.on_event(&event(EventType::Modified, work), &queue));
        assert_eq!(drain(&queue).await, ["ManifestWork/east/web"]);
        let plain = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "crp-work", "namespace": "fleet-member-east"}});
        assert!(!feed.on_event(&event(EventType::Modified, plain), &queue), "left to the placement feed");

        feed.on_cluster(&queue, "east", true);
        assert_eq!(
            drain(&queue).await,
            ["ManagedClusterSet//", "ManifestWork/east/web", "Placement/ns1/p", "Placement/ns2/q"]
        );

        // A replica set whose template names a cluster's labels: any cluster change.
        let labelled = json!({"apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": "per-cluster", "namespace": "ns1"},
            "spec": {"placementRefs": [{"name": "p"}], "manifestWorkTemplate": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${MEMBER-CLUSTER-NAME}", "namespace": "default"}}]}}}});
        feed.on_event(&event(EventType::Added, labelled), &queue);
        drain(&queue).await;
        feed.on_cluster(&queue, "east", false);
        assert_eq!(
            drain(&queue).await,
            ["ManagedClusterSet//", "ManifestWorkReplicaSet/ns1/per-cluster", "Placement/ns1/p", "Placement/ns2/q"]
        );
    }

    #[tokio::test]
    async fn sets_and_bindings_wake_each_other_and_clusters_wake_every_set() {
        let queue = WorkQueue::new();
        let mut feed = OcmFeed::default();
        let set = json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
            "metadata": {"name": "prod"}});
        let binding = |ns: &str, name: &str| {
            json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding", "metadata": {"name": name, "namespace": ns}, "spec": {"clusterSet": name}})
        };
        for b in [binding("ns1", "prod"), binding("ns2", "prod"), binding("ns1", "dev")] {
            assert!(feed.on_event(&event(EventType::Added, b), &queue));
        }
        assert_eq!(
            drain(&queue).await,
            [
                "ManagedClusterSetBinding/ns1/dev",
                "ManagedClusterSetBinding/ns1/prod",
                "ManagedClusterSetBinding/ns2/prod"
            ]
        );
        feed.on_event(&event(EventType::Added, set.clone()), &queue);
        assert_eq!(
            drain(&queue).await,
            [
                "ManagedClusterSet//",
                "ManagedClusterSet//prod",
                "ManagedClusterSetBinding/ns1/prod",
                "ManagedClusterSetBinding/ns2/prod"
            ],
            "the set, the bindings naming it, the managed namespaces"
        );
        feed.on_cluster(&queue, "east", false);
        assert_eq!(drain(&queue).await, ["ManagedClusterSet//", "ManagedClusterSet//prod"]);
        feed.on_event(&event(EventType::Deleted, set), &queue);
        assert_eq!(
            drain(&queue).await,
            ["ManagedClusterSet//", "ManagedClusterSetBinding/ns1/prod", "ManagedClusterSetBinding/ns2/prod"],
            "a deleted set is not reconciled; its bindings are"
        );
        feed.on_cluster(&queue, "east", false);
        assert_eq!(drain(&queue).await, ["ManagedClusterSet//"], "forgotten");
        let work = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "mcs.managed-namespaces", "namespace": "fleet-member-east",
                "labels": {MANAGED_NAMESPACES_LABEL: "true"}}});
        assert!(feed.on_event(&event(EventType::Deleted, work), &queue));
        assert_eq!(drain(&queue).await, ["ManagedClusterSet//"], "a removed managed-namespaces Work is put back");
    }

    fn placement_object(name: &str, namespace: &str, exact: bool) -> Object {
        let policy = if exact { json!({"mode": "Exact"}) } else { json!({}) };
        serde_json::from_value(json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"prioritizerPolicy": policy}}))
        .unwrap()
    }

    fn page_object(placement: &str, number: u8, clusters: &[u8]) -> Object {
        let decisions: Vec<_> =
            clusters.iter().map(|c| json!({"clusterName": format!("c{c}"), "reason": ""})).collect();
        serde_json::from_value(
            json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
            "metadata": {"name": format!("{placement}-decision-{number}"), "namespace": "ns",
                "labels": {PLACEMENT_LABEL: placement}},
            "status": {"decisions": decisions}}),
        )
        .unwrap()
    }

    fn queued(queue: &WorkQueue<ObjectKey>) -> BTreeSet<ObjectKey> {
        let mut keys = BTreeSet::new();
        while !queue.is_empty() {
            let key = futures::executor::block_on(queue.next());
            queue.done(&key);
            keys.insert(key);
        }
        keys
    }

    proptest! {
        /// After any sequence of page writes and deletes, the page digests
        /// agree with a full list of the pages; each event wakes its
        /// placement, and every other placement whose Balance counts (as
        /// the scheduler computes them from a full list) it changed, unless
        /// that placement does not weight Balance.
        #[test]
        fn page_events_wake_every_placement_whose_counts_moved(
            steps in prop::collection::vec((0u8..3, 1u8..3, prop::collection::vec(0u8..4, 0..3), any::<bool>()), 1..30)
        ) {
            let queue = WorkQueue::new();
            let mut feed = OcmFeed::default();
            let names = ["p0", "p1", "p2"];
            for (i, name) in names.iter().enumerate() {
                feed.on_event(&event_of(EventType::Added, placement_object(name, "ns", i == 2)), &queue);
            }
            queued(&queue);
            let mut stored: BTreeMap<ObjectKey, Object> = BTreeMap::new();
            for (owner, number, clusters, delete) in steps {
                let page = page_object(names[usize::from(owner)], number, &clusters);
                let key = ObjectKey::of(&page);
                let before: Vec<Object> = stored.values().cloned().collect();
                let event_type = if delete {
                    let Some(last) = stored.remove(&key) else { continue };
                    feed.on_event(&event_of(EventType::Deleted, last), &queue);
                    EventType::Deleted
                } else {
                    let event_type = if stored.contains_key(&key) { EventType::Modified } else { EventType::Added };
                    stored.insert(key.clone(), page.clone());
                    feed.on_event(&event_of(event_type, page), &queue);
                    event_type
                };
                let after: Vec<Object> = stored.values().cloned().collect();
                let woken = queued(&queue);
                for (i, name) in names.iter().enumerate() {
                    let placement = ObjectKey::new(CLUSTER_GROUP, placement::KIND, "ns", name);
                    let moved = DecisionCounts::from_pages(&before, "ns", name) != DecisionCounts::from_pages(&after, "ns", name);
                    let own = usize::from(owner) == i;
                    prop_assert_eq!(woken.contains(&placement), own || (moved && i != 2),
                        "{:?} of {} woke {:?}", event_type, key, woken);
                }
                let listed: BTreeMap<ObjectKey, u64> = stored.iter().map(|(k, p)| (k.clone(), decisions_digest(p))).collect();
                prop_assert_eq!(&feed.pages, &listed);
            }
        }
    }
}
