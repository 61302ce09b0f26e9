//! Status feedback (a Work's `feedbackRules`, mirrored from a ManifestWork):
//! the values the rules read from each applied object, in its manifest
//! condition's `statusFeedback`, and the manifest condition
//! `StatusFeedbackSynced` saying whether every rule could be read.
//!
//! Read here, on the member, by the rules of
//! `fleet_api::ocm::manifestwork::feedback`. Bounded like back-reporting,
//! because every Work status write is a Raft write on the hub:
//! - **Size.** At most 32 values per object, a raw JSON value at most
//!   1 KiB; a Secret reports nothing (its data never leaves the member).
//! - **Rate.** Unchanged values keep their report and observation time; a
//!   change goes out at once when the Work's status is written anyway, or
//!   when the Work's newest feedback is at least
//!   [`MIN_FEEDBACK_INTERVAL_SECONDS`] old; otherwise it is held back and
//!   the Work looked at again. So feedback alone makes at most one status
//!   write per Work per 30 s — OCM's agent polls feedback every 30 s too.

use std::collections::BTreeMap;

use fleet_api::conditions::Condition;
use fleet_api::ocm::manifestwork::{feedback, FeedbackRule, FeedbackValue};
use fleet_api::time::unix_seconds;
use fleet_api::work::{ManifestCondition, WorkStatus, WorkStatusFeedback};
use fleet_api::Object;

/// The shortest time between two feedback-only status writes of one Work.
pub const MIN_FEEDBACK_INTERVAL_SECONDS: i64 = 30;
/// The manifest condition saying whether the rules could be read.
pub const CONDITION_FEEDBACK_SYNCED: &str = "StatusFeedbackSynced";
/// The longest message of that condition (problems are cut there).
const MAX_MESSAGE_BYTES: usize = 1024;

/// What the rules read from `live`, and the `StatusFeedbackSynced`
/// condition saying whether all of it could be read.
pub fn read(rules: &[FeedbackRule], live: &Object) -> (Vec<FeedbackValue>, Condition) {
    if live.kind == "Secret" && live.group().is_empty() {
        let why = "a Secret's values are never reported back";
        return (Vec::new(), Condition::new(CONDITION_FEEDBACK_SYNCED, false, "StatusFeedbackSyncFailed", why));
    }
    let object = serde_json::to_value(live).unwrap_or_default();
    let (values, problems) = feedback::evaluate(rules, &object);
    let condition = if problems.is_empty() {
        Condition::new(CONDITION_FEEDBACK_SYNCED, true, "StatusFeedbackSynced", "")
    } else {
        let mut message = problems.join("; ");
        if message.len() > MAX_MESSAGE_BYTES {
            let cut = (0..=MAX_MESSAGE_BYTES).rev().find(|i| message.is_char_boundary(*i)).unwrap_or(0);
            message.truncate(cut);
        }
        Condition::new(CONDITION_FEEDBACK_SYNCED, false, "StatusFeedbackSyncFailed", message)
    };
    (values, condition)
}

