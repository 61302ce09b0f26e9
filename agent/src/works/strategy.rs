//! The apply strategy of a Work (`spec.applyStrategy`) and the one place
//! deciding, for each manifest and the live object, whether Fleet may write
//! it. Pure; the same for every target ([`super::apply`] reads the live
//! object with [`crate::targets::Target::get`] and acts on the [`Decision`]).
//!
//! For an object that exists on the member cluster, in order (the reasons
//! are KubeFleet's work applier's):
//! 1. Placed by **another Work** ([`OWNER_ANNOTATION`] naming it): never
//!    taken over, whatever the strategy — `FailedToTakeOver`, or
//!    `NotTakenOver` under `whenToTakeOver: Never` (no attempt is made).
//! 2. **Owned by something else** (`metadata.ownerReferences` not empty;
//!    Fleet itself never sets owner references): refused unless
//!    `allowCoOwnership` — for an object this Work does not hold yet, as a
//!    take-over that fails (`FailedToTakeOver`, `NotTakenOver` under
//!    `Never`); for one it holds, `ManifestApplyFailed`.
//! 3. Placed by **this Work**: the live object is compared with what Fleet
//!    last wrote; differences are *drifts* (someone changed a managed field
//!    on the member). With `whenToApply: Always` (the default) it is applied
//!    — the drifts are overwritten, and only what the write leaves is
//!    reported (see `remaining_drifts` in [`super::apply`]) —, with
//!    `IfNotDrifted` a drift stops it — `FoundDrifts`, with the drifts, the
//!    object left as it is — as long as the manifest is the one Fleet last
//!    wrote: a new manifest from the hub is applied over the drift, as
//!    KubeFleet does (its caller, [`super::apply`], decides with
//!    `if_not_drifted` off then). The baseline is kept in the ledger
//!    ([`super::ledger::LastApplied::baseline`]): under `PartialComparison`
//!    the manifest as last applied (only the fields it sets count), under
//!    `FullComparison` the object as the cluster returned it right after
//!    the first write of this manifest (so server-defaulted fields are not
//!    drift, but any field changed or added since is; a field the member
//!    added beside Fleet's stays a drift after `Always` rewrites the
//!    object, as in KubeFleet). `valueInHub` is the baseline's value.
//!    Without a record (a ledger from before this rule, or an object never
//!    written by this Work), nothing counts as drift.
//! 4. **Not created by Fleet** (no annotation), by `whenToTakeOver`:
//!    `Always` (default) takes it over (applies and annotates it);
//!    `IfNoDiff` only if the live object has no difference from the manifest
//!    (per `comparisonOption`), else `FailedToTakeOver` with the diffs;
//!    `Never` refuses — `NotTakenOver`.
//!
//! An object that does not exist is created.

use fleet_api::work::ApplyStrategy;
use fleet_api::Object;
use serde_json::Value;

use super::compare::{differences, Comparison, Difference};
use crate::targets::{ApplyMode, ResourceId, OWNER_ANNOTATION};

/// `whenToTakeOver` of an apply strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TakeOver {
    /// Take over any object not created by Fleet (the default).
    #[default]
    Always,
    /// Only one that has no difference from the manifest.
    IfNoDiff,
    /// Never.
    Never,
}

/// A Work's apply strategy, with its defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strategy {
    /// `type: ReportDiff`: apply nothing, report differences.
    pub report_diff: bool,
    /// How to write (`ClientSideApply` or `ServerSideApply`).
    pub mode: ApplyMode,
    /// `comparisonOption`.
    pub comparison: Comparison,
    /// `whenToApply: IfNotDrifted`.
    pub if_not_drifted: bool,
    /// `whenToTakeOver`.
    pub take_over: TakeOver,
    /// `allowCoOwnership`.
    pub allow_co_ownership: bool,
}

impl Strategy {
    /// The strategy of a Work spec (`None`: all defaults).
    pub fn of(strategy: Option<&ApplyStrategy>) -> Strategy {
        let default = ApplyStrategy::default();
        let s = strategy.unwrap_or(&default);
        let mode = match s.apply_type() {
            "ServerSideApply" => {
                ApplyMode::ServerSide { force: s.server_side_apply_config.as_ref().is_some_and(|c| c.force) }
            }
            _ => ApplyMode::ClientSide,
        };
        Strategy {
            report_diff: s.apply_type() == "ReportDiff",
            mode,
            comparison: Comparison::from_option(s.comparison_option.as_deref()),
            if_not_drifted: s.when_to_apply.as_deref() == Some("IfNotDrifted"),
            take_over: match s.when_to_take_over.as_deref() {
                Some("IfNoDiff") => TakeOver::IfNoDiff,
                Some("Never") => TakeOver::Never,
                _ => TakeOver::Always,
            },
            allow_co_ownership: s.allow_co_ownership.unwrap_or(false),
        }
    }
}

/// Reason: Fleet tried to take the object over and could not (placed by
/// another Work, owned by something else, or different from the manifest
/// under `whenToTakeOver: IfNoDiff`).
pub const REASON_FAILED_TO_TAKE_OVER: &str = "FailedToTakeOver";
/// Reason: `whenToTakeOver: Never` and the object is not this Work's.
pub const REASON_NOT_TAKEN_OVER: &str = "NotTakenOver";
/// Reason: the object this Work holds gained other owners and
/// `allowCoOwnership` is false (as any refused apply).
pub const REASON_APPLY_FAILED: &str = "ManifestApplyFailed";
/// Reason: `whenToApply: IfNotDrifted` and the object drifted.
pub const REASON_DRIFTED: &str = "FoundDrifts";

