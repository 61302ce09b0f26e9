//! The placement controller's reconcile: for one ClusterResourcePlacement or
//! ResourcePlacement, the next atomic step that brings the store closer to
//! what the `placement` crate says it should be, in this order:
//!
//! 1. policy snapshots (a new one when the policy changed; the
//!    number-of-clusters annotation when only the count changed);
//! 2. resource snapshots (a new group when the selected content changed;
//!    history pruned);
//! 3. scheduling: binding creates/updates/unschedules, the policy snapshot's
//!    status and the placement's `Scheduled` condition and per-cluster
//!    entries.
//!
//! Each step is one command carrying, besides its writes, a `Check` of every
//! object it read and does not write (the placement, the policy snapshot), so
//! a step computed on a stale view is refused whole and recomputed.

use fleet_api::binding::{self, ClusterDecision, STATE_SCHEDULED, STATE_UNSCHEDULED};
use fleet_api::conditions::{find, set_condition, Condition};
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::placement::{
    self as placement_api, scheduled_condition_type, PerClusterStatus, PlacementStatus, PER_CLUSTER_SCHEDULED,
    PICK_FIXED,
};
use fleet_api::snapshot::{
    self as snapshot_api, CONDITION_SCHEDULED, PARENT_PLACEMENT_LABEL, REASON_FULFILLED, REASON_UNFULFILLED,
};
use fleet_api::{Object, ObjectKey, ObjectMeta, OwnerReference};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::scheduler::{self, BindingAction, ExistingBinding, SchedulingOutcome, SchedulingRequest};
use fleet_placement::selection;
use fleet_placement::snapshot::{self, SnapshotChange};
use fleet_statemachine::{Op, Store};
use sha2::{Digest, Sha256};

use super::events::EventNote;
use super::view::{self, StoreSource};
use super::ControllerError;

/// The message of a fulfilled `Scheduled` condition.
const FULFILLED_MESSAGE: &str = "found all the clusters needed as specified by the scheduling policy";

/// One atomic step of a placement's reconcile.
pub struct Step {
    /// The command's ops (writes and checks).
    pub ops: Vec<Op>,
    /// What to record about the placement once the step committed.
    pub events: Vec<EventNote>,
    /// The placement as read (the events' involved object).
    pub placement: Object,
}

/// The next step for the placement at `key`, or `None` when it is up to date
/// (or gone).
pub fn next_step(store: &Store, key: &ObjectKey, now: &str) -> Result<Option<Step>, ControllerError> {
    let Some(placement) = store.get(key)?.0 else { return Ok(None) };
    if placement.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let guard = check(&placement);
    let (resource_kind, policy_kind) = snapshot_api::snapshot_kinds(&placement.kind);

    let policy_snapshots = view::children(store, &placement, policy_kind)?;
    let changes = snapshot::plan_policy_snapshots(&placement, &policy_snapshots);
    if !changes.is_empty() {
        let events = created_names(&changes)
            .map(|n| EventNote::normal("PolicySnapshotCreated", format!("created scheduling policy snapshot {n}")))
            .collect();
        return Ok(Some(Step { ops: with_guard(guard, changes), events, placement }));
    }

    let spec = placement_api::spec_of(&placement);
    let source = StoreSource::new(store);
    let selected =
        selection::select_resources(&placement.kind, placement.metadata.namespace.as_deref(), &spec, &source);
    source.finish()?;
    let resource_snapshots = view::children(store, &placement, resource_kind)?;
    let changes = snapshot::plan_resource_snapshots(&placement, &resource_snapshots, &selected);
    if !changes.is_empty() {
        let count = selected.len();
        let mut events: Vec<EventNote> = created_names(&changes)
            .filter(|n| n.ends_with("-snapshot"))
            .map(|n| {
                EventNote::normal(
                    "ResourceSnapshotCreated",
                    format!("created resource snapshot {n} ({count} resources)"),
                )
            })
            .collect();
        if count == 0 {
            events.push(EventNote::warning("NoResourcesSelected", "the resource selectors match no resources"));
        }
        return Ok(Some(Step { ops: with_guard(guard, changes), events, placement }));
    }

    let Some(policy_snapshot) = snapshot::latest_policy_snapshot(&policy_snapshots) else { return Ok(None) };
    let resource_index = snapshot::latest_resource_index(&resource_snapshots);
    schedule_step(store, placement, policy_snapshot, &selected, resource_index, now)
}

