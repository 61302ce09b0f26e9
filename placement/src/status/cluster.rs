//! One chosen cluster's entry in `status.placementStatuses`.

use fleet_api::binding::{rollout_predates_policy, spec_of as binding_spec_of, BindingSpec, STATE_BOUND};
use fleet_api::conditions::{find, Condition};
use fleet_api::envelope::{ENVELOPE_NAMESPACE_LABEL, ENVELOPE_NAME_LABEL, ENVELOPE_WORK_LABEL};
use fleet_api::placement::{PerClusterStatus, PER_CLUSTER_SCHEDULED};
use fleet_api::work::{
    status_of, ManifestCondition, WorkStatus, APPLY_TYPE_REPORT_DIFF, CONDITION_APPLIED, CONDITION_AVAILABLE,
    CONDITION_DIFF_REPORTED,
};
use fleet_api::Object;
use serde_json::{json, Value};

use super::*;
use crate::works::{PARENT_BINDING_LABEL, PARENT_RESOURCE_INDEX_LABEL};

/// The index of a group's first snapshot from its name
/// (`<placement>-<index>-snapshot`), if it has that shape.
pub fn snapshot_index_of_name(name: &str) -> Option<u64> {
    let (_, index) = name.strip_suffix("-snapshot")?.rsplit_once('-')?;
    index.parse().ok()
}

/// A Work condition that speaks for the Work's current generation.
fn current<'a>(work: &Object, conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    find(conditions, type_).filter(|c| c.observed_generation.unwrap_or(0) == work.metadata.generation)
}

/// The `envelope` entry of status lists for a Work that unwraps an envelope
/// (from its labels): `{name, namespace?, type}`.
fn envelope_of(work: &Object) -> Option<Value> {
    let labels = &work.metadata.labels;
    let type_ = labels.get(ENVELOPE_WORK_LABEL)?;
    let mut entry = json!({"name": labels.get(ENVELOPE_NAME_LABEL).cloned().unwrap_or_default(), "type": type_});
    if let Some(ns) = labels.get(ENVELOPE_NAMESPACE_LABEL) {
        entry["namespace"] = json!(ns);
    }
    Some(entry)
}

/// Every manifest condition of `works` with its Work's envelope, ordered by
/// identifier.
fn manifests_of(works: &[&Object]) -> Vec<(ManifestCondition, Option<Value>)> {
    let mut manifests: Vec<(ManifestCondition, Option<Value>)> = works
        .iter()
        .flat_map(|w| {
            let envelope = envelope_of(w);
            status_of(w).manifest_conditions.into_iter().map(move |m| (m, envelope.clone()))
        })
        .collect();
    manifests.sort_by(|a, b| a.0.identifier.cmp(&b.0.identifier).then_with(|| a.1.is_some().cmp(&b.1.is_some())));
    manifests
}

/// The manifests of `works` whose condition `type_` is False, as
/// `failedPlacements` entries (at most [`MAX_FAILED_PLACEMENTS`]).
fn failed_placements(works: &[&Object], type_: &str) -> Vec<Value> {
    manifests_of(works)
        .iter()
        .filter_map(|(m, envelope)| {
            let condition = find(&m.conditions, type_).filter(|c| c.status == "False")?;
            let id = &m.identifier;
            let mut entry = json!({"group": id.group, "version": id.version, "kind": id.kind, "name": id.name});
            if !id.namespace.is_empty() {
                entry["namespace"] = json!(id.namespace);
            }
            if let Some(e) = envelope {
                entry["envelope"] = e.clone();
            }
            entry["condition"] = fleet_api::typed::encode(condition);
            Some(entry)
        })
        .take(MAX_FAILED_PLACEMENTS)
        .collect()
}

