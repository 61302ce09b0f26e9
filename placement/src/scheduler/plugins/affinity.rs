//! Cluster affinity: required terms filter (PickAll, PickN), preferred terms
//! score (PickN).

use fleet_api::binding::ClusterScore;
use fleet_api::placement::{ClusterSelectorTerm, PlacementPolicy, PropertySelectorRequirement};
use fleet_api::quantity::Quantity;
use fleet_api::LabelSelector;

use crate::cluster::ClusterInfo;
use crate::scheduler::framework::{FilterPlugin, ScorePlugin};

/// Why a cluster fails the required affinity.
pub const REASON_NO_TERM_MATCHES: &str = "cluster does not match any of the required cluster selector terms";

/// A property comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PropertyOp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl PropertyOp {
    fn parse(text: &str) -> Option<PropertyOp> {
        Some(match text {
            "Gt" => PropertyOp::Gt,
            "Ge" => PropertyOp::Ge,
            "Lt" => PropertyOp::Lt,
            "Le" => PropertyOp::Le,
            "Eq" => PropertyOp::Eq,
            "Ne" => PropertyOp::Ne,
            _ => return None,
        })
    }
}

/// One property expression with its value parsed once per pass.
#[derive(Debug, Clone)]
struct PropertyExpr<'a> {
    name: &'a str,
    /// `None` when the operator or the value is unusable: nothing matches.
    test: Option<(PropertyOp, Quantity)>,
}

impl<'a> PropertyExpr<'a> {
    fn compile(req: &'a PropertySelectorRequirement) -> PropertyExpr<'a> {
        let op = PropertyOp::parse(&req.operator);
        let value = req.values.first().and_then(|v| Quantity::parse(v).ok());
        PropertyExpr { name: &req.name, test: op.zip(value) }
    }

    /// A cluster lacking the property fails.
    fn matches(&self, cluster: &ClusterInfo) -> bool {
        let (Some((op, want)), Some(have)) = (self.test, cluster.properties.get(self.name)) else {
            return false;
        };
        match op {
            PropertyOp::Gt => *have > want,
            PropertyOp::Ge => *have >= want,
            PropertyOp::Lt => *have < want,
            PropertyOp::Le => *have <= want,
            PropertyOp::Eq => *have == want,
            PropertyOp::Ne => *have != want,
        }
    }
}

/// A cluster selector term, compiled: label selector AND property expressions.
#[derive(Debug, Clone)]
struct Term<'a> {
    labels: Option<&'a LabelSelector>,
    properties: Vec<PropertyExpr<'a>>,
}

impl<'a> Term<'a> {
    fn compile(term: &'a ClusterSelectorTerm) -> Term<'a> {
        let properties = term.property_selector.iter().flat_map(|s| &s.match_expressions);
        Term { labels: term.label_selector.as_ref(), properties: properties.map(PropertyExpr::compile).collect() }
    }

    /// Whether the label selector (if any) and every property expression match.
    fn matches(&self, cluster: &ClusterInfo) -> bool {
        self.labels.is_none_or(|s| s.matches(&cluster.labels)) && self.properties.iter().all(|e| e.matches(cluster))
    }
}

/// Required affinity: a cluster must match at least one term. No required
/// selector (or one with no terms) lets every cluster through.
#[derive(Debug, Clone)]
pub struct RequiredAffinity<'a> {
    terms: Vec<Term<'a>>,
}

impl<'a> RequiredAffinity<'a> {
    /// The filter for a policy's required terms.
    pub fn new(policy: &'a PlacementPolicy) -> RequiredAffinity<'a> {
        let required = policy
            .affinity
            .as_ref()
            .and_then(|a| a.cluster_affinity.as_ref())
            .and_then(|c| c.required_during_scheduling_ignored_during_execution.as_ref());
        let terms = required.iter().flat_map(|r| &r.cluster_selector_terms);
        RequiredAffinity { terms: terms.map(Term::compile).collect() }
    }
}

impl FilterPlugin for RequiredAffinity<'_> {
    fn name(&self) -> &'static str {
        "ClusterAffinity"
    }

    fn filter(&self, cluster: &ClusterInfo) -> Result<(), String> {
        if self.terms.is_empty() || self.terms.iter().any(|t| t.matches(cluster)) {
            Ok(())
        } else {
            Err(REASON_NO_TERM_MATCHES.to_string())
        }
    }
}