/// Step 3: scheduling against the latest policy snapshot.
fn schedule_step(
    store: &Store,
    placement: Object,
    policy_snapshot: &Object,
    selected: &[Object],
    resource_index: Option<u64>,
    now: &str,
) -> Result<Option<Step>, ControllerError> {
    let clusters: Vec<ClusterInfo> = view::member_clusters(store)?.iter().map(ClusterInfo::from_member).collect();
    let binding_kind = binding::binding_kind(&placement.kind);
    let bindings = view::children(store, &placement, binding_kind)?;
    let existing: Vec<ExistingBinding> = bindings.iter().map(existing_binding).collect();
    let policy = snapshot_api::policy_spec_of(policy_snapshot).policy.unwrap_or_default();
    let outcome = scheduler::schedule(&SchedulingRequest {
        policy: &policy,
        number_of_clusters: snapshot_api::number_of_clusters(policy_snapshot),
        policy_snapshot: &policy_snapshot.metadata.name,
        clusters: &clusters,
        bindings: &existing,
    });

    let mut writes = Vec::new();
    let mut events = Vec::new();
    for action in &outcome.actions {
        match action {
            BindingAction::Create { cluster, decision } => {
                let object = new_binding(&placement, binding_kind, cluster, decision, &policy_snapshot.metadata.name);
                writes.push(Op::Create { object });
                events.push(EventNote::normal("ClusterScheduled", scheduled_message(cluster, decision)));
            }
            BindingAction::Update { binding, cluster, decision, revive } => {
                let Some(object) = bindings.iter().find(|b| &b.metadata.name == binding) else { continue };
                let mut spec = binding::spec_of(object);
                spec.scheduling_policy_snapshot_name = policy_snapshot.metadata.name.clone();
                spec.cluster_decision = decision.clone();
                if *revive {
                    spec.state = STATE_SCHEDULED.to_string();
                    events.push(EventNote::normal("ClusterScheduled", scheduled_message(cluster, decision)));
                }
                let mut updated = object.clone();
                binding::set_spec(&mut updated, &spec);
                writes.push(Op::Update { object: updated });
            }
            BindingAction::Unschedule { binding, cluster } => {
                let Some(object) = bindings.iter().find(|b| &b.metadata.name == binding) else { continue };
                let mut spec = binding::spec_of(object);
                spec.state = STATE_UNSCHEDULED.to_string();
                let mut updated = object.clone();
                binding::set_spec(&mut updated, &spec);
                writes.push(Op::Update { object: updated });
                events.push(EventNote::normal("ClusterUnscheduled", format!("cluster {cluster} is no longer chosen")));
            }
        }
    }

    let generation = placement.metadata.generation;
    let (reason, message) = if outcome.fulfilled {
        (REASON_FULFILLED, FULFILLED_MESSAGE.to_string())
    } else {
        (REASON_UNFULFILLED, outcome.message.clone())
    };

    let mut policy_status = snapshot_api::policy_status_of(policy_snapshot);
    let before = policy_status.clone();
    policy_status.observed_placement_generation = Some(generation);
    let condition = Condition::new(CONDITION_SCHEDULED, outcome.fulfilled, reason, message.clone());
    set_condition(&mut policy_status.conditions, condition.observing(generation), now);
    policy_status.target_clusters = outcome.target_clusters();
    if policy_status != before {
        let mut updated = policy_snapshot.clone();
        snapshot_api::set_policy_status(&mut updated, &policy_status);
        writes.push(Op::UpdateStatus { object: updated });
    } else {
        writes.push(check(policy_snapshot));
    }

    let mut status = placement_api::status_of(&placement);
    let before = status.clone();
    let condition_type = scheduled_condition_type(&placement.kind);
    let was = find(&status.conditions, &condition_type).map(|c| (c.status.clone(), c.message.clone()));
    let condition = Condition::new(&condition_type, outcome.fulfilled, reason, message.clone()).observing(generation);
    set_condition(&mut status.conditions, condition, now);
    if !outcome.fulfilled && was != Some(("False".to_string(), message.clone())) {
        events.push(EventNote::warning(REASON_UNFULFILLED, message));
    }
    status.selected_resources = selection::identifiers(selected);
    status.observed_resource_index = resource_index.map(|i| i.to_string()).unwrap_or_default();
    status.placement_statuses = per_cluster_statuses(&status, &outcome, &policy, generation, now);
    let changed = status != before;
    let has_writes = changed || writes.iter().any(|op| !matches!(op, Op::Check { .. }));
    if !has_writes {
        return Ok(None);
    }
    if changed {
        let mut updated = placement.clone();
        placement_api::set_status(&mut updated, &status);
        writes.push(Op::UpdateStatus { object: updated });
    } else {
        writes.push(check(&placement));
    }
    Ok(Some(Step { ops: writes, events, placement }))
}