/// The manifests of `works` reporting drifts (`driftDetails`) or diffs
/// (`diffDetails`), as `driftedPlacements` / `diffedPlacements` entries:
/// the object's identity and the agent's details (at most
/// [`MAX_FAILED_PLACEMENTS`]).
fn detail_placements(works: &[&Object], drift: bool) -> Vec<Value> {
    let (list, first) = if drift {
        ("observedDrifts", "firstDriftedObservedTime")
    } else {
        ("observedDiffs", "firstDiffedObservedTime")
    };
    manifests_of(works)
        .iter()
        .filter_map(|(m, envelope)| {
            let details = if drift { m.drift_details.as_ref() } else { m.diff_details.as_ref() }?;
            let observed = details.get(list).and_then(Value::as_array).filter(|a| !a.is_empty())?;
            let id = &m.identifier;
            let mut entry = json!({"group": id.group, "version": id.version, "kind": id.kind, "name": id.name});
            if !id.namespace.is_empty() {
                entry["namespace"] = json!(id.namespace);
            }
            for key in ["observationTime", first] {
                if let Some(v) = details.get(key) {
                    entry[key] = v.clone();
                }
            }
            if let Some(e) = envelope {
                entry["envelope"] = e.clone();
            }
            if let Some(g) = details.get("observedInMemberClusterGeneration") {
                entry["targetClusterObservedGeneration"] = g.clone();
            }
            entry[list] = Value::Array(observed.clone());
            Some(entry)
        })
        .take(MAX_FAILED_PLACEMENTS)
        .collect()
}

/// The binding's Works rendered for its bound resource index.
fn current_works<'a>(facts: &ClusterRollout<'a>, bound: Option<u64>) -> Vec<&'a Object> {
    let Some(index) = bound.map(|i| i.to_string()) else { return Vec::new() };
    let binding_name = &facts.binding.metadata.name;
    let label_ok = |w: &Object, label: &str, want: &str| w.metadata.labels.get(label).is_some_and(|v| v == want);
    facts
        .works
        .iter()
        .filter(|w| label_ok(w, PARENT_RESOURCE_INDEX_LABEL, &index) && label_ok(w, PARENT_BINDING_LABEL, binding_name))
        .collect()
}

