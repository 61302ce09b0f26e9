//! A Work with `applyStrategy.type: ReportDiff`: nothing is written or
//! deleted on the member cluster; each manifest is compared with the live
//! object ([`report_diff`]) and the result reported as KubeFleet does:
//!
//! - per manifest, `DiffReported` — True with reason `NoDiffFound` or
//!   `FoundDiff`, False with reason `Failed` and the error when the live
//!   object could not be read or the manifest is unusable — and
//!   `diffDetails` (always present once compared, with an empty
//!   `observedDiffs` when nothing differs);
//! - on the Work, `DiffReported` — True `AllManifestsDiffReported` when
//!   every manifest was compared, False `SomeManifestsHaveNotReportedDiff`
//!   otherwise.
//!
//! `Applied` and `Available` are not reported in this mode (they are removed
//! when a Work switches to it; the apply path removes `DiffReported` when
//! it switches back). What the Work placed before under another type stays
//! placed, untouched, and stays in the ledger.

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::work::{
    self, ManifestCondition, WorkStatus, CONDITION_APPLIED, CONDITION_AVAILABLE, CONDITION_DIFF_REPORTED,
    REASON_ALL_DIFF_REPORTED, REASON_DIFF_FAILED, REASON_FOUND_DIFF, REASON_NO_DIFF_FOUND,
    REASON_SOME_DIFF_NOT_REPORTED,
};
use fleet_api::Object;

use super::apply::{failure_message, failure_reason, manifests, WorkOutcome};
use super::compare::Difference;
use super::details::{details, Report};
use super::executor;
use super::feedback;
use super::ledger::Entry;
use super::strategy::{report_diff, Strategy};
use crate::targets::{ResourceId, Target, TargetError};

/// A manifest's `DiffReported` condition: the differences found, or why
/// they could not be computed.
pub fn manifest_condition(found: &Result<Vec<Difference>, String>) -> Condition {
    match found {
        Ok(diffs) if diffs.is_empty() => Condition::new(
            CONDITION_DIFF_REPORTED,
            true,
            REASON_NO_DIFF_FOUND,
            "the object on the member cluster matches the manifest",
        ),
        Ok(diffs) => Condition::new(
            CONDITION_DIFF_REPORTED,
            true,
            REASON_FOUND_DIFF,
            format!("{} difference(s) from the object on the member cluster, listed in diffDetails", diffs.len()),
        ),
        Err(why) => Condition::new(CONDITION_DIFF_REPORTED, false, REASON_DIFF_FAILED, why.clone()),
    }
}

/// The Work's `DiffReported` condition for `failed` manifests out of `total`
/// that could not be compared.
pub fn work_condition(failed: usize, total: usize) -> Condition {
    if failed == 0 {
        Condition::new(
            CONDITION_DIFF_REPORTED,
            true,
            REASON_ALL_DIFF_REPORTED,
            format!(
                "the differences of all {total} manifest(s) from the member cluster are reported; nothing was applied"
            ),
        )
    } else {
        Condition::new(
            CONDITION_DIFF_REPORTED,
            false,
            REASON_SOME_DIFF_NOT_REPORTED,
            format!("{failed} of {total} manifest(s) could not be compared with the member cluster"),
        )
    }
}

