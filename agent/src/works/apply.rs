//! Applying one Work to the target: manifests in waves, refusing
//! `generateName` and duplicates, deleting what the Work no longer holds, and
//! folding the per-manifest results into the Work's `Applied`/`Available`.
//!
//! Every manifest goes through the Work's apply strategy
//! ([`super::strategy`]): the live object is read first and
//! [`decide`] says whether it may be written (take over, co-ownership,
//! drift). Refusals are `Applied=False` with the decision's reason, and
//! `driftDetails` (drifts) or `diffDetails` (differences preventing a takeover).
//!
//! A Work with an `executor` applies a manifest only if the executor may
//! ([`super::executor`]); refused, it is `Applied=False`.
//!
//! With `type: ReportDiff` the Work goes to [`report_work`] instead: nothing
//! is written, and status speaks of `DiffReported`.
//!
//! Drift is looked for whenever the Work is looked at: on each change, on
//! every relist of the Work watch, every drift-check interval (see
//! [`super`]) and every [`RECHECK`](super) while the Work is not settled.
//! With `whenToApply: Always` a drifted object is written again at once
//! (even if the Work did not change) and the drifts it had are reported in
//! that pass's `driftDetails`; the next check, finding none, clears them.
//! With `IfNotDrifted` the drift keeps the manifest refused (and the Work
//! unsettled) until it is reverted on the member. `firstDriftedObservedTime`
//! / `firstDiffedObservedTime` are carried over from the Work's status
//! while drifts / differences persist ([`super::details`]).

use std::collections::BTreeSet;

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::work::{
    self, IgnoreFields, ManifestCondition, WorkResourceIdentifier, WorkStatus, CONDITION_APPLIED, CONDITION_AVAILABLE,
    CONDITION_DIFF_REPORTED, REASON_ALL_APPLIED, REASON_ALL_AVAILABLE, REASON_NOT_TRACKABLE, REASON_SOME_NOT_APPLIED,
    REASON_SOME_NOT_AVAILABLE,
};
use fleet_api::Object;

use serde_json::Value;

use super::compare::{differences, Comparison, Difference};
use super::details::{details, Report};
use super::executor;
use super::feedback;
use super::ignore;
use super::ledger::{Entry, LastApplied};
use super::provenance::{stamped, Provenance};
use super::redact::scrub_message;
use super::report::report_work;
use super::report_back::{self, observed_status};
use super::strategy::{decide, Decision, Strategy};
use super::waves::wave;
use crate::targets::availability::{availability, Availability};
use crate::targets::{ApplyRequest, ResourceId, Target, TargetError};

/// What applying a Work produced.
#[derive(Debug, Clone)]
pub struct WorkOutcome {
    /// The Work's new status.
    pub status: WorkStatus,
    /// The ledger record: what is placed now, and the generation if complete.
    pub entry: Entry,
    /// Whether anything still needs watching (not applied or not yet available).
    pub settled: bool,
}

/// Reason of a manifest that does not read as an object.
const REASON_DECODING_ERRED: &str = "DecodingErred";
/// Reason of a manifest with `generateName` and no name.
const REASON_FOUND_GENERATE_NAME: &str = "FoundGenerateName";
/// Reason of a manifest naming the same object as an earlier one.
const REASON_DUPLICATED: &str = "Duplicated";

/// One manifest of a Work, read.
pub(super) struct Manifest {
    ordinal: usize,
    /// The manifest as an object, if it reads as one.
    pub object: Option<Object>,
    /// How status names it.
    pub identifier: WorkResourceIdentifier,
    /// Why it cannot be applied at all (reason, message), if so.
    pub refusal: Option<(String, String)>,
}

fn identifier(ordinal: usize, value: &serde_json::Value) -> WorkResourceIdentifier {
    let text = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    let api_version = text(value.get("apiVersion"));
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let meta = value.get("metadata");
    WorkResourceIdentifier {
        ordinal: ordinal as i64,
        group,
        version,
        kind: text(value.get("kind")),
        resource: String::new(),
        namespace: text(meta.and_then(|m| m.get("namespace"))),
        name: text(meta.and_then(|m| m.get("name"))),
    }
}

