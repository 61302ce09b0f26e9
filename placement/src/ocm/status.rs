//! What a pass means for the Placement's status and events: its two
//! conditions, `status` itself, the `ScoreUpdate` message, and which
//! PlacementDecision pages to create, update or delete.

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::ocm::decision::{self, PlacementDecisionStatus};
use fleet_api::ocm::placement::{
    CandidateScore, CandidateScores, PlacementStatus, WeightedName, CONDITION_MISCONFIGURED, CONDITION_SATISFIED,
    MAX_CANDIDATE_SCORES, REASON_ALL_DECISIONS_SCHEDULED, REASON_CONFIGURED, REASON_MISCONFIGURED,
    REASON_NOT_ALL_DECISIONS_SCHEDULED, REASON_NO_CLUSTER_MATCHED, REASON_SETS_EMPTY,
};
use fleet_api::Object;

use super::groups::DecisionPage;
use super::sets::NoSets;
use super::OcmOutcome;

/// What decides `PlacementSatisfied`.
pub(crate) enum Satisfaction<'s> {
    /// No usable set.
    NoSets(NoSets),
    /// The pass ran over these sets.
    Scheduled {
        /// The eligible sets.
        sets: &'s [&'s str],
        /// Clusters in those sets.
        in_sets: usize,
        /// Clusters that passed every filter.
        feasible: usize,
        /// `numberOfClusters`; unset wants every feasible cluster.
        asked: Option<usize>,
        /// How many were chosen.
        chosen: usize,
    },
}

/// The `PlacementSatisfied` condition, with OCM's controller's reasons and
/// messages word for word, checked in its order: no usable set; sets
/// without members; no cluster decided (none feasible, or
/// `numberOfClusters: 0`); fewer decided than asked (or, with a
/// `DoNotSchedule` spread constraint, than feasible); else all scheduled.
pub(crate) fn satisfied(s: &Satisfaction) -> Condition {
    match *s {
        Satisfaction::NoSets(ref why) => Condition::new(CONDITION_SATISFIED, false, why.reason(), why.message()),
        Satisfaction::Scheduled { sets, in_sets: 0, .. } => Condition::new(
            CONDITION_SATISFIED,
            false,
            REASON_SETS_EMPTY,
            format!("All ManagedClusterSets [{}] have no member ManagedCluster", sets.join(",")),
        ),
        Satisfaction::Scheduled { chosen: 0, .. } => Condition::new(
            CONDITION_SATISFIED,
            false,
            REASON_NO_CLUSTER_MATCHED,
            "No ManagedCluster matches any of the cluster predicate",
        ),
        Satisfaction::Scheduled { asked, feasible, chosen, .. } if chosen < asked.unwrap_or(feasible) => {
            Condition::new(
                CONDITION_SATISFIED,
                false,
                REASON_NOT_ALL_DECISIONS_SCHEDULED,
                format!("{} cluster decisions unscheduled", asked.unwrap_or(feasible) - chosen),
            )
        }
        Satisfaction::Scheduled { .. } => {
            Condition::new(CONDITION_SATISFIED, true, REASON_ALL_DECISIONS_SCHEDULED, "All cluster decisions scheduled")
        }
    }
}

/// The `PlacementMisconfigured` condition for the problems found.
pub(crate) fn misconfigured(problems: &[String]) -> Condition {
    if problems.is_empty() {
        Condition::new(CONDITION_MISCONFIGURED, false, REASON_CONFIGURED, "Placement configurations check pass")
    } else {
        Condition::new(CONDITION_MISCONFIGURED, true, REASON_MISCONFIGURED, problems.join("; "))
    }
}

