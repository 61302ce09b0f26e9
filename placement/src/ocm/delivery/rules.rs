//! A ManifestWork's `conditionRules`, evaluated on the manifest with the
//! status the agent mirrors back (`backReportedStatus`), as OCM's work
//! agent evaluates them on the live object. `CEL` rules: see
//! `fleet_api::ocm::cel` (their `object` is the
//! manifest as the ManifestWork holds it, with the member's `status`).
//! `WellKnownConditions`:
//!
//! - a `batch` Job is finished (True, "Job is finished") once one of its
//!   conditions `Complete` or `Failed` is True, else False ("Job is not
//!   finished");
//! - a Pod is finished once its phase is `Succeeded` or `Failed` ("Pod is
//!   in phase <phase>");
//! - any other kind has no well-known rule: `Unknown`, reason
//!   `ConditionRuleInvalid`.
//!
//! The condition's type is the rule's `condition` (usually `Complete`),
//! its reason `ConditionRuleEvaluated`. The ManifestWork is `Complete`
//! (reason `ConditionRulesAggregated`) once every manifest with a
//! `Complete` rule is Complete; until then `Complete` is False.

use fleet_api::conditions::Condition;
use fleet_api::ocm::cel as cel_rules;
use fleet_api::ocm::manifestwork::ConditionRule;
use serde_json::Value;

/// The condition a completion rule sets, on a manifest and on the work.
pub const CONDITION_COMPLETE: &str = "Complete";
/// Reason of a condition a rule evaluated.
pub const REASON_RULE_EVALUATED: &str = "ConditionRuleEvaluated";
/// Reason of a rule that cannot be evaluated for the object's kind.
pub const REASON_RULE_INVALID: &str = "ConditionRuleInvalid";
/// Reason of the work's `Complete`.
pub const REASON_RULES_AGGREGATED: &str = "ConditionRulesAggregated";