/// The cluster's rollout conditions in order, stopping after the first that
/// is not True, and its failed placements; `report_diff` when the binding's
/// apply strategy is `ReportDiff`.
fn conditions(
    facts: &ClusterRollout,
    spec: &BindingSpec,
    bound: Option<u64>,
    report_diff: bool,
    generation: i64,
) -> (Vec<Condition>, Vec<Value>) {
    let mut out = Vec::new();
    if facts.external && (bound.is_none() || rollout_predates_policy(facts.binding, spec)) {
        // No staged update run has reached this cluster yet, or not since
        // the scheduler moved it to a new policy snapshot (SU-13).
        let message = "In the process of deciding whether to roll out some version of the resources or not";
        out.push(Condition::unknown(ROLLOUT_STARTED, REASON_ROLLOUT_UNKNOWN, message));
        return (observe(out, generation), Vec::new());
    }
    let latest_ok = facts.external
        || (facts.overrides_current && facts.latest_resource_index.is_none_or(|latest| bound == Some(latest)));
    if bound.is_none() || !latest_ok {
        let message = "The resources cannot be updated to the latest because of the rollout strategy";
        out.push(Condition::new(ROLLOUT_STARTED, false, REASON_ROLLOUT_NOT_STARTED, message));
        return (observe(out, generation), Vec::new());
    }
    let index = bound.map(|i| i.to_string()).unwrap_or_default();
    let started = "Detected the new changes on the resources and started the rollout process";
    out.push(Condition::new(ROLLOUT_STARTED, true, REASON_ROLLOUT_STARTED, started));
    match &facts.rendering {
        Rendering::OverrideFailed(why) => {
            let message = format!("Failed to apply the override rules on the resources: {why}");
            out.push(Condition::new(OVERRIDDEN, false, REASON_OVERRIDE_FAILED, message));
            return (observe(out, generation), Vec::new());
        }
        Rendering::OverridePending => {
            let message = "Waiting for the override snapshots of this cluster";
            out.push(Condition::unknown(OVERRIDDEN, REASON_OVERRIDE_PENDING, message));
            return (observe(out, generation), Vec::new());
        }
        Rendering::Overridden => {
            let message = "Successfully applied the override rules on the resources";
            out.push(Condition::new(OVERRIDDEN, true, REASON_OVERRIDDEN, message));
        }
        // A Work that could not be made after overrides applied (EN-8, or
        // an overridden object left invalid) still reports them applied.
        Rendering::WorkFailed(_)
            if !spec.cluster_resource_override_snapshots.is_empty() || !spec.resource_override_snapshots.is_empty() =>
        {
            let message = "Successfully applied the override rules on the resources";
            out.push(Condition::new(OVERRIDDEN, true, REASON_OVERRIDDEN, message));
        }
        Rendering::NoOverrides | Rendering::WorkFailed(_) => {
            let message = "No override rules are configured for the selected resources";
            out.push(Condition::new(OVERRIDDEN, true, REASON_NO_OVERRIDE, message));
        }
    }
    if let Rendering::WorkFailed(why) = &facts.rendering {
        let message = format!("Failed to synchronize the work to the latest: {why}");
        out.push(Condition::new(WORK_SYNCHRONIZED, false, REASON_SYNC_WORK_FAILED, message));
        return (observe(out, generation), Vec::new());
    }

    let current_works = current_works(facts, bound);
    let synced = facts.works_in_sync
        && current_works.len() == facts.works.len()
        && current_works.len() >= facts.expected_works.max(1);
    if !synced {
        let message = format!(
            "{} of {} work object(s) are synchronized to resource snapshot index {index}",
            current_works.len(),
            facts.expected_works.max(1)
        );
        out.push(Condition::new(WORK_SYNCHRONIZED, false, REASON_WORK_NOT_SYNCHRONIZED, message));
        return (observe(out, generation), Vec::new());
    }
    let message = "All of the works are synchronized to the latest";
    out.push(Condition::new(WORK_SYNCHRONIZED, true, CLUSTER_REASON_WORK_SYNCED, message));

    let statuses: Vec<_> = current_works.iter().map(|w| (*w, status_of(w))).collect();
    if report_diff {
        out.push(diff_reported(&statuses));
        return (observe(out, generation), Vec::new());
    }
    let applied: Vec<Option<&Condition>> =
        statuses.iter().map(|(w, s)| current(w, &s.conditions, CONDITION_APPLIED)).collect();
    if let Some((w, _)) = statuses.iter().zip(&applied).find(|(_, c)| c.is_some_and(|c| c.status == "False")) {
        let message = format!("Work object {} has failed to apply", w.0.metadata.name);
        out.push(Condition::new(APPLIED, false, CLUSTER_REASON_NOT_APPLIED, message));
        return (observe(out, generation), failed_placements(&current_works, CONDITION_APPLIED));
    }
    if let Some(((w, _), _)) = statuses.iter().zip(&applied).find(|(_, c)| !c.is_some_and(Condition::is_true)) {
        let message = format!("Work object {} is not yet applied", w.metadata.name);
        out.push(Condition::unknown(APPLIED, REASON_APPLY_PENDING, message));
        return (observe(out, generation), Vec::new());
    }
    out.push(Condition::new(APPLIED, true, CLUSTER_REASON_APPLIED, "All corresponding work objects are applied"));

    let available: Vec<Option<&Condition>> =
        statuses.iter().map(|(w, s)| current(w, &s.conditions, CONDITION_AVAILABLE)).collect();
    if let Some(((w, _), _)) = statuses.iter().zip(&available).find(|(_, c)| !c.is_some_and(Condition::is_true)) {
        let message = format!("Work object {} is not yet available", w.metadata.name);
        out.push(Condition::new(AVAILABLE, false, CLUSTER_REASON_NOT_AVAILABLE, message));
        return (observe(out, generation), failed_placements(&current_works, CONDITION_AVAILABLE));
    }
    let untrackable = statuses
        .iter()
        .zip(&available)
        .find(|(_, c)| c.is_some_and(|c| c.reason == fleet_api::work::REASON_NOT_TRACKABLE));
    match untrackable {
        Some(((w, _), _)) => {
            let message = format!("The availability of work object {} is not trackable", w.metadata.name);
            out.push(Condition::new(AVAILABLE, true, REASON_NOT_TRACKABLE, message));
        }
        None => {
            let message = "All corresponding work objects are available";
            out.push(Condition::new(AVAILABLE, true, CLUSTER_REASON_AVAILABLE, message));
        }
    }
    (observe(out, generation), Vec::new())
}

/// `DiffReported` of a cluster in ReportDiff mode, from its Works'
/// `DiffReported` at their generations. As KubeFleet, a failed report
/// lists neither failed nor diffed placements: the Work's manifest
/// conditions say which manifests could not be compared, and why.
fn diff_reported(statuses: &[(&Object, WorkStatus)]) -> Condition {
    let reported: Vec<Option<&Condition>> =
        statuses.iter().map(|(w, s)| current(w, &s.conditions, CONDITION_DIFF_REPORTED)).collect();
    if let Some(((w, _), _)) = statuses.iter().zip(&reported).find(|(_, c)| c.is_some_and(|c| c.status == "False")) {
        let message = format!("Work object {} could not report the differences of all its manifests", w.metadata.name);
        return Condition::new(DIFF_REPORTED, false, CLUSTER_REASON_DIFF_NOT_REPORTED, message);
    }
    if reported.iter().any(|c| !c.is_some_and(Condition::is_true)) {
        let message = "Diff reporting has just started; its status is not yet to be known";
        return Condition::unknown(DIFF_REPORTED, REASON_DIFF_PENDING, message);
    }
    let message = "The differences of all corresponding work objects from the member cluster are reported";
    Condition::new(DIFF_REPORTED, true, CLUSTER_REASON_DIFF_REPORTED, message)
}

