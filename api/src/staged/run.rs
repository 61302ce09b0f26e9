//! `ClusterStagedUpdateRun` / `StagedUpdateRun`: one release of one resource
//! snapshot through a strategy's stages. The spec names what to roll out;
//! the status holds *all* of the run's state (frozen stages, per-stage and
//! per-cluster progress, recorded start times, the strategy snapshot), so a
//! new leader continues exactly where the old one stopped.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::conditions::Condition;
use crate::validation::{quote, FieldError};
use crate::work::ApplyStrategy;

use super::strategy::UpdateStrategySpec;
use super::vocabulary::{STATES, STATE_INITIALIZE, STATE_RUN, STATE_STOP};

/// Longest `placementName`.
pub const MAX_PLACEMENT_NAME: usize = 255;
/// Longest run name.
pub const MAX_RUN_NAME: usize = 63;

/// `spec` of a staged update run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateRunSpec {
    /// The placement (same namespace for a namespaced run) to roll out.
    #[serde(default)]
    pub placement_name: String,
    /// The resource snapshot index to roll out; empty or absent = the latest
    /// at initialization. A bare YAML integer is accepted and kept as text.
    #[serde(default, deserialize_with = "string_or_integer", skip_serializing_if = "Option::is_none")]
    pub resource_snapshot_index: Option<String>,
    /// The strategy (same scope as the run) whose stages the run follows.
    #[serde(rename = "stagedRolloutStrategyName", default)]
    pub staged_rollout_strategy_name: String,
    /// `Run` (default), `Initialize` or `Stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

impl UpdateRunSpec {
    /// The state, defaulted to `Run` (SU-2).
    pub fn state(&self) -> &str {
        self.state.as_deref().unwrap_or(STATE_RUN)
    }

    /// The named resource snapshot index, `None` for "the latest" (or an
    /// unreadable value, which validation refuses).
    pub fn resource_snapshot_index(&self) -> Option<u64> {
        self.resource_snapshot_index.as_deref().filter(|s| !s.is_empty()).and_then(|s| s.parse().ok())
    }
}

/// Accepts `"3"` or `3` for a string field (KubeFleet declares a string;
/// hand-written YAML often has a bare number).
fn string_or_integer<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(serde::de::Error::custom(format!("expected a string, found {other}"))),
    }
}

/// A namespaced object reference (a ResourceOverride snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedName {
    /// The object's name.
    #[serde(default)]
    pub name: String,
    /// Its namespace.
    #[serde(default)]
    pub namespace: String,
}

/// `status` of a staged update run: everything it decided and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateRunStatus {
    /// Index of the placement's policy snapshot the stages were computed from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub policy_snapshot_index_used: String,
    /// PickN: N; PickFixed: number of names; PickAll: clusters chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_observed_cluster_count: Option<i64>,
    /// The resource snapshot index rolled out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_snapshot_index_used: String,
    /// The placement's apply strategy at initialization (bindings get it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_strategy: Option<ApplyStrategy>,
    /// The strategy's spec at initialization; later edits do not matter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_update_strategy_snapshot: Option<UpdateStrategySpec>,
    /// One entry per strategy stage, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages_status: Vec<StageUpdatingStatus>,
    /// The clusters no longer chosen, removed after the last stage (SU-10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_stage_status: Option<StageUpdatingStatus>,
    /// `Initialized`, `Progressing`, `Succeeded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One stage's progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageUpdatingStatus {
    /// The strategy stage's name, or `kubernetes-fleet.io/deleteStage`.
    #[serde(default)]
    pub stage_name: String,
    /// The stage's clusters in update order, frozen at initialization.
    #[serde(default)]
    pub clusters: Vec<ClusterUpdatingStatus>,
    /// The after-stage tasks, in the strategy's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_stage_task_status: Vec<StageTaskStatus>,
    /// The before-stage task, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_stage_task_status: Vec<StageTaskStatus>,
    /// When the stage started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// When the stage completed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    /// `Progressing`, `Succeeded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One cluster's progress in a stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterUpdatingStatus {
    /// The MemberCluster's name.
    #[serde(default)]
    pub cluster_name: String,
    /// ResourceOverride snapshots for this cluster, frozen at initialization.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_override_snapshots: Vec<NamespacedName>,
    /// ClusterResourceOverride snapshot names, frozen at initialization.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_override_snapshots: Vec<String>,
    /// `Started` (its time is when the update began), `Succeeded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One before- or after-stage task's progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageTaskStatus {
    /// `TimedWait` or `Approval`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// The approval request's name (Approval tasks).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub approval_request_name: String,
    /// `ApprovalRequestCreated`, `ApprovalRequestApproved`, `WaitTimeElapsed`
    /// (False while waiting: its transition time is when the wait began).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Fills `state: Run` when absent (SU-2).
