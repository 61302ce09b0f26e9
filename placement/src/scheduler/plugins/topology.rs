//! Topology spread (PickN): keep the chosen clusters spread over the values
//! (domains) of a label. Its verdicts depend on what was picked before, so it
//! is a [`PickPlugin`].

use fleet_api::placement::TopologySpreadConstraint;

use crate::scheduler::framework::{PickPlugin, PickVerdict};
use crate::scheduler::table::{ClusterTable, Vocabulary, NO_VALUE};

/// The score of a placement that breaks a `ScheduleAnyway` constraint.
pub const SCHEDULE_ANYWAY_PENALTY: i64 = -1000;
/// Domain id of a cluster without the topology key.
const NO_DOMAIN: u32 = u32::MAX;

/// One constraint and its running counts.
#[derive(Debug, Clone)]
struct Constraint<'a> {
    key: &'a str,
    /// The key's slot in the pass's vocabulary (an open slot: one id per value).
    slot: usize,
    max_skew: i64,
    hard: bool,
    /// Per cluster (pass index): its domain, or [`NO_DOMAIN`].
    domain_of: Vec<u32>,
    /// Picked (or kept) clusters per domain.
    counts: Vec<i64>,
    max: i64,
    min: i64,
    /// The second smallest count (`min` again when two domains hold it).
    second_min: i64,
}

impl Constraint<'_> {
    fn recount(&mut self) {
        let mut sorted = self.counts.clone();
        sorted.sort_unstable();
        self.min = sorted.first().copied().unwrap_or(0);
        self.max = sorted.last().copied().unwrap_or(0);
        // KubeFleet's "second smallest": the second of the sorted counts
        // (the smallest again when two domains hold it).
        self.second_min = sorted.get(1).copied().unwrap_or(self.min);
    }

    /// `None` when placing on `cluster` breaks the constraint, else its
    /// score, as KubeFleet judges it: with the counts' smallest, second
    /// smallest and largest, a placement on a domain at the largest count
    /// (or on any, when all counts are equal) raises the skew by one (score
    /// −1), one on the only domain at the smallest count lowers it by one
    /// (+1), any other leaves it (0); it breaks the constraint when the
    /// skew it leaves exceeds `maxSkew`.
    fn judge(&self, cluster: usize) -> Option<i64> {
        let Some(&d) = self.domain_of.get(cluster).filter(|&&d| d != NO_DOMAIN) else {
            return Some(0);
        };
        let count = self.counts[d as usize];
        let skew = self.max - self.min;
        let change = if self.max == self.min || (count == self.max && count != self.min) {
            1
        } else if count == self.min && self.min != self.second_min {
            -1
        } else {
            0
        };
        if skew + change > self.max_skew {
            return if self.hard { None } else { Some(SCHEDULE_ANYWAY_PENALTY) };
        }
        Some(-change)
    }
}

/// Topology spread constraints: `DoNotSchedule` ones reject a placement that
/// would push the skew over `maxSkew`, `ScheduleAnyway` ones score it −1000;
/// otherwise +1 / 0 / −1 as the skew falls, stays or rises. Scores of several
/// constraints add up.
#[derive(Debug, Clone)]
pub struct TopologySpread<'a> {
    constraints: Vec<Constraint<'a>>,
}

/// One spread constraint in the form both schedulers share: KubeFleet's
/// `topologySpreadConstraints` and OCM's `spreadConstraints` become these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpreadTerm<'a> {
    /// The label (or claim) whose values are the domains.
    pub key: &'a str,
    /// Whether `key` names an OCM cluster claim rather than a label.
    pub claim: bool,
    /// The largest allowed skew (at least 1).
    pub max_skew: i64,
    /// `DoNotSchedule` (reject) rather than `ScheduleAnyway` (penalize).
    pub hard: bool,
}

impl<'a> TopologySpread<'a> {
    /// The plugin for a policy's (defaulted) constraints, reading what `vocabulary` records.
    pub fn new(constraints: &'a [TopologySpreadConstraint], vocabulary: &mut Vocabulary<'a>) -> TopologySpread<'a> {
        let terms = constraints.iter().map(|c| SpreadTerm {
            key: &c.topology_key,
            claim: false,
            max_skew: c.max_skew.unwrap_or(1),
            hard: c.when_unsatisfiable.as_deref() != Some("ScheduleAnyway"),
        });
        TopologySpread::from_terms(terms, vocabulary)
    }

    /// The plugin for spread terms in either scheduler's form.
    pub fn from_terms(
        terms: impl IntoIterator<Item = SpreadTerm<'a>>,
        vocabulary: &mut Vocabulary<'a>,
    ) -> TopologySpread<'a> {
        let constraints = terms
            .into_iter()
            .map(|t| Constraint {
                key: t.key,
                slot: {
                    let slot = if t.claim { vocabulary.claim_key(t.key) } else { vocabulary.label_key(t.key) };
                    vocabulary.open(slot);
                    slot
                },
                max_skew: t.max_skew.max(1),
                hard: t.hard,
                domain_of: Vec::new(),
                counts: Vec::new(),
                max: 0,
                min: 0,
                second_min: 0,
            })
            .collect();
        TopologySpread { constraints }
    }
}

impl PickPlugin for TopologySpread<'_> {
    fn name(&self) -> &'static str {
        "TopologySpread"
    }

    fn prepare(&mut self, table: &ClusterTable, kept: &[usize], _candidates: &[usize]) {
        for c in &mut self.constraints {
            // As KubeFleet: the domains are the values every cluster holds
            // (filtered ones too), numbered densely in the order first seen.
            let mut domain_of_value = vec![NO_DOMAIN; table.value_count(c.slot)];
            let mut domains = 0u32;
            c.domain_of = vec![NO_DOMAIN; table.len()];
            for i in 0..table.len() {
                let value = table.label(i, c.slot);
                if value == NO_VALUE {
                    continue;
                }
                let domain = &mut domain_of_value[value as usize];
                if *domain == NO_DOMAIN {
                    *domain = domains;
                    domains += 1;
                }
                c.domain_of[i] = *domain;
            }
            c.counts = vec![0; domains as usize];
            for &i in kept {
                if let Some(&d) = c.domain_of.get(i).filter(|&&d| d != NO_DOMAIN) {
                    c.counts[d as usize] += 1;
                }
            }
            c.recount();
        }
    }

    fn class_key(&self, cluster: usize, key: &mut Vec<u32>) {
        key.extend(self.constraints.iter().map(|c| c.domain_of.get(cluster).copied().unwrap_or(NO_DOMAIN)));
    }

    fn evaluate(&self, cluster: usize) -> PickVerdict {
        let mut total = 0i64;
        for c in &self.constraints {
            match c.judge(cluster) {
                Some(s) => total = total.saturating_add(s),
                None => return PickVerdict::Reject,
            }
        }
        PickVerdict::Score(total)
    }

    fn reject_reason(&self, cluster: usize) -> String {
        match self.constraints.iter().find(|c| c.judge(cluster).is_none()) {
            Some(c) => {
                format!("violated doNotSchedule topology spread constraint \"{}\" (max skew {})", c.key, c.max_skew)
            }
            None => String::new(),
        }
    }

    fn place(&mut self, cluster: usize) {
        for c in &mut self.constraints {
            if let Some(&d) = c.domain_of.get(cluster).filter(|&&d| d != NO_DOMAIN) {
                c.counts[d as usize] += 1;
                c.recount();
            }
        }
    }
}
