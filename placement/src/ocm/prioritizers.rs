//! OCM's prioritizers: which ones a placement uses with which weights
//! (`Additive` vs `Exact`), and each one's score of a candidate in
//! −100..100, by the formulas of docs/spec/ocm.md.
//!
//! The formulas are computed as OCM's placement controller computes them,
//! in float64 and in the same order of operations, then truncated toward
//! zero: OCM's own controller, run as an oracle against Fleet
//! (docs/conformance.md), scores an allocatable of 5800m CPU among 4..7
//! cores 19 where exact arithmetic gives 20, and users see OCM's numbers.
//! Quantities are read as OCM reads them: the mantissa of their text times
//! Go's `math.Pow10` of its exponent (Kubernetes' `AsApproximateFloat64`).

use fleet_api::ocm::placement::{
    AddOnScore, PrioritizerPolicy, COORDINATE_ADD_ON, MODE_EXACT, PRIORITIZER_ALLOCATABLE_CPU,
    PRIORITIZER_ALLOCATABLE_MEMORY, PRIORITIZER_BALANCE, PRIORITIZER_STEADY,
};
use fleet_api::quantity::Quantity;

use super::inputs::{AddOnScores, DecisionCounts, NameSet};
use crate::scheduler::table::{ClusterTable, Vocabulary};

/// The highest score a prioritizer gives.
pub const MAX_SCORE: i64 = 100;
/// The property holding a cluster's allocatable CPU.
pub const ALLOCATABLE_CPU: &str = "resources.kubernetes-fleet.io/allocatable-cpu";
/// The property holding a cluster's allocatable memory.
pub const ALLOCATABLE_MEMORY: &str = "resources.kubernetes-fleet.io/allocatable-memory";

/// One of the OCM scheduler's prioritizers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prioritizer {
    /// Fewer decisions of other placements score higher.
    Balance,
    /// The placement's current decisions score 100.
    Steady,
    /// More allocatable CPU scores higher.
    AllocatableCpu,
    /// More allocatable memory scores higher.
    AllocatableMemory,
    /// A score from the clusters' AddOnPlacementScores.
    AddOn(AddOnScore),
}

impl Prioritizer {
    /// The name shown in scores: the built-in's name, or
    /// `AddOn/<resourceName>/<scoreName>`.
    pub fn name(&self) -> String {
        match self {
            Prioritizer::Balance => PRIORITIZER_BALANCE.into(),
            Prioritizer::Steady => PRIORITIZER_STEADY.into(),
            Prioritizer::AllocatableCpu => PRIORITIZER_ALLOCATABLE_CPU.into(),
            Prioritizer::AllocatableMemory => PRIORITIZER_ALLOCATABLE_MEMORY.into(),
            Prioritizer::AddOn(a) => format!("AddOn/{}/{}", a.resource_name, a.score_name),
        }
    }

    fn built_in(name: &str) -> Option<Prioritizer> {
        Some(match name {
            PRIORITIZER_BALANCE => Prioritizer::Balance,
            PRIORITIZER_STEADY => Prioritizer::Steady,
            PRIORITIZER_ALLOCATABLE_CPU => Prioritizer::AllocatableCpu,
            PRIORITIZER_ALLOCATABLE_MEMORY => Prioritizer::AllocatableMemory,
            _ => return None,
        })
    }
}

/// A prioritizer with its weight (−10..10, never 0: weight 0 disables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedPrioritizer {
    /// Which prioritizer.
    pub prioritizer: Prioritizer,
    /// Its weight.
    pub weight: i64,
}

/// The prioritizers a policy uses, in order (Additive's defaults `Balance`
/// and `Steady` first, then the configured ones; a later configuration of
/// the same prioritizer overrides an earlier weight), without those of
/// weight 0; plus a message per configuration that names no prioritizer.
pub fn weighted(policy: Option<&PrioritizerPolicy>) -> (Vec<WeightedPrioritizer>, Vec<String>) {
    let exact = policy.is_some_and(|p| p.mode() == MODE_EXACT);
    let mut list: Vec<WeightedPrioritizer> = if exact {
        Vec::new()
    } else {
        [Prioritizer::Balance, Prioritizer::Steady]
            .into_iter()
            .map(|prioritizer| WeightedPrioritizer { prioritizer, weight: 1 })
            .collect()
    };
    let mut problems = Vec::new();
    for (i, config) in policy.map(|p| p.configurations.as_slice()).unwrap_or_default().iter().enumerate() {
        let Some(coordinate) = &config.score_coordinate else { continue };
        let prioritizer = if coordinate.type_() == COORDINATE_ADD_ON {
            coordinate.add_on.clone().map(Prioritizer::AddOn)
        } else {
            coordinate.built_in.as_deref().and_then(Prioritizer::built_in)
        };
        let Some(prioritizer) = prioritizer else {
            problems.push(format!("prioritizer configuration {i} names no known prioritizer"));
            continue;
        };
        match list.iter_mut().find(|w| w.prioritizer == prioritizer) {
            Some(existing) => existing.weight = config.weight(),
            None => list.push(WeightedPrioritizer { prioritizer, weight: config.weight() }),
        }
    }
    list.retain(|w| w.weight != 0);
    (list, problems)
}

