//! Cluster affinity: required terms filter (PickAll, PickN), preferred terms
//! score (PickN).

use fleet_api::binding::ClusterScore;
use fleet_api::placement::PlacementPolicy;
use fleet_api::quantity::Quantity;

use super::selectors::CompiledTerm;
use crate::scheduler::framework::{FilterPlugin, ScorePlugin};
use crate::scheduler::table::{ClusterTable, Vocabulary};

/// Why a cluster fails the required affinity.
pub const REASON_NO_TERM_MATCHES: &str = "cluster does not match with any of the required cluster affinity terms";

/// Required affinity: a cluster must match at least one term. No required
/// selector (or one with no terms) lets every cluster through.
#[derive(Debug, Clone)]
pub struct RequiredAffinity {
    terms: Vec<CompiledTerm>,
}

impl RequiredAffinity {
    /// The filter for a policy's required terms, reading what `vocabulary` records.
    pub fn new<'a>(policy: &'a PlacementPolicy, vocabulary: &mut Vocabulary<'a>) -> RequiredAffinity {
        let required = policy
            .affinity
            .as_ref()
            .and_then(|a| a.cluster_affinity.as_ref())
            .and_then(|c| c.required_during_scheduling_ignored_during_execution.as_ref());
        let terms = required.iter().flat_map(|r| &r.cluster_selector_terms);
        RequiredAffinity { terms: terms.map(|t| CompiledTerm::compile(t, vocabulary)).collect() }
    }
}

impl FilterPlugin for RequiredAffinity {
    fn name(&self) -> &'static str {
        "ClusterAffinity"
    }

    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        if self.terms.is_empty() || self.terms.iter().any(|t| t.matches(table, cluster)) {
            Ok(())
        } else {
            Err(REASON_NO_TERM_MATCHES.to_string())
        }
    }
}

/// A preferred term: its weight, its selectors and maybe a property sorter.
#[derive(Debug, Clone)]
struct Preferred {
    weight: i64,
    term: CompiledTerm,
    /// The sorted property's slot and whether larger values score higher.
    sorter: Option<(usize, bool)>,
}

/// Preferred affinity: the affinity score, summed over the weighted terms
/// (weight 0 ignored).
#[derive(Debug, Clone)]
pub struct PreferredAffinity {
    terms: Vec<Preferred>,
}

impl PreferredAffinity {
    /// The scorer for a policy's preferred terms, reading what `vocabulary` records.
    pub fn new<'a>(policy: &'a PlacementPolicy, vocabulary: &mut Vocabulary<'a>) -> PreferredAffinity {
        let preferred = policy
            .affinity
            .as_ref()
            .and_then(|a| a.cluster_affinity.as_ref())
            .map(|c| c.preferred_during_scheduling_ignored_during_execution.as_slice())
            .unwrap_or_default();
        let terms = preferred
            .iter()
            .filter(|p| p.weight != 0)
            .map(|p| Preferred {
                weight: p.weight,
                term: CompiledTerm::compile(&p.preference, vocabulary),
                sorter: p
                    .preference
                    .property_sorter
                    .as_ref()
                    .map(|s| (vocabulary.property(&s.name), s.sort_order != "Ascending")),
            })
            .collect();
        PreferredAffinity { terms }
    }
}

impl ScorePlugin for PreferredAffinity {
    fn name(&self) -> &'static str {
        "ClusterAffinity"
    }

    fn score(&self, table: &ClusterTable, candidates: &[usize], scores: &mut [ClusterScore]) {
        for p in &self.terms {
            match p.sorter {
                None => {
                    for (i, &c) in candidates.iter().enumerate() {
                        if p.term.matches(table, c) {
                            scores[i].affinity_score = scores[i].affinity_score.saturating_add(p.weight);
                        }
                    }
                }
                Some((property, descending)) => {
                    // As KubeFleet: the extremes are over every cluster
                    // that has the property, candidate or not, matching
                    // the term's label selector or not.
                    let all = (0..table.len()).filter_map(|c| table.property(c, property));
                    let Some((min, max)) = all.fold(None, |acc: Option<(Quantity, Quantity)>, v| match acc {
                        None => Some((v, v)),
                        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
                    }) else {
                        continue;
                    };
                    for (i, &c) in candidates.iter().enumerate() {
                        if !p.term.matches(table, c) {
                            continue;
                        }
                        if let Some(v) = table.property(c, property) {
                            let share = sorter_share(v, min, max, p.weight, descending);
                            scores[i].affinity_score = scores[i].affinity_score.saturating_add(share);
                        }
                    }
                }
            }
        }
    }
}

/// A property sorter's share of `weight` for value `v`, computed as
/// KubeFleet computes it, in float64 on the quantities' values: Descending
/// `round((v − min) / (max − min) × weight)`, Ascending
/// `round((1 − (v − min) / (max − min)) × weight)`, rounding half away from
/// zero; 0 when `max == min`. Float64 is KubeFleet's: an exact half can land
/// either side (with values 2..8, a 7 Ascending of weight −81 is −13.5
/// exactly but −13.499999999999997 in float64, so −13).
pub fn sorter_share(v: Quantity, min: Quantity, max: Quantity, weight: i64, descending: bool) -> i64 {
    let (f, lo, hi) = (v.as_f64(), min.as_f64(), max.as_f64());
    if !(lo.is_finite() && hi.is_finite()) || lo >= hi || f < lo || f > hi {
        return 0;
    }
    let ratio = (f - lo) / (hi - lo);
    let share = if descending { ratio * weight as f64 } else { (1.0 - ratio) * weight as f64 };
    // Within ±|weight| ≤ 100: the cast cannot saturate.
    share.round() as i64
}
