//! The clusters of one stage (SU-6, SU-7): finish the updating ones that
//! are available, then start the next ones in order while fewer than
//! `maxConcurrency` are updating.

use fleet_api::binding::STATE_BOUND;
use fleet_api::staged::{
    ClusterUpdatingStatus, StageConfig, PROGRESSING, REASON_CLUSTER_STARTED, REASON_CLUSTER_SUCCEEDED,
    REASON_STAGE_STARTED, STARTED, STUCK_AFTER_SECONDS, SUCCEEDED,
};
use fleet_api::work::ApplyStrategy;

use super::inputs::RunBinding;
use super::marks::{
    binding_changed_message, is_true, mark, transitioned_at, Is, CLUSTER_STARTED_MESSAGE, CLUSTER_SUCCEEDED_MESSAGE,
    STAGE_STARTED_MESSAGE,
};
use super::{Pass, RunAction};
use crate::rollout::Readiness;

/// What the clusters of a stage are doing after this pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Clusters {
    /// Started and not yet succeeded.
    pub(super) updating: usize,
    /// Those of them updating for longer than the stuck threshold.
    pub(super) stuck: Vec<String>,
    /// Every cluster of the stage succeeded.
    pub(super) all_succeeded: bool,
}

/// Why the run must be abandoned, and which cluster of the stage caused it.
pub(super) type Abandon = (String, usize);

/// The cluster's active (Scheduled or Bound) binding.
fn binding_of<'a>(bindings: &'a [RunBinding], cluster: &str) -> Option<&'a RunBinding> {
    bindings.iter().find(|b| b.cluster == cluster && b.is_active())
}

/// Whether the binding already carries what the run rolls out to `cluster`.
fn in_sync(b: &RunBinding, cluster: &ClusterUpdatingStatus, snapshot: &str, applied: Option<&ApplyStrategy>) -> bool {
    b.state == STATE_BOUND
        && b.rolled_out_under == b.policy_snapshot
        && b.resource_snapshot == snapshot
        && b.cluster_resource_override_snapshots == cluster.cluster_resource_override_snapshots
        && b.resource_override_snapshots == cluster.resource_override_snapshots
        && same_strategy(b.apply_strategy.as_ref(), applied)
}

/// Whether two apply strategies mean the same once their defaults are
/// spelled out (a binding written without them needs no rewrite).
fn same_strategy(a: Option<&ApplyStrategy>, b: Option<&ApplyStrategy>) -> bool {
    let full = |s: Option<&ApplyStrategy>| s.cloned().unwrap_or_default().with_defaults();
    full(a) == full(b)
}

/// Available on its Works (not trackable counts: it is Available True).
fn is_available(b: &RunBinding) -> bool {
    matches!(b.readiness, Readiness::Ready | Readiness::NotTrackable { .. })
}

/// Runs the clusters of stage `i` against the run's `snapshot`; while
/// `stop`, starts none.
pub(super) fn run(
    pass: &mut Pass,
    i: usize,
    config: &StageConfig,
    snapshot: &str,
    stop: bool,
) -> Result<Clusters, Abandon> {
    let (generation, now, now_unix) = (pass.input.generation, pass.now.clone(), pass.input.now);
    let bindings = pass.input.bindings;
    let applied = pass.status.applied_strategy.clone();
    let Some(stage) = pass.status.stages_status.get_mut(i) else { return Ok(Clusters::default()) };
    let stage_name = stage.stage_name.clone();
    let limit = config.max_concurrency().of(stage.clusters.len());
    let mut out = Clusters::default();
    let mut actions = Vec::new();
    let mut requeue: Option<i64> = None;
    let mut later = |at: i64| requeue = Some(requeue.map_or(at, |r: i64| r.min(at)));

    for (k, cluster) in stage.clusters.iter_mut().enumerate() {
        if is_true(&cluster.conditions, SUCCEEDED) || !is_true(&cluster.conditions, STARTED) {
            continue;
        }
        let name = cluster.cluster_name.clone();
        let binding = binding_of(bindings, &name);
        let Some(b) = binding.filter(|b| in_sync(b, cluster, snapshot, applied.as_ref())) else {
            let binding_name = binding.map_or("<none>", |b| b.name.as_str());
            return Err((binding_changed_message(&name, &stage_name, binding_name), k));
        };
        if is_available(b) {
            let done = (REASON_CLUSTER_SUCCEEDED, CLUSTER_SUCCEEDED_MESSAGE);
            mark(&mut cluster.conditions, SUCCEEDED, Is::Yes, done.0, done.1, generation, &now);
            actions.push(RunAction::ClusterSucceeded { stage: stage_name.clone(), cluster: name });
            continue;
        }
        out.updating += 1;
        let deadline =
            transitioned_at(&cluster.conditions, STARTED).unwrap_or(now_unix).saturating_add(STUCK_AFTER_SECONDS);
        if now_unix >= deadline {
            out.stuck.push(name);
        } else {
            later(deadline);
        }
    }

    let mut started_any = false;
    for (k, cluster) in stage.clusters.iter_mut().enumerate() {
        if stop || out.updating >= limit {
            break;
        }
        if is_true(&cluster.conditions, STARTED) {
            continue;
        }
        let name = cluster.cluster_name.clone();
        let Some(b) = binding_of(bindings, &name) else {
            return Err((format!("the binding of cluster `{name}` in the stage `{stage_name}` is not found"), k));
        };
        let synced = in_sync(b, cluster, snapshot, applied.as_ref());
        if !synced {
            actions.push(RunAction::Bind {
                binding: b.name.clone(),
                cluster: name.clone(),
                resource_snapshot: snapshot.to_string(),
                cluster_resource_override_snapshots: cluster.cluster_resource_override_snapshots.clone(),
                resource_override_snapshots: cluster.resource_override_snapshots.clone(),
                apply_strategy: applied.clone(),
            });
        }
        let start = (REASON_CLUSTER_STARTED, CLUSTER_STARTED_MESSAGE);
        mark(&mut cluster.conditions, STARTED, Is::Yes, start.0, start.1, generation, &now);
        actions.push(RunAction::ClusterStarted { stage: stage_name.clone(), cluster: name.clone() });
        started_any = true;
        if synced && is_available(b) {
            let done = (REASON_CLUSTER_SUCCEEDED, CLUSTER_SUCCEEDED_MESSAGE);
            mark(&mut cluster.conditions, SUCCEEDED, Is::Yes, done.0, done.1, generation, &now);
            actions.push(RunAction::ClusterSucceeded { stage: stage_name.clone(), cluster: name });
        } else {
            out.updating += 1;
            later(now_unix.saturating_add(STUCK_AFTER_SECONDS));
        }
    }

    if started_any && stage.start_time.is_none() {
        stage.start_time = Some(now.clone());
        actions.insert(0, RunAction::StageStarted { stage: stage_name.clone() });
    }
    if !stop && out.updating > 0 {
        let started = (REASON_STAGE_STARTED, STAGE_STARTED_MESSAGE);
        mark(&mut stage.conditions, PROGRESSING, Is::Yes, started.0, started.1, generation, &now);
    }
    out.all_succeeded = stage.clusters.iter().all(|c| is_true(&c.conditions, SUCCEEDED));
    pass.actions.extend(actions);
    if let Some(at) = requeue {
        pass.requeue(at);
    }
    Ok(out)
}
