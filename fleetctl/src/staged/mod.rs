//! A staged update run's progress, decided from the run's status alone
//! (docs/spec/staged-updates.md "Status shapes"): each stage and what it waits for —
//! its before-stage approval, its clusters, its after-stage timed wait
//! (with the time left) and approval — and whether the run succeeded,
//! failed or is still going. `describe` of a run and `rollout status` of
//! an External placement print it.

#[cfg(test)]
mod tests;

use std::time::{Duration, SystemTime};

use fleet_api::conditions::{find, Condition};
use fleet_api::staged::{
    run_spec_of, run_status_of, StageTaskStatus, StageUpdatingStatus, APPROVAL_REQUEST_APPROVED,
    APPROVAL_REQUEST_CREATED, INITIALIZED, PROGRESSING, REASON_STAGE_STOPPED, REASON_STAGE_WAITING, STARTED, SUCCEEDED,
    TASK_APPROVAL, TASK_TIMED_WAIT, WAIT_TIME_ELAPSED,
};
use fleet_api::Object;

use crate::age::human_duration;
use fleet_api::time::system_time;

/// Where a stage is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageState {
    /// Not reached yet.
    Pending,
    /// Waiting for its before- or after-stage tasks.
    Waiting,
    /// Clusters are updating.
    Updating,
    /// Stopped by `state: Stop`.
    Stopped,
    /// Completed.
    Succeeded,
    /// The run was abandoned here.
    Failed,
}

impl StageState {
    /// The word printed.
    pub fn as_str(self) -> &'static str {
        match self {
            StageState::Pending => "Pending",
            StageState::Waiting => "Waiting",
            StageState::Updating => "Updating",
            StageState::Stopped => "Stopped",
            StageState::Succeeded => "Succeeded",
            StageState::Failed => "Failed",
        }
    }

    /// Whether the run has gone past the stage.
    pub fn is_done(self) -> bool {
        matches!(self, StageState::Succeeded)
    }
}

/// Where one cluster of a stage is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterState {
    /// Not started.
    Pending,
    /// Its binding moved to the run's snapshot at `since` (RFC 3339).
    Updating {
        /// When the update started.
        since: String,
    },
    /// Available on the run's snapshot.
    Succeeded,
    /// The run was abandoned because of this cluster (why).
    Failed(String),
}

/// One cluster of a stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStep {
    /// The member cluster.
    pub cluster: String,
    /// Where it is.
    pub state: ClusterState,
}

/// Where one before- or after-stage task is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// Not started (the stage has not reached it).
    NotStarted,
    /// Waiting: for the timer (`left`, when known) or for an approval.
    Waiting {
        /// The time left of a timed wait.
        left: Option<Duration>,
    },
    /// Elapsed or approved.
    Done,
}

/// One before- or after-stage task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStep {
    /// `TimedWait` or `Approval`.
    pub type_: String,
    /// The approval request's name (Approval tasks).
    pub approval_request: String,
    /// The wait (TimedWait tasks), as the strategy wrote it.
    pub wait_time: String,
    /// Where it is.
    pub state: TaskState,
}

/// One stage of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageStep {
    /// The stage's name.
    pub name: String,
    /// Where it is.
    pub state: StageState,
    /// Its before-stage task (an approval), if any.
    pub before: Vec<TaskStep>,
    /// Its clusters, in update order.
    pub clusters: Vec<ClusterStep>,
    /// Its after-stage tasks.
    pub after: Vec<TaskStep>,
}

/// Whether the run is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every stage completed.
    Succeeded,
    /// Initialization failed or the run was abandoned (the condition's message).
    Failed(String),
    /// Neither yet; the text says what it waits for.
    InProgress(String),
}

/// A run's progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunProgress {
    /// `clusterstagedupdaterun "app-v1"`, for messages.
    pub run: String,
    /// The placement it rolls out.
    pub placement: String,
    /// The resource snapshot index it rolls out (empty before initialization).
    pub resource_index: String,
    /// The stages, in order (empty before initialization).
    pub stages: Vec<StageStep>,
    /// The deletion stage's clusters (removed at the end).
    pub deleting: Vec<String>,
    /// Over or not.
    pub outcome: RunOutcome,
}

