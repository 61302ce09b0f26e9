//! Execution (SU-6..SU-8): the stages strictly in order, each behind its
//! before-stage gate, its clusters, then its after-stage tasks; then the
//! deletion stage; and the run's `Progressing` condition for where it is.

use fleet_api::snapshot::resource_snapshot_name;
use fleet_api::staged::{
    StageConfig, PROGRESSING, REASON_PROGRESSING, REASON_STAGE_STOPPED, REASON_STAGE_SUCCEEDED, REASON_STAGE_WAITING,
    REASON_STOPPED, REASON_STOPPING, REASON_STUCK, REASON_WAITING, SUCCEEDED,
};

use super::clusters;
use super::marks::{
    is_true, mark, stuck_message, waiting_message, Is, PROGRESSING_MESSAGE, STAGE_STOPPED_MESSAGE,
    STAGE_SUCCEEDED_MESSAGE, STAGE_WAITING_AFTER_MESSAGE, STAGE_WAITING_BEFORE_MESSAGE, STOPPED_MESSAGE,
    STOPPING_MESSAGE,
};
use super::tasks::{after_tasks, before_gate, Gate};
use super::{abandon, deletion, Pass, RunAction};

/// Where a pass left the run, for its `Progressing` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Halt {
    /// Clusters are updating; some may be stuck.
    Updating {
        /// Clusters updating for too long.
        stuck: Vec<String>,
    },
    /// Waiting for the stage's before- (or after-) stage tasks.
    Waiting {
        /// Before the stage's clusters.
        before: bool,
    },
    /// Stop asked, clusters still updating.
    Stopping,
    /// Stop asked, nothing updating.
    Stopped,
}

/// What one stage's turn concluded.
enum Turn {
    /// The stage is done: go on to the next.
    Next,
    /// The run stays in this stage for now.
    Halt(Halt),
    /// The run must be abandoned (cause, failing cluster index).
    Abandon(String, Option<usize>),
}

/// One execution pass over the stages; `stop` while `state: Stop`.
pub(super) fn execute(pass: &mut Pass, stop: bool) {
    let Some(snapshot) = pass.status.staged_update_strategy_snapshot.clone() else {
        abandon::abandon(pass, "the updateRun status has no strategy snapshot", None);
        return;
    };
    let index = pass.status.resource_snapshot_index_used.parse::<u64>();
    let Ok(index) = index else {
        let cause = format!(
            "the recorded resource snapshot index {:?} is not a number",
            pass.status.resource_snapshot_index_used
        );
        abandon::abandon(pass, &cause, None);
        return;
    };
    let resource_snapshot = resource_snapshot_name(&pass.input.spec.placement_name, index);
    for (i, config) in snapshot.stages.iter().enumerate() {
        match turn(pass, i, config, &resource_snapshot, stop) {
            Turn::Next => continue,
            Turn::Halt(halt) => return set_progress(pass, &halt, i),
            Turn::Abandon(cause, cluster) => return abandon::abandon(pass, &cause, cluster.map(|k| (i, k))),
        }
    }
    if stop {
        let last = pass.status.stages_status.len();
        return set_progress(pass, &Halt::Stopped, last);
    }
    deletion::run(pass);
}

fn stage_mark(pass: &mut Pass, i: usize, type_: &str, is: Is, reason: &str, message: &str) {
    let (generation, now) = (pass.input.generation, pass.now.clone());
    if let Some(stage) = pass.status.stages_status.get_mut(i) {
        mark(&mut stage.conditions, type_, is, reason, message, generation, &now);
    }
}

fn stage_done(pass: &mut Pass, i: usize) {
    stage_mark(pass, i, PROGRESSING, Is::No, REASON_STAGE_SUCCEEDED, STAGE_SUCCEEDED_MESSAGE);
    stage_mark(pass, i, SUCCEEDED, Is::Yes, REASON_STAGE_SUCCEEDED, STAGE_SUCCEEDED_MESSAGE);
    let now = pass.now.clone();
    if let Some(stage) = pass.status.stages_status.get_mut(i) {
        stage.start_time.get_or_insert_with(|| now.clone());
        stage.end_time = Some(now);
        pass.actions.push(RunAction::StageSucceeded { stage: stage.stage_name.clone() });
    }
}

