//! The scores a Placement's decisions record (`decisions[].score`), their
//! time (`status.lastScoreUpdateTime`) and order (`sortBy`), as OCM's API
//! defines them:
//! - A decision's score is the cluster's total over the placement's
//!   prioritizers (Σ weight × score) in the pass that wrote it.
//! - `scoreRateLimit`: new scores that leave the chosen clusters as they
//!   are are written at most once per that period after
//!   `lastScoreUpdateTime`; until then the decisions keep the scores they
//!   hold and the pass asks to be run again when the period ends. A change
//!   of the chosen clusters writes the new scores at once.
//! - `lastScoreUpdateTime` is the pass time at which the recorded scores
//!   last changed; it stays while they do not.
//! - `sortBy: Score` orders the decisions by score, highest first, then by
//!   cluster name; `ClusterName` (the default) by name.
//!
//! Pure: the time is the pass's `now`, never a clock.

use std::collections::BTreeMap;

use fleet_api::ocm::decision;
use fleet_api::ocm::placement::{PlacementSpec, SORT_BY_SCORE};
use fleet_api::Object;

/// `scoreRateLimit` in seconds when it does not parse (admission refuses
/// that): OCM's default, one minute.
const FALLBACK_RATE_LIMIT_SECONDS: i64 = 60;

/// What the placement's stored decisions record: each decided cluster's
/// score and when those scores were written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedScores {
    /// Cluster name → the score its decision holds (0 when it holds none).
    pub scores: BTreeMap<String, i64>,
    /// `status.lastScoreUpdateTime`, in Unix seconds.
    pub updated: Option<i64>,
}

impl RecordedScores {
    /// The scores the decision `pages` hold, written at `updated`.
    pub fn from_pages<'a>(pages: impl IntoIterator<Item = &'a Object>, updated: Option<i64>) -> RecordedScores {
        let scores = pages
            .into_iter()
            .flat_map(|p| decision::status_of(p).decisions)
            .map(|d| (d.cluster_name, d.score))
            .collect();
        RecordedScores { scores, updated }
    }
}

/// The scores a pass writes into the decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionScores {
    /// Chosen cluster → the score its decision holds.
    pub scores: BTreeMap<String, i64>,
    /// The new `status.lastScoreUpdateTime` (Unix seconds).
    pub updated: Option<i64>,
    /// When held-back scores may be written.
    pub due_at: Option<i64>,
}

/// The scores to write, given the chosen clusters' `fresh` totals, what the
/// decisions `recorded`, the spec's `scoreRateLimit` and the pass's `now`.
pub fn decide(
    fresh: BTreeMap<String, i64>,
    recorded: &RecordedScores,
    spec: &PlacementSpec,
    now: i64,
) -> DecisionScores {
    if fresh == recorded.scores {
        return DecisionScores { scores: fresh, updated: recorded.updated, due_at: None };
    }
    let same_clusters = fresh.keys().eq(recorded.scores.keys());
    let limit = spec.score_rate_limit_seconds().unwrap_or(FALLBACK_RATE_LIMIT_SECONDS);
    let due_at = recorded.updated.map(|at| at.saturating_add(limit));
    match due_at {
        Some(due) if same_clusters && now < due => {
            DecisionScores { scores: recorded.scores.clone(), updated: recorded.updated, due_at: Some(due) }
        }
        _ => DecisionScores { scores: fresh, updated: Some(now), due_at: None },
    }
}

impl DecisionScores {
    /// The score the decision of `cluster` holds (0 when none).
    pub fn of(&self, cluster: &str) -> i64 {
        self.scores.get(cluster).copied().unwrap_or(0)
    }
}

/// Orders `chosen` (clusters in name order) as `sortBy` asks: by name, or
/// by `score`, highest first, ties in name order.
pub fn order<T>(spec: &PlacementSpec, chosen: &mut [T], score: impl Fn(&T) -> i64) {
    if spec.sort_by() == SORT_BY_SCORE {
        // Stable: equal scores keep their name order.
        chosen.sort_by_key(|c| std::cmp::Reverse(score(c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_714_557_600;

    fn scores(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    }

    fn limit(text: &str) -> PlacementSpec {
        PlacementSpec { score_rate_limit: Some(text.into()), ..PlacementSpec::default() }
    }

    #[test]
    fn first_scores_are_written_at_once() {
        let out = decide(scores(&[("a", 200)]), &RecordedScores::default(), &limit("1m"), NOW);
        assert_eq!(out, DecisionScores { scores: scores(&[("a", 200)]), updated: Some(NOW), due_at: None });
    }

    #[test]
    fn unchanged_scores_keep_their_time() {
        let recorded = RecordedScores { scores: scores(&[("a", 200)]), updated: Some(NOW - 500) };
        let out = decide(scores(&[("a", 200)]), &recorded, &limit("1m"), NOW);
        assert_eq!(out, DecisionScores { scores: scores(&[("a", 200)]), updated: Some(NOW - 500), due_at: None });
    }

    #[test]
    fn new_scores_of_the_same_clusters_wait_for_the_rate_limit() {
        let recorded = RecordedScores { scores: scores(&[("a", 200), ("b", 100)]), updated: Some(NOW - 20) };
        let fresh = scores(&[("a", 150), ("b", 100)]);
        let held = decide(fresh.clone(), &recorded, &limit("1m"), NOW);
        assert_eq!(
            held,
            DecisionScores { scores: recorded.scores.clone(), updated: Some(NOW - 20), due_at: Some(NOW + 40) }
        );
        // At the end of the period they are written.
        let written = decide(fresh.clone(), &recorded, &limit("1m"), NOW + 40);
        assert_eq!(written, DecisionScores { scores: fresh.clone(), updated: Some(NOW + 40), due_at: None });
        // A limit of 0 writes every change.
        assert_eq!(decide(fresh.clone(), &recorded, &limit("0s"), NOW).scores, fresh);
        // No recorded time: written at once.
        let untimed = RecordedScores { updated: None, ..recorded };
        assert_eq!(decide(fresh.clone(), &untimed, &limit("1h"), NOW).updated, Some(NOW));
    }

    #[test]
    fn a_change_of_the_chosen_clusters_writes_the_scores_at_once() {
        let recorded = RecordedScores { scores: scores(&[("a", 200), ("b", 100)]), updated: Some(NOW - 1) };
        let fresh = scores(&[("a", 200), ("c", 300)]);
        let out = decide(fresh.clone(), &recorded, &limit("1h"), NOW);
        assert_eq!(out, DecisionScores { scores: fresh, updated: Some(NOW), due_at: None });
    }

    #[test]
    fn sort_by_score_is_highest_first_then_by_name() {
        let by = DecisionScores { scores: scores(&[("a", 10), ("b", 30), ("c", 10), ("d", -5)]), ..Default::default() };
        let mut names = vec!["a", "b", "c", "d"];
        let spec = PlacementSpec { sort_by: Some(SORT_BY_SCORE.into()), ..PlacementSpec::default() };
        order(&spec, &mut names, |n| by.of(n));
        assert_eq!(names, ["b", "a", "c", "d"]);
        let mut names = vec!["a", "b", "c", "d"];
        order(&PlacementSpec::default(), &mut names, |n| by.of(n));
        assert_eq!(names, ["a", "b", "c", "d"]);
    }
}