/// The progress of a ClusterStagedUpdateRun or StagedUpdateRun at `now`.
pub fn run_progress(run: &Object, now: SystemTime) -> RunProgress {
    let spec = run_spec_of(run);
    let status = run_status_of(run);
    let strategy = status.staged_update_strategy_snapshot.clone().unwrap_or_default();
    let stages: Vec<StageStep> = status
        .stages_status
        .iter()
        .enumerate()
        .map(|(i, stage)| {
            let config = strategy.stages.get(i).filter(|c| c.name == stage.stage_name);
            let waits = config.map(|c| c.after_stage_tasks.clone()).unwrap_or_default();
            let wait_time = waits.iter().find(|t| t.type_ == TASK_TIMED_WAIT).and_then(|t| t.wait_time.clone());
            let wait_seconds = config.and_then(|c| c.timed_wait_seconds());
            stage_step(stage, wait_time.as_deref().unwrap_or(""), wait_seconds, now)
        })
        .collect();
    let deleting = status
        .deletion_stage_status
        .as_ref()
        .map(|d| d.clusters.iter().map(|c| c.cluster_name.clone()).collect())
        .unwrap_or_default();
    let namespace = run.metadata.namespace.as_deref().filter(|n| !n.is_empty());
    let outcome = outcome(&status.conditions, &stages, namespace);
    RunProgress {
        run: format!("{} {:?}", run.kind.to_ascii_lowercase(), run.metadata.name),
        placement: spec.placement_name,
        resource_index: status.resource_snapshot_index_used,
        stages,
        deleting,
        outcome,
    }
}

fn is(conditions: &[Condition], type_: &str, status: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == status)
}

fn stage_step(stage: &StageUpdatingStatus, wait_time: &str, wait_seconds: Option<i64>, now: SystemTime) -> StageStep {
    let conditions = &stage.conditions;
    let progressing = find(conditions, PROGRESSING);
    let state = match find(conditions, SUCCEEDED) {
        Some(c) if c.is_true() => StageState::Succeeded,
        Some(c) if c.status == "False" => StageState::Failed,
        _ => match progressing {
            Some(c) if c.is_true() => StageState::Updating,
            Some(c) if c.reason == REASON_STAGE_WAITING => StageState::Waiting,
            Some(c) if c.reason == REASON_STAGE_STOPPED => StageState::Stopped,
            _ => StageState::Pending,
        },
    };
    let clusters = stage
        .clusters
        .iter()
        .map(|c| {
            let state = match find(&c.conditions, SUCCEEDED) {
                Some(s) if s.is_true() => ClusterState::Succeeded,
                Some(s) if s.status == "False" => ClusterState::Failed(s.message.clone()),
                _ => match find(&c.conditions, STARTED).filter(|s| s.is_true()) {
                    Some(s) => ClusterState::Updating { since: s.last_transition_time.clone() },
                    None => ClusterState::Pending,
                },
            };
            ClusterStep { cluster: c.cluster_name.clone(), state }
        })
        .collect();
    let task = |t: &StageTaskStatus| task_step(t, wait_time, wait_seconds, now);
    StageStep {
        name: stage.stage_name.clone(),
        state,
        before: stage.before_stage_task_status.iter().map(task).collect(),
        clusters,
        after: stage.after_stage_task_status.iter().map(task).collect(),
    }
}

fn task_step(task: &StageTaskStatus, wait_time: &str, wait_seconds: Option<i64>, now: SystemTime) -> TaskStep {
    let conditions = &task.conditions;
    let state = if task.type_ == TASK_APPROVAL {
        if is(conditions, APPROVAL_REQUEST_APPROVED, "True") {
            TaskState::Done
        } else if is(conditions, APPROVAL_REQUEST_CREATED, "True") {
            TaskState::Waiting { left: None }
        } else {
            TaskState::NotStarted
        }
    } else {
        match find(conditions, WAIT_TIME_ELAPSED) {
            Some(c) if c.is_true() => TaskState::Done,
            Some(c) => {
                let ends = system_time(&c.last_transition_time)
                    .zip(wait_seconds)
                    .and_then(|(start, secs)| start.checked_add(Duration::from_secs(secs.unsigned_abs())));
                let left = ends.map(|end| end.duration_since(now).unwrap_or_default());
                TaskState::Waiting { left }
            }
            None => TaskState::NotStarted,
        }
    };
    let wait_time = if task.type_ == TASK_TIMED_WAIT { wait_time.to_string() } else { String::new() };
    TaskStep { type_: task.type_.clone(), approval_request: task.approval_request_name.clone(), wait_time, state }
}