/// `status.placementStatuses`: a `Scheduled` entry per chosen cluster (other
/// conditions of an existing entry kept for later stages), then, for
/// PickFixed, one failed entry per listed cluster that could not be chosen.
fn per_cluster_statuses(
    current: &PlacementStatus,
    outcome: &SchedulingOutcome,
    policy: &placement_api::PlacementPolicy,
    generation: i64,
    now: &str,
) -> Vec<PerClusterStatus> {
    let mut entries = Vec::new();
    for decision in &outcome.chosen {
        let mut entry = current
            .placement_statuses
            .iter()
            .find(|e| e.cluster_name == decision.cluster_name)
            .cloned()
            .unwrap_or_else(|| PerClusterStatus { cluster_name: decision.cluster_name.clone(), ..Default::default() });
        let message = format!("Successfully {}", scheduled_message(&decision.cluster_name, decision));
        let condition = Condition::new(PER_CLUSTER_SCHEDULED, true, "Scheduled", message).observing(generation);
        set_condition(&mut entry.conditions, condition, now);
        entries.push(entry);
    }
    if policy.placement_type() == PICK_FIXED {
        for decision in outcome.filtered.iter().filter(|d| policy.cluster_names.contains(&d.cluster_name)) {
            let mut entry = current
                .placement_statuses
                .iter()
                .find(|e| e.cluster_name == decision.cluster_name)
                .cloned()
                .unwrap_or_else(|| PerClusterStatus {
                    cluster_name: decision.cluster_name.clone(),
                    ..Default::default()
                });
            let condition = Condition::new(PER_CLUSTER_SCHEDULED, false, "ScheduleFailed", decision.reason.clone())
                .observing(generation);
            set_condition(&mut entry.conditions, condition, now);
            entries.push(entry);
        }
    }
    entries
}

/// "scheduled resources for placement in <cluster> (affinity score: A,
/// topology spread score: T): <reason>".
fn scheduled_message(cluster: &str, decision: &ClusterDecision) -> String {
    let score = decision.cluster_score.unwrap_or_default();
    format!(
        "scheduled resources for placement in {cluster} (affinity score: {}, topology spread score: {}): {}",
        score.affinity_score, score.topology_spread_score, decision.reason
    )
}

/// The scheduler's view of a stored binding.
fn existing_binding(object: &Object) -> ExistingBinding {
    let spec = binding::spec_of(object);
    ExistingBinding {
        name: object.metadata.name.clone(),
        cluster: spec.target_cluster,
        state: spec.state,
        policy_snapshot: spec.scheduling_policy_snapshot_name,
        score: spec.cluster_decision.cluster_score,
    }
}

/// A binding's name: `<placement>-<cluster>-<8 hex>`, the suffix derived
/// from the placement's uid and the cluster, so a new leader finishing an
/// interrupted step proposes the very same name.
pub fn binding_name(placement: &Object, cluster: &str) -> String {
    let mut digest = Sha256::new();
    digest.update(placement.metadata.uid.as_bytes());
    digest.update([0]);
    digest.update(cluster.as_bytes());
    let suffix = hex::encode(&digest.finalize()[..4]);
    let mut middle = cluster.to_string();
    let budget = 253usize.saturating_sub(placement.metadata.name.len() + suffix.len() + 2);
    middle.truncate(budget);
    format!("{}-{middle}-{suffix}", placement.metadata.name)
}

fn new_binding(placement: &Object, kind: &str, cluster: &str, decision: &ClusterDecision, policy: &str) -> Object {
    let mut object = Object {
        api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"),
        kind: kind.to_string(),
        metadata: ObjectMeta {
            name: binding_name(placement, cluster),
            namespace: placement.metadata.namespace.clone(),
            uid: uuid::Uuid::new_v4().to_string(),
            owner_references: vec![owner_reference(placement)],
            ..Default::default()
        },
        rest: Default::default(),
    };
    object.metadata.labels.insert(PARENT_PLACEMENT_LABEL.into(), placement.metadata.name.clone());
    let spec = binding::BindingSpec {
        state: STATE_SCHEDULED.to_string(),
        scheduling_policy_snapshot_name: policy.to_string(),
        target_cluster: cluster.to_string(),
        cluster_decision: decision.clone(),
        ..Default::default()
    };
    binding::set_spec(&mut object, &spec);
    object
}

/// The controller reference from a placement's children to it (deleting
/// the placement deletes them).
fn owner_reference(placement: &Object) -> OwnerReference {
    OwnerReference {
        api_version: placement.api_version.clone(),
        kind: placement.kind.clone(),
        name: placement.metadata.name.clone(),
        uid: placement.metadata.uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A check that `object` is still at the version read.
fn check(object: &Object) -> Op {
    Op::Check { key: ObjectKey::of(object), resource_version: object.metadata.resource_version_number().unwrap_or(0) }
}

/// The guard, then the snapshot changes as ops.
fn with_guard(guard: Op, changes: Vec<SnapshotChange>) -> Vec<Op> {
    let mut ops = vec![guard];
    for change in changes {
        ops.push(match change {
            SnapshotChange::Create(mut object) => {
                if object.metadata.uid.is_empty() {
                    object.metadata.uid = uuid::Uuid::new_v4().to_string();
                }
                Op::Create { object }
            }
            SnapshotChange::Update(object) => Op::Update { object },
            SnapshotChange::Delete { kind, namespace, name, resource_version } => Op::Delete {
                key: ObjectKey::new(FLEET_PLACEMENT_GROUP, &kind, namespace.as_deref().unwrap_or(""), &name),
                resource_version: resource_version.parse().ok(),
            },
        });
    }
    ops
}

fn created_names(changes: &[SnapshotChange]) -> impl Iterator<Item = &str> {
    changes.iter().filter_map(|c| match c {
        SnapshotChange::Create(object) => Some(object.metadata.name.as_str()),
        _ => None,
    })
}
