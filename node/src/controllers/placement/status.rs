//! Step 6: the placement's status — its six conditions in order, one entry
//! per chosen cluster (plus PickFixed's failed ones), the selected resources
//! and the latest resource index — written only when something changed, so
//! a burst of Work status updates becomes one placement status write.

use std::collections::HashMap;

use fleet_api::binding::{self, BindingSpec};
use fleet_api::conditions::{find, set_condition, Condition};
use fleet_api::placement::{
    self as placement_api, scheduled_condition_type, PerClusterStatus, PlacementStatus, ResourceIdentifier,
    PER_CLUSTER_SCHEDULED, PICK_FIXED, PICK_N,
};
use fleet_api::snapshot::{self as snapshot_api, RESOURCE_INDEX_LABEL};
use fleet_api::Object;
use fleet_placement::selection;
use fleet_placement::snapshot;
use fleet_placement::status::{self as status_fold, ClusterRollout, Rendering};

use super::namespace_status;
use super::render::{records, Rendered};
use super::scheduling::Scheduled;
use super::works::{bound_group, BindingWorks};
use super::{Step, View};
use crate::controllers::events::EventNote;

/// Placement-level transitions worth an event: (condition suffix, reason).
const MILESTONES: &[(&str, &str)] = &[
    ("Scheduled", "PlacementScheduleSuccess"),
    ("RolloutStarted", "PlacementRolloutStarted"),
    ("WorkSynchronized", "PlacementWorkSynchronized"),
    ("Applied", "PlacementApplied"),
    ("DiffReported", "PlacementDiffReported"),
    ("Available", "PlacementRolloutCompleted"),
];

/// The status write, if the status changed.
pub fn step(view: &View, scheduled: &Scheduled, works: &BindingWorks, rendered: &Rendered, now: &str) -> Option<Step> {
    let placement = &view.placement;
    let generation = placement.metadata.generation;
    let current = placement_api::status_of(placement);
    let mut status = current.clone();
    let external = view.is_external();
    let latest = snapshot::latest_resource_index(&view.resource_snapshots);
    status.placement_statuses = per_cluster(view, scheduled, works, rendered, &current, latest, now);
    if external {
        // SU-13: the snapshot every chosen cluster holds, if they agree.
        let common = status_fold::common_index(&status.placement_statuses).and_then(|i| i.parse::<u64>().ok());
        status.observed_resource_index = common.map(|i| i.to_string()).unwrap_or_default();
        status.selected_resources = match common {
            Some(i) if Some(i) != latest => snapshot_identifiers(view, i),
            Some(_) => selection::identifiers(&view.selected),
            None => Vec::new(),
        };
    } else {
        status.selected_resources = selection::identifiers(&view.selected);
        status.observed_resource_index = latest.map(|i| i.to_string()).unwrap_or_default();
    }

    let (fulfilled, reason, message) = scheduled.verdict();
    let type_ = scheduled_condition_type(&placement.kind);
    // fold_placement carries the transition time over from `current`.
    let scheduled_condition = Condition::new(&type_, fulfilled, reason, message).observing(generation);
    let strategy = view.spec.strategy.as_ref();
    let mode = status_fold::Mode {
        external,
        report_diff: strategy.and_then(|s| s.apply_strategy.as_ref()).is_some_and(|a| a.reports_diff()),
    };
    status.conditions = status_fold::fold_placement(
        &placement.kind,
        generation,
        &scheduled_condition,
        &status.placement_statuses,
        mode,
        &current.conditions,
        now,
    );
    let mirror_ops = namespace_status::sync(view, &mut status, &current, now);
    let mut step = namespace_status::write(placement, &current, &status, mirror_ops)?;
    step.events = milestone_events(&placement.kind, &current, &status);
    Some(step)
}

/// The identifiers of the resources in snapshot group `index` (an older
/// snapshot a staged update run rolled out everywhere), in their stored
/// order; none when history no longer keeps it.
fn snapshot_identifiers(view: &View, index: u64) -> Vec<ResourceIdentifier> {
    let resources: Vec<Object> = view
        .resource_snapshots
        .iter()
        .filter(|s| snapshot_api::index_of(s, RESOURCE_INDEX_LABEL) == Some(index))
        .flat_map(|s| snapshot_api::resource_spec_of(s).selected_resources)
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect();
    selection::identifiers(&resources)
}

