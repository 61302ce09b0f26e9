//! `describe` of a ClusterStagedUpdateRun or StagedUpdateRun: the generic
//! header and spec, then what the run froze (indexes, strategy), its
//! conditions, and one block per stage — its clusters in update order with
//! where each is, and what the stage waits for (the approval request to
//! approve, the time left of a timed wait) — then the events.

use std::time::SystemTime;

use fleet_api::staged::{run_status_of, CLUSTER_STAGED_UPDATE_RUN, STAGED_UPDATE_RUN};
use fleet_api::Object;
use serde_json::Value;

use super::lines::Lines;
use super::placement::conditions;
use super::{generic, render_events};
use crate::age::age;
use crate::staged::{run_progress, task_text, waiting_for, ClusterState, RunOutcome, StageStep, TaskStep};
use crate::table::Table;

/// Whether `kind` is a run kind this describer handles.
pub fn is_run_kind(kind: &str) -> bool {
    kind == CLUSTER_STAGED_UPDATE_RUN || kind == STAGED_UPDATE_RUN
}

/// Renders `run` and its `events` (already filtered to it) at `now`.
pub fn render(run: &Object, events: &[Object], now: SystemTime) -> String {
    let mut w = generic(run, &["status"]);
    let status = run_status_of(run);
    let progress = run_progress(run, now);
    let namespace = run.metadata.namespace.as_deref().filter(|n| !n.is_empty());
    w.header(0, "Status");
    let or_none = |s: &str| if s.is_empty() { "<none>".to_string() } else { s.to_string() };
    w.field(1, "Policy Snapshot Index Used", &or_none(&status.policy_snapshot_index_used));
    let count = status.policy_observed_cluster_count.map(|c| c.to_string()).unwrap_or_default();
    w.field(1, "Policy Observed Cluster Count", &or_none(&count));
    w.field(1, "Resource Snapshot Index Used", &or_none(&status.resource_snapshot_index_used));
    let outcome = match &progress.outcome {
        RunOutcome::Succeeded => "Succeeded".to_string(),
        RunOutcome::Failed(why) => format!("Failed: {why}"),
        RunOutcome::InProgress(why) => format!("In progress: {why}"),
    };
    w.field(1, "Outcome", &outcome);
    let conditions_value = serde_json::to_value(&status.conditions).unwrap_or(Value::Null);
    conditions(&mut w, 1, Some(&conditions_value), now);
    if progress.stages.is_empty() {
        w.field(1, "Stages", "<none>");
    } else {
        w.header(1, "Stages");
        for stage in &progress.stages {
            stage_block(&mut w, stage, namespace, now);
        }
    }
    let deleting = if progress.deleting.is_empty() { "<none>".to_string() } else { progress.deleting.join(", ") };
    w.field(1, "Deletion Stage Clusters", &deleting);
    let mut text = w.finish();
    text.push_str(&render_events(events, now));
    text
}

/// `Stage:  NAME (STATE)`, what it waits for, its tasks and a table of its
/// clusters.
fn stage_block(w: &mut Lines, stage: &StageStep, namespace: Option<&str>, now: SystemTime) {
    w.field(2, "Stage", &format!("{} ({})", stage.name, stage.state.as_str()));
    if !stage.state.is_done() && stage.state != crate::staged::StageState::Failed {
        w.field(3, "Waiting For", &waiting_for(stage, namespace));
    }
    tasks(w, "Before Stage Tasks", &stage.before, namespace);
    if stage.clusters.is_empty() {
        w.field(3, "Clusters", "<none>");
    } else {
        w.header(3, "Clusters");
        let mut table = Table::new(["CLUSTER", "STATE", "DETAIL"]);
        for cluster in &stage.clusters {
            let (state, detail) = match &cluster.state {
                ClusterState::Pending => ("Pending", String::new()),
                ClusterState::Updating { since } => ("Updating", format!("for {}", age(Some(since), now))),
                ClusterState::Succeeded => ("Succeeded", String::new()),
                ClusterState::Failed(why) => ("Failed", why.clone()),
            };
            table.push(vec![cluster.cluster.clone(), state.to_string(), detail]);
        }
        w.table(4, &table);
    }
    tasks(w, "After Stage Tasks", &stage.after, namespace);
}

fn tasks(w: &mut Lines, label: &str, tasks: &[TaskStep], namespace: Option<&str>) {
    if tasks.is_empty() {
        return;
    }
    w.header(3, label);
    for task in tasks {
        w.field(4, &task.type_, &task_text(task, namespace));
    }
}
