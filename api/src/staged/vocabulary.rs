//! The fixed words of staged updates (docs/spec/staged-updates.md "Status shapes"):
//! kinds, labels, states, task types, condition types and reasons, so the
//! planner, the controller and `fleetctl` spell them once.

/// Kind of the cluster-scoped strategy (serves ClusterResourcePlacements).
pub const CLUSTER_STAGED_UPDATE_STRATEGY: &str = "ClusterStagedUpdateStrategy";
/// Kind of the namespaced strategy (serves ResourcePlacements).
pub const STAGED_UPDATE_STRATEGY: &str = "StagedUpdateStrategy";
/// Kind of the cluster-scoped run.
pub const CLUSTER_STAGED_UPDATE_RUN: &str = "ClusterStagedUpdateRun";
/// Kind of the namespaced run.
pub const STAGED_UPDATE_RUN: &str = "StagedUpdateRun";
/// Kind of the cluster-scoped approval request.
pub const CLUSTER_APPROVAL_REQUEST: &str = "ClusterApprovalRequest";
/// Kind of the namespaced approval request.
pub const APPROVAL_REQUEST: &str = "ApprovalRequest";

/// Label on an approval request: the run it gates (KubeFleet spells it in
/// lower case).
pub const TARGET_UPDATE_RUN_LABEL: &str = "kubernetes-fleet.io/targetupdaterun";
/// Label on an approval request, always `"true"`: KubeFleet's tools select
/// the requests of a run's current attempt by it.
pub const IS_LATEST_APPROVAL_LABEL: &str = "kubernetes-fleet.io/isLatestUpdateRunApproval";
/// Label on an approval request: the stage it gates.
pub const TARGET_UPDATING_STAGE_LABEL: &str = "kubernetes-fleet.io/targetUpdatingStage";
/// Label on an approval request: `beforeStage` or `afterStage` (Fleet's
/// addition, so a before-stage gate can be told from an after-stage one
/// without parsing the name).
pub const TASK_TYPE_LABEL: &str = "kubernetes-fleet.io/taskType";
/// [`TASK_TYPE_LABEL`] value of a before-stage approval.
pub const BEFORE_STAGE: &str = "beforeStage";
/// [`TASK_TYPE_LABEL`] value of an after-stage approval.
pub const AFTER_STAGE: &str = "afterStage";

/// `stageName` of the deletion stage (SU-10).
pub const DELETE_STAGE_NAME: &str = "kubernetes-fleet.io/deleteStage";

/// Run state: initialize only.
pub const STATE_INITIALIZE: &str = "Initialize";
/// Run state: execute (the default, SU-2).
pub const STATE_RUN: &str = "Run";
/// Run state: let updating clusters finish, start nothing new.
pub const STATE_STOP: &str = "Stop";
/// Every run state, in the order printed in errors.
pub const STATES: &[&str] = &[STATE_INITIALIZE, STATE_RUN, STATE_STOP];

/// Stage task: wait a fixed time after the stage's clusters succeeded.
pub const TASK_TIMED_WAIT: &str = "TimedWait";
/// Stage task: wait for an approval request to be approved.
pub const TASK_APPROVAL: &str = "Approval";

/// Run condition: the stages were computed.
pub const INITIALIZED: &str = "Initialized";
/// Run and stage condition: making progress.
pub const PROGRESSING: &str = "Progressing";
/// Run, stage and cluster condition: completed (or failed, when False).
pub const SUCCEEDED: &str = "Succeeded";
/// Cluster condition: its binding was moved to the run's snapshot.
pub const STARTED: &str = "Started";
/// Task condition: the approval request exists.
pub const APPROVAL_REQUEST_CREATED: &str = "ApprovalRequestCreated";
/// Task condition: the approval request was approved.
pub const APPROVAL_REQUEST_APPROVED: &str = "ApprovalRequestApproved";
/// Task condition: the timed wait is over.
pub const WAIT_TIME_ELAPSED: &str = "WaitTimeElapsed";
/// Approval request condition set by `fleetctl approve`.
pub const APPROVED: &str = "Approved";
/// Approval request condition set by the run once it saw the approval.
pub const APPROVAL_ACCEPTED: &str = "ApprovalAccepted";

