//! Initialization (SU-3): freeze what the run rolls out and to whom, or say
//! why it cannot (terminal) or not yet (pending).

use fleet_api::placement::{PICK_FIXED, PICK_N};
use fleet_api::staged::{
    approval_request_name, ClusterUpdatingStatus, StageTask, StageTaskStatus, StageUpdatingStatus, UpdateRunStatus,
    UpdateStrategySpec, DELETE_STAGE_NAME, INITIALIZED, REASON_INITIALIZED, REASON_INITIALIZE_FAILED, TASK_APPROVAL,
};

use super::inputs::{ClusterLabels, PolicySnapshotFacts, RunPlacement};
use super::marks::{initialize_failed_message, mark, Is, INITIALIZED_MESSAGE};
use super::stages::compute_stages;
use super::{Pass, RunAction, RunInput};

/// What initialization concluded.
pub(super) enum Outcome {
    /// Not yet: the placement's controllers have not caught up (why).
    Pending(String),
    /// Never: the run fails (the cause).
    Failed(String),
    /// The initialized status.
    Ready(Box<UpdateRunStatus>),
}

/// The clusters chosen under the latest policy snapshot and the clusters to
/// remove, or why they cannot be told yet.
struct Chosen {
    update: Vec<String>,
    delete: Vec<String>,
}

fn chosen_clusters(input: &RunInput, policy_snapshot: &str) -> Result<Chosen, Outcome> {
    let mut chosen = Chosen { update: Vec::new(), delete: Vec::new() };
    for b in input.bindings.iter().filter(|b| !b.deleting) {
        if b.is_unscheduled() {
            chosen.delete.push(b.cluster.clone());
        } else if b.policy_snapshot == policy_snapshot {
            chosen.update.push(b.cluster.clone());
        } else {
            return Err(Outcome::Pending(format!(
                "binding `{}` still belongs to policy snapshot `{}`, waiting for the scheduler",
                b.name, b.policy_snapshot
            )));
        }
    }
    for list in [&mut chosen.update, &mut chosen.delete] {
        list.sort();
        list.dedup();
    }
    chosen.delete.retain(|c| !chosen.update.contains(c));
    Ok(chosen)
}

/// PickN: N (the snapshot's annotation wins); PickFixed: the names;
/// PickAll: the clusters chosen.
fn observed_cluster_count(placement: &RunPlacement, annotation: Option<i64>, chosen: usize) -> i64 {
    let policy = placement.spec.policy.clone().unwrap_or_default();
    let chosen = i64::try_from(chosen).unwrap_or(i64::MAX);
    match policy.placement_type() {
        PICK_N => annotation.or(policy.number_of_clusters).unwrap_or(0),
        PICK_FIXED => i64::try_from(policy.cluster_names.len()).unwrap_or(i64::MAX),
        _ => chosen,
    }
}

fn task_statuses(run: &str, stage: &str, tasks: &[StageTask], before: bool) -> Vec<StageTaskStatus> {
    tasks
        .iter()
        .map(|t| StageTaskStatus {
            type_: t.type_.clone(),
            approval_request_name: if t.type_ == TASK_APPROVAL {
                approval_request_name(run, stage, before)
            } else {
                String::new()
            },
            conditions: Vec::new(),
        })
        .collect()
}

/// Computes the initialized status, or why not.
pub(super) fn initialize(input: &RunInput) -> Outcome {
    match try_initialize(input) {
        Ok(status) => Outcome::Ready(Box::new(status)),
        Err(outcome) => outcome,
    }
}

fn try_initialize(input: &RunInput) -> Result<UpdateRunStatus, Outcome> {
    let failed = |cause: String| Outcome::Failed(cause);
    let placement =
        input.placement.ok_or_else(|| failed(format!("parent placement `{}` not found", input.spec.placement_name)))?;
    if !placement.is_external() {
        return Err(failed(format!(
            "parent placement does not have an external rollout strategy, current strategy: {}",
            placement.strategy_type()
        )));
    }
    let (policy_snapshot, policy_index) = scheduled_policy(placement)?;
    let strategy = input.strategy.ok_or_else(|| {
        failed(format!("referenced updateStrategy not found: `{}`", input.spec.staged_rollout_strategy_name))
    })?;
    let resource_index = resource_index(input, placement)?;
    let chosen = chosen_clusters(input, &policy_snapshot.name)?;
    if chosen.update.is_empty() && chosen.delete.is_empty() {
        return Err(failed(format!(
            "no scheduled or to-be-deleted bindings found for the latest policy snapshot `{}`",
            policy_snapshot.name
        )));
    }
    let count = observed_cluster_count(placement, policy_snapshot.number_of_clusters, chosen.update.len());
    if usize::try_from(count).ok() != Some(chosen.update.len()) {
        return Err(failed(format!(
            "the number of selected bindings {} is not equal to the observed cluster count {count}",
            chosen.update.len()
        )));
    }
    let frozen = compute_stages(&strategy.stages, &labels_of(input, &chosen.update)).map_err(failed)?;
    Ok(UpdateRunStatus {
        policy_snapshot_index_used: policy_index.to_string(),
        policy_observed_cluster_count: Some(count),
        resource_snapshot_index_used: resource_index.to_string(),
        applied_strategy: Some(placement.apply_strategy()),
        staged_update_strategy_snapshot: Some(strategy.clone()),
        stages_status: stages_status(input, strategy, &frozen),
        deletion_stage_status: Some(deletion_stage(&chosen.delete)),
        conditions: input.status.conditions.clone(),
    })
}