/// Reports a ReportDiff Work (see the module doc). `previous` is what the
/// ledger holds for it; `observed_at` (RFC 3339, milliseconds) stamps the
/// diff reports, and its whole seconds condition transitions.
pub async fn report_work<T: Target>(
    target: &T,
    work_object: &Object,
    strategy: &Strategy,
    previous: Option<&Entry>,
    observed_at: &str,
) -> WorkOutcome {
    let now = &fleet_api::time::whole_seconds(observed_at);
    let spec = work::spec_of(work_object);
    let generation = work_object.metadata.generation;
    let owner = super::work_owner(work_object);
    let old = work::status_of(work_object);
    let mut failed = 0usize;
    let mut manifest_conditions = Vec::new();
    let mut feedback_read = std::collections::BTreeMap::new();
    for m in manifests(&spec) {
        let old_condition = old.manifest_conditions.iter().find(|c| c.identifier == m.identifier);
        let mut conditions = old_condition.map(|c| c.conditions.clone()).unwrap_or_default();
        conditions.retain(|c| c.type_ != CONDITION_APPLIED && c.type_ != CONDITION_AVAILABLE);
        // An executor must be allowed even to read (OCM checks the same
        // verbs for every update strategy).
        let refused = match (&m.refusal, &m.object) {
            (None, Some(object)) => {
                executor::check(target, spec.executor.as_ref(), object, spec.abandons_on_delete()).await.err()
            }
            _ => None,
        };
        let compared = match (&m.refusal, &m.object) {
            (Some((_, message)), _) => Err(message.clone()),
            (None, Some(_)) if refused.is_some() => Err(refused.map(|(_, message)| message).unwrap_or_default()),
            (None, Some(object)) if !target.serves(&ResourceId::of(object)).await.unwrap_or(true) => {
                let e = TargetError::NotServed(format!(
                    "cannot compare {}: the cluster serves no such kind at this version",
                    ResourceId::of(object)
                ));
                Err(format!("{}: {}", failure_reason(&e), failure_message(&e, object, None)))
            }
            (None, Some(object)) => match target.get_for(&ResourceId::of(object), &owner).await {
                Ok(live) => {
                    let g = live.as_ref().map(|l| l.metadata.generation);
                    // Reading status is what a read-only manifest is for:
                    // its feedback rules are read as for an applied one.
                    if let Some(live) = live.as_ref().filter(|_| !spec.feedback_rules.is_empty()) {
                        let (values, synced) = feedback::read(&spec.feedback_rules, live);
                        feedback_read.insert(m.identifier.ordinal, values);
                        set_condition(&mut conditions, synced.observing(generation), now);
                    }
                    Ok((report_diff(object, live.as_ref(), strategy.comparison), g))
                }
                Err(e) => Err(format!("{}: {}", failure_reason(&e), failure_message(&e, object, None))),
            },
            (None, None) => Err("the manifest could not be read".to_string()),
        };
        let found = compared.as_ref().map(|(diffs, _)| diffs.clone()).map_err(Clone::clone);
        failed += usize::from(found.is_err());
        set_condition(&mut conditions, manifest_condition(&found).observing(generation), now);
        let previous_details = old_condition.and_then(|c| c.diff_details.as_ref());
        manifest_conditions.push(ManifestCondition {
            identifier: m.identifier.clone(),
            conditions,
            drift_details: None,
            diff_details: compared
                .ok()
                .map(|(diffs, g)| details(Report::Diff, &diffs, previous_details, g, observed_at)),
            // ReportDiff applies nothing, so there is no status to mirror.
            back_reported_status: None,
            status_feedback: None,
        });
    }
    let mut conditions = old.conditions.clone();
    conditions.retain(|c| c.type_ != CONDITION_APPLIED && c.type_ != CONDITION_AVAILABLE);
    set_condition(&mut conditions, work_condition(failed, manifest_conditions.len()).observing(generation), now);
    let previous = previous.cloned().unwrap_or_default();
    let feedback_read: std::collections::BTreeMap<usize, _> =
        feedback_read.into_iter().filter_map(|(o, v)| usize::try_from(o).ok().map(|o| (o, v))).collect();
    let written_anyway = super::report_back::changed_besides_reports(&old, &conditions, &manifest_conditions);
    let held_back = feedback::fill(&mut manifest_conditions, &feedback_read, &old, written_anyway, now);
    WorkOutcome {
        status: WorkStatus { conditions, manifest_conditions },
        entry: Entry {
            generation: if failed == 0 { generation } else { 0 },
            abandon_on_delete: spec.abandons_on_delete(),
            ..previous
        },
        settled: failed == 0 && !held_back,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff() -> Difference {
        Difference { path: "/data/a".into(), value_in_hub: Some("1".into()), value_in_member: Some("2".into()) }
    }

    fn said(c: &Condition) -> (&str, &str, &str) {
        (c.type_.as_str(), c.status.as_str(), c.reason.as_str())
    }

    #[test]
    fn manifest_conditions_say_whether_a_diff_was_found_or_why_none_could_be_computed() {
        assert_eq!(said(&manifest_condition(&Ok(vec![]))), ("DiffReported", "True", "NoDiffFound"));
        let found = manifest_condition(&Ok(vec![diff(), diff()]));
        assert_eq!(said(&found), ("DiffReported", "True", "FoundDiff"));
        assert!(found.message.contains("2 difference(s)"), "{}", found.message);
        let failed = manifest_condition(&Err("ClusterUnavailable: connection refused".into()));
        assert_eq!(said(&failed), ("DiffReported", "False", "Failed"));
        assert_eq!(failed.message, "ClusterUnavailable: connection refused");
    }

    #[test]
    fn the_work_condition_is_true_only_when_every_manifest_was_compared() {
        let all = work_condition(0, 3);
        assert_eq!(said(&all), ("DiffReported", "True", "AllManifestsDiffReported"));
        assert!(all.message.contains("all 3 manifest(s)"), "{}", all.message);
        let some = work_condition(1, 3);
        assert_eq!(said(&some), ("DiffReported", "False", "SomeManifestsHaveNotReportedDiff"));
        assert!(some.message.starts_with("1 of 3"), "{}", some.message);
        assert_eq!(said(&work_condition(0, 0)).1, "True", "an empty Work has nothing left to compare");
    }
}
