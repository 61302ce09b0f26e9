//! A ManifestWork's status from its mirrored Works' reports: per manifest,
//! the agent's `Applied`/`Available` conditions (and `StatusFeedbackSynced`
//! with the `statusFeedback` values its feedback rules read) under the
//! ManifestWork's ordinals; for the work, `Applied`, `Available`, `Progressing` and
//! `Degraded`.
//!
//! A Work's report counts when it is *current*: mirrored from this
//! ManifestWork generation and observed by the agent at the Work's own
//! generation. Until every Work is current the work is `Progressing`, and
//! `Applied`/`Available` keep what they said before (so a rollout reading
//! them sees their older `observedGeneration`). Current reports set the
//! conditions observing this generation:
//! - `Applied` True when every manifest applied (a `CreateOnly` manifest the
//!   agent found changed on the cluster, or already there, counts as
//!   applied: it exists and is left alone; a `ReadOnly` one counts as applied and available once the
//!   agent compared it, its `DiffReported` reason kept), else False;
//! - `Available` True when every manifest is available, else False;
//! - `Degraded` True when some manifest failed to apply;
//! - `Progressing` True until both `Applied` and `Available` are True;
//! - `Complete` from the manifests' condition rules ([`super::rules`]),
//!   when any has a `Complete` rule.

use fleet_api::conditions::{find, set_condition, Condition};
use fleet_api::ocm::manifestwork::{
    self, ConditionRule, ManifestCondition, ManifestResourceMeta, ManifestResourceStatus, ManifestWorkStatus,
    StatusFeedback, CONDITION_APPLIED, CONDITION_AVAILABLE, CONDITION_DEGRADED, CONDITION_PROGRESSING,
};
use fleet_api::work::{self, WorkStatus};
use fleet_api::Object;
use serde_json::Value;

use super::rules::{self, CONDITION_COMPLETE};
use super::{config_of, identifier_of, placements, Placed, UpdateClass, MANIFESTWORK_GENERATION_LABEL};

/// The agent's reasons for a `CreateOnly` manifest that exists and is left
/// alone: changed on the cluster since created, or there before.
const LEFT_ALONE: &[&str] = &["FoundDrifts", "NotTakenOver"];

/// One manifest's report, as the ManifestWork shows it.
struct ManifestReport {
    condition: ManifestCondition,
    applied: bool,
    available: bool,
    /// With a `Complete` rule: whether the rule says complete.
    complete: Option<bool>,
}

/// The conditions `rules` set from the status the agent mirrored in
/// `reported` (none before the first mirror); a condition keeps its
/// transition time from `previous` while its status holds, else takes the
/// time the agent observed the status.
fn rule_conditions(
    rules: &[ConditionRule],
    manifest: &Value,
    reported: Option<&work::ManifestCondition>,
    previous: &[Condition],
) -> Vec<Condition> {
    let Some(mirrored) = reported.and_then(|m| m.back_reported_status.as_ref()) else { return Vec::new() };
    let mut object = manifest.clone();
    if let Value::Object(map) = &mut object {
        map.insert("status".into(), mirrored.observed_status.get("status").cloned().unwrap_or(Value::Null));
    }
    rules
        .iter()
        .map(|rule| {
            let mut c = rules::evaluate(rule, &object);
            c.last_transition_time = match find(previous, &c.type_) {
                Some(p) if p.status == c.status && !p.last_transition_time.is_empty() => p.last_transition_time.clone(),
                _ => mirrored.observation_time.clone(),
            };
            c
        })
        .collect()
}

/// The report of the manifest `placed` (of the ManifestWork's manifest
/// `ordinal`) in its Work's status, if the Work is current.
fn report(
    ordinal: usize,
    manifest: &Value,
    placed: &Placed,
    status: &WorkStatus,
    generation: i64,
    rules: &[ConditionRule],
    previous: &[Condition],
) -> ManifestReport {
    let id = identifier_of(manifest);
    let api_version = manifest.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let meta = ManifestResourceMeta {
        ordinal: ordinal as i64,
        group: id.group.clone(),
        version: api_version.rsplit('/').next().unwrap_or_default().to_string(),
        kind: manifest.get("kind").and_then(Value::as_str).unwrap_or_default().to_string(),
        resource: id.resource,
        name: id.name,
        namespace: id.namespace,
    };
    let reported = status.manifest_conditions.iter().find(|m| m.identifier.ordinal == placed.ordinal as i64);
    let mut conditions: Vec<Condition> = reported.map(|m| m.conditions.clone()).unwrap_or_default();
    if placed.class.update == UpdateClass::ReadOnly {
        let synced = find(&conditions, "StatusFeedbackSynced").cloned();
        conditions = read_only(&conditions);
        conditions.extend(synced);
    }
    for c in &mut conditions {
        c.observed_generation = Some(generation);
        let created_earlier = placed.class.update == UpdateClass::CreateOnly
            && c.type_ == CONDITION_APPLIED
            && !c.is_true()
            && LEFT_ALONE.contains(&c.reason.as_str());
        if created_earlier {
            c.status = "True".into();
            c.reason = "CreateOnly".into();
            c.message = "exists on the cluster; CreateOnly leaves it as the cluster has it".into();
        }
    }
    for mut c in rule_conditions(rules, manifest, reported, previous) {
        c.observed_generation = Some(generation);
        conditions.retain(|o| o.type_ != c.type_);
        conditions.push(c);
    }
    let is_true = |type_: &str| find(&conditions, type_).is_some_and(Condition::is_true);
    let (applied, available) = (is_true(CONDITION_APPLIED), is_true(CONDITION_AVAILABLE));
    let complete = rules.iter().any(|r| r.condition == CONDITION_COMPLETE).then(|| is_true(CONDITION_COMPLETE));
    // The values the agent read on the member (`feedbackRules`).
    let values = reported.and_then(|m| m.status_feedback.as_ref()).map(|f| f.values.clone()).unwrap_or_default();
    ManifestReport {
        condition: ManifestCondition { resource_meta: meta, conditions, status_feedback: StatusFeedback { values } },
        applied,
        available,
        complete,
    }
}