/// A preferred term: its weight, its selectors and maybe a property sorter.
#[derive(Debug, Clone)]
struct Preferred<'a> {
    weight: i64,
    term: Term<'a>,
    /// The sorted property and whether larger values score higher.
    sorter: Option<(&'a str, bool)>,
}

/// Preferred affinity: the affinity score, summed over the weighted terms
/// (weight 0 ignored).
#[derive(Debug, Clone)]
pub struct PreferredAffinity<'a> {
    terms: Vec<Preferred<'a>>,
}

impl<'a> PreferredAffinity<'a> {
    /// The scorer for a policy's preferred terms.
    pub fn new(policy: &'a PlacementPolicy) -> PreferredAffinity<'a> {
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
                term: Term::compile(&p.preference),
                sorter: p.preference.property_sorter.as_ref().map(|s| (s.name.as_str(), s.sort_order != "Ascending")),
            })
            .collect();
        PreferredAffinity { terms }
    }
}

impl ScorePlugin for PreferredAffinity<'_> {
    fn name(&self) -> &'static str {
        "ClusterAffinity"
    }

    fn score(&self, clusters: &[&ClusterInfo], candidates: &[usize], scores: &mut [ClusterScore]) {
        for p in &self.terms {
            match p.sorter {
                None => {
                    for (i, &c) in candidates.iter().enumerate() {
                        if p.term.matches(clusters[c]) {
                            scores[i].affinity_score = scores[i].affinity_score.saturating_add(p.weight);
                        }
                    }
                }
                Some((property, descending)) => {
                    let values: Vec<Option<Quantity>> = candidates
                        .iter()
                        .map(|&c| {
                            let cluster = clusters[c];
                            if p.term.matches(cluster) {
                                cluster.properties.get(property).copied()
                            } else {
                                None
                            }
                        })
                        .collect();
                    let (Some(min), Some(max)) = (values.iter().flatten().min(), values.iter().flatten().max()) else {
                        continue;
                    };
                    for (i, v) in values.iter().enumerate() {
                        if let Some(v) = v {
                            let share = sorter_share(*v, *min, *max, p.weight, descending);
                            scores[i].affinity_score = scores[i].affinity_score.saturating_add(share);
                        }
                    }
                }
            }
        }
    }
}

/// A property sorter's share of `weight` for value `v`, exactly:
/// Descending `round((v − min) / (max − min) × weight)`, Ascending
/// `round((1 − (v − min) / (max − min)) × weight)`, rounding half away from
/// zero; 0 when `max == min`. Integer arithmetic on nano-units; values too
/// large for it lose their lowest bits first (never a float).
pub fn sorter_share(v: Quantity, min: Quantity, max: Quantity, weight: i64, descending: bool) -> i64 {
    let (v, min, max) = (v.nanos(), min.nanos(), max.nanos());
    if max <= min {
        return 0;
    }
    let v = v.clamp(min, max);
    let mut num = if descending { v - min } else { max - v };
    let mut den = max - min;
    let w = i128::from(weight.unsigned_abs());
    // 2 × num × |w| + den must fit; shrink both sides alike until it does.
    while num.checked_mul(2 * w).and_then(|x| x.checked_add(den)).is_none() {
        num >>= 1;
        den >>= 1;
    }
    if den == 0 {
        return 0;
    }
    // round(num × w / den), half away from zero, with num, den ≥ 0.
    let magnitude = (2 * num * w + den) / (2 * den);
    let magnitude = i64::try_from(magnitude).unwrap_or(i64::MAX);
    if weight < 0 {
        -magnitude
    } else {
        magnitude
    }
}