/// Sets each manifest condition's `statusFeedback` from `read` (ordinal →
/// the values read this pass), given the Work's stored status `old`,
/// whether the status is written anyway and the time `now`. Returns whether
/// a change was held back.
pub fn fill(
    conditions: &mut [ManifestCondition],
    read: &BTreeMap<usize, Vec<FeedbackValue>>,
    old: &WorkStatus,
    written_anyway: bool,
    now: &str,
) -> bool {
    let last = old
        .manifest_conditions
        .iter()
        .filter_map(|c| c.status_feedback.as_ref())
        .filter_map(|f| unix_seconds(&f.observation_time))
        .max();
    let may_report = written_anyway
        || match (last, unix_seconds(now)) {
            (Some(last), Some(now)) => now - last >= MIN_FEEDBACK_INTERVAL_SECONDS,
            _ => true,
        };
    let mut held_back = false;
    for condition in conditions.iter_mut() {
        let ordinal = usize::try_from(condition.identifier.ordinal).unwrap_or(usize::MAX);
        let Some(values) = read.get(&ordinal) else {
            condition.status_feedback = None;
            continue;
        };
        let before = old
            .manifest_conditions
            .iter()
            .find(|c| c.identifier == condition.identifier)
            .and_then(|c| c.status_feedback.as_ref());
        condition.status_feedback = match before {
            Some(b) if b.values == *values => Some(b.clone()),
            Some(b) if !may_report => {
                held_back = true;
                Some(b.clone())
            }
            _ => Some(WorkStatusFeedback { values: values.clone(), observation_time: now.to_string() }),
        };
    }
    held_back
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::ocm::manifestwork::{FieldValue, JsonPath};
    use fleet_api::work::WorkResourceIdentifier;
    use serde_json::json;

    fn deployment(ready: i64) -> Object {
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "status": {"replicas": 3, "readyReplicas": ready, "availableReplicas": ready}}))
        .unwrap()
    }

    fn value(name: &str, n: i64) -> FeedbackValue {
        FeedbackValue {
            name: name.into(),
            field_value: FieldValue { type_: "Integer".into(), integer: Some(n), ..Default::default() },
        }
    }

    fn manifest(feedback: Option<WorkStatusFeedback>) -> ManifestCondition {
        ManifestCondition {
            identifier: WorkResourceIdentifier { ordinal: 0, ..Default::default() },
            status_feedback: feedback,
            ..Default::default()
        }
    }

    #[test]
    fn reads_the_rules_and_says_whether_all_could_be_read() {
        let well_known = FeedbackRule { type_: "WellKnownStatus".into(), json_paths: vec![] };
        let (values, synced) = read(std::slice::from_ref(&well_known), &deployment(2));
        assert_eq!(values[0], value("ReadyReplicas", 2));
        assert!(synced.is_true());
        let bad = FeedbackRule {
            type_: "JSONPaths".into(),
            json_paths: vec![JsonPath { name: "v".into(), path: ".status".into(), version: "v2".into() }],
        };
        let (_, synced) = read(&[bad], &deployment(2));
        assert_eq!((synced.status.as_str(), synced.reason.as_str()), ("False", "StatusFeedbackSyncFailed"));
        let secret: Object = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "c2VjcmV0"}}),
        )
        .unwrap();
        let leak = FeedbackRule {
            type_: "JSONPaths".into(),
            json_paths: vec![JsonPath { name: "p".into(), path: ".data.password".into(), ..Default::default() }],
        };
        let (values, synced) = read(&[leak], &secret);
        assert!(values.is_empty() && !synced.is_true(), "a Secret's data never leaves the member");
    }

    #[test]
    fn a_change_waits_for_the_interval_unless_the_status_is_written_anyway() {
        let old_feedback = WorkStatusFeedback {
            values: vec![value("ReadyReplicas", 1)],
            observation_time: "2026-11-27T10:00:00Z".into(),
        };
        let old = WorkStatus { manifest_conditions: vec![manifest(Some(old_feedback.clone()))], ..Default::default() };
        let read_now: BTreeMap<usize, Vec<FeedbackValue>> = [(0, vec![value("ReadyReplicas", 2)])].into();
        let mut conditions = vec![manifest(None)];
        assert!(fill(&mut conditions, &read_now, &old, false, "2026-11-27T10:00:10Z"), "held back within 30 s");
        assert_eq!(conditions[0].status_feedback, Some(old_feedback.clone()));
        assert!(!fill(&mut conditions, &read_now, &old, true, "2026-11-27T10:00:10Z"), "rides along a write");
        assert_eq!(conditions[0].status_feedback.as_ref().unwrap().values, read_now[&0]);
        assert!(!fill(&mut conditions, &read_now, &old, false, "2026-11-27T10:00:31Z"), "after 30 s");
        assert_eq!(conditions[0].status_feedback.as_ref().unwrap().observation_time, "2026-11-27T10:00:31Z");
        let same: BTreeMap<usize, Vec<FeedbackValue>> = [(0, vec![value("ReadyReplicas", 1)])].into();
        assert!(!fill(&mut conditions, &same, &old, false, "2026-11-27T10:00:10Z"));
        assert_eq!(conditions[0].status_feedback, Some(old_feedback), "unchanged keeps its time");
    }
}
