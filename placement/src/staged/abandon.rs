//! Abandonment (SU-11): the world the run was initialized for is gone, so
//! it stops for good with `Succeeded` False.

use std::collections::BTreeSet;

use fleet_api::placement::PICK_N;
use fleet_api::staged::{PROGRESSING, REASON_CLUSTER_FAILED, REASON_RUN_FAILED, REASON_STAGE_FAILED, SUCCEEDED};

use super::inputs::ClusterLabels;
use super::marks::{failed_message, is_true, mark, Is, ABORTED_MESSAGE};
use super::stages::assign_stages;
use super::{Pass, RunAction};

fn list(names: &BTreeSet<&str>) -> String {
    let names: Vec<&str> = names.iter().copied().collect();
    format!("[{}]", names.join(", "))
}

/// Why an initialized run must be abandoned now, if it must: placement gone
/// or not External, a newer policy snapshot, a changed PickN count, a
/// changed apply strategy, or stage membership that differs from the frozen
/// one. (A binding changed under an updating cluster is found while
/// executing.)
pub(super) fn cause(pass: &Pass) -> Option<String> {
    let input = pass.input;
    let status = &pass.status;
    let Some(placement) = input.placement else {
        return Some(format!("parent placement `{}` not found", input.spec.placement_name));
    };
    if !placement.is_external() {
        return Some(format!(
            "parent placement does not have an external rollout strategy, current strategy: {}",
            placement.strategy_type()
        ));
    }
    let latest = placement.latest_policy_snapshot.as_ref();
    let latest_index = latest.and_then(|s| s.index).map(|i| i.to_string()).unwrap_or_default();
    if latest_index != status.policy_snapshot_index_used {
        return Some(format!(
            "the policy snapshot index used in the updateRun is outdated, latest: {latest_index}, recorded: {}",
            status.policy_snapshot_index_used
        ));
    }
    let policy = placement.spec.policy.clone().unwrap_or_default();
    if policy.placement_type() == PICK_N {
        let n = latest.and_then(|s| s.number_of_clusters).or(policy.number_of_clusters).unwrap_or(0);
        if status.policy_observed_cluster_count != Some(n) {
            return Some(format!(
                "the cluster count initialized in the updateRun is outdated, latest: {n}, recorded: {}",
                status.policy_observed_cluster_count.unwrap_or(0)
            ));
        }
    }
    // A run recorded before defaults were spelled out holds `None`: the
    // same strategy as all defaults.
    if status.applied_strategy.clone().unwrap_or_default().with_defaults() != placement.apply_strategy() {
        return Some("the apply strategy of the placement changed since the updateRun was initialized".to_string());
    }
    let Some(snapshot) = &status.staged_update_strategy_snapshot else {
        return Some("the updateRun status has no strategy snapshot".to_string());
    };
    let mut active: Vec<&str> = input.bindings.iter().filter(|b| b.is_active()).map(|b| b.cluster.as_str()).collect();
    active.sort_unstable();
    active.dedup();
    let labels: Vec<ClusterLabels> = active
        .iter()
        .map(|name| {
            input
                .clusters
                .iter()
                .find(|c| c.name == *name)
                .cloned()
                .unwrap_or_else(|| ClusterLabels { name: name.to_string(), labels: Default::default() })
        })
        .collect();
    let now = match assign_stages(&snapshot.stages, &labels) {
        Ok(now) => now,
        Err(e) => return Some(format!("the stages cannot be recomputed: {e}")),
    };
    if now.len() != status.stages_status.len() {
        return Some("the updateRun status does not match its strategy snapshot".to_string());
    }
    for (frozen, members) in status.stages_status.iter().zip(&now) {
        let was: BTreeSet<&str> = frozen.clusters.iter().map(|c| c.cluster_name.as_str()).collect();
        let is: BTreeSet<&str> = members.iter().map(String::as_str).collect();
        if was != is {
            return Some(format!(
                "the clusters of stage `{}` changed since the updateRun was initialized: recorded {}, now {}",
                frozen.stage_name,
                list(&was),
                list(&is)
            ));
        }
    }
    None
}

/// Marks the run failed for `cause` (terminal): the cluster `failing`
/// (stage index, cluster index) if any, the stage being worked on (the
/// first not succeeded, if it was entered), and the run.
pub(super) fn abandon(pass: &mut Pass, cause: &str, failing: Option<(usize, usize)>) {
    let (generation, now) = (pass.input.generation, pass.now.clone());
    if let Some((i, k)) = failing {
        if let Some(cluster) = pass.status.stages_status.get_mut(i).and_then(|s| s.clusters.get_mut(k)) {
            mark(&mut cluster.conditions, SUCCEEDED, Is::No, REASON_CLUSTER_FAILED, cause, generation, &now);
        }
    }
    let current = pass
        .status
        .stages_status
        .iter_mut()
        .chain(pass.status.deletion_stage_status.iter_mut())
        .find(|s| !is_true(&s.conditions, SUCCEEDED));
    if let Some(stage) = current.filter(|s| !s.conditions.is_empty()) {
        mark(&mut stage.conditions, PROGRESSING, Is::No, REASON_STAGE_FAILED, cause, generation, &now);
        mark(&mut stage.conditions, SUCCEEDED, Is::No, REASON_STAGE_FAILED, cause, generation, &now);
    }
    let conditions = &mut pass.status.conditions;
    mark(conditions, PROGRESSING, Is::No, REASON_RUN_FAILED, ABORTED_MESSAGE, generation, &now);
    let message = failed_message(cause);
    mark(conditions, SUCCEEDED, Is::No, REASON_RUN_FAILED, &message, generation, &now);
    pass.actions.push(RunAction::Abandoned { message });
}
