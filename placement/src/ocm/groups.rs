//! Decision groups and PlacementDecision pages.
//!
//! Groups: each named `decisionGroups[]` entry takes the chosen clusters its
//! selector matches that no earlier entry took; the clusters left form the
//! unnamed groups. Every group's clusters are in decision order (by name,
//! or by score with `sortBy: Score`) and split into groups of at most
//! `clustersPerDecisionGroup` (a count, or a percentage of all chosen
//! clusters rounded up; 0 or more than all means all).
//! There is always at least one group, possibly empty.
//!
//! Pages: each group's clusters in pages of at most 100, named
//! `<placement>-decision-<n>` with `n` counting from 1 across all groups; an
//! empty group still gets one empty page (consumers find the placement's
//! pages by label and must see that nothing is decided).

use std::collections::BTreeMap;

use fleet_api::ocm::decision::{
    self, ClusterDecision, PlacementDecisionStatus, DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL,
    MAX_DECISIONS_PER_PAGE, PLACEMENT_LABEL,
};
use fleet_api::ocm::placement::{DecisionGroupStatus, GroupStrategy, DEFAULT_CLUSTERS_PER_DECISION_GROUP};
use fleet_api::placement::{IntOrPercent, IntOrString};
use fleet_api::{Object, ObjectMeta, OwnerReference};

use super::predicates::compile_selector;
use crate::scheduler::plugins::CompiledLabelSelector;
use crate::scheduler::table::{ClusterTable, Vocabulary};

/// One decision group: its index, its name (empty for the groups of the
/// remaining clusters) and its clusters in decision order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionGroup {
    /// From 0.
    pub index: usize,
    /// The `decisionGroups[]` entry's name, or empty.
    pub name: String,
    /// The clusters, in decision order.
    pub clusters: Vec<String>,
}

/// One PlacementDecision page: its name, its group and its decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionPage {
    /// `<placement>-decision-<n>`.
    pub name: String,
    /// The group's index.
    pub group_index: usize,
    /// The group's name (empty for unnamed groups).
    pub group_name: String,
    /// At most 100, in decision order.
    pub decisions: Vec<ClusterDecision>,
}

impl DecisionPage {
    /// The page's labels: the placement, the group's name and index.
    pub fn labels(&self, placement: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (PLACEMENT_LABEL.to_string(), placement.to_string()),
            (DECISION_GROUP_NAME_LABEL.to_string(), self.group_name.clone()),
            (DECISION_GROUP_INDEX_LABEL.to_string(), self.group_index.to_string()),
        ])
    }

    /// The PlacementDecision object of this page for `placement` (same
    /// namespace, owned by the placement so it goes when the placement goes).
    pub fn to_object(&self, placement: &Object) -> Object {
        let mut object = Object {
            api_version: format!("{}/v1beta1", fleet_api::ocm::CLUSTER_GROUP),
            kind: decision::KIND.to_string(),
            metadata: ObjectMeta {
                name: self.name.clone(),
                namespace: placement.metadata.namespace.clone(),
                labels: self.labels(&placement.metadata.name),
                owner_references: vec![OwnerReference::controller_of(placement)],
                ..ObjectMeta::default()
            },
            rest: Default::default(),
        };
        decision::set_status(&mut object, &PlacementDecisionStatus { decisions: self.decisions.clone() });
        object
    }
}

/// The named groups' selectors, compiled against the pass's vocabulary.
pub(crate) struct GroupSelectors<'a> {
    named: Vec<(&'a str, CompiledLabelSelector)>,
    per_group: Option<&'a IntOrString>,
}

impl<'a> GroupSelectors<'a> {
    /// Compiles a placement's group strategy.
    pub(crate) fn compile(strategy: Option<&'a GroupStrategy>, vocabulary: &mut Vocabulary<'a>) -> GroupSelectors<'a> {
        let named = strategy
            .map(|s| s.decision_groups.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|g| {
                let selector = match &g.group_cluster_selector {
                    Some(s) => compile_selector(s, vocabulary),
                    None => CompiledLabelSelector::default(),
                };
                (g.group_name.as_str(), selector)
            })
            .collect();
        GroupSelectors { named, per_group: strategy.and_then(|s| s.clusters_per_decision_group.as_ref()) }
    }

    /// The most clusters per group for `total` chosen clusters, and a
    /// problem when the configured value is unusable (then: all in one).
    pub(crate) fn group_length(&self, total: usize) -> (usize, Option<String>) {
        let default = IntOrString::Str(DEFAULT_CLUSTERS_PER_DECISION_GROUP.into());
        let value = self.per_group.unwrap_or(&default);
        match IntOrPercent::from_int_or_string(value) {
            Ok(v) => {
                let length = v.scaled(total);
                (if length == 0 || length > total { total } else { length }, None)
            }
            Err(detail) => (total, Some(format!("clustersPerDecisionGroup {value}: {detail}"))),
        }
    }

    /// Splits the chosen clusters (table indices, in decision order) into groups.
    pub(crate) fn form(&self, table: &ClusterTable, chosen: &[usize], length: usize) -> Vec<DecisionGroup> {
        let mut taken = vec![false; chosen.len()];
        let mut groups = Vec::new();
        let mut push = |name: &str, members: Vec<usize>| {
            for chunk in members.chunks(length.max(1)) {
                let clusters = chunk.iter().map(|&c| table.info(c).name.clone()).collect();
                groups.push(DecisionGroup { index: groups.len(), name: name.to_string(), clusters });
            }
        };
        for (name, selector) in &self.named {
            let mut members = Vec::new();
            for (&c, taken) in chosen.iter().zip(taken.iter_mut()) {
                if !*taken && selector.matches(table, c) {
                    *taken = true;
                    members.push(c);
                }
            }
            push(name, members);
        }
        let rest: Vec<usize> = chosen.iter().zip(&taken).filter(|(_, taken)| !**taken).map(|(&c, _)| c).collect();
        push("", rest);
        if groups.is_empty() {
            groups.push(DecisionGroup::default());
        }
        groups
    }
}

/// The pages of a placement's groups and the groups' status entries; each
/// decision holds the cluster's score from `scores` (0 when not there).
pub fn paginate(
    placement: &str,
    groups: &[DecisionGroup],
    scores: &BTreeMap<String, i64>,
) -> (Vec<DecisionPage>, Vec<DecisionGroupStatus>) {
    let mut pages = Vec::new();
    let mut statuses = Vec::new();
    for group in groups {
        let first = pages.len();
        let chunks: Vec<&[String]> =
            if group.clusters.is_empty() { vec![&[]] } else { group.clusters.chunks(MAX_DECISIONS_PER_PAGE).collect() };
        for chunk in chunks {
            let decisions = chunk
                .iter()
                .map(|name| ClusterDecision {
                    cluster_name: name.clone(),
                    reason: String::new(),
                    score: scores.get(name).copied().unwrap_or(0),
                })
                .collect();
            pages.push(DecisionPage {
                name: decision::page_name(placement, pages.len() + 1),
                group_index: group.index,
                group_name: group.name.clone(),
                decisions,
            });
        }
        statuses.push(DecisionGroupStatus {
            decision_group_index: group.index as i64,
            decision_group_name: group.name.clone(),
            decisions: pages[first..].iter().map(|p| p.name.clone()).collect(),
            cluster_count: group.clusters.len() as i64,
        });
    }
    (pages, statuses)
}