/// Run reasons (docs/spec/staged-updates.md "Run conditions").
pub const REASON_INITIALIZED: &str = "UpdateRunInitializedSuccessfully";
/// Initialization failed (terminal).
pub const REASON_INITIALIZE_FAILED: &str = "UpdateRunInitializedFailed";
/// The run is updating clusters.
pub const REASON_PROGRESSING: &str = "UpdateRunProgressing";
/// The run waits for before- or after-stage tasks.
pub const REASON_WAITING: &str = "UpdateRunWaiting";
/// A cluster has been updating for more than [`STUCK_AFTER_SECONDS`].
pub const REASON_STUCK: &str = "UpdateRunStuck";
/// Stop asked; clusters still updating.
pub const REASON_STOPPING: &str = "UpdateRunStopping";
/// Stop asked; nothing updating.
pub const REASON_STOPPED: &str = "UpdateRunStopped";
/// Every stage completed.
pub const REASON_RUN_SUCCEEDED: &str = "UpdateRunSucceeded";
/// The run was abandoned (terminal).
pub const REASON_RUN_FAILED: &str = "UpdateRunFailed";

/// Stage reason: clusters of the stage are updating.
pub const REASON_STAGE_STARTED: &str = "StageUpdatingStarted";
/// Stage reason: waiting for before- or after-stage tasks.
pub const REASON_STAGE_WAITING: &str = "StageUpdatingWaiting";
/// Stage reason: stopped by `state: Stop`.
pub const REASON_STAGE_STOPPED: &str = "StageUpdatingStopped";
/// Stage reason: completed.
pub const REASON_STAGE_SUCCEEDED: &str = "StageUpdatingSucceeded";
/// Stage reason: the run was abandoned in this stage.
pub const REASON_STAGE_FAILED: &str = "StageUpdatingFailed";

/// Cluster reason: the binding was moved to the run's snapshot.
pub const REASON_CLUSTER_STARTED: &str = "ClusterUpdatingStarted";
/// Cluster reason: the binding is available on the run's snapshot.
pub const REASON_CLUSTER_SUCCEEDED: &str = "ClusterUpdatingSucceeded";
/// Cluster reason: the binding was changed by someone else (SU-11).
pub const REASON_CLUSTER_FAILED: &str = "ClusterUpdatingFailed";

/// Task reason: the approval request was created.
pub const REASON_REQUEST_CREATED: &str = "StageTaskApprovalRequestCreated";
/// Task reason: the approval request was approved.
pub const REASON_REQUEST_APPROVED: &str = "StageTaskApprovalRequestApproved";
/// Task reason: the wait is over.
pub const REASON_WAIT_ELAPSED: &str = "AfterStageTaskWaitTimeElapsed";
/// Task reason: the wait started and is not over.
pub const REASON_WAIT_NOT_ELAPSED: &str = "AfterStageTaskWaitTimeNotElapsed";

/// Approval request reason written by `fleetctl approve` on a cluster-scoped request.
pub const REASON_CLUSTER_REQUEST_APPROVED: &str = "ClusterApprovalRequestApproved";
/// Approval request reason written by `fleetctl approve` on a namespaced request.
pub const REASON_NAMESPACED_REQUEST_APPROVED: &str = "ApprovalRequestApproved";
/// Approval request reason of [`APPROVAL_ACCEPTED`].
pub const REASON_APPROVAL_ACCEPTED: &str = "ApprovalRequestApprovalAccepted";
/// Message of [`APPROVAL_ACCEPTED`] (SU-9).
pub const MESSAGE_APPROVAL_ACCEPTED: &str = "The approval request has been approved and cannot be reverted";

/// How long a cluster may update before the run reports itself stuck (SU-7).
pub const STUCK_AFTER_SECONDS: i64 = 300;

/// The approval request kind serving a run kind.
pub fn approval_request_kind(run_kind: &str) -> &'static str {
    if run_kind == STAGED_UPDATE_RUN {
        APPROVAL_REQUEST
    } else {
        CLUSTER_APPROVAL_REQUEST
    }
}

/// The strategy kind a run kind names in `stagedRolloutStrategyName`.
pub fn strategy_kind(run_kind: &str) -> &'static str {
    if run_kind == STAGED_UPDATE_RUN {
        STAGED_UPDATE_STRATEGY
    } else {
        CLUSTER_STAGED_UPDATE_STRATEGY
    }
}

/// The placement kind a run kind names in `placementName`.
pub fn placement_kind(run_kind: &str) -> &'static str {
    if run_kind == STAGED_UPDATE_RUN {
        crate::placement::RESOURCE_PLACEMENT
    } else {
        crate::placement::CLUSTER_RESOURCE_PLACEMENT
    }
}

/// Name of the approval request gating `stage` of `run`, before or after
/// its clusters: `<run>-before-<stage>` / `<run>-after-<stage>` (SU-6, SU-8).
pub fn approval_request_name(run: &str, stage: &str, before: bool) -> String {
    let when = if before { "before" } else { "after" };
    format!("{run}-{when}-{stage}")
}