/// Reads the manifests, marking those that cannot be applied and why.
pub(super) fn manifests(spec: &work::WorkSpec) -> Vec<Manifest> {
    let mut seen = BTreeSet::new();
    spec.workload
        .manifests
        .iter()
        .enumerate()
        .map(|(ordinal, value)| {
            let identifier = identifier(ordinal, value);
            let parsed: Result<Object, _> = serde_json::from_value(value.clone());
            // KubeFleet's work applier's reasons for manifests it cannot
            // process at all.
            let refusal = match &parsed {
                Err(e) => Some((REASON_DECODING_ERRED.to_string(), format!("manifest {ordinal} is not an object: {e}"))),
                Ok(o) if o.metadata.generate_name.is_some() && o.metadata.name.is_empty() => Some((
                    REASON_FOUND_GENERATE_NAME.to_string(),
                    format!("manifest {ordinal} uses metadata.generateName: Fleet places objects by name, give it metadata.name"),
                )),
                Ok(o) if !seen.insert(ResourceId::of(o)) => Some((
                    REASON_DUPLICATED.to_string(),
                    format!("manifest {ordinal} is the same object as an earlier manifest ({})", ResourceId::of(o)),
                )),
                Ok(_) => None,
            };
            Manifest { ordinal, object: parsed.ok(), identifier, refusal }
        })
        .collect()
}

/// What became of one manifest.
struct Processed {
    /// The live object, or why it is not applied (reason, message).
    result: Result<Object, (String, String)>,
    /// Drifts found (refused under `IfNotDrifted`, overwritten under `Always`).
    drifts: Option<Vec<Difference>>,
    /// Differences that prevented a takeover.
    diffs: Option<Vec<Difference>>,
    /// `metadata.generation` of the live object (0 if none).
    member_generation: i64,
    /// Whether Fleet wrote it now.
    written: bool,
}

impl Processed {
    fn failed(reason: &str, message: String) -> Processed {
        Processed {
            result: Err((reason.into(), message)),
            drifts: None,
            diffs: None,
            member_generation: 0,
            written: false,
        }
    }
}

fn non_empty(list: Vec<Difference>) -> Option<Vec<Difference>> {
    (!list.is_empty()).then_some(list)
}

/// The drifts a write leaves, as KubeFleet reports them after applying:
/// under `FullComparison`, what the member added beside Fleet's fields
/// since this manifest was first written (the write does not remove it);
/// under `PartialComparison`, none (the write put every field back).
fn remaining_drifts(
    strategy: &Strategy,
    manifest: &Object,
    last_applied: Option<&LastApplied>,
    live: &Object,
) -> Vec<Difference> {
    if strategy.comparison != Comparison::Full {
        return Vec::new();
    }
    let manifest = serde_json::to_value(manifest).unwrap_or(Value::Null);
    let Some(baseline) = last_applied.filter(|l| l.manifest == manifest).and_then(|l| l.written.as_ref()) else {
        return Vec::new();
    };
    differences(baseline, &serde_json::to_value(live).unwrap_or(Value::Null), Comparison::Full)
}

