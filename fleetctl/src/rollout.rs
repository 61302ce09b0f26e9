//! `rollout status` of a placement, decided from the placement's status
//! alone: how far each chosen cluster got (its [`Stage`]), and whether the
//! rollout is complete, failed or still in progress ([`Outcome`]). Pure
//! functions of the object; [`render`] turns the result into text.
//!
//! A condition counts only when it is current: its `observedGeneration` is
//! the placement's `metadata.generation` (or absent). A stale condition is
//! treated as not reported yet, so an old failure or an old success does not
//! decide the rollout of a newer generation.
//!
//! A placement whose `applyStrategy.type` is `ReportDiff` applies nothing:
//! its clusters end at `DiffReported` rather than `Applied`/`Available`
//! ([`REPORT_DIFF_ORDER`]), it is complete when `...DiffReported` is True,
//! and the text counts clusters "diff reported", not "available".

pub mod render;

use fleet_api::Object;
use serde_json::Value;

use crate::describe::placement::{gvk_of, namespaced_name_of};
use crate::staged::{RunOutcome, RunProgress};

/// The per-cluster condition types, in the order a rollout sets them.
pub const CONDITION_ORDER: [&str; 6] =
    ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"];
/// The same for a `ReportDiff` placement.
pub const REPORT_DIFF_ORDER: [&str; 5] =
    ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "DiffReported"];

/// The per-cluster condition types of a placement in that mode.
fn condition_order(report_diff: bool) -> &'static [&'static str] {
    if report_diff {
        &REPORT_DIFF_ORDER
    } else {
        &CONDITION_ORDER
    }
}

pub use fleet_api::placement::reports_diff;

/// How many pending clusters an in-progress message names.
const NAMED_CLUSTERS: usize = 3;

/// How far one cluster got: the last of the per-cluster conditions, in
/// rollout order, that is True (each earlier one being True too), or
/// [`Stage::Failed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// Not even `Scheduled` is True yet.
    Pending,
    /// Chosen by the scheduler.
    Scheduled,
    /// The rollout reached it.
    RolloutStarted,
    /// Overrides were applied to its copy of the resources.
    Overridden,
    /// Its Works hold the latest resources.
    WorkSynchronized,
    /// The member applied the resources.
    Applied,
    /// The resources are available on the member.
    Available,
    /// `ReportDiff`: the member reported its differences (nothing is applied).
    DiffReported,
    /// `Applied`, `Overridden` or `DiffReported` is False: the rollout failed there.
    Failed,
}

impl Stage {
    /// The word printed for the stage (the condition type, `Pending` or `Failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Pending => "Pending",
            Stage::Scheduled => "Scheduled",
            Stage::RolloutStarted => "RolloutStarted",
            Stage::Overridden => "Overridden",
            Stage::WorkSynchronized => "WorkSynchronized",
            Stage::Applied => "Applied",
            Stage::Available => "Available",
            Stage::DiffReported => "DiffReported",
            Stage::Failed => "Failed",
        }
    }

    /// Whether the cluster is done: available, or (`ReportDiff`) diff reported.
    pub fn is_done(self) -> bool {
        matches!(self, Stage::Available | Stage::DiffReported)
    }

    /// The stage reached when condition `type_` (of [`CONDITION_ORDER`]) is True.
    fn reached_by(type_: &str) -> Stage {
        match type_ {
            "Scheduled" => Stage::Scheduled,
            "RolloutStarted" => Stage::RolloutStarted,
            "Overridden" => Stage::Overridden,
            "WorkSynchronized" => Stage::WorkSynchronized,
            "Applied" => Stage::Applied,
            "Available" => Stage::Available,
            "DiffReported" => Stage::DiffReported,
            _ => Stage::Pending,
        }
    }
}

/// One chosen cluster's progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterProgress {
    /// The member cluster.
    pub cluster: String,
    /// The resource index the cluster has (`observedResourceIndex`), if reported.
    pub resource_index: Option<String>,
    /// How far it got.
    pub stage: Stage,
    /// Why it is not further (empty once done): the first failed
    /// placement, else the blocking condition, else `waiting for TYPE`.
    pub detail: String,
}

/// Whether the rollout is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The placement's `...Available` (`ReportDiff`: `...DiffReported`)
    /// condition is True at its generation.
    Complete,
    /// A cluster (or the placement) reports a failure; the text names it.
    Failed(String),
    /// Neither yet; the text says what is pending.
    InProgress(String),
}

/// The rollout of one placement, as its status tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// `clusterresourceplacement "web"`, for messages.
    pub placement: String,
    /// The placement's `metadata.generation`.
    pub generation: i64,
    /// The latest resource index (`status.observedResourceIndex`), if reported.
    pub latest_index: Option<String>,
    /// Whether the placement only reports diffs (`applyStrategy.type: ReportDiff`).
    pub report_diff: bool,
    /// One entry per chosen cluster, in the status's order.
    pub clusters: Vec<ClusterProgress>,
    /// Complete, failed or in progress.
    pub outcome: Outcome,
    /// For an External placement: its staged update run and where it is.
    pub run: Option<String>,
}

