//! The deletion stage (SU-10): after the last stage, the bindings of the
//! clusters no longer chosen are deleted, and the run succeeds.

use fleet_api::staged::{
    StageUpdatingStatus, DELETE_STAGE_NAME, PROGRESSING, REASON_CLUSTER_STARTED, REASON_CLUSTER_SUCCEEDED,
    REASON_RUN_SUCCEEDED, REASON_STAGE_SUCCEEDED, STARTED, SUCCEEDED,
};

use super::marks::{
    is_true, mark, Is, CLUSTER_DELETED_MESSAGE, CLUSTER_DELETING_MESSAGE, COMPLETED_MESSAGE, STAGE_SUCCEEDED_MESSAGE,
    SUCCEEDED_MESSAGE,
};
use super::{Pass, RunAction};

/// Deletes the Unscheduled bindings of the frozen clusters (the deletes and
/// the status that records them commit together), then marks the stage and
/// the run succeeded.
pub(super) fn run(pass: &mut Pass) {
    let (generation, now) = (pass.input.generation, pass.now.clone());
    let bindings = pass.input.bindings;
    let mut stage = pass
        .status
        .deletion_stage_status
        .take()
        .unwrap_or_else(|| StageUpdatingStatus { stage_name: DELETE_STAGE_NAME.to_string(), ..Default::default() });
    if !is_true(&stage.conditions, SUCCEEDED) {
        stage.start_time.get_or_insert_with(|| now.clone());
        for cluster in stage.clusters.iter_mut().filter(|c| !is_true(&c.conditions, SUCCEEDED)) {
            let name = cluster.cluster_name.clone();
            for b in bindings.iter().filter(|b| b.cluster == name && b.is_unscheduled()) {
                pass.actions.push(RunAction::DeleteBinding { binding: b.name.clone(), cluster: name.clone() });
            }
            let started = (REASON_CLUSTER_STARTED, CLUSTER_DELETING_MESSAGE);
            mark(&mut cluster.conditions, STARTED, Is::Yes, started.0, started.1, generation, &now);
            let done = (REASON_CLUSTER_SUCCEEDED, CLUSTER_DELETED_MESSAGE);
            mark(&mut cluster.conditions, SUCCEEDED, Is::Yes, done.0, done.1, generation, &now);
            pass.actions.push(RunAction::ClusterSucceeded { stage: DELETE_STAGE_NAME.to_string(), cluster: name });
        }
        let done = (REASON_STAGE_SUCCEEDED, STAGE_SUCCEEDED_MESSAGE);
        mark(&mut stage.conditions, PROGRESSING, Is::No, done.0, done.1, generation, &now);
        mark(&mut stage.conditions, SUCCEEDED, Is::Yes, done.0, done.1, generation, &now);
        stage.end_time = Some(now.clone());
        pass.actions.push(RunAction::StageSucceeded { stage: DELETE_STAGE_NAME.to_string() });
    }
    pass.status.deletion_stage_status = Some(stage);
    let conditions = &mut pass.status.conditions;
    mark(conditions, PROGRESSING, Is::No, REASON_RUN_SUCCEEDED, COMPLETED_MESSAGE, generation, &now);
    mark(conditions, SUCCEEDED, Is::Yes, REASON_RUN_SUCCEEDED, SUCCEEDED_MESSAGE, generation, &now);
    pass.actions.push(RunAction::Succeeded);
}