/// Reads the live object and, by the strategy's decision, writes the manifest
/// or only looks at it (when `reapply` is false and nothing is amiss).
#[allow(clippy::too_many_arguments)]
async fn process<T: Target>(
    target: &T,
    strategy: &Strategy,
    ignore_fields: &[IgnoreFields],
    object: &Object,
    owner: &str,
    provenance: Option<&Provenance>,
    last_applied: Option<&LastApplied>,
    reapply: bool,
) -> Processed {
    let id = ResourceId::of(object);
    let live = match target.get_for(&id, owner).await {
        Ok(live) => live,
        Err(e) => return Processed::failed(failure_reason(&e), failure_message(&e, object, None)),
    };
    let member_generation = live.as_ref().map_or(0, |l| l.metadata.generation);
    let processed = |result, drifts, diffs, written| Processed { result, drifts, diffs, member_generation, written };
    // `IfNotDrifted` holds back only the manifest Fleet last wrote: a new
    // one from the hub is applied over the drift (see the strategy module).
    // Only asked under `IfNotDrifted`: the encoding is paid on every check.
    let manifest_changed = strategy.if_not_drifted
        && last_applied.is_some_and(|l| serde_json::to_value(object).ok().as_ref() != Some(&l.manifest));
    let strategy = &Strategy { if_not_drifted: strategy.if_not_drifted && !manifest_changed, ..*strategy };
    // Fields left to the member take its values, and are no drift.
    let ignored = ignore::effective(object, live.as_ref(), last_applied.map(|l| &l.manifest), ignore_fields);
    let object = &ignored.manifest;
    let baseline = last_applied.map(|l| ignore::aligned(l.baseline(strategy.comparison), live.as_ref(), &ignored.kept));
    match decide(strategy, object, live.as_ref(), owner, baseline.as_ref()) {
        Decision::Refuse { reason, message, drifts, diffs } => {
            processed(Err((reason.to_string(), message)), non_empty(drifts), non_empty(diffs), false)
        }
        Decision::Apply { take_over, drifts } => match live {
            Some(live) if !reapply && drifts.is_empty() => processed(Ok(live), None, None, false),
            // Written when the Work changed, when the object is gone from the
            // member (deleted there: re-created) and when it drifted (the
            // drifts are reported with the generation that drifted).
            _ => {
                let manifest = stamped(object, provenance);
                let request = ApplyRequest { manifest: &manifest, mode: strategy.mode, owner, take_over };
                match target.apply(request).await {
                    Ok(a) => {
                        let remaining = remaining_drifts(strategy, object, last_applied, &a.live);
                        processed(Ok(a.live), non_empty(remaining), None, true)
                    }
                    Err(e) => {
                        let message = failure_message(&e, object, live.as_ref());
                        processed(Err((failure_reason(&e).to_string(), message)), non_empty(drifts), None, false)
                    }
                }
            }
        },
    }
}

