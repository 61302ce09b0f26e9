//! Staged update runs (docs/spec/staged-updates.md), as one pure function:
//! [`plan_run`] takes a run (spec and stored status), its placement, the
//! placement's bindings with their readiness, the approval requests and
//! `now`, and returns the run's next status, the writes to make
//! ([`RunAction`]) and when to look again. Everything a run knows lives in
//! its status — the frozen stages, which clusters started and succeeded,
//! when each started, when each timed wait began, which approvals were
//! seen — so any leader computes the same next step from the stored object.
//!
//! How a controller drives it, per run, in one atomic command per pass:
//! read the run, its placement (+ policy and resource snapshots →
//! [`RunPlacement::read`]), the strategy, the MemberClusters
//! ([`ClusterLabels`]), the placement's bindings with their Works
//! ([`RunBinding::of`], readiness for the run's resource index), the
//! approval requests of the run's scope ([`RunApproval::of`]) and the
//! override snapshots per cluster; call [`plan_run`]; write the run's status
//! (when it changed) and each write action ([`objects`] builds the objects),
//! with version checks on everything read; requeue at `requeue_at`.
//!
//! Re-running on the stored result gives no new actions (the status records
//! every step), and no cluster is bound to the run's snapshot before every
//! cluster of earlier stages succeeded and its stage's gate opened.
//!
//! Decisions beyond the spec's wording:
//! - initialization waits (no status written, [`RunPlan::pending`] says
//!   why) while the placement's controllers have not caught up: no policy
//!   snapshot yet, the scheduler has not yet judged the latest one for the
//!   placement's generation, no resource snapshot at all yet, or a binding
//!   still names an older policy snapshot. A policy judged unfulfilled, a
//!   named index that is not kept, a missing strategy or placement fail it
//!   (SU-3), as does a placement with no binding at all (as KubeFleet);
//! - a cluster whose binding is already on the run's snapshot, overrides
//!   and apply strategy starts without a write; a binding that is Available
//!   (or not trackable, i.e. Available with `WorkNotTrackable`) succeeds
//!   at once — the run has no `unavailablePeriodSeconds`;
//! - a failed apply never fails the run (SU-7): the cluster keeps its slot
//!   and the run reports itself stuck after 5 minutes;
//! - `Stop` freezes everything but the clusters already updating: no new
//!   cluster, no stage start or skip, no task start, no approval created or
//!   accepted, no deletion; a timed wait that began before the stop keeps
//!   its recorded start, so it may be over on resume;
//! - a timed wait begins when the stage's last cluster succeeds and ends on
//!   the whole second `waitTime` later (recorded as the transition time of
//!   the task's `WaitTimeElapsed` False condition);
//! - an approval request counts once `Approved` is True at its generation
//!   (or it was accepted before); the run then writes `ApprovalAccepted`. A
//!   request of that name gating another run or stage abandons the run;
//!   a deleted request is created again;
//! - abandonment (SU-11) compares stage *membership* (as sets): a changed
//!   sorting label does not reorder or abandon a running run;
//! - the deletion stage deletes the Unscheduled bindings of its frozen
//!   clusters in the same pass that marks them done (deleting a binding is
//!   immediate in Fleet), so the run succeeds in that pass;
//! - the run's and its stages' conditions carry the run's generation.

mod abandon;
mod clusters;
mod deletion;
mod execute;
mod init;
mod inputs;
mod marks;
pub mod objects;
mod stages;
mod tasks;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests_abandon;
#[cfg(test)]
mod tests_example;
#[cfg(test)]
mod tests_init;
#[cfg(test)]
mod tests_progress;
#[cfg(test)]
mod tests_properties;

use std::collections::BTreeMap;

use fleet_api::staged::{
    NamespacedName, UpdateRunSpec, UpdateRunStatus, UpdateStrategySpec, INITIALIZED, STATE_INITIALIZE, STATE_STOP,
    SUCCEEDED,
};
use fleet_api::work::ApplyStrategy;

pub use inputs::{ClusterLabels, ClusterOverrides, PolicySnapshotFacts, RunApproval, RunBinding, RunPlacement};
pub use stages::{assign_stages, compute_stages, order_stage};

/// Everything one pass of a run reads.
#[derive(Debug, Clone, Copy)]
pub struct RunInput<'a> {
    /// The run's name (approval requests are named after it).
    pub run_name: &'a str,
    /// The run's `metadata.generation` (stamped on its conditions).
    pub generation: i64,
    /// The run's spec, defaulted.
    pub spec: &'a UpdateRunSpec,
    /// The run's stored status.
    pub status: &'a UpdateRunStatus,
    /// The placement it names; `None` when missing or being deleted.
    pub placement: Option<&'a RunPlacement>,
    /// The strategy it names (only read at initialization).
    pub strategy: Option<&'a UpdateStrategySpec>,
    /// Every MemberCluster's labels.
    pub clusters: &'a [ClusterLabels],
    /// Every binding of the placement.
    pub bindings: &'a [RunBinding],
    /// Approval requests of the run's scope (any order; others ignored).
    pub approvals: &'a [RunApproval],
    /// The override snapshots per cluster (absent = none).
    pub overrides: &'a BTreeMap<String, ClusterOverrides>,
    /// Unix seconds.
    pub now: i64,
}