pub fn apply_defaults(spec: &mut UpdateRunSpec) {
    spec.state.get_or_insert_with(|| STATE_RUN.to_string());
}

/// The run table's rules on a new or updated spec (immutability and state
/// transitions are [`check_update`]'s).
pub fn validate(name: &str, spec: &UpdateRunSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if name.len() > MAX_RUN_NAME {
        errors.push(FieldError::invalid("metadata.name", quote(name), "metadata.name max length is 63"));
    }
    let placement = "spec.placementName";
    if spec.placement_name.is_empty() {
        errors.push(FieldError::required(placement, "the placement to roll out"));
    } else if spec.placement_name.len() > MAX_PLACEMENT_NAME {
        errors.push(FieldError::too_long(placement, MAX_PLACEMENT_NAME));
    }
    if let Some(index) = spec.resource_snapshot_index.as_deref().filter(|s| !s.is_empty()) {
        if !index.bytes().all(|b| b.is_ascii_digit()) || index.parse::<u64>().is_err() {
            errors.push(FieldError::invalid("spec.resourceSnapshotIndex", quote(index), "expected an integer >= 0"));
        }
    }
    if spec.staged_rollout_strategy_name.is_empty() {
        errors.push(FieldError::required("spec.stagedRolloutStrategyName", "the strategy the run follows"));
    }
    if let Some(state) = &spec.state {
        if !STATES.contains(&state.as_str()) {
            errors.push(FieldError::not_supported("spec.state", quote(state), STATES));
        }
    }
    errors
}

/// What may not change between the stored spec `old` and `new` (both
/// defaulted): the placement, the index and the strategy; and the state
/// never goes back to `Initialize`, nor from `Initialize` to `Stop`.
pub fn check_update(old: &UpdateRunSpec, new: &UpdateRunSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if old.placement_name != new.placement_name {
        errors.push(FieldError::invalid(
            "spec.placementName",
            quote(&new.placement_name),
            "placementName is immutable",
        ));
    }
    let index = |s: &UpdateRunSpec| s.resource_snapshot_index.clone().unwrap_or_default();
    if index(old) != index(new) {
        errors.push(FieldError::invalid(
            "spec.resourceSnapshotIndex",
            quote(&index(new)),
            "resourceSnapshotIndex is immutable",
        ));
    }
    if old.staged_rollout_strategy_name != new.staged_rollout_strategy_name {
        errors.push(FieldError::invalid(
            "spec.stagedRolloutStrategyName",
            quote(&new.staged_rollout_strategy_name),
            "stagedRolloutStrategyName is immutable",
        ));
    }
    let (from, to) = (old.state(), new.state());
    let refused =
        (from != STATE_INITIALIZE && to == STATE_INITIALIZE) || (from == STATE_INITIALIZE && to == STATE_STOP);
    if refused {
        errors.push(FieldError::invalid(
            "spec.state",
            quote(to),
            format!("invalid state transition: cannot transition from {from} to {to}"),
        ));
    }
    errors
}