/// Applies (or, with `reapply` false, only re-checks) a Work. `previous` is
/// what the ledger says this Work placed before; `observed_at` (RFC 3339,
/// milliseconds) stamps drift and diff reports, and its whole seconds
/// condition transitions. A ReportDiff Work is handed to [`report_work`].
pub async fn apply_work<T: Target>(
    target: &T,
    work_object: &Object,
    previous: Option<&Entry>,
    reapply: bool,
    observed_at: &str,
) -> WorkOutcome {
    let spec = work::spec_of(work_object);
    let strategy = Strategy::of(spec.apply_strategy.as_ref());
    if strategy.report_diff {
        return report_work(target, work_object, &strategy, previous, observed_at).await;
    }
    let now = &fleet_api::time::whole_seconds(observed_at);
    let generation = work_object.metadata.generation;
    let owner = super::work_owner(work_object);
    let provenance = Provenance::of_work(work_object);
    let mirror = spec.report_back_strategy.as_ref().is_some_and(|r| r.mirrors());
    let mut observed = std::collections::BTreeMap::new();
    let mut feedback_read = std::collections::BTreeMap::new();
    let mut items = manifests(&spec);
    items.sort_by_key(|m| {
        let id = &m.identifier;
        (wave(&id.group, &id.kind), m.ordinal)
    });
    let old = work::status_of(work_object);
    let mut placed = Vec::new();
    let mut last_applied = Vec::new();
    let mut manifest_conditions = Vec::new();
    let mut tally = Tally { applied_all: true, any_pending: false, any_untrackable: false };
    for m in &items {
        let old_condition = old.manifest_conditions.iter().find(|c| c.identifier == m.identifier);
        let mut conditions = old_condition.map(|c| c.conditions.clone()).unwrap_or_default();
        conditions.retain(|c| c.type_ != CONDITION_DIFF_REPORTED);
        let processed = match (&m.refusal, &m.object) {
            (Some((reason, message)), _) => Processed::failed(reason, message.clone()),
            (None, Some(object)) => {
                let id = ResourceId::of(object);
                let last = previous.and_then(|p| p.last_applied(&id));
                let ignore = spec.ignore_fields.as_slice();
                let allowed = executor::check(target, spec.executor.as_ref(), object, spec.abandons_on_delete()).await;
                let p = match allowed {
                    Ok(()) => {
                        process(target, &strategy, ignore, object, &owner, provenance.as_ref(), last, reapply).await
                    }
                    Err((reason, message)) => Processed::failed(&reason, message),
                };
                match &p.result {
                    Ok(live) if p.written => last_applied.push(written_baseline(id, object, live, last)),
                    Ok(_) => last_applied.extend(last.cloned()),
                    Err(_) => {}
                }
                p
            }
            (None, None) => Processed::failed(REASON_DECODING_ERRED, "manifest could not be read".into()),
        };
        if let Ok(live) = &processed.result {
            placed.push(ResourceId::of(live));
            if let Some(status) = observed_status(live).filter(|_| mirror) {
                observed.insert(m.ordinal, status);
            }
            if !spec.feedback_rules.is_empty() {
                let (values, synced) = feedback::read(&spec.feedback_rules, live);
                feedback_read.insert(m.ordinal, values);
                set_condition(&mut conditions, synced.observing(live.metadata.generation), now);
            }
        }
        set_manifest_conditions(&mut conditions, &processed, &mut tally, now);
        let g = Some(processed.member_generation);
        manifest_conditions.push(ManifestCondition {
            identifier: m.identifier.clone(),
            conditions,
            drift_details: processed.drifts.map(|d| {
                details(Report::Drift, &d, old_condition.and_then(|c| c.drift_details.as_ref()), g, observed_at)
            }),
            diff_details: processed.diffs.map(|d| {
                details(Report::Diff, &d, old_condition.and_then(|c| c.diff_details.as_ref()), g, observed_at)
            }),
            back_reported_status: None,
            status_feedback: None,
        });
    }
    manifest_conditions.sort_by_key(|c| c.identifier.ordinal);

    let held: BTreeSet<ResourceId> = items.iter().filter_map(|m| m.object.as_ref().map(ResourceId::of)).collect();
    let (still_placed, withdrawn_all) =
        withdraw_released(target, &owner, previous, &held, &placed, &mut last_applied).await;
    tally.applied_all &= withdrawn_all;
    let mut conditions = work_conditions(&old, &manifest_conditions, &tally, generation, now);
    // Back-reports last: whether the status is written anyway decides
    // whether a changed report may go out before its interval.
    let written_anyway = report_back::changed_besides_reports(&old, &conditions, &manifest_conditions);
    let back_reports = report_back::fill(&mut manifest_conditions, &observed, &old, written_anyway, now);
    let feedback_held_back = feedback::fill(&mut manifest_conditions, &feedback_read, &old, written_anyway, now);
    conditions.retain(|c| c.type_ != report_back::CONDITION_STATUS_TRIMMED);
    if let Some(trimmed) = report_back::trimmed_condition(back_reports.trimmed) {
        let previous = old.conditions.iter().find(|c| c.type_ == report_back::CONDITION_STATUS_TRIMMED);
        conditions.extend(previous.cloned());
        set_condition(&mut conditions, trimmed.observing(generation), now);
    }
    WorkOutcome {
        status: WorkStatus { conditions, manifest_conditions },
        entry: Entry {
            generation: if tally.applied_all { generation } else { 0 },
            placed: still_placed,
            abandon_on_delete: spec.abandons_on_delete(),
            last_applied,
        },
        settled: tally.applied_all && !tally.any_pending && !back_reports.held_back && !feedback_held_back,
    }
}

/// What a Work's manifests came to, for the Work's own conditions.
struct Tally {
    /// Every manifest applied and every released object withdrawn.
    applied_all: bool,
    /// Some applied manifest is not available yet.
    any_pending: bool,
    /// Some applied manifest's availability is not tracked.
    any_untrackable: bool,
}