impl OcmOutcome {
    /// The Placement's new status: counts and groups from this pass, the
    /// two conditions set on `previous` ones (transition times kept while
    /// the status does not change, `now` otherwise) observing `generation`.
    pub fn status(&self, previous: &PlacementStatus, generation: i64, now: &str) -> PlacementStatus {
        let mut conditions = previous.conditions.clone();
        for c in [&self.satisfied, &self.misconfigured] {
            set_condition(&mut conditions, c.clone().observing(generation), now);
        }
        PlacementStatus {
            number_of_selected_clusters: self.chosen.len() as i64,
            decision_groups: self.group_statuses.clone(),
            conditions,
            candidate_scores: Some(self.candidate_scores()),
            last_score_update_time: self.score_update_time.map(crate::time::rfc3339),
        }
    }

    /// The candidates' scores for the status: chosen ones first, then by
    /// total descending and name, at most [`MAX_CANDIDATE_SCORES`].
    pub fn candidate_scores(&self) -> CandidateScores {
        let mut ranked: Vec<&super::Candidate> = self.candidates.iter().collect();
        ranked.sort_by(|a, b| b.chosen.cmp(&a.chosen).then(b.total.cmp(&a.total)).then(a.cluster.cmp(&b.cluster)));
        let omitted = ranked.len().saturating_sub(MAX_CANDIDATE_SCORES) as i64;
        ranked.truncate(MAX_CANDIDATE_SCORES);
        CandidateScores {
            prioritizers: self
                .prioritizers
                .iter()
                .map(|p| WeightedName { name: p.prioritizer.name(), weight: p.weight })
                .collect(),
            candidates: ranked
                .into_iter()
                .map(|c| CandidateScore {
                    cluster_name: c.cluster.clone(),
                    scores: c.scores.clone(),
                    total: c.total,
                    selected: c.chosen,
                })
                .collect(),
            omitted,
        }
    }

    /// The `ScoreUpdate` event's message: every candidate's total as
    /// `name:score`, by name, separated by spaces.
    pub fn score_message(&self) -> String {
        let parts: Vec<String> = self.candidates.iter().map(|c| format!("{}:{}", c.cluster, c.total)).collect();
        parts.join(" ")
    }

    /// Whether the chosen clusters differ from `decided` (the clusters the
    /// stored pages name): when `ScoreUpdate` is due.
    pub fn decisions_changed(&self, decided: &[String]) -> bool {
        let mut old: Vec<&str> = decided.iter().map(String::as_str).collect();
        old.sort_unstable();
        old.dedup();
        old.len() != self.chosen.len() || old.iter().zip(&self.chosen).any(|(a, b)| *a != b.as_str())
    }
}

/// A change to a placement's PlacementDecision pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageChange {
    /// A page that does not exist yet (`DecisionCreate`).
    Create(DecisionPage),
    /// A page whose labels or decisions differ (`DecisionUpdate`).
    Update(DecisionPage),
    /// A stored page no longer needed.
    Delete(String),
}

/// The changes that turn the `stored` pages of `placement` into `pages`;
/// an unchanged page needs none.
pub fn page_changes(placement: &str, stored: &[Object], pages: &[DecisionPage]) -> Vec<PageChange> {
    let mut changes = Vec::new();
    for page in pages {
        match stored.iter().find(|o| o.metadata.name == page.name) {
            None => changes.push(PageChange::Create(page.clone())),
            Some(o) => {
                let same_status =
                    decision::status_of(o) == PlacementDecisionStatus { decisions: page.decisions.clone() };
                let labels = page.labels(placement);
                let same_labels = labels.iter().all(|(k, v)| o.metadata.labels.get(k) == Some(v));
                if !(same_status && same_labels) {
                    changes.push(PageChange::Update(page.clone()));
                }
            }
        }
    }
    let mut gone: Vec<&str> =
        stored.iter().map(|o| o.metadata.name.as_str()).filter(|name| !pages.iter().any(|p| p.name == *name)).collect();
    gone.sort_unstable();
    changes.extend(gone.into_iter().map(|name| PageChange::Delete(name.to_string())));
    changes
}
