//! `ClusterResourcePlacementEviction` (remove one cluster's placement of a
//! ClusterResourcePlacement) and `ClusterResourcePlacementDisruptionBudget`
//! (how many of a placement's clusters voluntary evictions may take down),
//! docs/spec/eviction.md, and their namespaced twins for ResourcePlacements,
//! `ResourcePlacementEviction` and `ResourcePlacementDisruptionBudget` (same
//! shapes and rules, in the placement's namespace; every reason and message
//! names the namespaced kinds, see [`namespaced_text`]). Shapes, validation
//! and the checks made at apply against the named placement; the evaluation
//! itself is in `fleet_placement::eviction`.
//!
//! Decisions beyond the spec's wording:
//! - `placementName` and `clusterName` longer than 255 are `Too long`;
//! - the "both set" error shows the spec as JSON as its value;
//! - the checks against the placement ([`check_against_placement`]) only
//!   look at a ClusterResourcePlacement of that name; none = no check.

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;
use crate::placement::{self as placement_api, IntOrPercent, IntOrString, PICK_ALL, PICK_FIXED};
use crate::typed::{decode_spec, encode, spec_or_default, status_or_default};
use crate::validation::{quote, FieldError, ValidationError};
use crate::Object;

#[cfg(test)]
mod tests;

/// Kind of an eviction.
pub const CLUSTER_RESOURCE_PLACEMENT_EVICTION: &str = "ClusterResourcePlacementEviction";
/// Kind of a disruption budget (named like its placement).
pub const CLUSTER_RESOURCE_PLACEMENT_DISRUPTION_BUDGET: &str = "ClusterResourcePlacementDisruptionBudget";
/// Kind of a namespaced eviction: removes one cluster's placement of a
/// ResourcePlacement of its namespace.
pub const RESOURCE_PLACEMENT_EVICTION: &str = "ResourcePlacementEviction";
/// Kind of a namespaced disruption budget (named like its ResourcePlacement,
/// in its namespace).
pub const RESOURCE_PLACEMENT_DISRUPTION_BUDGET: &str = "ResourcePlacementDisruptionBudget";

/// Whether `kind` is one of the two eviction kinds.
pub fn is_eviction_kind(kind: &str) -> bool {
    kind == CLUSTER_RESOURCE_PLACEMENT_EVICTION || kind == RESOURCE_PLACEMENT_EVICTION
}

/// Whether `kind` is one of the two budget kinds.
pub fn is_budget_kind(kind: &str) -> bool {
    kind == CLUSTER_RESOURCE_PLACEMENT_DISRUPTION_BUDGET || kind == RESOURCE_PLACEMENT_DISRUPTION_BUDGET
}

/// Whether `kind` is a namespaced eviction or budget kind.
pub fn is_namespaced_kind(kind: &str) -> bool {
    kind == RESOURCE_PLACEMENT_EVICTION || kind == RESOURCE_PLACEMENT_DISRUPTION_BUDGET
}

/// The budget kind that guards the placements an eviction kind evicts from.
pub fn budget_kind_for(eviction_kind: &str) -> &'static str {
    if is_namespaced_kind(eviction_kind) {
        RESOURCE_PLACEMENT_DISRUPTION_BUDGET
    } else {
        CLUSTER_RESOURCE_PLACEMENT_DISRUPTION_BUDGET
    }
}

/// The placement kind an eviction or budget kind refers to.
pub fn placement_kind_for(kind: &str) -> &'static str {
    if is_namespaced_kind(kind) {
        placement_api::RESOURCE_PLACEMENT
    } else {
        placement_api::CLUSTER_RESOURCE_PLACEMENT
    }
}

/// A reason or message of the cluster-scoped kinds as the namespaced kinds
/// say it: every `ClusterResourcePlacement…` kind becomes its
/// `ResourcePlacement…` twin and "cluster resource placement" becomes
/// "resource placement". One rule, so the two families never drift apart.
pub fn namespaced_text(text: &str) -> String {
    text.replace("ClusterResourcePlacement", "ResourcePlacement")
        .replace("cluster resource placement", "resource placement")
}
/// Longest `placementName` / `clusterName`.
pub const MAX_NAME: usize = 255;

/// Eviction condition: whether the eviction names something evictable (EV-3).
pub const VALID: &str = "Valid";
/// Eviction condition: whether the binding was removed (EV-4).
pub const EXECUTED: &str = "Executed";
/// `Valid` True reason.
pub const REASON_VALID: &str = "ClusterResourcePlacementEvictionValid";
/// `Valid` False reason.
pub const REASON_INVALID: &str = "ClusterResourcePlacementEvictionInvalid";
/// `Executed` True reason.
pub const REASON_EXECUTED: &str = "ClusterResourcePlacementEvictionExecuted";
/// `Executed` False reason.
pub const REASON_NOT_EXECUTED: &str = "ClusterResourcePlacementEvictionNotExecuted";

