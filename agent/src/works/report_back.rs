//! Status back-reporting (a Work's `reportBackStrategy: Mirror`, KubeFleet's
//! field): each applied object's status on the member, as
//! `{apiVersion, kind, status}`, in its manifest condition's
//! `backReportedStatus`, for the hub (or a user) to read.
//!
//! Bounded in rate and in size, because every Work status write is a Raft
//! write on the hub:
//! - **Rate.** An unchanged status keeps its report (and its observation
//!   time): a steady fleet writes nothing. A changed status is reported at
//!   once when the Work's status is written anyway (its conditions changed:
//!   the report rides along for free) or when the Work's last back-report
//!   is at least [`MIN_REPORT_INTERVAL_SECONDS`] old; otherwise it is held
//!   back (the Work is looked at again until it goes out). So
//!   back-reporting alone makes at most one status write per Work per 30 s,
//!   however often the objects' statuses move — a Deployment whose status
//!   changes every second costs 2 writes a minute per cluster, not 60. 30 s
//!   because a mirrored status is a picture for people and tools, not a
//!   control loop. Conditions (Applied, Available) are never held: they go
//!   out at once as before.
//! - **Size.** A status over [`MAX_OBJECT_BYTES`] is not reported, nor
//!   those past [`MAX_WORK_BYTES`] in one Work; the Work then says so in
//!   KubeFleet's `StatusTrimmed` condition (reason `Oversized`).

use std::collections::BTreeMap;

use fleet_api::conditions::Condition;
use fleet_api::time::unix_seconds;
use fleet_api::work::{BackReportedStatus, ManifestCondition, WorkStatus};
use fleet_api::Object;
use serde_json::{json, Value};

/// The shortest time between two back-reports of one Work.
pub const MIN_REPORT_INTERVAL_SECONDS: i64 = 30;
/// The largest status reported for one object (its JSON).
pub const MAX_OBJECT_BYTES: usize = 16 * 1024;
/// The most back-reported status one Work carries (their JSON, summed).
pub const MAX_WORK_BYTES: usize = 256 * 1024;
/// KubeFleet's Work condition for left-out status data.
pub const CONDITION_STATUS_TRIMMED: &str = "StatusTrimmed";

/// What filling the back-reports decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackReports {
    /// A changed status waits for the interval: look at the Work again.
    pub held_back: bool,
    /// How many statuses were left out for their size.
    pub trimmed: usize,
}

/// The status to report for a live object: `{apiVersion, kind, status}`,
/// or `None` when the object has no status (or is a Secret, whose data
/// never leaves the member).
pub fn observed_status(live: &Object) -> Option<Value> {
    if live.kind == "Secret" {
        return None;
    }
    let status = live.status().filter(|s| !s.is_null())?;
    Some(json!({"apiVersion": live.api_version, "kind": live.kind, "status": status}))
}

/// Sets each manifest condition's `backReportedStatus` from `observed`
/// (ordinal → the status to report, for the objects applied this pass),
/// given the Work's stored status `old`, whether the status is written
/// anyway (`written_anyway`: something else in it changed) and the time `now`.
pub fn fill(
    conditions: &mut [ManifestCondition],
    observed: &BTreeMap<usize, Value>,
    old: &WorkStatus,
    written_anyway: bool,
    now: &str,
) -> BackReports {
    let last = old
        .manifest_conditions
        .iter()
        .filter_map(|c| c.back_reported_status.as_ref())
        .filter_map(|b| unix_seconds(&b.observation_time))
        .max();
    let may_report = written_anyway
        || match (last, unix_seconds(now)) {
            (Some(last), Some(now)) => now - last >= MIN_REPORT_INTERVAL_SECONDS,
            _ => true,
        };
    let mut out = BackReports::default();
    let mut total = 0usize;
    for condition in conditions.iter_mut() {
        let ordinal = usize::try_from(condition.identifier.ordinal).unwrap_or(usize::MAX);
        let Some(status) = observed.get(&ordinal) else {
            condition.back_reported_status = None;
            continue;
        };
        let before = old
            .manifest_conditions
            .iter()
            .find(|c| c.identifier == condition.identifier)
            .and_then(|c| c.back_reported_status.as_ref());
        let next = match before {
            Some(b) if b.observed_status == *status => b.clone(),
            Some(b) if !may_report => {
                out.held_back = true;
                b.clone()
            }
            _ => BackReportedStatus { observed_status: status.clone(), observation_time: now.to_string() },
        };
        let bytes = serde_json::to_vec(&next.observed_status).map_or(usize::MAX, |v| v.len());
        if bytes > MAX_OBJECT_BYTES || total.saturating_add(bytes) > MAX_WORK_BYTES {
            out.trimmed += 1;
            condition.back_reported_status = None;
            continue;
        }
        total += bytes;
        condition.back_reported_status = Some(next);
    }
    out
}

