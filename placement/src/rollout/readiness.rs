//! How far one binding's rollout got, read from its Works' conditions.

use fleet_api::conditions::{find, Condition};
use fleet_api::work::{status_of, CONDITION_APPLIED, CONDITION_AVAILABLE, REASON_NOT_TRACKABLE};
use fleet_api::Object;

use crate::works::PARENT_RESOURCE_INDEX_LABEL;

/// How far one binding's rollout got, derived from its Works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Every Work of the binding is for the binding's snapshot, Applied=True
    /// and Available=True (trackable reason) at the Work's current generation.
    Ready,
    /// Applied and Available with reason `WorkNotTrackable`: counts as ready
    /// only once `now >= available_since + unavailablePeriodSeconds`.
    NotTrackable {
        /// Unix seconds of the latest `lastTransitionTime` among the
        /// untrackable Works' Applied and Available conditions.
        available_since: i64,
    },
    /// Some Work's Applied=False at its current generation.
    Failed,
    /// Anything else: no Work yet, Works for an older snapshot, not yet
    /// applied or available, observedGeneration behind.
    InProgress,
}

impl Readiness {
    /// Whether this counts as ready at `now` with the given unavailable period.
    pub fn is_ready(&self, now: i64, unavailable_period_seconds: i64) -> bool {
        match *self {
            Readiness::Ready => true,
            Readiness::NotTrackable { available_since } => {
                now >= available_since.saturating_add(unavailable_period_seconds)
            }
            Readiness::Failed | Readiness::InProgress => false,
        }
    }
}

/// A Work condition of `type_` that speaks for the Work's current generation.
fn current<'a>(work: &Object, conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    find(conditions, type_).filter(|c| c.observed_generation.unwrap_or(0) == work.metadata.generation)
}

/// Readiness of a binding bound to the resource group `expected_resource_index`,
/// given its Works (any order) and how many Works that group needs.
///
/// Only Works labelled with the expected index count. Any of those with
/// Applied=False at its generation makes the binding [`Readiness::Failed`]
/// (even if sibling Works are still missing); fewer than
/// `expected_work_count` (at least 1) matching Works is
/// [`Readiness::InProgress`]. A timestamp that cannot be read counts as the
/// epoch: without a time we cannot wait, and waiting forever would block the
/// rollout.
pub fn readiness(expected_resource_index: u64, works: &[Object], expected_work_count: usize) -> Readiness {
    let index = expected_resource_index.to_string();
    let matching: Vec<&Object> =
        works.iter().filter(|w| w.metadata.labels.get(PARENT_RESOURCE_INDEX_LABEL) == Some(&index)).collect();
    let statuses: Vec<_> = matching.iter().map(|w| status_of(w)).collect();
    let failed = matching
        .iter()
        .zip(&statuses)
        .any(|(w, s)| current(w, &s.conditions, CONDITION_APPLIED).is_some_and(|c| c.status == "False"));
    if failed {
        return Readiness::Failed;
    }
    if matching.is_empty() || matching.len() < expected_work_count {
        return Readiness::InProgress;
    }
    let mut untrackable_since: Option<i64> = None;
    for (work, status) in matching.iter().zip(&statuses) {
        let applied = current(work, &status.conditions, CONDITION_APPLIED);
        let available = current(work, &status.conditions, CONDITION_AVAILABLE);
        let (Some(applied), Some(available)) = (applied, available) else {
            return Readiness::InProgress;
        };
        if !applied.is_true() || !available.is_true() {
            return Readiness::InProgress;
        }
        if available.reason == REASON_NOT_TRACKABLE {
            let since = unix_seconds(&available.last_transition_time)
                .unwrap_or(0)
                .max(unix_seconds(&applied.last_transition_time).unwrap_or(0));
            untrackable_since = Some(untrackable_since.map_or(since, |s| s.max(since)));
        }
    }
    match untrackable_since {
        Some(available_since) => Readiness::NotTrackable { available_since },
        None => Readiness::Ready,
    }
}

/// Unix seconds of an RFC 3339 timestamp (`2024-05-01T10:00:00Z`, optional
/// fraction, `Z` or `±hh:mm` offset); `None` if it is not one.
pub fn unix_seconds(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = text.get(19..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = fraction.get(digits..)?;
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let h: i64 = rest.get(1..3)?.parse().ok()?;
            let m: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