/// The condition `rule` sets for `object`: the manifest as the
/// ManifestWork holds it, with the `status` the agent mirrored.
pub fn evaluate(rule: &ConditionRule, object: &Value) -> Condition {
    if rule.type_ == "CEL" {
        return evaluate_cel(rule, object);
    }
    let text = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or_default();
    let api_version = text("apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = text("kind");
    let status = object.get("status").cloned().unwrap_or(Value::Null);
    let (finished, message) = match (group, kind) {
        ("batch", "Job") => {
            let conditions = status.get("conditions").and_then(Value::as_array);
            let finished = conditions.into_iter().flatten().any(|c| {
                matches!(c.get("type").and_then(Value::as_str), Some("Complete" | "Failed"))
                    && c.get("status").and_then(Value::as_str) == Some("True")
            });
            (finished, if finished { "Job is finished".to_string() } else { "Job is not finished".to_string() })
        }
        ("", "Pod") => {
            let phase = status.get("phase").and_then(Value::as_str).unwrap_or_default();
            (matches!(phase, "Succeeded" | "Failed"), format!("Pod is in phase {phase}"))
        }
        _ => {
            let gvk = if group.is_empty() {
                format!("/{version}, Kind={kind}")
            } else {
                format!("{group}/{version}, Kind={kind}")
            };
            return Condition::unknown(
                &rule.condition,
                REASON_RULE_INVALID,
                format!("cannot find the wellknown conditions for resource with gvk {gvk}"),
            );
        }
    };
    Condition::new(&rule.condition, finished, REASON_RULE_EVALUATED, message)
}

/// A `CEL` rule: True when every expression is; the message from
/// `messageExpression`, else `message`, else OCM's default.
fn evaluate_cel(rule: &ConditionRule, object: &Value) -> Condition {
    let result = match cel_rules::evaluate(&rule.cel_expressions, object) {
        Ok(result) => result,
        Err(why) => return Condition::new(&rule.condition, false, cel_rules::REASON_EXPRESSION_ERROR, why),
    };
    let message = if !rule.message_expression.is_empty() {
        match cel_rules::message(&rule.message_expression, object, result) {
            Ok(message) => message,
            Err(why) => return Condition::new(&rule.condition, result, cel_rules::REASON_EXPRESSION_ERROR, why),
        }
    } else if !rule.message.is_empty() {
        rule.message.clone()
    } else if result {
        format!("Manifest is {}", rule.condition)
    } else {
        format!("Manifest is not {}", rule.condition)
    };
    Condition::new(&rule.condition, result, REASON_RULE_EVALUATED, message)
}

/// When a ManifestWork whose `deleteOption.ttlSecondsAfterFinished` is
/// `ttl` is deleted (Unix seconds): `ttl` seconds after its `Complete`
/// turned True, a time stored in the object itself, so a new leader
/// deletes it when the old one would have. `None` while it is not complete
/// or has no TTL.
pub fn delete_at(ttl: Option<i64>, conditions: &[Condition]) -> Option<i64> {
    let ttl = ttl?;
    let complete = conditions.iter().find(|c| c.type_ == CONDITION_COMPLETE).filter(|c| c.is_true())?;
    let since = fleet_api::time::unix_seconds(&complete.last_transition_time)?;
    Some(since.saturating_add(ttl))
}

/// The work's `Complete` from whether each manifest with a `Complete` rule
/// is complete; `None` when no manifest has one.
pub fn work_complete(completable: &[bool]) -> Option<Condition> {
    if completable.is_empty() {
        return None;
    }
    let done = completable.iter().filter(|c| **c).count();
    Some(if done == completable.len() {
        Condition::new(
            CONDITION_COMPLETE,
            true,
            REASON_RULES_AGGREGATED,
            "All manifests with a Complete rule are complete",
        )
    } else {
        Condition::new(
            CONDITION_COMPLETE,
            false,
            REASON_RULES_AGGREGATED,
            format!("{done} of {} manifests with a Complete rule are complete", completable.len()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn complete() -> ConditionRule {
        ConditionRule { condition: "Complete".into(), type_: "WellKnownConditions".into(), ..Default::default() }
    }

    fn object(api_version: &str, kind: &str, status: Value) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "status": status})
    }

    #[test]
    fn cel_rules_evaluate_every_expression_and_their_message() {
        let rule = ConditionRule {
            condition: "OneActive".into(),
            type_: "CEL".into(),
            cel_expressions: vec!["object.status.active == 1".into()],
            message_expression: "result ? 'One pod is active' : 'There is not only one pod active'".into(),
            ..Default::default()
        };
        let one = evaluate(&rule, &object("batch/v1", "Job", json!({"active": 1})));
        assert_eq!(
            (one.is_true(), one.reason.as_str(), one.message.as_str()),
            (true, "ConditionRuleEvaluated", "One pod is active")
        );
        let three = evaluate(&rule, &object("batch/v1", "Job", json!({"active": 3})));
        assert_eq!((three.is_true(), three.message.as_str()), (false, "There is not only one pod active"));
        let plain = ConditionRule { message_expression: String::new(), ..rule.clone() };
        assert_eq!(evaluate(&plain, &object("batch/v1", "Job", json!({"active": 1}))).message, "Manifest is OneActive");
        let broken = evaluate(&rule, &object("batch/v1", "Job", json!({})));
        assert_eq!((broken.status.as_str(), broken.reason.as_str()), ("False", "ConditionRuleExpressionError"));
    }

    #[test]
    fn jobs_and_pods_finish_as_ocm_says_other_kinds_have_no_rule() {
        let running = evaluate(&complete(), &object("batch/v1", "Job", json!({"active": 1})));
        assert_eq!(
            (running.status.as_str(), running.reason.as_str(), running.message.as_str()),
            ("False", "ConditionRuleEvaluated", "Job is not finished")
        );
        let done = json!({"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]});
        assert!(evaluate(&complete(), &object("batch/v1", "Job", done)).is_true());
        let failed = json!({"conditions": [{"type": "Failed", "status": "True"}]});
        assert!(evaluate(&complete(), &object("batch/v1", "Job", failed)).is_true(), "a failed Job is finished too");
        let not_yet = json!({"conditions": [{"type": "Complete", "status": "False"}]});
        assert!(!evaluate(&complete(), &object("batch/v1", "Job", not_yet)).is_true());
        let pod = evaluate(&complete(), &object("v1", "Pod", json!({"phase": "Succeeded"})));
        assert_eq!((pod.is_true(), pod.message.as_str()), (true, "Pod is in phase Succeeded"));
        let renamed = ConditionRule { condition: "Finished".into(), ..complete() };
        assert_eq!(evaluate(&renamed, &object("v1", "Pod", json!({"phase": "Running"}))).type_, "Finished");
        let cm = evaluate(&complete(), &object("v1", "ConfigMap", json!({})));
        assert_eq!((cm.status.as_str(), cm.reason.as_str()), ("Unknown", "ConditionRuleInvalid"));
        assert!(cm.message.contains("/v1, Kind=ConfigMap"), "{}", cm.message);
    }

    #[test]
    fn a_completed_work_is_deleted_its_ttl_after_completing() {
        let mut complete = Condition::new("Complete", true, REASON_RULES_AGGREGATED, "");
        complete.last_transition_time = "2026-11-27T10:00:00Z".into();
        let at = fleet_api::time::unix_seconds("2026-11-27T10:00:00Z").unwrap();
        assert_eq!(delete_at(Some(30), std::slice::from_ref(&complete)), Some(at + 30));
        assert_eq!(delete_at(Some(0), std::slice::from_ref(&complete)), Some(at), "0: at once");
        assert_eq!(delete_at(None, std::slice::from_ref(&complete)), None, "no TTL: kept");
        let not_yet = Condition { status: "False".into(), ..complete.clone() };
        assert_eq!(delete_at(Some(30), &[not_yet]), None);
        assert_eq!(delete_at(Some(30), &[]), None);
    }

    #[test]
    fn the_work_completes_when_every_completable_manifest_did() {
        assert_eq!(work_complete(&[]), None);
        let half = work_complete(&[true, false]).unwrap();
        assert_eq!(
            (half.status.as_str(), half.message.as_str()),
            ("False", "1 of 2 manifests with a Complete rule are complete")
        );
        let all = work_complete(&[true, true]).unwrap();
        assert_eq!((all.status.as_str(), all.reason.as_str()), ("True", "ConditionRulesAggregated"));
    }
}