/// One stage's turn in this pass. A stage no cluster matched still runs
/// its tasks, as KubeFleet's: its approvals gate the stages after it.
fn turn(pass: &mut Pass, i: usize, config: &StageConfig, resource_snapshot: &str, stop: bool) -> Turn {
    let Some(stage) = pass.status.stages_status.get(i) else {
        return Turn::Abandon("the updateRun status does not match its strategy snapshot".into(), None);
    };
    if is_true(&stage.conditions, SUCCEEDED) {
        return Turn::Next;
    }
    match before_gate(pass, i, config, stop) {
        Err(cause) => return Turn::Abandon(cause, None),
        Ok(Gate::Waiting) if stop => return Turn::Halt(Halt::Stopped),
        Ok(Gate::Waiting) => {
            stage_mark(pass, i, PROGRESSING, Is::No, REASON_STAGE_WAITING, STAGE_WAITING_BEFORE_MESSAGE);
            return Turn::Halt(Halt::Waiting { before: true });
        }
        Ok(Gate::Open) => {}
    }
    let clusters = match clusters::run(pass, i, config, resource_snapshot, stop) {
        Ok(c) => c,
        Err((cause, k)) => return Turn::Abandon(cause, Some(k)),
    };
    if !clusters.all_succeeded {
        return Turn::Halt(match (stop, clusters.updating) {
            (true, 0) => Halt::Stopped,
            (true, _) => Halt::Stopping,
            (false, _) => Halt::Updating { stuck: clusters.stuck },
        });
    }
    if stop {
        return Turn::Halt(Halt::Stopped);
    }
    match after_tasks(pass, i, config) {
        Err(cause) => Turn::Abandon(cause, None),
        Ok(Gate::Waiting) => {
            stage_mark(pass, i, PROGRESSING, Is::No, REASON_STAGE_WAITING, STAGE_WAITING_AFTER_MESSAGE);
            Turn::Halt(Halt::Waiting { before: false })
        }
        Ok(Gate::Open) => {
            stage_done(pass, i);
            Turn::Next
        }
    }
}

/// The run's `Progressing` for `halt` in stage `i` (the deletion stage when
/// past the last), with a step when the run became stuck or stopped.
pub(super) fn set_progress(pass: &mut Pass, halt: &Halt, i: usize) {
    let (generation, now) = (pass.input.generation, pass.now.clone());
    let stage_name = pass.status.stages_status.get(i).map(|s| s.stage_name.clone()).unwrap_or_default();
    let (is, reason, message) = match halt {
        Halt::Updating { stuck } if stuck.is_empty() => (Is::Yes, REASON_PROGRESSING, PROGRESSING_MESSAGE.to_string()),
        Halt::Updating { stuck } => (Is::No, REASON_STUCK, stuck_message(&stage_name, stuck)),
        Halt::Waiting { before } => (Is::No, REASON_WAITING, waiting_message(&stage_name, *before)),
        Halt::Stopping => (Is::Unknown, REASON_STOPPING, STOPPING_MESSAGE.to_string()),
        Halt::Stopped => (Is::No, REASON_STOPPED, STOPPED_MESSAGE.to_string()),
    };
    let was = fleet_api::conditions::find(&pass.status.conditions, PROGRESSING).map(|c| c.reason.clone());
    mark(&mut pass.status.conditions, PROGRESSING, is, reason, &message, generation, &now);
    if was.as_deref() != Some(reason) {
        match halt {
            Halt::Updating { stuck } if !stuck.is_empty() => pass.actions.push(RunAction::Stuck { message }),
            Halt::Stopped => pass.actions.push(RunAction::Stopped),
            _ => {}
        }
    }
    if *halt == Halt::Stopped {
        let entered = pass.status.stages_status.get(i).is_some_and(|s| !s.conditions.is_empty());
        if entered {
            stage_mark(pass, i, PROGRESSING, Is::No, REASON_STAGE_STOPPED, STAGE_STOPPED_MESSAGE);
        }
    }
}
