//! Evictions and disruption budgets (docs/spec/eviction.md), as pure functions:
//! [`evaluate`] judges one eviction against its placement, the placement's
//! bindings and its budget — the `Valid` and `Executed` conditions with the
//! spec's reasons and messages, and the binding to delete; [`serial`]
//! orders pending evictions and evaluates them one at a time (EV-2);
//! [`budget`] is the arithmetic (EV-5); [`drain`] is what `fleetctl drain`
//! and `uncordon` write.
//!
//! How a controller drives it: for the oldest pending eviction
//! ([`serial::pending_in_order`]), read its ClusterResourcePlacement
//! ([`EvictionPlacement::of`]), the placement's bindings with their
//! readiness ([`EvictionBinding::of`]) and the budget of the same name;
//! call [`evaluate`]; write in one command the eviction's status
//! ([`EvictionOutcome::status`]) and the deletion of `delete_binding`, with
//! version checks on the placement, the bindings and the budget read; then
//! the next eviction.
//!
//! Decisions beyond the spec's wording:
//! - a binding is *failed* (EV-4.3) when its Works' `Applied` is False
//!   ([`crate::rollout::Readiness::Failed`]); [`has_failed`] applies the
//!   spec's rule to a cluster's placement status conditions, for a
//!   controller that reads those;
//! - *available* (EV-5) is the rollout's readiness `Ready` or not
//!   trackable (Available True with `WorkNotTrackable`);
//! - *never bound* is a Scheduled binding, or an Unscheduled one with no
//!   `resourceSnapshotName`;
//! - the conditions carry the eviction's generation; an invalid eviction
//!   has only `Valid`.

pub mod budget;
pub mod drain;
pub mod serial;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_drain;

use fleet_api::binding::{spec_of as binding_spec_of, STATE_BOUND, STATE_SCHEDULED};
use fleet_api::conditions::{set_condition, Condition};
use fleet_api::eviction::*;
use fleet_api::placement::{spec_of as placement_spec_of, PlacementPolicy, PICK_FIXED};
use fleet_api::typed::decode;
use fleet_api::work::ApplyStrategy;
use fleet_api::Object;

use crate::rollout::Readiness;
use crate::status::{
    APPLIED, AVAILABLE, CLUSTER_REASON_NOT_AVAILABLE, OVERRIDDEN, REASON_APPLY_PENDING, REASON_NOT_AVAILABLE,
    REASON_OVERRIDE_PENDING, REASON_WORK_NOT_SYNCHRONIZED, WORK_SYNCHRONIZED,
};

pub use budget::{allowance, Allowance};

/// One binding of the evicted placement, as evictions see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionBinding {
    /// The binding's name.
    pub name: String,
    /// `spec.targetCluster`.
    pub cluster: String,
    /// Carries a deletion timestamp.
    pub deleting: bool,
    /// Was ever Bound (resources may be on the cluster).
    pub ever_bound: bool,
    /// Its placement failed on the cluster (EV-4.3).
    pub failed: bool,
    /// Applied in `ReportDiff` mode (EV-4.3).
    pub report_diff: bool,
    /// `Available` True at its current generation (EV-5's A).
    pub available: bool,
}

impl EvictionBinding {
    /// The view of a stored binding whose Works are `readiness` (for its
    /// bound resource index).
    pub fn of(object: &Object, readiness: Readiness) -> EvictionBinding {
        let spec = binding_spec_of(object);
        let apply: Option<ApplyStrategy> = spec.apply_strategy.as_ref().and_then(|v| decode(v, "applyStrategy").ok());
        let scheduled = spec.state == STATE_SCHEDULED;
        EvictionBinding {
            name: object.metadata.name.clone(),
            cluster: spec.target_cluster,
            deleting: object.metadata.deletion_timestamp.is_some(),
            ever_bound: !scheduled && (spec.state == STATE_BOUND || !spec.resource_snapshot_name.is_empty()),
            failed: !scheduled && readiness == Readiness::Failed,
            report_diff: apply.is_some_and(|a| a.apply_type() == "ReportDiff"),
            available: !scheduled && matches!(readiness, Readiness::Ready | Readiness::NotTrackable { .. }),
        }
    }
}

/// EV-4.3 on a cluster's placement status conditions: a False
/// `Overridden`, `WorkSynchronized`, `Applied` or `Available` whose reason
/// is not a pending one.
pub fn has_failed(conditions: &[Condition]) -> bool {
    const PENDING: [&str; 5] = [
        REASON_OVERRIDE_PENDING,
        REASON_WORK_NOT_SYNCHRONIZED,
        REASON_APPLY_PENDING,
        REASON_NOT_AVAILABLE,
        CLUSTER_REASON_NOT_AVAILABLE,
    ];
    conditions.iter().any(|c| {
        [OVERRIDDEN, WORK_SYNCHRONIZED, APPLIED, AVAILABLE].contains(&c.type_.as_str())
            && c.status == "False"
            && !PENDING.contains(&c.reason.as_str())
    })
}

/// The evicted placement, as evictions see it.
#[derive(Debug, Clone, PartialEq)]
pub struct EvictionPlacement {
    /// Its name.
    pub name: String,
    /// Carries a deletion timestamp.
    pub deleting: bool,
    /// Its policy, defaulted.
    pub policy: PlacementPolicy,
    /// PickN's N from its latest policy snapshot's annotation, if known.
    pub number_of_clusters: Option<i64>,
}

