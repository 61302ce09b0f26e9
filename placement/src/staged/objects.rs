//! The objects a run's write actions produce, so the controller only
//! proposes them: a binding moved to the run's snapshot, a new approval
//! request, an accepted one.

use std::collections::BTreeMap;

use fleet_api::binding::{set_spec, spec_of, ROLLED_OUT_UNDER_ANNOTATION, STATE_BOUND};
use fleet_api::staged::approval::accept;
use fleet_api::staged::{
    approval_request_kind, approval_status_of, set_approval_status, ApprovalRequestSpec, AFTER_STAGE, BEFORE_STAGE,
    IS_LATEST_APPROVAL_LABEL, TARGET_UPDATE_RUN_LABEL, TARGET_UPDATING_STAGE_LABEL, TASK_TYPE_LABEL,
};
use fleet_api::typed::encode;
use fleet_api::{Object, ObjectMeta, OwnerReference};

use super::RunAction;

/// `binding` as a [`RunAction::Bind`] wants it (Bound, the run's snapshot,
/// overrides and apply strategy; everything else kept). `None` for any
/// other action.
pub fn bound_binding(binding: &Object, action: &RunAction) -> Option<Object> {
    let RunAction::Bind {
        resource_snapshot,
        cluster_resource_override_snapshots,
        resource_override_snapshots,
        apply_strategy,
        ..
    } = action
    else {
        return None;
    };
    let mut spec = spec_of(binding);
    let mut updated = binding.clone();
    updated
        .metadata
        .annotations
        .insert(ROLLED_OUT_UNDER_ANNOTATION.into(), spec.scheduling_policy_snapshot_name.clone());
    spec.state = STATE_BOUND.to_string();
    spec.resource_snapshot_name = resource_snapshot.clone();
    spec.cluster_resource_override_snapshots = cluster_resource_override_snapshots.clone();
    spec.resource_override_snapshots = resource_override_snapshots.iter().map(encode).collect();
    spec.apply_strategy = apply_strategy.as_ref().map(encode);
    set_spec(&mut updated, &spec);
    Some(updated)
}

/// The approval request a [`RunAction::CreateApprovalRequest`] of `run`
/// asks for: in the run's namespace, owned by the run (deleting the run
/// deletes it, SU-9), labelled with the run, the stage and the task type.
/// `None` for any other action.
pub fn approval_request(run: &Object, action: &RunAction) -> Option<Object> {
    let RunAction::CreateApprovalRequest { name, stage, before } = action else { return None };
    let labels = BTreeMap::from([
        (TARGET_UPDATE_RUN_LABEL.to_string(), run.metadata.name.clone()),
        (TARGET_UPDATING_STAGE_LABEL.to_string(), stage.clone()),
        (TASK_TYPE_LABEL.to_string(), if *before { BEFORE_STAGE } else { AFTER_STAGE }.to_string()),
        (IS_LATEST_APPROVAL_LABEL.to_string(), "true".to_string()),
    ]);
    let spec = ApprovalRequestSpec { parent_stage_rollout: run.metadata.name.clone(), target_stage: stage.clone() };
    let mut rest = serde_json::Map::new();
    rest.insert("spec".into(), encode(&spec));
    Some(Object {
        api_version: run.api_version.clone(),
        kind: approval_request_kind(&run.kind).to_string(),
        metadata: ObjectMeta {
            name: name.clone(),
            namespace: run.metadata.namespace.clone(),
            labels,
            owner_references: vec![OwnerReference::controller_of(run)],
            ..Default::default()
        },
        rest,
    })
}

/// The approval request `request` with `ApprovalAccepted` True at its
/// generation (for [`RunAction::AcceptApproval`]); `None` if it already is.
pub fn accepted_request(request: &Object, now: &str) -> Option<Object> {
    let mut status = approval_status_of(request);
    if !accept(&mut status, request.metadata.generation, now) {
        return None;
    }
    let mut updated = request.clone();
    set_approval_status(&mut updated, &status);
    Some(updated)
}