/// A quantity as OCM's scheduler reads it (Kubernetes'
/// `AsApproximateFloat64` of the text Fleet shows it as: whole units, `m`
/// or `n`): the mantissa as float64 times Go's `math.Pow10` of the
/// exponent, which for negative exponents is `1 / 10^k`.
fn approximate_f64(q: Quantity) -> f64 {
    const NANO: i128 = 1_000_000_000;
    let n = q.nanos();
    if n % NANO == 0 {
        (n / NANO) as f64
    } else if n % 1_000_000 == 0 {
        (n / 1_000_000) as f64 * (1.0 / 1e3)
    } else {
        n as f64 * (1.0 / 1e9)
    }
}

/// Steady: 100 for a cluster in the placement's current decisions, else 0.
pub fn steady_score(decided: bool) -> i64 {
    if decided {
        MAX_SCORE
    } else {
        0
    }
}

/// Balance: 100 for a cluster no other placement decided; otherwise
/// `2 × trunc(100 × (0.5 − count / max))`, `max` being the largest count of
/// any cluster.
pub fn balance_score(count: i64, max: i64) -> i64 {
    if count <= 0 || max <= 0 {
        return MAX_SCORE;
    }
    let usage = count as f64 / max as f64;
    2 * ((MAX_SCORE as f64 * (0.5 - usage)) as i64)
}

/// ResourceAllocatableCPU/Memory: `trunc(((a − min) / (max − min) − 0.5) × 200)`;
/// 100 when `max = min`.
pub fn allocatable_score(a: Quantity, min: Quantity, max: Quantity) -> i64 {
    let (a, min, max) = (approximate_f64(a), approximate_f64(min), approximate_f64(max));
    if max - min == 0.0 {
        return MAX_SCORE;
    }
    let ratio = (a - min) / (max - min);
    ((ratio - 0.5) * 2.0 * 100.0) as i64
}

/// What scoring reads besides the prioritizer itself.
pub(crate) struct ScoringInputs<'a> {
    /// The placement's current decisions.
    pub(crate) decided: &'a NameSet<'a>,
    /// Other placements' decisions per cluster.
    pub(crate) counts: &'a DecisionCounts,
    /// The add-on scores.
    pub(crate) addon: &'a AddOnScores,
    /// Now, in Unix seconds.
    pub(crate) now: i64,
    /// Property slot of allocatable CPU in the pass's table.
    pub(crate) cpu_slot: usize,
    /// Property slot of allocatable memory in the pass's table.
    pub(crate) memory_slot: usize,
}

impl ScoringInputs<'_> {
    /// Registers the properties the resource prioritizers read; returns the
    /// CPU and memory slots.
    pub(crate) fn register(vocabulary: &mut Vocabulary) -> (usize, usize) {
        (vocabulary.property(ALLOCATABLE_CPU), vocabulary.property(ALLOCATABLE_MEMORY))
    }

    /// The prioritizer's score of every candidate (parallel to
    /// `candidates`), and the first second at which one of them may change
    /// by itself (an add-on score expiring).
    pub(crate) fn score(&self, p: &Prioritizer, table: &ClusterTable, candidates: &[usize]) -> (Vec<i64>, Option<i64>) {
        let name = |c: usize| table.info(c).name.as_str();
        match p {
            Prioritizer::Steady => {
                (candidates.iter().map(|&c| steady_score(self.decided.contains(name(c)))).collect(), None)
            }
            Prioritizer::Balance => {
                let max = self.counts.max();
                (candidates.iter().map(|&c| balance_score(self.counts.count(name(c)), max)).collect(), None)
            }
            Prioritizer::AllocatableCpu => (self.allocatable(table, candidates, self.cpu_slot), None),
            Prioritizer::AllocatableMemory => (self.allocatable(table, candidates, self.memory_slot), None),
            Prioritizer::AddOn(a) => {
                let mut expires: Option<i64> = None;
                let scores = candidates
                    .iter()
                    .map(|&c| {
                        let reading = self.addon.read(&a.resource_name, &a.score_name, name(c), self.now);
                        expires = match (expires, reading.expires_at) {
                            (Some(x), Some(y)) => Some(x.min(y)),
                            (x, y) => x.or(y),
                        };
                        reading.value
                    })
                    .collect();
                (scores, expires)
            }
        }
    }

    /// Resource scores over the candidates that report the property (min
    /// and max are theirs); a candidate without it scores 0.
    fn allocatable(&self, table: &ClusterTable, candidates: &[usize], slot: usize) -> Vec<i64> {
        let values: Vec<Option<Quantity>> = candidates.iter().map(|&c| table.property(c, slot)).collect();
        let (Some(min), Some(max)) = (values.iter().flatten().min(), values.iter().flatten().max()) else {
            return vec![0; candidates.len()];
        };
        values.iter().map(|v| v.map_or(0, |v| allocatable_score(v, *min, *max))).collect()
    }
}
