//! Disruption budget arithmetic (EV-5): how many more of a placement's
//! clusters a voluntary eviction may take down.

use fleet_api::eviction::{parse_budget_value, DisruptionBudgetSpec};
use fleet_api::placement::{IntOrPercent, IntOrString, PlacementPolicy, PICK_ALL, PICK_N};

use super::EvictionBinding;

/// The budget's verdict on the bindings as they are now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    /// A PickAll placement's budget names `maxUnavailable` or a percentage
    /// `minAvailable` (EV-4.5): never allows.
    Misconfigured,
    /// `allowed` = what the budget leaves (> 0 lets one eviction execute).
    Counted {
        /// A: bindings Available at their current generation.
        available: usize,
        /// T: every binding of the placement.
        total: usize,
        /// The disruptions still allowed (may be negative).
        allowed: i64,
    },
}

impl Allowance {
    /// Whether one more eviction may execute.
    pub fn allows(&self) -> bool {
        matches!(self, Allowance::Counted { allowed, .. } if *allowed > 0)
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A budget value scaled on `d` (percentages rounded up); an unreadable
/// value (validation refuses them) reads as 0.
fn scaled(value: &IntOrString, d: usize) -> i64 {
    match parse_budget_value(value) {
        Ok(v @ IntOrPercent::Percent(_)) => count(v.scaled(d)),
        Ok(IntOrPercent::Int(n)) => n,
        Err(_) => 0,
    }
}

/// EV-5 for a placement with `policy` (defaulted; PickN's N from
/// `number_of_clusters` when given) and its `bindings`:
/// `maxUnavailable: m` → m − (T − A); `minAvailable: n` → A − n; neither → 0.
/// Percentages are of D (PickN: N; otherwise 0), rounded up.
pub fn allowance(
    policy: &PlacementPolicy,
    number_of_clusters: Option<i64>,
    budget: &DisruptionBudgetSpec,
    bindings: &[EvictionBinding],
) -> Allowance {
    let pick_all = policy.placement_type() == PICK_ALL;
    let percentage_min = matches!(budget.min_available, Some(IntOrString::Str(_)));
    if pick_all && (budget.max_unavailable.is_some() || percentage_min) {
        return Allowance::Misconfigured;
    }
    let d = if policy.placement_type() == PICK_N {
        usize::try_from(number_of_clusters.or(policy.number_of_clusters).unwrap_or(0)).unwrap_or(0)
    } else {
        0
    };
    let total = bindings.len();
    let available = bindings.iter().filter(|b| b.available).count();
    let allowed = match (&budget.max_unavailable, &budget.min_available) {
        (Some(m), _) => scaled(m, d) - (count(total) - count(available)),
        (None, Some(n)) => count(available) - scaled(n, d),
        (None, None) => 0,
    };
    Allowance::Counted { available, total, allowed }
}
