//! Setting the run's, a stage's, a cluster's and a task's conditions with
//! the spec's reasons and messages, stamped with the run's generation.
//! Transition times follow `set_condition`: they move only when a status does.

use fleet_api::conditions::{find, set_condition, Condition};

/// `True`, `False` or `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Is {
    /// `True`.
    Yes,
    /// `False`.
    No,
    /// `Unknown`.
    Unknown,
}

/// Sets one condition; returns whether it changed.
pub(super) fn mark(
    conditions: &mut Vec<Condition>,
    type_: &str,
    is: Is,
    reason: &str,
    message: &str,
    generation: i64,
    now: &str,
) -> bool {
    let condition = match is {
        Is::Yes => Condition::new(type_, true, reason, message),
        Is::No => Condition::new(type_, false, reason, message),
        Is::Unknown => Condition::unknown(type_, reason, message),
    };
    set_condition(conditions, condition.observing(generation), now)
}

/// Whether condition `type_` is True.
pub(super) fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(Condition::is_true)
}

/// Whether condition `type_` is False.
pub(super) fn is_false(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "False")
}

/// Unix seconds of condition `type_`'s last transition, if readable.
pub(super) fn transitioned_at(conditions: &[Condition], type_: &str) -> Option<i64> {
    find(conditions, type_).and_then(|c| crate::time::unix_seconds(&c.last_transition_time))
}

/// Initialized True.
pub(super) const INITIALIZED_MESSAGE: &str = "The UpdateRun initialized successfully";
/// Progressing True.
pub(super) const PROGRESSING_MESSAGE: &str = "The update run is making progress";
/// Progressing Unknown, Stopping.
pub(super) const STOPPING_MESSAGE: &str = "The update run is stopping, waiting for the updating clusters to finish";
/// Progressing False, Stopped.
pub(super) const STOPPED_MESSAGE: &str = "The update run has been stopped";
/// Progressing False when every stage completed.
pub(super) const COMPLETED_MESSAGE: &str = "All stages are completed";
/// Succeeded True.
pub(super) const SUCCEEDED_MESSAGE: &str = "All stages are completed successfully";
/// Progressing False when abandoned.
pub(super) const ABORTED_MESSAGE: &str = "The stages are aborted due to a non-recoverable error";

/// Initialized False's message for `cause`.
pub(super) fn initialize_failed_message(cause: &str) -> String {
    format!("cannot continue the updateRun: failed to validate the updateRun: {cause}")
}

/// Succeeded False's message for `cause`.
pub(super) fn failed_message(cause: &str) -> String {
    format!("cannot continue the updateRun: {cause}")
}

/// Progressing False, Waiting: "...for after-stage tasks in stage canary...".
pub(super) fn waiting_message(stage: &str, before: bool) -> String {
    let when = if before { "before-stage" } else { "after-stage" };
    format!("The updateRun is waiting for {when} tasks in stage {stage} to complete")
}

/// Progressing False, Stuck: names the first three stuck clusters.
pub(super) fn stuck_message(stage: &str, clusters: &[String]) -> String {
    let shown = if clusters.len() > 3 { format!("{}...", clusters[..3].join(", ")) } else { clusters.join(", ") };
    format!(
        "The updateRun is stuck waiting for {shown} cluster(s) in stage {stage} to finish updating, please check placement status for potential errors"
    )
}

/// The SU-11 cause when a binding being updated was changed by someone else.
pub(super) fn binding_changed_message(cluster: &str, stage: &str, binding: &str) -> String {
    format!(
        "the binding of the updating cluster `{cluster}` in the stage `{stage}` is not up-to-date with the desired status, please check the status of binding `{binding}` and see if there is a concurrent updateRun referencing the same placement and updating the same cluster"
    )
}

/// Stage messages.
pub(super) const STAGE_STARTED_MESSAGE: &str = "Clusters in the stage started updating";
/// Stage waiting for its before-stage approval.
pub(super) const STAGE_WAITING_BEFORE_MESSAGE: &str = "Not all before-stage tasks are completed, waiting for approval";
/// Stage waiting for its after-stage tasks.
pub(super) const STAGE_WAITING_AFTER_MESSAGE: &str =
    "All clusters in the stage are updated, waiting for after-stage tasks to complete";
/// Stage stopped.
pub(super) const STAGE_STOPPED_MESSAGE: &str = "The stage has been stopped";
/// Stage completed.
pub(super) const STAGE_SUCCEEDED_MESSAGE: &str = "All clusters in the stage are updated and all tasks are completed";
/// Cluster started.
pub(super) const CLUSTER_STARTED_MESSAGE: &str = "The cluster started updating";
/// Cluster succeeded.
pub(super) const CLUSTER_SUCCEEDED_MESSAGE: &str = "The cluster is updated and available";
/// Deletion-stage cluster started.
pub(super) const CLUSTER_DELETING_MESSAGE: &str = "The cluster's binding is being deleted";
/// Deletion-stage cluster done.
pub(super) const CLUSTER_DELETED_MESSAGE: &str = "The cluster's binding is deleted";
/// Approval task: request created.
pub(super) const REQUEST_CREATED_MESSAGE: &str = "The approval request is created";
/// Approval task: request approved.
pub(super) const REQUEST_APPROVED_MESSAGE: &str = "The approval request is approved";
/// TimedWait task: over.
pub(super) const WAIT_ELAPSED_MESSAGE: &str = "The wait time has elapsed";

/// TimedWait task: started at `start`, ends at `end` (RFC 3339).
pub(super) fn wait_message(end: &str) -> String {
    format!("The wait ends at {end}")
}