/// The baseline recorded for a manifest Fleet wrote: the manifest and the
/// object as written. A write that only put the same manifest back (a
/// drift corrected, an object re-created) keeps the old baseline: what the
/// member added beside Fleet's fields stays a drift under full comparison,
/// as KubeFleet reports it after every apply.
fn written_baseline(id: ResourceId, object: &Object, live: &Object, last: Option<&LastApplied>) -> LastApplied {
    let manifest = serde_json::to_value(object).unwrap_or(Value::Null);
    let written = match last {
        Some(l) if l.manifest == manifest && l.written.is_some() => l.written.clone(),
        _ => serde_json::to_value(live).ok(),
    };
    LastApplied { id, manifest, written }
}

/// Sets a manifest's `Applied` and `Available` conditions from what
/// processing it came to, and counts it in `tally`. As the Work API defines
/// it, a manifest condition observes the generation of the object on the
/// member (0 when there is none), not the Work's.
fn set_manifest_conditions(conditions: &mut Vec<Condition>, processed: &Processed, tally: &mut Tally, now: &str) {
    match &processed.result {
        Ok(live) => {
            let generation = live.metadata.generation;
            set_condition(
                conditions,
                Condition::new(CONDITION_APPLIED, true, "ManifestApplied", "applied").observing(generation),
                now,
            );
            let available = match availability(live) {
                Availability::Available => Condition::new(CONDITION_AVAILABLE, true, "ManifestAvailable", "available"),
                Availability::NotTrackable => {
                    tally.any_untrackable = true;
                    Condition::new(
                        CONDITION_AVAILABLE,
                        true,
                        "ManifestNotTrackable",
                        "availability is not tracked for this kind",
                    )
                }
                Availability::NotYetAvailable(why) => {
                    tally.any_pending = true;
                    Condition::new(CONDITION_AVAILABLE, false, "ManifestNotAvailableYet", why)
                }
            };
            set_condition(conditions, available.observing(generation), now);
        }
        Err((reason, message)) => {
            tally.applied_all = false;
            set_condition(
                conditions,
                Condition::new(CONDITION_APPLIED, false, reason, message.clone())
                    .observing(processed.member_generation),
                now,
            );
            conditions.retain(|c| c.type_ != CONDITION_AVAILABLE);
        }
    }
}

/// Deletes what this Work placed before and holds no more (later waves
/// first). An object it still holds stays placed even if not applied this
/// time (a drift, a failure): it is neither deleted nor forgotten, and its
/// baseline is kept in `last_applied`. Returns what stays placed, and
/// whether every deletion succeeded (one that failed stays placed).
async fn withdraw_released<T: Target>(
    target: &T,
    owner: &str,
    previous: Option<&Entry>,
    held: &BTreeSet<ResourceId>,
    placed: &[ResourceId],
    last_applied: &mut Vec<LastApplied>,
) -> (Vec<ResourceId>, bool) {
    let previously: &[ResourceId] = previous.map_or(&[], |p| p.placed.as_slice());
    let mut gone: Vec<ResourceId> = previously.iter().filter(|id| !held.contains(*id)).cloned().collect();
    gone.sort_by_key(|id| std::cmp::Reverse(wave(&id.group, &id.kind)));
    let mut still_placed = placed.to_vec();
    for id in previously.iter().filter(|id| held.contains(*id) && !placed.contains(*id)) {
        still_placed.push(id.clone());
        last_applied.extend(previous.and_then(|p| p.last_applied(id)).cloned());
    }
    let mut withdrawn_all = true;
    for id in gone {
        if let Err(e) = withdraw(target, &id).await {
            tracing::warn!(work = %owner, "could not delete {id}: {e}");
            still_placed.push(id);
            withdrawn_all = false;
        }
    }
    (still_placed, withdrawn_all)
}

