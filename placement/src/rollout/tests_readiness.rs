//! A binding's readiness from its Works, and RFC 3339 times.

use fleet_api::Object;
use serde_json::{json, Value};

use super::*;

/// A Work of resource index `index` at `generation` with the given
/// (type, status, reason, observedGeneration, lastTransitionTime) conditions.
pub(super) fn work(name: &str, index: u64, generation: i64, conditions: &[(&str, &str, &str, i64, &str)]) -> Object {
    let conditions: Vec<Value> = conditions
        .iter()
        .map(|(t, s, r, g, at)| json!({"type": t, "status": s, "reason": r, "observedGeneration": g, "lastTransitionTime": at}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
        "metadata": {"name": name, "namespace": "fleet-member-a", "generation": generation,
            "labels": {"kubernetes-fleet.io/parent-resource-snapshot-index": index.to_string()}},
        "spec": {"workload": {"manifests": []}},
        "status": {"conditions": conditions}
    }))
    .unwrap()
}

const T0: &str = "2024-05-01T10:00:00Z";
const T1: &str = "2024-05-01T10:00:30Z";

fn ok(name: &str, index: u64) -> Object {
    work(
        name,
        index,
        2,
        &[("Applied", "True", "AllManifestsApplied", 2, T0), ("Available", "True", "AllManifestsAvailable", 2, T0)],
    )
}

#[test]
fn ready_when_every_work_of_the_index_is_applied_and_available() {
    assert_eq!(readiness(3, &[ok("w", 3), ok("w-1", 3)], 2), Readiness::Ready);
}

#[test]
fn in_progress_without_works_or_with_missing_parts() {
    assert_eq!(readiness(3, &[], 1), Readiness::InProgress);
    assert_eq!(readiness(3, &[], 0), Readiness::InProgress, "no Work is never ready");
    assert_eq!(readiness(3, &[ok("w", 3)], 2), Readiness::InProgress);
}

#[test]
fn works_of_another_index_do_not_count() {
    assert_eq!(readiness(3, &[ok("w", 2)], 1), Readiness::InProgress);
}

#[test]
fn conditions_of_an_older_generation_do_not_count() {
    let stale = work(
        "w",
        3,
        3,
        &[("Applied", "True", "AllManifestsApplied", 2, T0), ("Available", "True", "AllManifestsAvailable", 2, T0)],
    );
    assert_eq!(readiness(3, &[stale], 1), Readiness::Applying);
    let stale_failure = work("w", 3, 3, &[("Applied", "False", "SomeManifestsAreNotApplied", 2, T0)]);
    assert_eq!(readiness(3, &[stale_failure], 1), Readiness::Applying);
    // A verdict written by someone else without a generation speaks for none.
    let unversioned = work(
        "w",
        3,
        2,
        &[("Applied", "True", "AllManifestsApplied", 2, T0), ("Available", "False", "WorkNotAvailable", 0, T0)],
    );
    assert_eq!(readiness(3, &[unversioned], 1), Readiness::Applying);
}

#[test]
fn available_false_is_unavailable_and_no_verdict_yet_is_applying() {
    let unavailable = work(
        "w",
        3,
        2,
        &[
            ("Applied", "True", "AllManifestsApplied", 2, T0),
            ("Available", "False", "SomeManifestsAreNotAvailable", 2, T0),
        ],
    );
    assert_eq!(readiness(3, std::slice::from_ref(&unavailable), 1), Readiness::Unavailable);
    let pending = work("w2", 3, 2, &[("Applied", "True", "AllManifestsApplied", 2, T0)]);
    assert_eq!(readiness(3, std::slice::from_ref(&pending), 1), Readiness::Applying);
    let applying = work("w3", 3, 2, &[]);
    assert_eq!(readiness(3, &[ok("w", 3), applying], 2), Readiness::Applying, "no verdict at all");
    // One Work unavailable makes the binding unavailable, whatever its siblings.
    assert_eq!(readiness(3, &[pending, unavailable], 2), Readiness::Unavailable);
}

#[test]
fn applied_false_at_the_current_generation_is_failed() {
    let failed = work("w-1", 3, 2, &[("Applied", "False", "SomeManifestsAreNotApplied", 2, T0)]);
    assert_eq!(readiness(3, &[ok("w", 3), failed.clone()], 2), Readiness::Failed);
    assert_eq!(readiness(3, &[failed], 2), Readiness::Failed, "even with a part missing");
}

#[test]
fn not_trackable_reports_the_later_transition_time() {
    let untrackable = work(
        "w-1",
        3,
        2,
        &[("Applied", "True", "AllManifestsApplied", 2, T1), ("Available", "True", "WorkNotTrackable", 2, T0)],
    );
    let since = unix_seconds(T1).unwrap();
    assert_eq!(readiness(3, &[ok("w", 3), untrackable], 2), Readiness::NotTrackable { available_since: since });
    let r = Readiness::NotTrackable { available_since: since };
    assert!(!r.is_ready(since + 59, 60) && r.is_ready(since + 60, 60));
}

#[test]
fn parses_rfc3339_times() {
    assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(unix_seconds("2024-05-01T10:00:00Z"), Some(1_714_557_600));
    assert_eq!(unix_seconds("2024-05-01T10:00:00.123Z"), Some(1_714_557_600));
    assert_eq!(unix_seconds("2024-05-01T12:00:00+02:00"), Some(1_714_557_600));
    assert_eq!(unix_seconds("2000-02-29T00:00:00Z"), Some(951_782_400));
    for bad in ["", "yesterday", "2024-13-01T00:00:00Z", "2024-05-01T10:00:00", "2024-05-01T10:00:00+0200"] {
        assert_eq!(unix_seconds(bad), None, "{bad}");
    }
}

/// A ReportDiff Work of index 3 at generation 2 with the given conditions.
fn report_diff(name: &str, conditions: &[(&str, &str, &str, i64, &str)]) -> Object {
    let mut w = work(name, 3, 2, conditions);
    w.rest.insert("spec".into(), json!({"workload": {"manifests": []}, "applyStrategy": {"type": "ReportDiff"}}));
    w
}

#[test]
fn a_report_diff_work_is_ready_once_its_diff_is_reported_and_failed_when_it_cannot_be() {
    let reported = report_diff("w", &[("DiffReported", "True", "AllManifestsDiffReported", 2, T0)]);
    assert_eq!(readiness(3, std::slice::from_ref(&reported), 1), Readiness::Ready);
    assert_eq!(readiness(3, &[reported.clone(), ok("w-1", 3)], 2), Readiness::Ready, "mixed parts");
    let failed = report_diff("w", &[("DiffReported", "False", "SomeManifestsHaveNotReportedDiff", 2, T0)]);
    assert_eq!(readiness(3, &[failed], 1), Readiness::Failed);
    let stale = report_diff("w", &[("DiffReported", "True", "AllManifestsDiffReported", 1, T0)]);
    assert_eq!(readiness(3, &[stale], 1), Readiness::InProgress, "of an older generation");
    // Applied/Available left from the other mode say nothing in this one.
    let leftover = report_diff(
        "w",
        &[("Applied", "True", "AllManifestsApplied", 2, T0), ("Available", "True", "AllManifestsAvailable", 2, T0)],
    );
    assert_eq!(readiness(3, &[leftover], 1), Readiness::InProgress);
    let leftover_failure = report_diff("w", &[("Applied", "False", "SomeManifestsAreNotApplied", 2, T0)]);
    assert_eq!(readiness(3, &[leftover_failure], 1), Readiness::InProgress);
}
