//! `ClusterApprovalRequest` / `ApprovalRequest`: the gate a run creates for
//! a stage's `Approval` task (SU-9). A person approves it (`fleetctl
//! approve`, [`approve`]); the run then marks it accepted ([`accept`]) and
//! proceeds. The spec never changes after creation.

use serde::{Deserialize, Serialize};

use crate::conditions::{find, set_condition, Condition};
use crate::validation::FieldError;

use super::vocabulary::{
    APPROVAL_ACCEPTED, APPROVAL_REQUEST, APPROVED, MESSAGE_APPROVAL_ACCEPTED, REASON_APPROVAL_ACCEPTED,
    REASON_CLUSTER_REQUEST_APPROVED, REASON_NAMESPACED_REQUEST_APPROVED,
};

/// `spec` of an approval request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequestSpec {
    /// The run this request gates.
    #[serde(default)]
    pub parent_stage_rollout: String,
    /// The stage this request gates.
    #[serde(default)]
    pub target_stage: String,
}

/// `status` of an approval request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequestStatus {
    /// `Approved` (by a person), `ApprovalAccepted` (by the run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl ApprovalRequestStatus {
    /// Whether `Approved` is True at `generation` (the request's own).
    pub fn is_approved(&self, generation: i64) -> bool {
        at_generation(&self.conditions, APPROVED, generation)
    }

    /// Whether the run accepted the approval at `generation`.
    pub fn is_accepted(&self, generation: i64) -> bool {
        at_generation(&self.conditions, APPROVAL_ACCEPTED, generation)
    }
}

fn at_generation(conditions: &[Condition], type_: &str, generation: i64) -> bool {
    find(conditions, type_).is_some_and(|c| c.is_true() && c.observed_generation.unwrap_or(generation) == generation)
}

/// Both fields are required.
pub fn validate(spec: &ApprovalRequestSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if spec.parent_stage_rollout.is_empty() {
        errors.push(FieldError::required("spec.parentStageRollout", "the run this request gates"));
    }
    if spec.target_stage.is_empty() {
        errors.push(FieldError::required("spec.targetStage", "the stage this request gates"));
    }
    errors
}

/// The spec is immutable.
pub fn check_update(old: &ApprovalRequestSpec, new: &ApprovalRequestSpec) -> Vec<FieldError> {
    if old == new {
        return Vec::new();
    }
    let value = serde_json::to_string(new).unwrap_or_default();
    vec![FieldError::invalid("spec", value, "The spec field is immutable")]
}

/// What `fleetctl approve` writes: `Approved` True at the request's
/// `generation`. Returns whether anything changed.
pub fn approve(status: &mut ApprovalRequestStatus, kind: &str, generation: i64, now: &str) -> bool {
    let (reason, message) = if kind == APPROVAL_REQUEST {
        (REASON_NAMESPACED_REQUEST_APPROVED, "ApprovalRequest has been approved")
    } else {
        (REASON_CLUSTER_REQUEST_APPROVED, "ClusterApprovalRequest has been approved")
    };
    let condition = Condition::new(APPROVED, true, reason, message).observing(generation);
    set_condition(&mut status.conditions, condition, now)
}

/// What the run writes once it saw the approval: `ApprovalAccepted` True.
/// Returns whether anything changed.
pub fn accept(status: &mut ApprovalRequestStatus, generation: i64, now: &str) -> bool {
    let condition = Condition::new(APPROVAL_ACCEPTED, true, REASON_APPROVAL_ACCEPTED, MESSAGE_APPROVAL_ACCEPTED)
        .observing(generation);
    set_condition(&mut status.conditions, condition, now)
}
