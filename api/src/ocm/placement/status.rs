//! `status` of an OCM Placement: how many clusters were chosen, the decision
//! groups and the two conditions.

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;

/// `status` of a Placement, written by the scheduling controller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementStatus {
    /// How many clusters the decisions hold.
    #[serde(default)]
    pub number_of_selected_clusters: i64,
    /// One entry per decision group, by index.
    #[serde(default)]
    pub decision_groups: Vec<DecisionGroupStatus>,
    /// `PlacementSatisfied` and `PlacementMisconfigured`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Fleet's addition to OCM's status: how the candidates scored in the
    /// latest pass, so `fleetctl describe placement` can show why these
    /// clusters were chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_scores: Option<CandidateScores>,
    /// When the decisions' scores were last written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_score_update_time: Option<String>,
}

/// Most candidates [`CandidateScores`] lists (the best-ranked first).
pub const MAX_CANDIDATE_SCORES: usize = 100;

/// Every candidate's score per prioritizer and total, best-ranked first
/// (at most [`MAX_CANDIDATE_SCORES`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CandidateScores {
    /// The prioritizers, as `Name` or `AddOn/<resource>/<score>`, with their weights.
    #[serde(default)]
    pub prioritizers: Vec<WeightedName>,
    /// The candidates listed.
    #[serde(default)]
    pub candidates: Vec<CandidateScore>,
    /// How many candidates were left off the list.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// A prioritizer's name and weight.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WeightedName {
    /// The prioritizer.
    #[serde(default)]
    pub name: String,
    /// Its weight.
    #[serde(default)]
    pub weight: i64,
}

/// One candidate's scores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CandidateScore {
    /// The cluster.
    #[serde(default)]
    pub cluster_name: String,
    /// Per prioritizer, in the order of `prioritizers` (unweighted, −100..100).
    #[serde(default)]
    pub scores: Vec<i64>,
    /// Σ weight × score.
    #[serde(default)]
    pub total: i64,
    /// Whether it was chosen.
    #[serde(default)]
    pub selected: bool,
}

/// One decision group: its index and name, its PlacementDecision pages and
/// how many clusters it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionGroupStatus {
    /// From 0, in the order groups are formed.
    #[serde(default)]
    pub decision_group_index: i64,
    /// The named group's name; empty for the groups of the remaining clusters.
    #[serde(default)]
    pub decision_group_name: String,
    /// Names of the group's PlacementDecision objects.
    #[serde(default)]
    pub decisions: Vec<String>,
    /// How many clusters the group holds (OCM spells it `clusterCount`).
    #[serde(default)]
    pub cluster_count: i64,
}