/// The command that approves `request` (with `-n` for a namespaced run's).
pub fn approve_command(request: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("fleetctl approve {request} -n {ns}"),
        None => format!("fleetctl approve {request}"),
    }
}

/// What a task waits for, in words.
pub fn task_text(task: &TaskStep, namespace: Option<&str>) -> String {
    match (task.type_.as_str(), &task.state) {
        (TASK_APPROVAL, TaskState::Done) => format!("approval request {} approved", task.approval_request),
        (TASK_APPROVAL, TaskState::Waiting { .. }) => format!(
            "waiting for approval request {} ({})",
            task.approval_request,
            approve_command(&task.approval_request, namespace)
        ),
        (TASK_APPROVAL, TaskState::NotStarted) => {
            format!("approval request {} not requested yet", task.approval_request)
        }
        (_, TaskState::Done) => format!("timed wait of {} elapsed", task.wait_time),
        (_, TaskState::Waiting { left: Some(left) }) => {
            format!("timed wait of {}: {} left", task.wait_time, human_duration(*left))
        }
        (_, TaskState::Waiting { left: None }) => format!("timed wait of {} running", task.wait_time),
        (_, TaskState::NotStarted) => format!("timed wait of {} not started", task.wait_time),
    }
}

/// The run's outcome from its conditions, else what its current stage waits for.
fn outcome(conditions: &[Condition], stages: &[StageStep], namespace: Option<&str>) -> RunOutcome {
    if let Some(c) = find(conditions, INITIALIZED).filter(|c| c.status == "False") {
        return RunOutcome::Failed(c.message.clone());
    }
    match find(conditions, SUCCEEDED) {
        Some(c) if c.is_true() => return RunOutcome::Succeeded,
        Some(c) if c.status == "False" => return RunOutcome::Failed(c.message.clone()),
        _ => {}
    }
    if !is(conditions, INITIALIZED, "True") {
        return RunOutcome::InProgress("initializing".to_string());
    }
    let mut text = match stages.iter().find(|s| !s.state.is_done()) {
        Some(stage) => format!("stage {}: {}", stage.name, waiting_for(stage, namespace)),
        None => "removing the clusters no longer chosen".to_string(),
    };
    if let Some(c) = find(conditions, PROGRESSING).filter(|c| !c.is_true() && !c.message.is_empty()) {
        text.push_str(&format!(" ({})", c.message));
    }
    RunOutcome::InProgress(text)
}

/// What a stage that is not done waits for.
pub fn waiting_for(stage: &StageStep, namespace: Option<&str>) -> String {
    if let Some(task) = stage.before.iter().find(|t| t.state != TaskState::Done) {
        return task_text(task, namespace);
    }
    let updating: Vec<&str> = stage
        .clusters
        .iter()
        .filter(|c| matches!(c.state, ClusterState::Updating { .. }))
        .map(|c| c.cluster.as_str())
        .collect();
    let done = stage.clusters.iter().filter(|c| c.state == ClusterState::Succeeded).count();
    if done < stage.clusters.len() {
        let total = stage.clusters.len();
        return match updating.is_empty() {
            true => format!("{done}/{total} clusters updated"),
            false => format!("updating {} ({done}/{total} clusters updated)", updating.join(", ")),
        };
    }
    let waiting: Vec<String> =
        stage.after.iter().filter(|t| t.state != TaskState::Done).map(|t| task_text(t, namespace)).collect();
    match waiting.is_empty() {
        true => "completing".to_string(),
        false => waiting.join("; "),
    }
}