impl Progress {
    /// How many clusters are done ([`Stage::is_done`]).
    pub fn available(&self) -> usize {
        self.clusters.iter().filter(|c| c.stage.is_done()).count()
    }

    /// What a done cluster is: `available`, or `diff reported`.
    pub fn done_word(&self) -> &'static str {
        if self.report_diff {
            "diff reported"
        } else {
            "available"
        }
    }

    /// `N/M clusters available` (`ReportDiff`: `N/M clusters diff reported`).
    pub fn summary(&self) -> String {
        format!("{}/{} clusters {}", self.available(), self.clusters.len(), self.done_word())
    }
}

/// The rollout progress of a ClusterResourcePlacement or ResourcePlacement.
pub fn progress(placement: &Object) -> Progress {
    let generation = placement.metadata.generation;
    let report_diff = reports_diff(placement);
    let status = placement.status();
    let latest_index = status.and_then(|s| s.get("observedResourceIndex")).map(text).filter(|s| !s.is_empty());
    let clusters: Vec<ClusterProgress> = status
        .and_then(|s| s.get("placementStatuses"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|entry| cluster_progress(entry, generation, report_diff))
        .collect();
    let name = format!("{} {:?}", placement.kind.to_ascii_lowercase(), placement.metadata.name);
    let conditions = status.and_then(|s| s.get("conditions")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut progress = Progress {
        placement: name,
        generation,
        latest_index,
        report_diff,
        clusters,
        outcome: Outcome::Complete,
        run: None,
    };
    progress.outcome = outcome(&placement.kind, conditions, &progress);
    progress
}

/// Holds a complete rollout back until the placement and every chosen
/// cluster report `latest` (the newest resource snapshot's index, when known):
/// right after a resource change the status still describes the previous
/// snapshot, which must not count as done.
pub fn require_latest_index(mut progress: Progress, latest: Option<u64>) -> Progress {
    let Some(latest) = latest else { return progress };
    if progress.outcome != Outcome::Complete {
        return progress;
    }
    let want = latest.to_string();
    let behind: Vec<&str> = progress
        .clusters
        .iter()
        .filter(|c| c.resource_index.as_deref() != Some(want.as_str()))
        .map(|c| c.cluster.as_str())
        .collect();
    if progress.latest_index.as_deref() != Some(want.as_str()) || !behind.is_empty() {
        let mut why = format!("waiting for resource index {latest} to be rolled out");
        if !behind.is_empty() {
            why.push_str(&format!(" (clusters behind: {})", behind.join(", ")));
        }
        progress.outcome = Outcome::InProgress(why);
    }
    progress
}

/// The progress of an External placement, which its newest staged update
/// run (`run`, `None` when there is none) rolls out: in progress while
/// the run is, failed when it failed (or a cluster did), and complete
/// once the run succeeded and the placement reports every cluster
/// Available at the run's resource index.
pub fn follow_run(mut progress: Progress, run: Option<&RunProgress>) -> Progress {
    let Some(run) = run else {
        progress.run = Some("no staged update run names this placement yet".to_string());
        if !matches!(progress.outcome, Outcome::Failed(_)) {
            progress.outcome = Outcome::InProgress(
                "the placement is External: create a staged update run naming it to roll it out".to_string(),
            );
        }
        return progress;
    };
    let (note, outcome) = match &run.outcome {
        RunOutcome::Succeeded => ("succeeded".to_string(), None),
        RunOutcome::Failed(why) => (format!("failed: {why}"), Some(Outcome::Failed(format!("{}: {why}", run.run)))),
        RunOutcome::InProgress(why) => (why.clone(), Some(Outcome::InProgress(format!("{}: {why}", run.run)))),
    };
    progress.run = Some(format!("{} (resource index {}): {note}", run.run, dash(&run.resource_index)));
    match outcome {
        None => require_latest_index(progress, run.resource_index.parse().ok()),
        Some(_) if matches!(progress.outcome, Outcome::Failed(_)) => progress,
        Some(outcome) => {
            progress.outcome = outcome;
            progress
        }
    }
}

fn dash(text: &str) -> &str {
    if text.is_empty() {
        "-"
    } else {
        text
    }
}

/// One `placementStatuses` entry's progress at `generation` (of a
/// `ReportDiff` placement with `report_diff`).
pub fn cluster_progress(entry: &Value, generation: i64, report_diff: bool) -> ClusterProgress {
    let conditions = entry.get("conditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let failed = entry.get("failedPlacements").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut stage = Stage::Pending;
    let mut detail = String::new();
    for &type_ in condition_order(report_diff) {
        match current_condition(conditions, type_, generation) {
            Some(c) if c["status"] == "True" => stage = Stage::reached_by(type_),
            Some(c) => {
                if is_failure(type_, c) {
                    stage = Stage::Failed;
                }
                detail = match failed.first() {
                    Some(object) => failed_placement_text(object),
                    None => condition_text(c),
                };
                break;
            }
            None => {
                detail = format!("waiting for {type_}");
                break;
            }
        }
    }
    ClusterProgress {
        cluster: entry.get("clusterName").map(text).unwrap_or_default(),
        resource_index: entry.get("observedResourceIndex").map(text).filter(|s| !s.is_empty()),
        stage,
        detail,
    }
}

/// Whether a condition that is not True means the rollout failed: `Applied`,
/// `Overridden` or `DiffReported` False, unless the reason says it is only pending.
fn is_failure(type_: &str, condition: &Value) -> bool {
    let reason = condition["reason"].as_str().unwrap_or("");
    condition["status"] == "False"
        && matches!(type_, "Applied" | "Overridden" | "DiffReported")
        && !reason.ends_with("Pending")
        && !reason.ends_with("Unknown")
}

/// The placement's outcome from its own conditions and its clusters'.
fn outcome(kind: &str, conditions: &[Value], progress: &Progress) -> Outcome {
    let (generation, clusters) = (progress.generation, progress.clusters.as_slice());
    let failed: Vec<&ClusterProgress> = clusters.iter().filter(|c| c.stage == Stage::Failed).collect();
    if let Some(first) = failed.first() {
        let mut message = format!("cluster {}: {}", first.cluster, first.detail);
        if failed.len() > 1 {
            message.push_str(&format!(" (and {} more failed clusters)", failed.len() - 1));
        }
        return Outcome::Failed(message);
    }
    for type_ in ["Overridden", "Applied", "DiffReported"] {
        let full = format!("{kind}{type_}");
        if let Some(c) = current_condition(conditions, &full, generation).filter(|c| is_failure(type_, c)) {
            return Outcome::Failed(condition_text(c));
        }
    }
    let order = condition_order(progress.report_diff);
    let available_type = format!("{kind}{}", order[order.len() - 1]);
    let available = conditions.iter().find(|c| c["type"] == available_type.as_str());
    if available.is_some_and(|c| c["status"] == "True") {
        if current_condition(conditions, &available_type, generation).is_some() {
            return Outcome::Complete;
        }
        let observed = available.and_then(|c| c.get("observedGeneration")).map(text).unwrap_or_default();
        return Outcome::InProgress(format!(
            "waiting for generation {generation} to be observed (the status is of generation {observed})"
        ));
    }
    Outcome::InProgress(pending_text(kind, conditions, progress))
}

/// What an in-progress rollout waits for: `N/M clusters available`, the
/// first clusters not done yet, and the first placement condition not True.
fn pending_text(kind: &str, conditions: &[Value], progress: &Progress) -> String {
    let (generation, clusters) = (progress.generation, progress.clusters.as_slice());
    let mut parts = vec![progress.summary()];
    let waiting: Vec<String> = clusters
        .iter()
        .filter(|c| !c.stage.is_done())
        .map(|c| format!("{} ({})", c.cluster, c.stage.as_str()))
        .collect();
    if !waiting.is_empty() {
        let mut names = waiting[..waiting.len().min(NAMED_CLUSTERS)].join(", ");
        if waiting.len() > NAMED_CLUSTERS {
            names.push_str(&format!(" and {} more", waiting.len() - NAMED_CLUSTERS));
        }
        parts.push(format!("waiting for {names}"));
    }
    let blocking = condition_order(progress.report_diff).iter().map(|t| format!("{kind}{t}")).find_map(|type_| {
        match current_condition(conditions, &type_, generation) {
            Some(c) if c["status"] == "True" => None,
            Some(c) => Some(condition_text(c)),
            None => Some(format!("{type_} not reported yet")),
        }
    });
    parts.extend(blocking);
    parts.join("; ")
}

/// Condition `type_` of `conditions` if it is of `generation` (or says no generation).
fn current_condition<'a>(conditions: &'a [Value], type_: &str, generation: i64) -> Option<&'a Value> {
    conditions
        .iter()
        .find(|c| c["type"] == type_)
        .filter(|c| c.get("observedGeneration").and_then(Value::as_i64).is_none_or(|g| g == generation))
}

/// `Type=Status (Reason): message`, leaving out what is empty.
pub fn condition_text(condition: &Value) -> String {
    let field = |name: &str| condition.get(name).map(text).unwrap_or_default();
    let mut out = format!("{}={}", field("type"), field("status"));
    let reason = field("reason");
    if !reason.is_empty() {
        out.push_str(&format!(" ({reason})"));
    }
    let message = field("message");
    if !message.is_empty() {
        out.push_str(&format!(": {message}"));
    }
    out
}

/// `group/version/Kind namespace/name: Type=Status (Reason): message` of a
/// `failedPlacements` entry.
pub fn failed_placement_text(object: &Value) -> String {
    let condition = object.get("condition").map_or_else(String::new, condition_text);
    let name = format!("{} {}", gvk_of(object), namespaced_name_of(object));
    if condition.is_empty() {
        name
    } else {
        format!("{name}: {condition}")
    }
}

/// A scalar as text (strings unquoted, null empty).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