/// Whether the Work status about to be written differs from the stored one
/// in anything but the back-reports and status feedback (then it is
/// written anyway).
pub fn changed_besides_reports(old: &WorkStatus, conditions: &[Condition], manifests: &[ManifestCondition]) -> bool {
    let strip =
        |c: &ManifestCondition| ManifestCondition { back_reported_status: None, status_feedback: None, ..c.clone() };
    old.conditions != conditions
        || old.manifest_conditions.len() != manifests.len()
        || old.manifest_conditions.iter().zip(manifests).any(|(a, b)| strip(a) != strip(b))
}

/// KubeFleet's `StatusTrimmed` condition when statuses were left out.
pub fn trimmed_condition(trimmed: usize) -> Option<Condition> {
    (trimmed > 0).then(|| {
        Condition::new(
            CONDITION_STATUS_TRIMMED,
            true,
            "Oversized",
            format!(
                "The status data (back-reported status) has been trimmed due to size constraints: {trimmed} \
                 object status(es) left out (at most {MAX_OBJECT_BYTES} bytes each, {MAX_WORK_BYTES} bytes per Work)"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::work::WorkResourceIdentifier;

    fn condition(ordinal: i64, back: Option<(&Value, &str)>) -> ManifestCondition {
        ManifestCondition {
            identifier: WorkResourceIdentifier { ordinal, kind: "Deployment".into(), ..Default::default() },
            back_reported_status: back
                .map(|(s, t)| BackReportedStatus { observed_status: s.clone(), observation_time: t.to_string() }),
            ..Default::default()
        }
    }

    fn ready(n: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": {"readyReplicas": n}})
    }

    fn status_of(conditions: Vec<ManifestCondition>) -> WorkStatus {
        WorkStatus { manifest_conditions: conditions, ..Default::default() }
    }

    #[test]
    fn an_object_reports_its_status_with_its_type() {
        let live: Object = serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "status": {"readyReplicas": 2}}))
        .unwrap();
        assert_eq!(observed_status(&live), Some(ready(2)));
        let secret: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s"}, "status": {"x": 1}}))
        .unwrap();
        assert_eq!(observed_status(&secret), None);
        let plain: Object =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
                .unwrap();
        assert_eq!(observed_status(&plain), None);
    }

    #[test]
    fn a_change_goes_out_at_most_once_per_interval_and_a_steady_status_never() {
        let t0 = "2026-01-01T00:00:00Z";
        let mut now = vec![condition(0, None)];
        let first = fill(&mut now, &BTreeMap::from([(0, ready(1))]), &WorkStatus::default(), false, t0);
        assert_eq!(first, BackReports::default());
        assert_eq!(now[0].back_reported_status.as_ref().unwrap().observation_time, t0);
        let stored = status_of(now.clone());

        // Unchanged: the same report, the same time (no write).
        let mut again = vec![condition(0, None)];
        fill(&mut again, &BTreeMap::from([(0, ready(1))]), &stored, false, "2026-01-01T00:00:05Z");
        assert_eq!(again, now);

        // Changed 10 s later: held back.
        let mut soon = vec![condition(0, None)];
        let held = fill(&mut soon, &BTreeMap::from([(0, ready(2))]), &stored, false, "2026-01-01T00:00:10Z");
        assert!(held.held_back);
        assert_eq!(soon, now, "the report stays as stored");

        // ...unless the Work's status is written anyway: it rides along.
        let mut along = vec![condition(0, None)];
        let out = fill(&mut along, &BTreeMap::from([(0, ready(2))]), &stored, true, "2026-01-01T00:00:10Z");
        assert!(!out.held_back);
        assert_eq!(along[0].back_reported_status.as_ref().unwrap().observed_status, ready(2));

        // 30 s after the last report: out.
        let mut later = vec![condition(0, None)];
        let out = fill(&mut later, &BTreeMap::from([(0, ready(2))]), &stored, false, "2026-01-01T00:00:30Z");
        assert!(!out.held_back);
        let b = later[0].back_reported_status.as_ref().unwrap();
        assert_eq!((&b.observed_status, b.observation_time.as_str()), (&ready(2), "2026-01-01T00:00:30Z"));
    }

    #[test]
    fn the_interval_is_per_work_and_a_new_object_reports_at_once() {
        let t0 = "2026-01-01T00:00:00Z";
        let stored = status_of(vec![condition(0, Some((&ready(1), t0))), condition(1, None)]);
        let mut now = vec![condition(0, None), condition(1, None)];
        let observed = BTreeMap::from([(0, ready(2)), (1, ready(5))]);
        let out = fill(&mut now, &observed, &stored, false, "2026-01-01T00:00:10Z");
        assert!(out.held_back, "object 0 changed within the Work's interval");
        assert_eq!(now[0].back_reported_status.as_ref().unwrap().observed_status, ready(1));
        assert_eq!(now[1].back_reported_status.as_ref().unwrap().observed_status, ready(5), "first report");
    }

    #[test]
    fn only_changes_besides_the_reports_count_as_written_anyway() {
        let reported = vec![condition(0, Some((&ready(1), "2026-01-01T00:00:00Z")))];
        let old = status_of(reported);
        let fresh = vec![condition(0, None)];
        assert!(!changed_besides_reports(&old, &[], &fresh));
        let applied = Condition::new("Applied", true, "AllApplied", "");
        assert!(changed_besides_reports(&old, &[applied], &fresh));
        assert!(changed_besides_reports(&old, &[], &[condition(0, None), condition(1, None)]));
    }

    #[test]
    fn oversized_statuses_are_left_out_and_said_so() {
        let big = json!({"apiVersion": "v1", "kind": "X", "status": {"blob": "x".repeat(MAX_OBJECT_BYTES)}});
        let mut now = vec![condition(0, None), condition(1, None)];
        let out = fill(
            &mut now,
            &BTreeMap::from([(0, big), (1, ready(1))]),
            &WorkStatus::default(),
            false,
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(out.trimmed, 1);
        assert!(now[0].back_reported_status.is_none());
        assert!(now[1].back_reported_status.is_some());
        let c = trimmed_condition(out.trimmed).unwrap();
        assert_eq!((c.type_.as_str(), c.reason.as_str()), ("StatusTrimmed", "Oversized"));
        assert_eq!(trimmed_condition(0), None);
        // Many medium ones: the Work's budget runs out.
        let medium = json!({"apiVersion": "v1", "kind": "X", "status": {"blob": "x".repeat(MAX_OBJECT_BYTES - 100)}});
        let count = MAX_WORK_BYTES / MAX_OBJECT_BYTES + 2;
        let mut many: Vec<ManifestCondition> = (0..count as i64).map(|i| condition(i, None)).collect();
        let observed: BTreeMap<usize, Value> = (0..count).map(|i| (i, medium.clone())).collect();
        let out = fill(&mut many, &observed, &WorkStatus::default(), false, "2026-01-01T00:00:00Z");
        assert!(out.trimmed >= 2, "{out:?}");
    }
}