impl EvictionPlacement {
    /// The view of a stored ClusterResourcePlacement; `number_of_clusters`
    /// from its latest policy snapshot (the annotation wins over the policy).
    pub fn of(placement: &Object, number_of_clusters: Option<i64>) -> EvictionPlacement {
        EvictionPlacement {
            name: placement.metadata.name.clone(),
            deleting: placement.metadata.deletion_timestamp.is_some(),
            policy: placement_spec_of(placement).policy.unwrap_or_default(),
            number_of_clusters,
        }
    }
}

/// Everything one eviction's evaluation reads.
#[derive(Debug, Clone, Copy)]
pub struct EvictionInput<'a> {
    /// The eviction's spec.
    pub spec: &'a EvictionSpec,
    /// Its `metadata.generation` (stamped on the conditions).
    pub generation: i64,
    /// The placement it names; `None` if there is none.
    pub placement: Option<&'a EvictionPlacement>,
    /// Every binding of that placement.
    pub bindings: &'a [EvictionBinding],
    /// The placement's budget, if any.
    pub budget: Option<&'a DisruptionBudgetSpec>,
    /// A `ResourcePlacementEviction` (of a ResourcePlacement, guarded by a
    /// `ResourcePlacementDisruptionBudget`): the same rules, the reasons and
    /// messages naming the namespaced kinds.
    pub namespaced: bool,
}

/// What an evaluation concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionOutcome {
    /// `Valid`.
    pub valid: Condition,
    /// `Executed` (absent when invalid).
    pub executed: Option<Condition>,
    /// The binding to delete, when the eviction executes now.
    pub delete_binding: Option<String>,
}

impl EvictionOutcome {
    /// Whether the eviction executed (`Executed` True).
    pub fn executed(&self) -> bool {
        self.executed.as_ref().is_some_and(Condition::is_true)
    }

    /// The eviction's new status from its stored one, stamped `now`.
    pub fn status(&self, stored: &EvictionStatus, now: &str) -> EvictionStatus {
        let mut status = stored.clone();
        set_condition(&mut status.conditions, self.valid.clone(), now);
        if let Some(executed) = &self.executed {
            set_condition(&mut status.conditions, executed.clone(), now);
        }
        status
    }
}

fn invalid(message: &str, generation: i64) -> EvictionOutcome {
    EvictionOutcome {
        valid: Condition::new(VALID, false, REASON_INVALID, message).observing(generation),
        executed: None,
        delete_binding: None,
    }
}

fn executed(
    allowed: bool,
    message: impl Into<String>,
    delete: Option<&EvictionBinding>,
    generation: i64,
) -> EvictionOutcome {
    let reason = if allowed { REASON_EXECUTED } else { REASON_NOT_EXECUTED };
    EvictionOutcome {
        valid: Condition::new(VALID, true, REASON_VALID, MESSAGE_VALID).observing(generation),
        executed: Some(Condition::new(EXECUTED, allowed, reason, message).observing(generation)),
        delete_binding: delete.filter(|_| allowed).map(|b| b.name.clone()),
    }
}

/// Evaluates one eviction (EV-3 validity, then EV-4 execution, first match
/// wins). The caller makes sure it is not final yet (EV-1).
pub fn evaluate(input: &EvictionInput) -> EvictionOutcome {
    let mut outcome = evaluate_in_cluster_words(input);
    if input.namespaced {
        for c in std::iter::once(&mut outcome.valid).chain(outcome.executed.as_mut()) {
            c.reason = namespaced_text(&c.reason);
            c.message = namespaced_text(&c.message);
        }
    }
    outcome
}

/// [`evaluate`] with the cluster-scoped kinds' reasons and messages.
fn evaluate_in_cluster_words(input: &EvictionInput) -> EvictionOutcome {
    let generation = input.generation;
    let Some(placement) = input.placement else { return invalid(MESSAGE_MISSING_PLACEMENT, generation) };
    if placement.deleting {
        return invalid(MESSAGE_DELETING_PLACEMENT, generation);
    }
    if placement.policy.placement_type() == PICK_FIXED {
        return invalid(MESSAGE_PICK_FIXED, generation);
    }
    let mut targets = input.bindings.iter().filter(|b| b.cluster == input.spec.cluster_name);
    let (Some(binding), None) = (targets.next(), targets.next()) else {
        let several = input.bindings.iter().filter(|b| b.cluster == input.spec.cluster_name).count() > 1;
        let message = if several { MESSAGE_MULTIPLE_BINDINGS } else { MESSAGE_MISSING_BINDING };
        return invalid(message, generation);
    };
    if binding.deleting {
        return executed(true, MESSAGE_BINDING_DELETING, None, generation);
    }
    if !binding.ever_bound {
        return executed(false, MESSAGE_NOT_PROPAGATED, None, generation);
    }
    if binding.failed || binding.report_diff {
        return executed(true, MESSAGE_PLACEMENT_FAILED, Some(binding), generation);
    }
    let Some(budget) = input.budget else {
        return executed(true, MESSAGE_NO_BUDGET, Some(binding), generation);
    };
    match allowance(&placement.policy, placement.number_of_clusters, budget, input.bindings) {
        Allowance::Misconfigured => executed(false, MESSAGE_MISCONFIGURED_BUDGET, None, generation),
        Allowance::Counted { available, total, allowed } if allowed > 0 => {
            executed(true, message_allowed_by_budget(available, total), Some(binding), generation)
        }
        Allowance::Counted { available, total, .. } => {
            executed(false, message_blocked_by_budget(available, total), None, generation)
        }
    }
}