/// The Work's own `Applied` and `Available` conditions (its other
/// conditions kept), from its manifests' and the `tally`.
fn work_conditions(
    old: &WorkStatus,
    manifest_conditions: &[ManifestCondition],
    tally: &Tally,
    generation: i64,
    now: &str,
) -> Vec<Condition> {
    let mut conditions = old.conditions.clone();
    conditions.retain(|c| c.type_ != CONDITION_DIFF_REPORTED);
    let applied = if tally.applied_all {
        Condition::new(CONDITION_APPLIED, true, REASON_ALL_APPLIED, "all manifests are applied")
    } else {
        let failed = manifest_conditions
            .iter()
            .filter(|c| !c.conditions.iter().any(|x| x.type_ == CONDITION_APPLIED && x.is_true()))
            .count();
        Condition::new(CONDITION_APPLIED, false, REASON_SOME_NOT_APPLIED, format!("{failed} manifests are not applied"))
    };
    set_condition(&mut conditions, applied.observing(generation), now);
    // Availability counts from the application of this generation: an
    // untrackable Work is ready once it has stayed available for the
    // placement's unavailablePeriodSeconds since its new manifests went out,
    // not since an older generation first became available (KubeFleet resets
    // the binding's conditions whenever it rewrites the Work).
    conditions.retain(|c| c.type_ != CONDITION_AVAILABLE || c.observed_generation == Some(generation));
    if tally.applied_all {
        let available = if tally.any_pending {
            Condition::new(
                CONDITION_AVAILABLE,
                false,
                REASON_SOME_NOT_AVAILABLE,
                "some manifests are not available yet",
            )
        } else if tally.any_untrackable {
            Condition::new(
                CONDITION_AVAILABLE,
                true,
                REASON_NOT_TRACKABLE,
                "all trackable manifests are available; some are not trackable",
            )
        } else {
            Condition::new(CONDITION_AVAILABLE, true, REASON_ALL_AVAILABLE, "all manifests are available")
        };
        set_condition(&mut conditions, available.observing(generation), now);
    } else {
        conditions.retain(|c| c.type_ != CONDITION_AVAILABLE);
    }
    conditions
}

/// The manifest condition reason of a target error.
pub(super) fn failure_reason(e: &TargetError) -> &'static str {
    match e {
        // KubeFleet reports every refused write, a field manager's
        // conflict included, as a failed apply.
        TargetError::Invalid(_) | TargetError::Conflict(_) => super::strategy::REASON_APPLY_FAILED,
        TargetError::NotServed(_) => "DecodingErred",
        TargetError::Unavailable(_) => "ClusterUnavailable",
    }
}

/// The message of a target error about `manifest` (and `live`, the object
/// on the member if read), as reported to the hub: the API server may echo
/// a field's value in it, so one quoting a Secret's data is withheld
/// ([`scrub_message`]).
pub(super) fn failure_message(e: &TargetError, manifest: &Object, live: Option<&Object>) -> String {
    let objects: Vec<Value> = [Some(manifest), live]
        .into_iter()
        .flatten()
        .filter(|o| o.kind == "Secret")
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect();
    scrub_message(e.to_string(), failure_reason(e), &objects.iter().collect::<Vec<_>>())
}

/// Deletes everything a removed Work placed (later waves first); returns
/// what could not be deleted. Only for Works deleted with `propagationPolicy:
/// Delete`: an abandoning Work's objects are never passed here
/// (see [`super::forget_work`]).
pub async fn remove_work<T: Target>(target: &T, previous: &Entry) -> Vec<ResourceId> {
    let mut ids = previous.placed.clone();
    ids.sort_by_key(|id| std::cmp::Reverse(wave(&id.group, &id.kind)));
    let mut left = Vec::new();
    for id in ids {
        if let Err(e) = withdraw(target, &id).await {
            tracing::warn!("could not delete {id}: {e}");
            left.push(id);
        }
    }
    left
}

/// Takes back one object Fleet placed: deletes it, unless something else
/// owns it too (`metadata.ownerReferences`; Fleet sets none, so it was
/// co-owned under `allowCoOwnership`). That one stays, with its other
/// owners, as Kubernetes' garbage collector leaves an object that still
/// has an owner — and as KubeFleet leaves it.
async fn withdraw<T: Target>(target: &T, id: &ResourceId) -> Result<(), TargetError> {
    match target.get(id).await? {
        Some(live) if !live.metadata.owner_references.is_empty() => {
            tracing::info!("{id} has other owners: left in place");
            Ok(())
        }
        Some(_) => target.delete(id).await.map(|_| ()),
        None => Ok(()),
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod strategy_tests;

#[cfg(test)]
#[path = "apply_work_tests.rs"]
mod tests;