/// EV-3 messages, in the order they are checked.
pub const MESSAGE_VALID: &str = "Eviction is valid";
/// EV-3.1.
pub const MESSAGE_MISSING_PLACEMENT: &str = "Failed to find ClusterResourcePlacement targeted by eviction";
/// EV-3.2.
pub const MESSAGE_DELETING_PLACEMENT: &str = "Found deleting ClusterResourcePlacement targeted by eviction";
/// EV-3.3.
pub const MESSAGE_PICK_FIXED: &str =
    "Found ClusterResourcePlacement with PickFixed placement type targeted by eviction";
/// EV-3.4.
pub const MESSAGE_MISSING_BINDING: &str =
    "Failed to find scheduler decision for placement in cluster targeted by eviction";
/// EV-3.5.
pub const MESSAGE_MULTIPLE_BINDINGS: &str =
    "Found more than one scheduler decision for placement in cluster targeted by eviction";

/// EV-4.1.
pub const MESSAGE_BINDING_DELETING: &str = "Eviction is allowed, resources propagated by placement is currently being removed from cluster targeted by eviction";
/// EV-4.2.
pub const MESSAGE_NOT_PROPAGATED: &str =
    "Eviction is blocked, placement has not propagated resources to target cluster yet";
/// EV-4.3.
pub const MESSAGE_PLACEMENT_FAILED: &str = "Eviction is allowed, placement has failed";
/// EV-4.4.
pub const MESSAGE_NO_BUDGET: &str = "Eviction is allowed, no ClusterResourcePlacementDisruptionBudget specified";
/// EV-4.5.
pub const MESSAGE_MISCONFIGURED_BUDGET: &str = "Eviction is blocked by misconfigured ClusterResourcePlacementDisruptionBudget, either MaxUnavailable is specified or MinAvailable is specified as a percentage for PickAll ClusterResourcePlacement";

/// EV-4.6, allowed.
pub fn message_allowed_by_budget(available: usize, total: usize) -> String {
    format!("Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: {available}, totalPlacements: {total}")
}

/// EV-4.6, blocked.
pub fn message_blocked_by_budget(available: usize, total: usize) -> String {
    format!("Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: {available}, totalPlacements: {total}")
}

/// `spec` of an eviction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvictionSpec {
    /// The ClusterResourcePlacement to evict from.
    #[serde(default)]
    pub placement_name: String,
    /// The cluster whose placement is removed.
    #[serde(default)]
    pub cluster_name: String,
}

/// `status` of an eviction: `Valid`, then `Executed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvictionStatus {
    /// `Valid` and `Executed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl EvictionStatus {
    /// EV-1: final once `Valid` is False or `Executed` has any status.
    pub fn is_final(&self) -> bool {
        let invalid = crate::conditions::find(&self.conditions, VALID).is_some_and(|c| c.status == "False");
        invalid || crate::conditions::find(&self.conditions, EXECUTED).is_some()
    }
}

/// `spec` of a disruption budget: at most one of the two fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DisruptionBudgetSpec {
    /// Integer ≥ 0 or `"0%"`..`"100%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Integer ≥ 0 or `"0%"`..`"100%"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
}

/// Reads a budget value: an integer ≥ 0 or a string matching
/// `^(100|[0-9]{1,2})%$`.
pub fn parse_budget_value(value: &IntOrString) -> Result<IntOrPercent, String> {
    const WANT: &str = "If supplied value is String should match regex '^(100|[0-9]{1,2})%$' or If supplied value is Integer must be greater than or equal to 0";
    match value {
        IntOrString::Int(v) if *v >= 0 => Ok(IntOrPercent::Int(*v)),
        IntOrString::Str(s) => {
            let digits = s.strip_suffix('%').unwrap_or("");
            let ok = (1..=3).contains(&digits.len())
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits.len() < 3 || digits == "100");
            match digits.parse::<i64>() {
                Ok(p) if ok => Ok(IntOrPercent::Percent(p)),
                _ => Err(WANT.to_string()),
            }
        }
        IntOrString::Int(_) => Err(WANT.to_string()),
    }
}

/// Whether `object` is an eviction (either scope).
pub fn is_eviction(object: &Object) -> bool {
    object.group() == crate::kinds::FLEET_PLACEMENT_GROUP && is_eviction_kind(&object.kind)
}

/// Whether `object` is a disruption budget (either scope).
pub fn is_budget(object: &Object) -> bool {
    object.group() == crate::kinds::FLEET_PLACEMENT_GROUP && is_budget_kind(&object.kind)
}

/// The spec of a stored eviction.
pub fn eviction_spec_of(object: &Object) -> EvictionSpec {
    spec_or_default(object)
}

/// The status of a stored eviction.
pub fn eviction_status_of(object: &Object) -> EvictionStatus {
    status_or_default(object)
}

