//! The placement's own conditions, folded from its chosen clusters' entries.

use fleet_api::conditions::{find, Condition};
use fleet_api::placement::PerClusterStatus;

use super::*;

/// How the chosen clusters stand on one condition type.
#[derive(Default)]
struct Tally {
    true_: usize,
    false_: usize,
    unknown: usize,
    /// True ones whose reason is not `NoOverrideSpecified` (for Overridden).
    overridden: usize,
}

/// Counts the chosen clusters' `type_` conditions (entries without a
/// cluster name stand for clusters the policy could not get).
fn tally(clusters: &[PerClusterStatus], type_: &str) -> Tally {
    let mut t = Tally::default();
    for c in clusters.iter().filter(|c| !c.cluster_name.is_empty()) {
        match find(&c.conditions, type_) {
            Some(c) if c.is_true() => {
                t.true_ += 1;
                if c.reason != REASON_NO_OVERRIDE {
                    t.overridden += 1;
                }
            }
            Some(c) if c.status == "False" => t.false_ += 1,
            _ => t.unknown += 1,
        }
    }
    t
}

/// The placement condition (unsuffixed type, status, reason, message) for
/// one rollout condition type.
fn summarize(type_: &str, t: &Tally) -> (Option<bool>, &'static str, String) {
    let (all, bad, pending) = (clusters(t.true_), clusters(t.false_), clusters(t.unknown));
    match type_ {
        DIFF_REPORTED if t.false_ > 0 => (
            Some(false),
            REASON_DIFF_NOT_REPORTED,
            format!("Diff reporting in {} clusters is still in progress or has failed", t.false_),
        ),
        DIFF_REPORTED if t.unknown > 0 => (
            None,
            REASON_DIFF_PENDING,
            format!(
                "There are still {} cluster(s) in the process of checking for configuration differences",
                t.unknown
            ),
        ),
        DIFF_REPORTED => {
            (Some(true), REASON_DIFF_REPORTED, format!("Diff reporting in {} cluster(s) has been completed", t.true_))
        }
        ROLLOUT_STARTED if t.false_ > 0 => (
            Some(false),
            REASON_ROLLOUT_NOT_STARTED,
            format!("The rollout is being blocked by the rollout strategy in {bad}"),
        ),
        ROLLOUT_STARTED if t.unknown > 0 => {
            (None, REASON_ROLLOUT_UNKNOWN, format!("The rollout has not been reported yet for {pending}"))
        }
        ROLLOUT_STARTED => {
            (Some(true), REASON_ROLLOUT_STARTED, format!("All {all} start rolling out the latest resources"))
        }
        OVERRIDDEN if t.false_ > 0 => {
            (Some(false), REASON_OVERRIDE_FAILED, format!("Failed to override resources in {} cluster(s)", t.false_))
        }
        OVERRIDDEN if t.unknown > 0 => (
            None,
            REASON_OVERRIDE_PENDING,
            format!(
                "There are still {} cluster(s) in the process of overriding the selected resources if there is any override defined",
                t.unknown
            ),
        ),
        OVERRIDDEN if t.overridden == 0 => {
            (Some(true), REASON_NO_OVERRIDE, format!("There are no override rules for the selected resources in {all}"))
        }
        OVERRIDDEN => (
            Some(true),
            REASON_OVERRIDDEN,
            format!("The selected resources are successfully overridden in {} cluster(s)", t.overridden),
        ),
        WORK_SYNCHRONIZED if t.false_ > 0 || t.unknown > 0 => (
            if t.false_ > 0 { Some(false) } else { None },
            REASON_WORK_NOT_SYNCHRONIZED,
            format!(
                "There are {} which have not finished creating or updating work(s) yet",
                clusters(t.false_ + t.unknown)
            ),
        ),
        WORK_SYNCHRONIZED => (
            Some(true),
            REASON_WORK_SYNCHRONIZED,
            format!("Work(s) are successfully created or updated in the namespaces of {all}"),
        ),
        APPLIED if t.false_ > 0 => (
            Some(false),
            REASON_APPLY_FAILED,
            format!("Failed to apply the selected resources to {bad}, please check the `failedPlacements` status"),
        ),
        APPLIED if t.unknown > 0 => {
            (None, REASON_APPLY_PENDING, format!("Works need to be applied or are being applied in {pending}"))
        }
        APPLIED => {
            (Some(true), REASON_APPLY_SUCCEEDED, format!("The selected resources are successfully applied to {all}"))
        }
        _ if t.false_ > 0 || t.unknown > 0 => (
            if t.false_ > 0 { Some(false) } else { None },
            REASON_NOT_AVAILABLE,
            format!("The selected resources in {} are not available yet", clusters(t.false_ + t.unknown)),
        ),
        _ => (Some(true), REASON_AVAILABLE, format!("The selected resources in {all} are available now")),
    }
}

/// The placement's six conditions in order (`Scheduled` is given, computed
/// by the scheduler; in `ReportDiff` mode five, `DiffReported` in place of
/// `Applied` and `Available`): each True only when every chosen cluster's
/// is True, False when some cluster's is False, Unknown while some are
/// pending; messages count clusters. A later condition appears only once
/// the earlier ones are True (a pending `Scheduled` stops the chain; an
/// unfulfilled one does not; with no cluster chosen, `Scheduled` stands
/// alone). An External placement whose clusters hold different
/// snapshots, or have not all decided their rollout, reports `Scheduled`
/// and an Unknown `RolloutStarted` alone ([`undecided_rollout`], SU-13).
/// Types are prefixed with `kind`; each observes
/// `generation`; transition times are kept from `current` where the status
/// did not change.
pub fn fold_placement(
    kind: &str,
    generation: i64,
    scheduled: &Condition,
    clusters: &[PerClusterStatus],
    mode: Mode,
    current: &[Condition],
    now: &str,
) -> Vec<Condition> {
    let mut out = vec![carried(current, scheduled.clone(), now)];
    // With no cluster chosen there is nothing to roll out: KubeFleet
    // reports `Scheduled` alone then.
    if (scheduled.status != "True" && scheduled.status != "False") || clusters.iter().all(|c| c.cluster_name.is_empty())
    {
        return out;
    }
    if let Some(undecided) = mode.external.then(|| undecided_rollout(clusters)).flatten() {
        let condition = Condition { type_: format!("{kind}{ROLLOUT_STARTED}"), ..undecided };
        out.push(carried(current, condition.observing(generation), now));
        return out;
    }
    for type_ in rollout_conditions(mode.report_diff) {
        let (status, reason, message) = summarize(type_, &tally(clusters, type_));
        let full_type = format!("{kind}{type_}");
        let condition = match status {
            Some(status) => Condition::new(&full_type, status, reason, message),
            None => Condition::unknown(&full_type, reason, message),
        };
        out.push(carried(current, condition.observing(generation), now));
        if status != Some(true) {
            break;
        }
    }
    out
}
