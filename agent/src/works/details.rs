//! A manifest's `driftDetails` and `diffDetails` in KubeFleet's shape:
//! `{observationTime, observedInMemberClusterGeneration, observedDrifts |
//! observedDiffs, firstDriftedObservedTime | firstDiffedObservedTime}`.
//!
//! Times are carried over from the Work's previous status so that a report
//! that did not change does not change the Work either (the agent re-checks
//! every Work each drift-check interval, and an unsettled one every half
//! second; rewriting the Work each time would be a hub write per Work per
//! check for nothing):
//! - the first-observed time is kept while the previous report listed some
//!   drifts / differences too;
//! - `observationTime` is kept while the list and the member generation are
//!   the same as before: it is when the agent last saw the report change.
//!
//! Both are in milliseconds (the agent passes `now` so), finer than the
//! whole seconds of conditions: the agent watches what it placed and reports
//! a change within the second, and a report that replaces one from the same
//! second must still read as later.

use serde_json::{json, Value};

use super::compare::Difference;

/// Which of the two reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// `driftDetails`: the member changed what Fleet applied.
    Drift,
    /// `diffDetails`: the member differs from the manifest (ReportDiff, or a refused takeover).
    Diff,
}

impl Report {
    /// The list field and the first-observed time field.
    fn fields(self) -> (&'static str, &'static str) {
        match self {
            Report::Drift => ("observedDrifts", "firstDriftedObservedTime"),
            Report::Diff => ("observedDiffs", "firstDiffedObservedTime"),
        }
    }
}

/// The report of `found` on an object at `member_generation` (`None` when
/// the object is not on the member: KubeFleet then reports no generation),
/// seen at `now`; `previous` is the same report in the Work's last status,
/// if any.
pub fn details(
    report: Report,
    found: &[Difference],
    previous: Option<&Value>,
    member_generation: Option<i64>,
    now: &str,
) -> Value {
    let (list, first) = report.fields();
    let observed: Vec<Value> = found.iter().map(Difference::to_json).collect();
    let unchanged = previous.is_some_and(|p| {
        p.get(list).and_then(Value::as_array) == Some(&observed)
            && p.get("observedInMemberClusterGeneration").and_then(Value::as_i64) == member_generation
    });
    let observation_time = match previous.and_then(|p| p.get("observationTime")) {
        Some(time) if unchanged => time.clone(),
        _ => json!(now),
    };
    let mut v = json!({"observationTime": observation_time, list: observed});
    if let Some(generation) = member_generation {
        v["observedInMemberClusterGeneration"] = json!(generation);
    }
    if !found.is_empty() {
        let before = previous
            .filter(|p| p.get(list).and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
            .and_then(|p| p.get(first))
            .cloned();
        v[first] = before.unwrap_or_else(|| json!(now));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(member: &str) -> Difference {
        Difference { path: "/data/a".into(), value_in_hub: Some("1".into()), value_in_member: Some(member.into()) }
    }

    #[test]
    fn times_move_only_when_the_report_does() {
        let first = details(Report::Drift, &[diff("x")], None, Some(2), "t1");
        assert_eq!(first["observedDrifts"], json!([{"path": "/data/a", "valueInHub": "1", "valueInMember": "x"}]));
        assert_eq!(
            (first["observationTime"].as_str(), first["firstDriftedObservedTime"].as_str()),
            (Some("t1"), Some("t1"))
        );
        assert_eq!(
            details(Report::Drift, &[diff("x")], Some(&first), Some(2), "t2"),
            first,
            "unchanged: the same value"
        );

        let changed = details(Report::Drift, &[diff("y")], Some(&first), Some(3), "t3");
        assert_eq!(
            (changed["observationTime"].as_str(), changed["firstDriftedObservedTime"].as_str()),
            (Some("t3"), Some("t1"))
        );
        let same_list_new_generation = details(Report::Drift, &[diff("y")], Some(&changed), Some(4), "t4");
        assert_eq!(same_list_new_generation["observationTime"], json!("t4"));

        let clean = details(Report::Diff, &[], Some(&first), Some(4), "t5");
        assert_eq!(
            clean,
            json!({"observationTime": "t5", "observedInMemberClusterGeneration": 4, "observedDiffs": []})
        );
        let again = details(Report::Diff, &[diff("z")], Some(&clean), Some(5), "t6");
        assert_eq!(again["firstDiffedObservedTime"], json!("t6"), "a new episode starts after a clean report");
    }

    #[test]
    fn an_object_missing_on_the_member_reports_no_generation() {
        let whole =
            Difference { path: "/".into(), value_in_hub: Some("(the whole object)".into()), value_in_member: None };
        let missing = details(Report::Diff, &[whole], None, None, "t1");
        assert!(missing.get("observedInMemberClusterGeneration").is_none(), "{missing}");
        assert_eq!(details(Report::Diff, &[], Some(&missing), None, "t2")["observationTime"], json!("t2"));
    }
}