/// Writes an eviction's status.
pub fn set_eviction_status(object: &mut Object, status: &EvictionStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// The spec of a stored budget.
pub fn budget_spec_of(object: &Object) -> DisruptionBudgetSpec {
    spec_or_default(object)
}

fn validate_eviction(spec: &EvictionSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (path, value) in [("spec.placementName", &spec.placement_name), ("spec.clusterName", &spec.cluster_name)] {
        if value.is_empty() {
            errors.push(FieldError::required(path, ""));
        } else if value.len() > MAX_NAME {
            errors.push(FieldError::too_long(path, MAX_NAME));
        }
    }
    errors
}

fn validate_budget(spec: &DisruptionBudgetSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (path, value) in [("spec.maxUnavailable", &spec.max_unavailable), ("spec.minAvailable", &spec.min_available)] {
        if let Some(value) = value {
            if let Err(detail) = parse_budget_value(value) {
                errors.push(FieldError::invalid(path, value, detail));
            }
        }
    }
    if spec.max_unavailable.is_some() && spec.min_available.is_some() {
        let value = serde_json::to_string(spec).unwrap_or_default();
        errors.push(FieldError::invalid("spec", value, "Both MaxUnavailable and MinAvailable cannot be specified"));
    }
    errors
}

/// Validates an eviction or a budget (other kinds pass): known fields only,
/// every rule of docs/spec/eviction.md's table.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let errors = if is_eviction(object) {
        validate_eviction(&decode_spec(object)?)
    } else if is_budget(object) {
        validate_budget(&decode_spec(object)?)
    } else {
        Vec::new()
    };
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}

/// An eviction's `placementName` and `clusterName` never change.
pub fn check_update(old: &Object, new: &Object) -> Result<(), ValidationError> {
    if !is_eviction(new) {
        return Ok(());
    }
    let (old_spec, new_spec): (EvictionSpec, EvictionSpec) = (decode_spec(old)?, decode_spec(new)?);
    let mut errors = Vec::new();
    if old_spec.placement_name != new_spec.placement_name {
        let value = quote(&new_spec.placement_name);
        errors.push(FieldError::invalid("spec.placementName", value, "The PlacementName field is immutable"));
    }
    if old_spec.cluster_name != new_spec.cluster_name {
        let value = quote(&new_spec.cluster_name);
        errors.push(FieldError::invalid("spec.clusterName", value, "The ClusterName field is immutable"));
    }
    ValidationError::check(&new.kind, &new.metadata.name, errors)
}

/// The checks made at apply against the placement the object names (an
/// eviction's `placementName`, a budget's own name; a ResourcePlacement of
/// the same namespace for the namespaced kinds) when it exists then: no
/// eviction from a PickFixed or deleting placement; no `maxUnavailable` nor
/// percentage `minAvailable` for a PickAll one.
pub fn check_against_placement(object: &Object, placement: Option<&Object>) -> Result<(), ValidationError> {
    let Some(placement) = placement.filter(|p| p.kind == placement_kind_for(&object.kind)) else {
        return Ok(());
    };
    let mut errors = placement_findings(object, placement);
    if is_namespaced_kind(&object.kind) {
        for e in &mut errors {
            e.detail = namespaced_text(&e.detail);
        }
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}

/// [`check_against_placement`]'s findings, in the cluster-scoped kinds' words.
fn placement_findings(object: &Object, placement: &Object) -> Vec<FieldError> {
    let policy = placement_api::spec_of(placement).policy.unwrap_or_default();
    let mut errors = Vec::new();
    if is_eviction(object) {
        if policy.placement_type() == PICK_FIXED {
            errors.push(FieldError::forbidden(
                "spec.placementName",
                "cluster resource placement policy type PickFixed is not supported",
            ));
        }
        if placement.metadata.deletion_timestamp.is_some() {
            let detail = format!("cluster resource placement {} is being deleted", placement.metadata.name);
            errors.push(FieldError::forbidden("spec.placementName", detail));
        }
    } else if is_budget(object) && policy.placement_type() == PICK_ALL {
        let spec = budget_spec_of(object);
        if let Some(value) = &spec.max_unavailable {
            errors.push(FieldError::forbidden(
                "spec.maxUnavailable",
                format!(
                    "cluster resource placement policy type PickAll is not supported with any specified max unavailable {}",
                    written(value)
                ),
            ));
        }
        if let Some(value @ IntOrString::Str(_)) = &spec.min_available {
            errors.push(FieldError::forbidden(
                "spec.minAvailable",
                format!(
                    "cluster resource placement policy type PickAll is not supported with min available as a percentage {}",
                    written(value)
                ),
            ));
        }
    }
    errors
}

/// A value as the user wrote it, without quotes.
fn written(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(v) => v.to_string(),
        IntOrString::Str(s) => s.clone(),
    }
}