/// A `ReadOnly` manifest's conditions from its `DiffReported` report (the
/// agent writes nothing and compares): read means applied and available.
fn read_only(reported: &[Condition]) -> Vec<Condition> {
    let Some(diff) = find(reported, work::CONDITION_DIFF_REPORTED) else { return Vec::new() };
    let message = format!("ReadOnly: nothing is written; {}", diff.message);
    let mut out = vec![
        Condition { message: message.clone(), ..Condition::new(CONDITION_APPLIED, diff.is_true(), &diff.reason, "") },
        Condition { message, ..Condition::new(CONDITION_AVAILABLE, diff.is_true(), &diff.reason, "") },
    ];
    for c in &mut out {
        c.last_transition_time = diff.last_transition_time.clone();
    }
    out
}

/// Whether a Work is current for ManifestWork generation `generation`.
fn current(work: &Object, generation: i64) -> bool {
    let mirrored = work.metadata.labels.get(MANIFESTWORK_GENERATION_LABEL).and_then(|g| g.parse::<i64>().ok());
    let status = work::status_of(work);
    // A ReportDiff Work (ReadOnly manifests) reports `DiffReported` in place of `Applied`.
    let observed = [work::CONDITION_APPLIED, work::CONDITION_DIFF_REPORTED]
        .iter()
        .find_map(|t| find(&status.conditions, t))
        .and_then(|c| c.observed_generation);
    mirrored == Some(generation) && observed == Some(work.metadata.generation)
}

/// The ManifestWork's status from its Works (`works`: the stored mirrored
/// Works), on top of `previous`; transition times move to `now`.
pub fn fold_status(mw: &Object, works: &[Object], now: &str) -> ManifestWorkStatus {
    let previous = manifestwork::status_of(mw);
    let generation = mw.metadata.generation;
    let spec = manifestwork::spec_of(mw);
    let placed = placements(&mw.metadata.name, &spec);
    let all_current = placed.iter().all(|p| works.iter().any(|w| w.metadata.name == p.work && current(w, generation)));
    let mut status = previous.clone();
    let progressing = |status: &mut ManifestWorkStatus, message: &str| {
        let c = Condition::new(CONDITION_PROGRESSING, true, "Applying", message).observing(generation);
        set_condition(&mut status.conditions, c, now);
    };
    if !all_current {
        progressing(&mut status, "the ManifestWork is being delivered to its cluster");
        return status;
    }
    let mut reports = Vec::with_capacity(placed.len());
    for (ordinal, (manifest, p)) in spec.workload.manifests.iter().zip(&placed).enumerate() {
        let work_status = works.iter().find(|w| w.metadata.name == p.work).map(work::status_of).unwrap_or_default();
        let rules = config_of(&spec, manifest).map(|c| c.condition_rules.as_slice()).unwrap_or_default();
        let before = previous.resource_status.manifests.iter().find(|m| m.resource_meta.ordinal == ordinal as i64);
        let before = before.map(|m| m.conditions.as_slice()).unwrap_or_default();
        reports.push(report(ordinal, manifest, p, &work_status, generation, rules, before));
    }
    let failed: Vec<String> =
        reports.iter().filter(|r| !r.applied).map(|r| r.condition.resource_meta.ordinal.to_string()).collect();
    let unavailable = reports.iter().filter(|r| !r.available).count();
    let completable: Vec<bool> = reports.iter().filter_map(|r| r.complete).collect();
    status.resource_status = ManifestResourceStatus { manifests: reports.into_iter().map(|r| r.condition).collect() };
    let applied = if failed.is_empty() {
        Condition::new(CONDITION_APPLIED, true, "AppliedManifestWorkComplete", "Apply manifest work complete")
    } else {
        let message = format!("Failed to apply manifest(s) {}", failed.join(", "));
        Condition::new(CONDITION_APPLIED, false, "AppliedManifestWorkFailed", message)
    };
    let available = if unavailable == 0 {
        Condition::new(CONDITION_AVAILABLE, true, "ResourcesAvailable", "All resources are available")
    } else {
        Condition::new(
            CONDITION_AVAILABLE,
            false,
            "ResourcesNotAvailable",
            format!("{unavailable} of the resources are not available"),
        )
    };
    let degraded = if failed.is_empty() {
        Condition::new(CONDITION_DEGRADED, false, "AsExpected", "No manifest failed")
    } else {
        Condition::new(
            CONDITION_DEGRADED,
            true,
            "ApplyFailed",
            format!("manifest(s) {} failed to apply", failed.join(", ")),
        )
    };
    let done = applied.is_true() && available.is_true();
    for c in [applied, available, degraded].into_iter().chain(rules::work_complete(&completable)) {
        set_condition(&mut status.conditions, c.observing(generation), now);
    }
    if done {
        let c =
            Condition::new(CONDITION_PROGRESSING, false, "Completed", "Applied and available").observing(generation);
        set_condition(&mut status.conditions, c, now);
    } else {
        progressing(&mut status, "not every manifest is applied and available yet");
    }
    status
}
