//! Kubernetes-style status conditions (`metav1.Condition`), shared by every
//! Fleet kind that reports them.

use serde::{Deserialize, Serialize};

/// One condition: a typed fact about an object, with why and since when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_transition_time: String,
}

impl Condition {
    /// A condition with no transition time yet (set by [`set_condition`]).
    pub fn new(type_: &str, status: bool, reason: &str, message: impl Into<String>) -> Condition {
        Condition {
            type_: type_.to_string(),
            status: if status { "True" } else { "False" }.to_string(),
            reason: reason.to_string(),
            message: message.into(),
            observed_generation: None,
            last_transition_time: String::new(),
        }
    }

    /// An `Unknown` condition.
    pub fn unknown(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
        Condition { status: "Unknown".into(), ..Condition::new(type_, false, reason, message) }
    }

    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }

    /// With `observedGeneration` set.
    pub fn observing(mut self, generation: i64) -> Condition {
        self.observed_generation = Some(generation);
        self
    }
}

/// Finds a condition by type.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Sets a condition, keeping its transition time when the status did not
/// change (Kubernetes' rule) and stamping `now` when it did. Returns whether
/// anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, mut condition: Condition, now: &str) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => {
            condition.last_transition_time = if existing.status == condition.status {
                existing.last_transition_time.clone()
            } else {
                now.to_string()
            };
            let changed = *existing != condition;
            *existing = condition;
            changed
        }
        None => {
            condition.last_transition_time = now.to_string();
            conditions.push(condition);
            true
        }
    }
}

/// The statuses a condition may have.
const CONDITION_STATUSES: &[&str] = &["True", "False", "Unknown"];

/// Checks a list of conditions found at `path` (as a reporter writes them):
/// each with a type, once, a status of `True`, `False` or `Unknown`, and an
/// RFC 3339 `lastTransitionTime` when it has one.
pub fn validate_conditions(conditions: &[Condition], path: &str) -> Vec<crate::validation::FieldError> {
    use crate::validation::{quote, FieldError};
    let mut errors = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if c.type_.is_empty() {
            errors.push(FieldError::required(format!("{at}.type"), "type is required"));
        } else if !seen.insert(c.type_.as_str()) {
            errors.push(FieldError::duplicate(format!("{at}.type"), quote(&c.type_)));
        }
        if !CONDITION_STATUSES.contains(&c.status.as_str()) {
            errors.push(FieldError::invalid(
                format!("{at}.status"),
                quote(&c.status),
                "must be True, False or Unknown",
            ));
        }
        if !c.last_transition_time.is_empty() && crate::time::unix_seconds(&c.last_transition_time).is_none() {
            errors.push(FieldError::invalid(
                format!("{at}.lastTransitionTime"),
                quote(&c.last_transition_time),
                crate::time::RFC3339_DETAIL,
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut conds = Vec::new();
        assert!(set_condition(&mut conds, Condition::new("Healthy", true, "A", "m"), "t1"));
        assert!(!set_condition(&mut conds, Condition::new("Healthy", true, "A", "m"), "t2"));
        assert_eq!(conds[0].last_transition_time, "t1");
        assert!(set_condition(&mut conds, Condition::new("Healthy", true, "B", "m2"), "t3"));
        assert_eq!(conds[0].last_transition_time, "t1", "reason change keeps the time");
        assert!(set_condition(&mut conds, Condition::unknown("Healthy", "HeartbeatTimeout", "late"), "t4"));
        assert_eq!(conds[0].last_transition_time, "t4");
    }
}
