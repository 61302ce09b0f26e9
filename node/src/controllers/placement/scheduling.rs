//! Step 3: scheduling against the latest policy snapshot — binding creates,
//! updates and unschedules, and the policy snapshot's status.

use fleet_api::binding::{self, ClusterDecision, STATE_SCHEDULED, STATE_UNSCHEDULED};
use fleet_api::conditions::{set_condition, Condition};
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::placement::PlacementPolicy;
use fleet_api::snapshot::{
    self as snapshot_api, CONDITION_SCHEDULED, PARENT_PLACEMENT_LABEL, REASON_FULFILLED, REASON_UNFULFILLED,
};
use fleet_api::{Object, ObjectMeta, OwnerReference};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::scheduler::{self, BindingAction, ExistingBinding, SchedulingOutcome, SchedulingRequest};
use fleet_placement::snapshot;
use fleet_statemachine::Op;
use sha2::{Digest, Sha256};

use super::objects::check;
use super::{Step, View};
use crate::controllers::events::EventNote;

/// The scheduler's verdict, and the step that records it (if anything changes).
pub struct Scheduled {
    pub outcome: SchedulingOutcome,
    /// The policy the latest snapshot holds.
    pub policy: PlacementPolicy,
    /// PickN's N as the latest snapshot says.
    pub number_of_clusters: Option<i64>,
    pub step: Option<Step>,
}

impl Scheduled {
    /// `(fulfilled, reason, message)` of the `Scheduled` conditions (the
    /// scheduler's message, KubeFleet's text).
    pub fn verdict(&self) -> (bool, &'static str, String) {
        let reason = if self.outcome.fulfilled { REASON_FULFILLED } else { REASON_UNFULFILLED };
        (self.outcome.fulfilled, reason, self.outcome.message.clone())
    }
}

/// Runs the scheduler over the fleet's clusters (name-sorted); `None` when
/// the placement has no policy snapshot yet.
pub fn schedule(clusters: &[ClusterInfo], view: &View, now: &str) -> Option<Scheduled> {
    let policy_snapshot = snapshot::latest_policy_snapshot(&view.policy_snapshots)?;
    let existing: Vec<ExistingBinding> = view.bindings.iter().map(ExistingBinding::from_object).collect();
    let policy = snapshot_api::policy_spec_of(policy_snapshot).policy.unwrap_or_default();
    let number_of_clusters = snapshot_api::number_of_clusters(policy_snapshot);
    let timer = crate::metrics::scheduling("kubefleet");
    let outcome = scheduler::schedule(&SchedulingRequest {
        policy: &policy,
        number_of_clusters,
        policy_snapshot: &policy_snapshot.metadata.name,
        clusters,
        bindings: &existing,
        namespace: view.placement.metadata.namespace.as_deref().filter(|n| !n.is_empty()),
    });
    drop(timer);
    let mut scheduled = Scheduled { outcome, policy, number_of_clusters, step: None };
    scheduled.step = step(view, policy_snapshot, &scheduled, now);
    Some(scheduled)
}

fn step(view: &View, policy_snapshot: &Object, scheduled: &Scheduled, now: &str) -> Option<Step> {
    let placement = &view.placement;
    let binding_kind = binding::binding_kind(&placement.kind);
    let mut writes = Vec::new();
    let mut events = Vec::new();
    let by_name = view.bindings_by_name();
    for action in &scheduled.outcome.actions {
        match action {
            BindingAction::Create { cluster, decision } => {
                let object = new_binding(placement, binding_kind, cluster, decision, &policy_snapshot.metadata.name);
                writes.push(Op::Create { object });
                events.push(EventNote::normal("ClusterScheduled", decision.reason.clone()));
            }
            BindingAction::Update { binding, decision, revive, .. } => {
                let Some(&object) = by_name.get(binding.as_str()) else { continue };
                let mut spec = binding::spec_of(object);
                spec.scheduling_policy_snapshot_name = policy_snapshot.metadata.name.clone();
                spec.cluster_decision = decision.clone();
                if *revive {
                    spec.state = STATE_SCHEDULED.to_string();
                    events.push(EventNote::normal("ClusterScheduled", decision.reason.clone()));
                }
                let mut updated = object.clone();
                binding::set_spec(&mut updated, &spec);
                writes.push(Op::Update { object: updated });
            }
            BindingAction::Unschedule { binding, cluster } => {
                let Some(&object) = by_name.get(binding.as_str()) else { continue };
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
    let (fulfilled, reason, message) = scheduled.verdict();
    let mut status = snapshot_api::policy_status_of(policy_snapshot);
    let before = status.clone();
    status.observed_placement_generation = Some(generation);
    // The condition speaks for the snapshot (its generation, as KubeFleet's
    // scheduler sets it); which placement generation it saw is
    // `observedCRPGeneration`.
    let condition = Condition::new(CONDITION_SCHEDULED, fulfilled, reason, message.clone())
        .observing(policy_snapshot.metadata.generation);
    set_condition(&mut status.conditions, condition, now);
    let mut targets = scheduled.outcome.target_clusters();
    // Nothing was picked: the unchosen clusters stay as the pass that
    // picked reported them, unless the placement changed since (a new
    // numberOfClusters, scaling in or not): KubeFleet's scheduler, rerun
    // for that change, writes the decisions of the bindings alone.
    if scheduled.outcome.settled && before.observed_placement_generation == Some(generation) {
        let chosen: Vec<&str> = targets.iter().map(|d| d.cluster_name.as_str()).collect();
        let kept: Vec<ClusterDecision> = before
            .target_clusters
            .iter()
            .filter(|d| !d.selected && !chosen.contains(&d.cluster_name.as_str()))
            .cloned()
            .collect();
        targets.extend(kept);
        targets.truncate(scheduler::MAX_TARGET_CLUSTERS);
    }
    status.target_clusters = targets;
    let status_changed = status != before;
    if writes.is_empty() && !status_changed {
        return None;
    }
    if status_changed {
        let mut updated = policy_snapshot.clone();
        snapshot_api::set_policy_status(&mut updated, &status);
        writes.push(Op::UpdateStatus { object: updated });
        if !fulfilled && before.conditions.iter().all(|c| c.message != message) {
            events.push(EventNote::warning(REASON_UNFULFILLED, message));
        }
    } else {
        writes.push(check(policy_snapshot));
    }
    writes.push(check(placement));
    Some(Step { ops: writes, events, placement: placement.clone() })
}

/// A binding's name: `<placement>-<cluster>-<8 hex>`, the suffix derived
/// from the placement's uid and the cluster, so a new leader finishing an
/// interrupted step proposes the very same name.
fn binding_name(placement: &Object, cluster: &str) -> String {
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
            owner_references: vec![OwnerReference::controller_of(placement)],
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