/// One entry per chosen cluster (its binding's rollout folded in), then
/// one unnamed entry per cluster the policy could not get. Each cluster's
/// entry and binding are looked up in maps made once per pass: at 5,000
/// clusters a scan per cluster (decoding every binding's spec on the way)
/// made the pass quadratic.
fn per_cluster(
    view: &View,
    scheduled: &Scheduled,
    works: &BindingWorks,
    rendered: &Rendered,
    current: &PlacementStatus,
    latest_index: Option<u64>,
    now: &str,
) -> Vec<PerClusterStatus> {
    let generation = view.placement.metadata.generation;
    let external = view.is_external();
    let mut current_entries: HashMap<&str, &PerClusterStatus> = HashMap::new();
    for entry in &current.placement_statuses {
        current_entries.entry(entry.cluster_name.as_str()).or_insert(entry);
    }
    let existing = |cluster: &str| {
        current_entries
            .get(cluster)
            .map(|e| (*e).clone())
            .unwrap_or_else(|| PerClusterStatus { cluster_name: cluster.to_string(), ..Default::default() })
    };
    let active = active_bindings(&view.bindings);
    let mut entries = Vec::new();
    for decision in &scheduled.outcome.chosen {
        let cluster = decision.cluster_name.as_str();
        let mut entry = existing(cluster);
        // As KubeFleet: the decision's reason, which names the cluster.
        let message = decision.reason.clone();
        let condition = Condition::new(PER_CLUSTER_SCHEDULED, true, "Scheduled", message).observing(generation);
        set_condition(&mut entry.conditions, condition, now);
        if let Some((b, spec)) = active.get(cluster) {
            let no_works = Vec::new();
            let this = rendered.bound.get(&b.metadata.name);
            let expected_works = match this.and_then(|r| r.works.as_ref()) {
                Some(desired) => desired.len(),
                None => bound_group(view, spec).map(|(_, g)| g.len()).unwrap_or(1),
            };
            let facts = ClusterRollout {
                cluster,
                binding: b,
                works: works.get(&b.metadata.name).unwrap_or(&no_works),
                latest_resource_index: latest_index,
                external,
                overrides_current: rendered.applicable.get(&b.metadata.name).is_none_or(|a| records(spec, a)),
                expected_works,
                works_in_sync: this.is_none_or(|r| r.in_sync),
                rendering: this.map_or(&Rendering::NoOverrides, |r| &r.rendering),
            };
            status_fold::fold_cluster(&mut entry, &facts, generation, now);
        }
        entries.push(entry);
    }
    // As KubeFleet: one unnamed entry per cluster the policy asked for and
    // did not get (PickN's N, PickFixed's names), each with the reason of
    // an unchosen cluster in the policy snapshot's order (not chosen, then
    // filtered), and never more entries than there are unchosen clusters.
    let wanted = match scheduled.policy.placement_type() {
        PICK_FIXED => scheduled.policy.cluster_names.len(),
        PICK_N => usize::try_from(scheduled.number_of_clusters.unwrap_or(0)).unwrap_or(0),
        _ => 0,
    };
    let missing = wanted.saturating_sub(scheduled.outcome.chosen.len());
    let reasons = scheduled.outcome.target_clusters().into_iter().filter(|d| !d.selected).map(|d| d.reason);
    let unnamed: Vec<&PerClusterStatus> =
        current.placement_statuses.iter().filter(|e| e.cluster_name.is_empty()).collect();
    for (i, reason) in reasons.take(missing).enumerate() {
        let mut entry = unnamed.get(i).map(|e| (*e).clone()).unwrap_or_default();
        entry.conditions.retain(|c| c.type_ == PER_CLUSTER_SCHEDULED);
        let condition = Condition::new(PER_CLUSTER_SCHEDULED, false, "ScheduleFailed", reason).observing(generation);
        set_condition(&mut entry.conditions, condition, now);
        entries.push(entry);
    }
    entries
}

/// Each cluster's Scheduled or Bound binding (the first, in the view's
/// order, when there are several) with its decoded spec.
fn active_bindings(bindings: &[Object]) -> HashMap<String, (&Object, BindingSpec)> {
    let mut active = HashMap::new();
    for b in bindings {
        let spec = binding::spec_of(b);
        if spec.is_active() && !active.contains_key(&spec.target_cluster) {
            active.insert(spec.target_cluster.clone(), (b, spec));
        }
    }
    active
}

/// Events for placement conditions that just became True, and for a newly
/// failed apply.
fn milestone_events(kind: &str, before: &PlacementStatus, after: &PlacementStatus) -> Vec<EventNote> {
    let mut events = Vec::new();
    let was_true = |type_: &str| find(&before.conditions, type_).is_some_and(Condition::is_true);
    for (suffix, reason) in MILESTONES {
        let type_ = format!("{kind}{suffix}");
        if let Some(c) = find(&after.conditions, &type_) {
            if c.is_true() && !was_true(&type_) {
                events.push(EventNote::normal(reason, c.message.clone()));
            }
        }
    }
    let applied = format!("{kind}Applied");
    if let Some(c) = find(&after.conditions, &applied) {
        let failed_before = find(&before.conditions, &applied).is_some_and(|b| b.status == "False");
        if c.status == "False" && !failed_before {
            events.push(EventNote::warning("PlacementApplyFailed", c.message.clone()));
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn binding(name: &str, cluster: &str, state: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
            "metadata": {"name": name}, "spec": {"state": state, "targetCluster": cluster}
        }))
        .unwrap()
    }

    /// The map gives what a scan for each cluster gave: its first Scheduled
    /// or Bound binding in the view's order, and nothing for a cluster with
    /// only Unscheduled ones.
    #[test]
    fn each_cluster_gets_its_first_active_binding() {
        let bindings = vec![
            binding("w-a-1", "a", "Unscheduled"),
            binding("w-a-2", "a", "Bound"),
            binding("w-a-3", "a", "Scheduled"),
            binding("w-b-1", "b", "Unscheduled"),
            binding("w-c-1", "c", "Scheduled"),
        ];
        let active = active_bindings(&bindings);
        let name = |cluster: &str| active.get(cluster).map(|(b, _)| b.metadata.name.as_str());
        assert_eq!((name("a"), name("b"), name("c"), name("d")), (Some("w-a-2"), None, Some("w-c-1"), None));
        assert_eq!(active.get("a").map(|(_, spec)| spec.state.as_str()), Some("Bound"));
    }
}
