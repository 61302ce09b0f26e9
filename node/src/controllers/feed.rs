//! Turns the state machine's watch events into keys for the work queue: a
//! placement's own changes, its snapshots' and bindings' changes, member
//! cluster changes that can move a scheduling decision (or which override
//! rules match), changes of hub resources (envelopes included) a
//! placement's selectors may select, override changes (the override's own
//! key, for its snapshots) and override snapshot changes (the placements
//! they may concern).
//!
//! Staged update runs are woken by their own changes, by anything that
//! wakes their placement (its snapshots, bindings and Works), by their
//! approval requests and by MemberCluster changes that matter to every
//! placement (labels decide stages); evictions (one key for all) by a new
//! or changed eviction. A resync queues every unfinished run and the
//! evictions.
//!
//! The feed keeps soft state rebuilt at every resync: each placement's
//! resource selectors and whether its policy reads cluster properties;
//! each cluster's scheduling view, which it publishes to the
//! [`ClusterCache`] the steps schedule with (and compares to tell a
//! property-only change from one that matters to every placement); and
//! the override snapshots, decoded and indexed in the [`OverrideCache`]
//! the steps render with.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fleet_api::eviction::is_eviction_kind;
use fleet_api::kinds::{FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use fleet_api::overrides as overrides_api;
use fleet_api::placement::{
    self as placement_api, PlacementSpec, CLUSTER_RESOURCE_PLACEMENT, CLUSTER_RESOURCE_PLACEMENT_STATUS,
    RESOURCE_PLACEMENT,
};
use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::staged::{self as staged_api, CLUSTER_STAGED_UPDATE_RUN, STAGED_UPDATE_RUN};
use fleet_api::{binding, snapshot, Object, ObjectKey};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::overrides::OverrideIndex;
use fleet_raft::Consensus;
use fleet_statemachine::{Ended, EventType, HubMessage, ListQuery, Store, WatchEvent};

use super::clusters::ClusterCache;
use super::evictions::evictions_key;
use super::ocm::feed::OcmFeed;
use super::override_cache::OverrideCache;
use super::queue::WorkQueue;
use super::Caches;

/// What the feed remembers of a placement.
struct PlacementEntry {
    spec: PlacementSpec,
    reads_properties: bool,
}

/// What the feed remembers of a staged update run.
struct RunEntry {
    /// The placement it rolls out.
    placement: ObjectKey,
    /// Initialization failed, or it succeeded or was abandoned: nothing
    /// wakes it any more.
    finished: bool,
}

struct Feed {
    queue: Arc<WorkQueue<ObjectKey>>,
    placements: BTreeMap<ObjectKey, PlacementEntry>,
    runs: BTreeMap<ObjectKey, RunEntry>,
    /// The unfinished runs of each placement (an index of `runs`, so a
    /// Work event wakes its placement's runs without a scan of every run).
    runs_by_placement: BTreeMap<ObjectKey, BTreeSet<ObjectKey>>,
    clusters: Arc<ClusterCache>,
    /// The index the last cluster listing was read at: cluster events up to
    /// it are already in the cache (replaying them would step it back).
    clusters_listed_at: u64,
    overrides: Arc<OverrideCache>,
    /// The index each override snapshot kind was last listed at (as
    /// `clusters_listed_at`).
    overrides_listed_at: BTreeMap<&'static str, u64>,
    /// The OCM controllers' part.
    ocm: OcmFeed,
}

/// Follows the store's events for the whole leadership session.
pub async fn follow(consensus: Arc<Consensus>, queue: Arc<WorkQueue<ObjectKey>>, caches: Caches) {
    let store = consensus.store().clone();
    let mut feed = Feed {
        queue,
        placements: BTreeMap::new(),
        runs: BTreeMap::new(),
        runs_by_placement: BTreeMap::new(),
        clusters: caches.clusters,
        clusters_listed_at: 0,
        overrides: caches.overrides,
        overrides_listed_at: BTreeMap::new(),
        ocm: OcmFeed::default(),
    };
    loop {
        // Subscribe first, then list: nothing falls between the two.
        let from = store.applied_index();
        let mut subscription = match store.hub().subscribe(from) {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!("controller feed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(e) = feed.resync(&store) {
            tracing::warn!("controller resync failed: {e}");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            continue;
        }
        for event in subscription.backlog.drain(..) {
            feed.on_event(&event);
        }
        loop {
            match subscription.receiver.recv().await {
                Ok(HubMessage::Event(event)) => feed.on_event(&event),
                Ok(HubMessage::Reset { .. }) | Err(Ended::Lagged) => break,
                Err(Ended::Closed) => return,
            }
        }
        tracing::info!("controller feed fell behind or the state was replaced: resyncing");
    }
}

impl Feed {
    /// Rebuilds the soft state from the store (the override snapshots and
    /// clusters first) and queues every placement.
    fn resync(&mut self, store: &Store) -> Result<(), fleet_statemachine::Error> {
        let mut snapshots = Vec::new();
        self.overrides_listed_at.clear();
        for kind in [overrides_api::CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, overrides_api::RESOURCE_OVERRIDE_SNAPSHOT] {
            let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: kind.into(), ..Default::default() };
            let (objects, listed_at) = store.list(&query)?;
            snapshots.extend(objects);
            self.overrides_listed_at.insert(kind, listed_at);
        }
        self.overrides.replace_all(OverrideIndex::from_objects(&snapshots));
        let query = ListQuery { group: FLEET_CLUSTER_GROUP.into(), kind: "MemberCluster".into(), ..Default::default() };
        let (clusters, listed_at) = store.list(&query)?;
        let mut placements = Vec::new();
        for kind in [CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT] {
            let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: kind.into(), ..Default::default() };
            placements.extend(store.list(&query)?.0);
        }
        for cluster in &clusters {
            self.queue.add(super::profiles::profile_key(&cluster.metadata.name));
        }
        let query = ListQuery {
            group: fleet_api::cluster_profile::CLUSTER_INVENTORY_GROUP.into(),
            kind: fleet_api::cluster_profile::CLUSTER_PROFILE.into(),
            ..Default::default()
        };
        for profile in store.list(&query)?.0 {
            self.queue.add(ObjectKey::of(&profile));
        }
        self.clusters
            .replace_all(clusters.iter().map(|c| (c.metadata.name.clone(), ClusterInfo::from_member(c))).collect());
        self.clusters_listed_at = listed_at;
        self.placements.clear();
        for placement in placements {
            self.remember_placement(&placement);
            self.queue.add(ObjectKey::of(&placement));
        }
        for kind in [overrides_api::CLUSTER_RESOURCE_OVERRIDE, overrides_api::RESOURCE_OVERRIDE] {
            let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: kind.into(), ..Default::default() };
            for object in store.list(&query)?.0 {
                self.queue.add(ObjectKey::of(&object));
            }
        }
        self.runs.clear();
        self.runs_by_placement.clear();
        for kind in [CLUSTER_STAGED_UPDATE_RUN, STAGED_UPDATE_RUN] {
            let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: kind.into(), ..Default::default() };
            for run in store.list(&query)?.0 {
                self.on_run(&run);
            }
        }
        self.queue.add(evictions_key());
        self.ocm.resync(store, &self.queue)
    }

    /// Remembers a run and queues it unless it is finished.
    fn on_run(&mut self, run: &Object) {
        let key = ObjectKey::of(run);
        let placement_name = staged_api::run_spec_of(run).placement_name;
        let namespace = run.metadata.namespace.as_deref().unwrap_or("");
        let placement =
            ObjectKey::new(FLEET_PLACEMENT_GROUP, staged_api::placement_kind(&run.kind), namespace, &placement_name);
        let finished = fleet_placement::staged::is_finished(&staged_api::run_status_of(run));
        if !finished {
            self.queue.add(key.clone());
        }
        self.forget_run(&key);
        if !finished {
            self.runs_by_placement.entry(placement.clone()).or_default().insert(key.clone());
        }
        self.runs.insert(key, RunEntry { placement, finished });
    }

    /// Drops a run from the runs and their index.
    fn forget_run(&mut self, key: &ObjectKey) {
        let Some(old) = self.runs.remove(key) else { return };
        if let Some(runs) = self.runs_by_placement.get_mut(&old.placement) {
            runs.remove(key);
            if runs.is_empty() {
                self.runs_by_placement.remove(&old.placement);
            }
        }
    }

    /// Queues a placement (if known) and the unfinished runs rolling it out.
    fn wake_placement(&self, placement: &ObjectKey) {
        if self.placements.contains_key(placement) {
            self.queue.add(placement.clone());
        }
        for key in self.runs_by_placement.get(placement).into_iter().flatten() {
            self.queue.add(key.clone());
        }
    }

    /// Queues every unfinished run (a cluster joined, left or was relabelled).
    fn wake_runs(&self) {
        for (key, run) in &self.runs {
            if !run.finished {
                self.queue.add(key.clone());
            }
        }
    }

    /// Queues the run an approval request gates.
    fn on_approval_request(&self, request: &Object) {
        let run = staged_api::approval_spec_of(request).parent_stage_rollout;
        let kind =
            if request.kind == staged_api::APPROVAL_REQUEST { STAGED_UPDATE_RUN } else { CLUSTER_STAGED_UPDATE_RUN };
        let namespace = request.metadata.namespace.as_deref().unwrap_or("");
        self.queue.add(ObjectKey::new(FLEET_PLACEMENT_GROUP, kind, namespace, &run));
    }

    fn remember_placement(&mut self, placement: &Object) {
        let spec = placement_api::spec_of(placement);
        let reads_properties = policy_reads_properties(&spec);
        self.placements.insert(ObjectKey::of(placement), PlacementEntry { spec, reads_properties });
    }

    fn on_event(&mut self, event: &WatchEvent) {
        let object = &event.object;
        let group = event.key.group.as_str();
        let kind = event.key.kind.as_str();
        if self.ocm.on_event(event, &self.queue) {
            return;
        }
        if group == FLEET_PLACEMENT_GROUP && matches!(kind, CLUSTER_RESOURCE_PLACEMENT | RESOURCE_PLACEMENT) {
            if event.event_type == EventType::Deleted {
                self.placements.remove(&event.key);
            } else {
                self.remember_placement(object);
            }
            self.wake_placement(&event.key);
        } else if group == FLEET_PLACEMENT_GROUP && matches!(kind, CLUSTER_STAGED_UPDATE_RUN | STAGED_UPDATE_RUN) {
            if event.event_type == EventType::Deleted {
                self.forget_run(&event.key);
            } else {
                self.on_run(object);
            }
        } else if group == FLEET_PLACEMENT_GROUP && staged_api::is_approval_request(object) {
            self.on_approval_request(object);
        } else if group == FLEET_PLACEMENT_GROUP && is_eviction_kind(kind) {
            if event.event_type != EventType::Deleted {
                self.queue.add(evictions_key());
            }
        } else if group == FLEET_PLACEMENT_GROUP && overrides_api::is_override_kind(kind) {
            if event.event_type != EventType::Deleted {
                self.queue.add(event.key.clone());
            }
        } else if group == FLEET_PLACEMENT_GROUP && overrides_api::is_override_snapshot_kind(kind) {
            self.on_override_snapshot(event);
        } else if group == FLEET_PLACEMENT_GROUP && kind == CLUSTER_RESOURCE_PLACEMENT_STATUS {
            // A namespace-accessible placement's mirror, same name: one
            // changed or deleted by anyone but its placement is put back.
            self.wake_placement(&ObjectKey::new(
                FLEET_PLACEMENT_GROUP,
                CLUSTER_RESOURCE_PLACEMENT,
                "",
                &event.key.name,
            ));
        } else if group == FLEET_PLACEMENT_GROUP && kind == "Work" {
            if let Some(parent) = parent_of_work(object) {
                self.wake_placement(&parent);
            }
        } else if group == FLEET_PLACEMENT_GROUP && is_placement_child(kind) {
            if let Some(parent) = parent_of(object) {
                self.wake_placement(&parent);
            }
        } else if group == FLEET_CLUSTER_GROUP && kind == "MemberCluster" {
            self.on_cluster(event);
        } else if super::profiles::is_profile_key(&event.key) {
            // Someone else changed or deleted a profile: put it back.
            self.queue.add(event.key.clone());
        } else if !fleet_placement::selection::is_fleet_kind(group, kind) {
            // A CRD may change the scope of objects wrapped in any
            // placement's envelopes (EN-8); CRDs change rarely.
            let declares_scope = crate::admission::is_crd(group, kind);
            let keys: Vec<ObjectKey> = self
                .placements
                .iter()
                .filter(|(k, p)| declares_scope || may_select(k, &p.spec, &event.key))
                .map(|(k, _)| k.clone())
                .collect();
            for key in keys {
                self.queue.add(key);
            }
        }
    }

    /// A new, relabelled or deleted override snapshot may change what the
    /// placements it can concern render: the one it names, or every
    /// placement when it names none. The cache learns of it first.
    fn on_override_snapshot(&mut self, event: &WatchEvent) {
        let snapshot = &event.object;
        let listed_at = self.overrides_listed_at.get(event.key.kind.as_str()).copied().unwrap_or(0);
        if event.resource_version > listed_at {
            if event.event_type == EventType::Deleted {
                self.overrides.remove(&event.key);
            } else {
                self.overrides.upsert(snapshot);
            }
        }
        let reference = overrides_api::snapshot_spec_of(snapshot).override_spec.placement.map(|p| p.name);
        for key in self.placements.keys() {
            if reference.as_ref().is_none_or(|name| *name == key.name) {
                self.queue.add(key.clone());
            }
        }
    }

    fn on_cluster(&mut self, event: &WatchEvent) {
        self.queue.add(super::profiles::profile_key(&event.key.name));
        if event.resource_version <= self.clusters_listed_at {
            return;
        }
        let name = &event.key.name;
        // The cluster's namespaces before and after, when they changed.
        let mut namespaces_moved: Option<(ClusterInfo, ClusterInfo)> = None;
        let (everyone, properties_only) = if event.event_type == EventType::Deleted {
            self.clusters.remove(name);
            self.ocm.on_cluster(&self.queue, name, false);
            (true, false)
        } else {
            let view = ClusterInfo::from_member(&event.object);
            let everyone = |old: &ClusterInfo| {
                old.labels != view.labels
                    || old.taints != view.taints
                    || old.ineligible != view.ineligible
                    || old.leaving != view.leaving
            };
            let old = self.clusters.upsert(name, view.clone());
            if old.as_ref() != Some(&view) {
                self.ocm.on_cluster(&self.queue, name, old.is_none());
            }
            match old {
                None => (true, false),
                Some(old) if everyone(&old) => (true, false),
                Some(old) => {
                    let properties = old.properties != view.properties;
                    if old.namespaces != view.namespaces {
                        namespaces_moved = Some((old, view));
                    }
                    (false, properties)
                }
            }
        };
        // A ResourcePlacement wakes when its namespace appears on (or
        // leaves) the cluster.
        let namespace_moved = |namespace: &str| match &namespaces_moved {
            Some((before, now)) => {
                !namespace.is_empty() && before.has_namespace(namespace) != now.has_namespace(namespace)
            }
            None => false,
        };
        tracing::trace!(cluster = %name, everyone, properties_only, "cluster changed");
        for (key, placement) in &self.placements {
            if everyone || (properties_only && placement.reads_properties) || namespace_moved(&key.namespace) {
                self.queue.add(key.clone());
            }
        }
        if everyone {
            self.wake_runs();
        }
    }
}