/// The placement's latest policy snapshot and its index, once the
/// scheduler has fully scheduled it.
fn scheduled_policy(placement: &RunPlacement) -> Result<(&PolicySnapshotFacts, u64), Outcome> {
    let policy_snapshot = placement
        .latest_policy_snapshot
        .as_ref()
        .ok_or_else(|| Outcome::Pending(format!("no policy snapshot of placement `{}` yet", placement.name)))?;
    let policy_index = policy_snapshot.index.ok_or_else(|| {
        Outcome::Failed(format!("policy snapshot `{}` does not have a policy index label", policy_snapshot.name))
    })?;
    match policy_snapshot.scheduled {
        None => {
            let why = format!("waiting for the scheduler to schedule policy snapshot `{}`", policy_snapshot.name);
            Err(Outcome::Pending(why))
        }
        Some(false) => {
            Err(Outcome::Failed(format!("policy snapshot `{}` not fully scheduled yet", policy_snapshot.name)))
        }
        Some(true) => Ok((policy_snapshot, policy_index)),
    }
}

/// The resource snapshot the run rolls out: the one its spec names (which
/// must still be kept), or the placement's latest.
fn resource_index(input: &RunInput, placement: &RunPlacement) -> Result<u64, Outcome> {
    match input.spec.resource_snapshot_index() {
        _ if placement.resource_indexes.is_empty() => {
            Err(Outcome::Pending(format!("no resource snapshot of placement `{}` yet", placement.name)))
        }
        Some(index) if placement.resource_indexes.contains(&index) => Ok(index),
        Some(index) => Err(Outcome::Failed(format!(
            "no resource snapshot with index `{index}` is kept for placement `{}`",
            placement.name
        ))),
        None => placement.latest_resource_index.ok_or_else(|| {
            Outcome::Pending(format!("no latest resource snapshot of placement `{}` yet", placement.name))
        }),
    }
}

/// The labels of each chosen cluster (none for a cluster that is gone), in
/// order: what the strategy's stages select by.
fn labels_of(input: &RunInput, chosen: &[String]) -> Vec<ClusterLabels> {
    chosen
        .iter()
        .map(|name| {
            input
                .clusters
                .iter()
                .find(|c| &c.name == name)
                .cloned()
                .unwrap_or_else(|| ClusterLabels { name: name.clone(), labels: Default::default() })
        })
        .collect()
}

/// Each stage's status as initialized: its clusters (with the override
/// snapshots they get) and its tasks, none started.
fn stages_status(input: &RunInput, strategy: &UpdateStrategySpec, frozen: &[Vec<String>]) -> Vec<StageUpdatingStatus> {
    let cluster_status = |name: &String| {
        let overrides = input.overrides.get(name).cloned().unwrap_or_default();
        ClusterUpdatingStatus {
            cluster_name: name.clone(),
            resource_override_snapshots: overrides.resource,
            cluster_resource_override_snapshots: overrides.cluster_resource,
            conditions: Vec::new(),
        }
    };
    strategy
        .stages
        .iter()
        .zip(frozen)
        .map(|(stage, members)| StageUpdatingStatus {
            stage_name: stage.name.clone(),
            clusters: members.iter().map(cluster_status).collect(),
            after_stage_task_status: task_statuses(input.run_name, &stage.name, &stage.after_stage_tasks, false),
            before_stage_task_status: task_statuses(input.run_name, &stage.name, &stage.before_stage_tasks, true),
            ..Default::default()
        })
        .collect()
}

/// The deletion stage: the clusters whose bindings are to be deleted.
fn deletion_stage(delete: &[String]) -> StageUpdatingStatus {
    StageUpdatingStatus {
        stage_name: DELETE_STAGE_NAME.to_string(),
        clusters: delete
            .iter()
            .map(|name| ClusterUpdatingStatus { cluster_name: name.clone(), ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

/// Initialized True, and the step.
pub(super) fn mark_initialized(pass: &mut Pass) {
    let (generation, now) = (pass.input.generation, pass.now.clone());
    mark(&mut pass.status.conditions, INITIALIZED, Is::Yes, REASON_INITIALIZED, INITIALIZED_MESSAGE, generation, &now);
    pass.actions.push(RunAction::Initialized);
}

/// Initialized False with the cause (terminal), and the step.
pub(super) fn mark_failed(pass: &mut Pass, cause: &str) {
    let (generation, now) = (pass.input.generation, pass.now.clone());
    let message = initialize_failed_message(cause);
    mark(&mut pass.status.conditions, INITIALIZED, Is::No, REASON_INITIALIZE_FAILED, &message, generation, &now);
    pass.actions.push(RunAction::InitializationFailed { message });
}
