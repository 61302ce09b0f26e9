//! One pass's command: the run's status, the writes the planner decided,
//! and a check of every other object the pass read (so the whole command is
//! refused if any of them changed meanwhile; of the placement, whose status
//! its own controller rewrites with every Work change, only the spec), plus
//! the events to record.

use std::collections::BTreeSet;

use fleet_api::staged::set_run_status;
use fleet_api::{Object, ObjectKey};
use fleet_placement::staged::objects::{accepted_request, approval_request, bound_binding};
use fleet_placement::staged::{RunAction, RunPlan};
use fleet_statemachine::Op;

use super::read::RunRead;
use crate::controllers::events::EventNote;
use crate::controllers::placement::objects::{check, check_spec, delete, with_uid};
use crate::controllers::placement::Step;

/// The command of a pass, or `None` when it changes nothing.
pub fn step(read: &RunRead, plan: &RunPlan, now: &str) -> Option<Step> {
    let writes: Vec<&RunAction> = plan.actions.iter().filter(|a| a.is_write()).collect();
    let status_changed = plan.status_changed(&read.status);
    if !status_changed && writes.is_empty() {
        return None;
    }
    let mut ops = Vec::new();
    if status_changed {
        let mut run = read.run.clone();
        set_run_status(&mut run, &plan.status);
        ops.push(Op::UpdateStatus { object: run });
    } else {
        ops.push(check(&read.run));
    }
    let bindings = read.children.as_ref().map(|c| c.view.bindings.as_slice()).unwrap_or_default();
    let named = |objects: &'_ [Object], name: &str| objects.iter().find(|o| o.metadata.name == name).cloned();
    let mut written: BTreeSet<ObjectKey> = BTreeSet::new();
    for action in writes {
        let op = match action {
            RunAction::Bind { binding, .. } => {
                named(bindings, binding).and_then(|b| bound_binding(&b, action)).map(|object| Op::Update { object })
            }
            RunAction::DeleteBinding { binding, .. } => named(bindings, binding).map(|b| delete(&b)),
            RunAction::CreateApprovalRequest { .. } => {
                approval_request(&read.run, action).map(|object| Op::Create { object: with_uid(object) })
            }
            RunAction::AcceptApproval { name } => named(&read.approval_objects, name)
                .and_then(|r| accepted_request(&r, now))
                .map(|object| Op::UpdateStatus { object }),
            _ => None,
        };
        if let Some(op) = op {
            if let Op::Update { object } | Op::UpdateStatus { object } = &op {
                written.insert(ObjectKey::of(object));
            }
            if let Op::Delete { key, .. } = &op {
                written.insert(key.clone());
            }
            ops.push(op);
        }
    }
    let mut read_objects: Vec<&Object> = Vec::new();
    if let Some(children) = &read.children {
        let view = &children.view;
        // Its spec: the placement controller rewrites its status all along.
        ops.push(check_spec(&view.placement));
        read_objects.extend(&view.policy_snapshots);
        read_objects.extend(&view.resource_snapshots);
        read_objects.extend(&view.bindings);
        // The Works whose readiness made a cluster succeed in this pass.
        for cluster in succeeded_clusters(plan) {
            let binding = read.bindings.iter().find(|b| b.cluster == cluster && b.is_active());
            if let Some(works) = binding.and_then(|b| children.works.get(&b.name)) {
                read_objects.extend(works);
            }
        }
    }
    read_objects.extend(&read.approval_objects);
    read_objects.extend(&read.strategy_object);
    read_objects.extend(&read.members);
    for object in read_objects {
        if !written.contains(&ObjectKey::of(object)) {
            ops.push(check(object));
        }
    }
    let events = plan.actions.iter().filter_map(event_of).collect();
    Some(Step { ops, events, placement: read.run.clone() })
}

/// The clusters a pass marked succeeded.
fn succeeded_clusters(plan: &RunPlan) -> impl Iterator<Item = &str> {
    plan.actions.iter().filter_map(|a| match a {
        RunAction::ClusterSucceeded { cluster, .. } => Some(cluster.as_str()),
        _ => None,
    })
}

/// The event recorded about the run for one action, if any.
fn event_of(action: &RunAction) -> Option<EventNote> {
    Some(match action {
        RunAction::Initialized => EventNote::normal("UpdateRunInitialized", "the stages were computed"),
        RunAction::InitializationFailed { message } => EventNote::warning("UpdateRunInitializationFailed", message),
        RunAction::StageStarted { stage } => {
            EventNote::normal("StageUpdatingStarted", format!("stage {stage} started updating its clusters"))
        }
        RunAction::StageSucceeded { stage } => {
            EventNote::normal("StageUpdatingSucceeded", format!("stage {stage} completed"))
        }
        RunAction::ClusterStarted { stage, cluster } => {
            EventNote::normal("ClusterUpdatingStarted", format!("cluster {cluster} in stage {stage} started updating"))
        }
        RunAction::ClusterSucceeded { stage, cluster } => EventNote::normal(
            "ClusterUpdatingSucceeded",
            format!("cluster {cluster} in stage {stage} finished updating"),
        ),
        RunAction::CreateApprovalRequest { name, .. } => {
            EventNote::normal("ApprovalRequestCreated", format!("waiting for approval request {name}"))
        }
        RunAction::AcceptApproval { name } => {
            EventNote::normal("ApprovalRequestApprovalAccepted", format!("approval request {name} was approved"))
        }
        RunAction::DeleteBinding { cluster, .. } => {
            EventNote::normal("ClusterRemoved", format!("removing the resources from cluster {cluster}"))
        }
        RunAction::Stuck { message } => EventNote::warning("UpdateRunStuck", message),
        RunAction::Stopped => EventNote::normal("UpdateRunStopped", "the update run stopped"),
        RunAction::Succeeded => EventNote::normal("UpdateRunSucceeded", "all stages are completed"),
        RunAction::Abandoned { message } => EventNote::warning("UpdateRunFailed", message),
        RunAction::Bind { .. } => return None,
    })
}