/// Whether a policy's decisions depend on cluster properties (selectors or
/// sorters), so property changes must wake it.
fn policy_reads_properties(spec: &PlacementSpec) -> bool {
    let affinity = spec.policy.as_ref().and_then(|p| p.affinity.as_ref()).and_then(|a| a.cluster_affinity.as_ref());
    let Some(affinity) = affinity else { return false };
    let required = affinity.required_during_scheduling_ignored_during_execution.iter();
    let terms = required.flat_map(|r| r.cluster_selector_terms.iter());
    let preferred = affinity.preferred_during_scheduling_ignored_during_execution.iter().map(|p| &p.preference);
    terms.chain(preferred).any(|t| t.property_selector.is_some() || t.property_sorter.is_some())
}

fn is_placement_child(kind: &str) -> bool {
    matches!(
        kind,
        binding::CLUSTER_RESOURCE_BINDING
            | binding::RESOURCE_BINDING
            | snapshot::CLUSTER_RESOURCE_SNAPSHOT
            | snapshot::RESOURCE_SNAPSHOT
            | snapshot::CLUSTER_SCHEDULING_POLICY_SNAPSHOT
            | snapshot::SCHEDULING_POLICY_SNAPSHOT
    )
}

/// The key of the placement a snapshot or binding belongs to.
fn parent_of(child: &Object) -> Option<ObjectKey> {
    let name = child.metadata.labels.get(PARENT_PLACEMENT_LABEL)?;
    match child.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => Some(ObjectKey::new(FLEET_PLACEMENT_GROUP, RESOURCE_PLACEMENT, ns, name)),
        _ => Some(ObjectKey::new(FLEET_PLACEMENT_GROUP, CLUSTER_RESOURCE_PLACEMENT, "", name)),
    }
}