/// Every condition with `observedGeneration` = `generation`.
fn observe(conditions: Vec<Condition>, generation: i64) -> Vec<Condition> {
    conditions.into_iter().map(|c| c.observing(generation)).collect()
}

/// Updates one chosen cluster's entry: keeps its `Scheduled` condition (set
/// by the scheduler), sets `RolloutStarted`, `Overridden`
/// (`NoOverrideSpecified`), `WorkSynchronized`, `Applied` and `Available`
/// (`DiffReported` instead of the last two when the binding's apply
/// strategy is `ReportDiff`) with docs/spec/rollout.md's reasons and `observedGeneration` = `generation` —
/// each only while the ones before are True (later ones are removed) —,
/// `observedResourceIndex` = the latest index (with `strategy.type:
/// External`, the binding's bound index: the cluster is judged on that
/// index, and is Unknown/`RolloutStartedUnknown` until a run binds it:
/// SU-13), and
/// `failedPlacements` (≤ 100). Transition times move only when a status does.
pub fn fold_cluster(entry: &mut PerClusterStatus, facts: &ClusterRollout, generation: i64, now: &str) {
    let spec = binding_spec_of(facts.binding);
    let bound = (spec.state == STATE_BOUND).then(|| snapshot_index_of_name(&spec.resource_snapshot_name)).flatten();
    entry.cluster_name = facts.cluster.to_string();
    // As KubeFleet: a rolling update's cluster reports the latest index,
    // even while the rollout has not reached it (its conditions say so);
    // an External one the index its binding holds (SU-13).
    let observed = if facts.external { bound } else { facts.latest_resource_index.or(bound) };
    entry.observed_resource_index = observed.map(|i| i.to_string()).unwrap_or_default();
    let strategy = spec.apply_strategy.as_ref();
    let report_diff = strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some(APPLY_TYPE_REPORT_DIFF);
    let (computed, failed) = conditions(facts, &spec, bound, report_diff, generation);
    let old = std::mem::take(&mut entry.conditions);
    entry.conditions.extend(find(&old, PER_CLUSTER_SCHEDULED).cloned());
    entry.conditions.extend(computed.into_iter().map(|c| carried(&old, c, now)));
    let ours = |t: &str| t == PER_CLUSTER_SCHEDULED || t == DIFF_REPORTED || ROLLOUT_CONDITIONS.contains(&t);
    entry.conditions.extend(old.iter().filter(|c| !ours(&c.type_)).cloned());
    for (field, list) in [
        (
            "applicableClusterResourceOverrides",
            spec.cluster_resource_override_snapshots.iter().map(|n| json!(n)).collect(),
        ),
        ("applicableResourceOverrides", spec.resource_override_snapshots.clone()),
    ] {
        if list.is_empty() || bound.is_none() {
            entry.rest.remove(field);
        } else {
            entry.rest.insert(field.into(), Value::Array(list));
        }
    }
    let current_works = current_works(facts, bound);
    // Which details KubeFleet shows: in ReportDiff mode the diffs once
    // DiffReported is True; otherwise drifts whenever applying was
    // reached, and diffs (of a refused take-over) when Applied or
    // Available is False.
    let is = |type_: &str, status: &str| find(&entry.conditions, type_).is_some_and(|c| c.status == status);
    let (drifted, diffed) = if report_diff {
        (Vec::new(), if is(DIFF_REPORTED, "True") { detail_placements(&current_works, false) } else { Vec::new() })
    } else {
        let failed_apply = is(APPLIED, "False") || is(AVAILABLE, "False");
        let reached = find(&entry.conditions, APPLIED).is_some();
        (
            if reached { detail_placements(&current_works, true) } else { Vec::new() },
            if failed_apply { detail_placements(&current_works, false) } else { Vec::new() },
        )
    };
    for (field, list) in [("failedPlacements", failed), ("driftedPlacements", drifted), ("diffedPlacements", diffed)] {
        if list.is_empty() {
            entry.rest.remove(field);
        } else {
            entry.rest.insert(field.into(), Value::Array(list));
        }
    }
}
