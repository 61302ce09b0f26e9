//! `AddOnPlacementScore` (namespaced, v1alpha1): scores of one cluster, in
//! the namespace named after the cluster, that Placements rank by through
//! their `AddOn` prioritizers. Its content is status only, written by an
//! admin or the cluster's own agent through the status path.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;
use crate::typed::status_or_default;
use crate::validation::{quote, FieldError, ValidationError};
use crate::Object;

/// The kind.
pub const KIND: &str = "AddOnPlacementScore";
/// Allowed score values.
pub const SCORE_RANGE: std::ops::RangeInclusive<i64> = -100..=100;

/// One named score.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddOnPlacementScoreItem {
    /// The score's name (a prioritizer's `scoreName`).
    #[serde(default)]
    pub name: String,
    /// −100..100.
    #[serde(default)]
    pub value: i64,
}

/// `status` of an AddOnPlacementScore.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddOnPlacementScoreStatus {
    /// The writer's own conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The scores, names unique.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<AddOnPlacementScoreItem>,
    /// RFC 3339; after it every score counts 0. Absent: never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
}

impl AddOnPlacementScoreStatus {
    /// The value of a score by name, if present.
    pub fn score(&self, name: &str) -> Option<i64> {
        self.scores.iter().find(|s| s.name == name).map(|s| s.value)
    }
}

/// The status of a stored AddOnPlacementScore (empty if none yet).
pub fn status_of(object: &Object) -> AddOnPlacementScoreStatus {
    status_or_default(object)
}

/// An AddOnPlacementScore holds only status: a `spec` is refused.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    super::refuse_spec(object)
}

/// Checks a status about to be written (status path): known fields, score
/// names present and unique, values in −100..100, `validUntil` a timestamp.
pub fn validate_status(object: &Object) -> Result<(), ValidationError> {
    let status: AddOnPlacementScoreStatus = crate::typed::decode_status(object)?;
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, score) in status.scores.iter().enumerate() {
        let base = format!("status.scores[{i}]");
        if score.name.is_empty() {
            errors.push(FieldError::required(format!("{base}.name"), "name is required"));
        } else if !seen.insert(score.name.as_str()) {
            errors.push(FieldError::duplicate(format!("{base}.name"), quote(&score.name)));
        }
        if !SCORE_RANGE.contains(&score.value) {
            errors.push(FieldError::invalid(format!("{base}.value"), score.value, "must be between -100 and 100"));
        }
    }
    if let Some(time) = status.valid_until.as_deref().filter(|t| crate::time::unix_seconds(t).is_none()) {
        errors.push(FieldError::invalid("status.validUntil", quote(time), crate::time::RFC3339_DETAIL));
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}