/// The key of the placement a Work was rendered for (Works live in the
/// member's namespace; an RP's carry its namespace in a label).
fn parent_of_work(work: &Object) -> Option<ObjectKey> {
    let name = work.metadata.labels.get(PARENT_PLACEMENT_LABEL)?;
    match work.metadata.labels.get(fleet_placement::works::PARENT_NAMESPACE_LABEL) {
        Some(ns) => Some(ObjectKey::new(FLEET_PLACEMENT_GROUP, RESOURCE_PLACEMENT, ns, name)),
        None => Some(ObjectKey::new(FLEET_PLACEMENT_GROUP, CLUSTER_RESOURCE_PLACEMENT, "", name)),
    }
}

/// Whether a change of the object at `key` may change what the placement at
/// `placement` selects (cheap over-approximation; the reconcile decides).
fn may_select(placement: &ObjectKey, spec: &PlacementSpec, key: &ObjectKey) -> bool {
    let namespaced_placement = placement.kind == RESOURCE_PLACEMENT;
    if namespaced_placement && key.namespace != placement.namespace {
        return false;
    }
    spec.resource_selectors.iter().any(|s| {
        let same_kind = s.group == key.group && s.kind == key.kind;
        let brings_contents = !namespaced_placement
            && s.group.is_empty()
            && s.kind == "Namespace"
            && !key.namespace.is_empty()
            && s.selection_scope.as_deref().is_none_or(|scope| scope == placement_api::NAMESPACE_WITH_RESOURCES);
        same_kind || brings_contents
    })
}

#[cfg(test)]
mod tests;