/// One write, or one step worth an event, decided by a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAction {
    /// Write: the binding becomes Bound to the run's snapshot, overrides
    /// and apply strategy (SU-6).
    Bind {
        /// The binding's name.
        binding: String,
        /// Its cluster.
        cluster: String,
        /// The run's resource snapshot (first of the group).
        resource_snapshot: String,
        /// ClusterResourceOverride snapshots frozen for the cluster.
        cluster_resource_override_snapshots: Vec<String>,
        /// ResourceOverride snapshots frozen for the cluster.
        resource_override_snapshots: Vec<NamespacedName>,
        /// The run's `appliedStrategy`.
        apply_strategy: Option<ApplyStrategy>,
    },
    /// Write: delete a binding of a cluster no longer chosen (SU-10).
    DeleteBinding {
        /// The binding's name.
        binding: String,
        /// Its cluster.
        cluster: String,
    },
    /// Write: create the approval request `name` (SU-9).
    CreateApprovalRequest {
        /// `<run>-before-<stage>` or `<run>-after-<stage>`.
        name: String,
        /// The stage it gates.
        stage: String,
        /// Before the stage's clusters (else after).
        before: bool,
    },
    /// Write: set `ApprovalAccepted` True on the approved request `name`.
    AcceptApproval {
        /// The request's name.
        name: String,
    },
    /// Step: the stages were computed.
    Initialized,
    /// Step: initialization failed (terminal).
    InitializationFailed {
        /// Why.
        message: String,
    },
    /// Step: a stage's first cluster started.
    StageStarted {
        /// The stage.
        stage: String,
    },
    /// Step: a stage completed (or was skipped, having no clusters).
    StageSucceeded {
        /// The stage.
        stage: String,
    },
    /// Step: a cluster's update started.
    ClusterStarted {
        /// Its stage.
        stage: String,
        /// The cluster.
        cluster: String,
    },
    /// Step: a cluster's update succeeded.
    ClusterSucceeded {
        /// Its stage.
        stage: String,
        /// The cluster.
        cluster: String,
    },
    /// Step: the run became stuck (SU-7).
    Stuck {
        /// The message of `Progressing`.
        message: String,
    },
    /// Step: the run stopped (nothing updating any more).
    Stopped,
    /// Step: the run succeeded.
    Succeeded,
    /// Step: the run was abandoned (SU-11, terminal).
    Abandoned {
        /// Why.
        message: String,
    },
}

impl RunAction {
    /// Whether the action writes an object other than the run's status.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            RunAction::Bind { .. }
                | RunAction::DeleteBinding { .. }
                | RunAction::CreateApprovalRequest { .. }
                | RunAction::AcceptApproval { .. }
        )
    }
}

/// The result of one pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunPlan {
    /// The run's status after this pass (write it if it differs).
    pub status: UpdateRunStatus,
    /// Writes and steps, in order.
    pub actions: Vec<RunAction>,
    /// Earliest unix second at which time alone changes something (a wait
    /// ending, a cluster becoming stuck).
    pub requeue_at: Option<i64>,
    /// Initialization is waiting for the placement's controllers: why.
    pub pending: Option<String>,
}

impl RunPlan {
    /// Whether the status differs from the stored one.
    pub fn status_changed(&self, stored: &UpdateRunStatus) -> bool {
        &self.status != stored
    }
}

/// The state of one pass: the status being changed and what was decided.
pub(crate) struct Pass<'a> {
    pub(crate) input: &'a RunInput<'a>,
    pub(crate) status: UpdateRunStatus,
    pub(crate) actions: Vec<RunAction>,
    pub(crate) requeue_at: Option<i64>,
    /// `now` in RFC 3339.
    pub(crate) now: String,
}

impl Pass<'_> {
    /// Asks to be called again at `at` (the earliest such moment wins).
    pub(crate) fn requeue(&mut self, at: i64) {
        self.requeue_at = Some(self.requeue_at.map_or(at, |r| r.min(at)));
    }
}

/// Whether the run is over: initialization failed, or it succeeded or was
/// abandoned.
pub fn is_finished(status: &UpdateRunStatus) -> bool {
    marks::is_false(&status.conditions, INITIALIZED)
        || fleet_api::conditions::find(&status.conditions, SUCCEEDED).is_some()
}

/// One pass of a run; see the module documentation.
pub fn plan_run(input: &RunInput) -> RunPlan {
    let mut pass = Pass {
        input,
        status: input.status.clone(),
        actions: Vec::new(),
        requeue_at: None,
        now: crate::time::rfc3339(input.now),
    };
    if is_finished(&pass.status) {
        return finish(pass, None);
    }
    if !marks::is_true(&pass.status.conditions, INITIALIZED) {
        match init::initialize(input) {
            init::Outcome::Pending(why) => return finish(pass, Some(why)),
            init::Outcome::Failed(cause) => {
                init::mark_failed(&mut pass, &cause);
                return finish(pass, None);
            }
            init::Outcome::Ready(status) => {
                pass.status = *status;
                init::mark_initialized(&mut pass);
            }
        }
    }
    if let Some(cause) = abandon::cause(&pass) {
        abandon::abandon(&mut pass, &cause, None);
        return finish(pass, None);
    }
    match input.spec.state() {
        STATE_INITIALIZE => {}
        state => execute::execute(&mut pass, state == STATE_STOP),
    }
    finish(pass, None)
}

fn finish(pass: Pass, pending: Option<String>) -> RunPlan {
    RunPlan { status: pass.status, actions: pass.actions, requeue_at: pass.requeue_at, pending }
}
