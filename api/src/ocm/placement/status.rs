//! `status` of an OCM Placement: how many clusters were chosen, the decision
//! groups and the two conditions.

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;

/// `status` of a Placement, written by the scheduling controller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// One decision group: its index and name, its PlacementDecision pages and
/// how many clusters it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