/// What to do with one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Write it; `take_over` when it exists without Fleet's annotation.
    Apply {
        /// Pass as [`crate::targets::ApplyRequest::take_over`].
        take_over: bool,
        /// Drifts the write overwrites (`whenToApply: Always`): a reason to
        /// write even when the Work did not change (reported only if the
        /// write fails).
        drifts: Vec<Difference>,
    },
    /// Leave it alone and report why.
    Refuse {
        /// The manifest's `Applied=False` reason.
        reason: &'static str,
        /// Its message.
        message: String,
        /// Drifts found (`FoundDrifts`).
        drifts: Vec<Difference>,
        /// Differences that prevented a takeover (`FailedToTakeOver`).
        diffs: Vec<Difference>,
    },
}

fn refuse(reason: &'static str, message: String) -> Decision {
    Decision::Refuse { reason, message, drifts: Vec::new(), diffs: Vec::new() }
}

/// Apply, with nothing to report.
fn apply(take_over: bool) -> Decision {
    Decision::Apply { take_over, drifts: Vec::new() }
}

/// Decides whether `owner` (`<namespace>/<name>` of the Work) may write
/// `manifest` over `live` (see the module doc). `last_applied` is the drift
/// baseline of the object, if recorded ([`super::ledger::LastApplied::baseline`]).
pub fn decide(
    strategy: &Strategy,
    manifest: &Object,
    live: Option<&Object>,
    owner: &str,
    last_applied: Option<&Value>,
) -> Decision {
    let Some(live) = live else {
        return apply(false);
    };
    let id = ResourceId::of(live);
    let current = live.metadata.annotations.get(OWNER_ANNOTATION);
    // Not holding the object yet: refusing it is a take-over that failed,
    // or, under `Never`, one never attempted.
    let not_taken =
        if strategy.take_over == TakeOver::Never { REASON_NOT_TAKEN_OVER } else { REASON_FAILED_TO_TAKE_OVER };
    if let Some(current) = current.filter(|c| *c != owner) {
        return refuse(
            not_taken,
            format!("{id} is already placed on this cluster by Work {current:?}; Work {owner:?} cannot apply it too"),
        );
    }
    let live_json = serde_json::to_value(live).unwrap_or(Value::Null);
    let owners = live.metadata.owner_references.len();
    if owners > 0 && !strategy.allow_co_ownership {
        return refuse(
            if current.is_some() { REASON_APPLY_FAILED } else { not_taken },
            format!(
                "{id} is owned by {owners} other owner reference(s) and the apply strategy does not allow \
                 co-ownership (allowCoOwnership: false): not applied"
            ),
        );
    }
    if current.is_some() {
        let drifts = last_applied.map(|last| differences(last, &live_json, strategy.comparison)).unwrap_or_default();
        if strategy.if_not_drifted && !drifts.is_empty() {
            let message = format!(
                "{id} was changed on the member cluster since Fleet applied it ({} drifted field(s)); \
                 whenToApply is IfNotDrifted: not overwritten",
                drifts.len()
            );
            return Decision::Refuse { reason: REASON_DRIFTED, message, drifts, diffs: Vec::new() };
        }
        return Decision::Apply { take_over: false, drifts };
    }
    match strategy.take_over {
        TakeOver::Always => apply(true),
        TakeOver::Never => refuse(
            REASON_NOT_TAKEN_OVER,
            format!(
                "{id} already exists on this cluster and was not created by Fleet (no {OWNER_ANNOTATION} \
                 annotation); whenToTakeOver is Never: Work {owner:?} does not take it over"
            ),
        ),
        TakeOver::IfNoDiff => {
            let hub = serde_json::to_value(manifest).unwrap_or(Value::Null);
            let diffs = differences(&hub, &live_json, strategy.comparison);
            if diffs.is_empty() {
                apply(true)
            } else {
                let message = format!(
                    "{id} already exists on this cluster, was not created by Fleet and differs from the manifest \
                     ({} difference(s)); whenToTakeOver is IfNoDiff: not taken over",
                    diffs.len()
                );
                Decision::Refuse { reason: REASON_FAILED_TO_TAKE_OVER, message, drifts: Vec::new(), diffs }
            }
        }
    }
}

/// The differences ReportDiff reports for a manifest: against the live
/// object, or, when it does not exist, one at `/` with no member value.
pub fn report_diff(manifest: &Object, live: Option<&Object>, comparison: Comparison) -> Vec<Difference> {
    match live {
        None => vec![Difference {
            path: "/".into(),
            value_in_hub: Some("(the whole object)".into()),
            value_in_member: None,
        }],
        Some(live) => {
            let hub = serde_json::to_value(manifest).unwrap_or(Value::Null);
            differences(&hub, &serde_json::to_value(live).unwrap_or(Value::Null), comparison)
        }
    }
}

#[cfg(test)]
#[path = "strategy_tests.rs"]
mod tests;
