//! Before- and after-stage tasks: the approval gate before a stage's
//! clusters (SU-6), the timed wait and approval after them (SU-8), and
//! approval requests (SU-9).

use fleet_api::staged::{
    approval_request_name, StageConfig, StageTaskStatus, APPROVAL_REQUEST_APPROVED, APPROVAL_REQUEST_CREATED,
    REASON_REQUEST_APPROVED, REASON_REQUEST_CREATED, REASON_WAIT_ELAPSED, REASON_WAIT_NOT_ELAPSED, TASK_APPROVAL,
    TASK_TIMED_WAIT, WAIT_TIME_ELAPSED,
};

use super::marks::{
    is_true, mark, transitioned_at, wait_message, Is, REQUEST_APPROVED_MESSAGE, REQUEST_CREATED_MESSAGE,
    WAIT_ELAPSED_MESSAGE,
};
use super::{Pass, RunAction};

/// Whether a gate lets the stage go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gate {
    /// Every task is done.
    Open,
    /// Some task is not done yet.
    Waiting,
}

/// The status entry of stage `i`'s task of `type_`, before or after its
/// clusters (added when the stored status lacks it).
fn task_status<'p>(pass: &'p mut Pass, i: usize, type_: &str, before: bool) -> Option<&'p mut StageTaskStatus> {
    let run = pass.input.run_name.to_string();
    let stage = pass.status.stages_status.get_mut(i)?;
    let name = stage.stage_name.clone();
    let tasks = if before { &mut stage.before_stage_task_status } else { &mut stage.after_stage_task_status };
    let position = match tasks.iter().position(|t| t.type_ == type_) {
        Some(p) => p,
        None => {
            let approval_request_name =
                if type_ == TASK_APPROVAL { approval_request_name(&run, &name, before) } else { String::new() };
            tasks.push(StageTaskStatus { type_: type_.to_string(), approval_request_name, conditions: Vec::new() });
            tasks.len() - 1
        }
    };
    tasks.get_mut(position)
}

/// The approval task of stage `i`: creates its request when absent,
/// accepts it once approved. `Ok(true)` when approved; `Err` (an
/// abandonment cause) when a request of that name gates something else.
fn approval(pass: &mut Pass, i: usize, before: bool) -> Result<bool, String> {
    let (generation, now) = (pass.input.generation, pass.now.clone());
    let run = pass.input.run_name;
    let approvals = pass.input.approvals;
    let stage = pass.status.stages_status.get(i).map(|s| s.stage_name.clone()).unwrap_or_default();
    let Some(task) = task_status(pass, i, TASK_APPROVAL, before) else { return Ok(false) };
    if is_true(&task.conditions, APPROVAL_REQUEST_APPROVED) {
        return Ok(true);
    }
    let name = task.approval_request_name.clone();
    let request = approvals.iter().find(|a| a.name == name);
    if let Some(r) = request {
        if r.spec.parent_stage_rollout != run || r.spec.target_stage != stage {
            return Err(format!(
                "the approval request `{name}` gates update run `{}` and stage `{}`, want update run `{run}` and stage `{stage}`",
                r.spec.parent_stage_rollout, r.spec.target_stage
            ));
        }
    }
    let created = (REASON_REQUEST_CREATED, REQUEST_CREATED_MESSAGE);
    mark(&mut task.conditions, APPROVAL_REQUEST_CREATED, Is::Yes, created.0, created.1, generation, &now);
    let approved = request.is_some_and(|r| r.approved || r.accepted);
    if approved {
        let done = (REASON_REQUEST_APPROVED, REQUEST_APPROVED_MESSAGE);
        mark(&mut task.conditions, APPROVAL_REQUEST_APPROVED, Is::Yes, done.0, done.1, generation, &now);
    }
    match request {
        None => pass.actions.push(RunAction::CreateApprovalRequest { name, stage, before }),
        Some(r) if approved && !r.accepted => pass.actions.push(RunAction::AcceptApproval { name }),
        Some(_) => {}
    }
    Ok(approved)
}

/// The gate before stage `i`'s clusters: its `Approval` task, if any.
/// While stopped nothing is created or accepted.
pub(super) fn before_gate(pass: &mut Pass, i: usize, config: &StageConfig, stop: bool) -> Result<Gate, String> {
    if !config.has_approval(true) {
        return Ok(Gate::Open);
    }
    let approved_before = pass
        .status
        .stages_status
        .get(i)
        .and_then(|s| s.before_stage_task_status.iter().find(|t| t.type_ == TASK_APPROVAL))
        .is_some_and(|t| is_true(&t.conditions, APPROVAL_REQUEST_APPROVED));
    if approved_before {
        return Ok(Gate::Open);
    }
    if stop {
        return Ok(Gate::Waiting);
    }
    Ok(if approval(pass, i, true)? { Gate::Open } else { Gate::Waiting })
}

/// The timed wait after stage `i`'s clusters: begins now if it has not,
/// ends `seconds` after it began. Whether it is over.
fn timed_wait(pass: &mut Pass, i: usize, seconds: i64) -> bool {
    let (generation, now, now_unix) = (pass.input.generation, pass.now.clone(), pass.input.now);
    let Some(task) = task_status(pass, i, TASK_TIMED_WAIT, false) else { return false };
    if is_true(&task.conditions, WAIT_TIME_ELAPSED) {
        return true;
    }
    let began = if task.conditions.iter().any(|c| c.type_ == WAIT_TIME_ELAPSED) {
        transitioned_at(&task.conditions, WAIT_TIME_ELAPSED).unwrap_or(0)
    } else {
        now_unix
    };
    let ends = began.saturating_add(seconds);
    if now_unix >= ends {
        let elapsed = (REASON_WAIT_ELAPSED, WAIT_ELAPSED_MESSAGE);
        mark(&mut task.conditions, WAIT_TIME_ELAPSED, Is::Yes, elapsed.0, elapsed.1, generation, &now);
        return true;
    }
    let message = wait_message(&crate::time::rfc3339(ends));
    mark(&mut task.conditions, WAIT_TIME_ELAPSED, Is::No, REASON_WAIT_NOT_ELAPSED, &message, generation, &now);
    pass.requeue(ends);
    false
}

/// The tasks after stage `i`'s clusters, run together (SU-8).
pub(super) fn after_tasks(pass: &mut Pass, i: usize, config: &StageConfig) -> Result<Gate, String> {
    let mut open = true;
    if let Some(seconds) = config.timed_wait_seconds() {
        open &= timed_wait(pass, i, seconds);
    }
    if config.has_approval(false) {
        open &= approval(pass, i, false)?;
    }
    Ok(if open { Gate::Open } else { Gate::Waiting })
}
