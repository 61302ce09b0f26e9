//! Leader-only controllers: level-triggered reconcile loops fed by the local
//! state machine's watch events through a deduplicating work queue.
//!
//! A node runs them only while it leads. On gaining leadership it first
//! waits until its state machine has applied everything committed before
//! (a read-index round), then resyncs everything (placements, overrides,
//! runs, evictions, OCM objects); on losing it, the session is cancelled.
//!
//! The controllers share the queue, dispatched by the key's kind:
//! placements (`placement`), overrides (`overrides`), staged update runs
//! (`runs`), evictions (`evictions`, one key for all, so they are judged
//! one at a time), OCM's placements, ManifestWorks and replica sets
//! (`ocm`), and the members' Cluster Inventory profiles (`profiles`).
//!
//! Every write a controller makes is conditional on the versions it read,
//! so a deposed leader's late write is refused.

mod clusters;
pub mod events;
mod evictions;
mod feed;
pub mod ocm;
mod override_cache;
mod overrides;
pub mod placement;
mod profiles;
pub mod queue;
mod runs;
pub mod status_pacer;
#[cfg(test)]
mod testkit;
pub(crate) mod view;

use std::sync::Arc;
use std::time::Duration;

use fleet_api::ObjectKey;
use fleet_raft::Consensus;
use fleet_statemachine::{Command, StoreError};
use tokio::task::JoinSet;

use clusters::ClusterCache;
use fleet_api::time::now_rfc3339;
use futures::StreamExt;
use override_cache::OverrideCache;
use placement::Step;
use queue::WorkQueue;

/// Placements reconciled at once.
const WORKERS: usize = 4;
/// Most steps of one reconcile before the key is requeued (lets others in).
const MAX_STEPS: usize = 8;
/// Steps of one pass committing at once (the Work writes of a placement on
/// many clusters come as many steps).
const STEPS_IN_FLIGHT: usize = 8;
/// Retry delay after a conflict (someone wrote in between: re-read soon).
const CONFLICT_RETRY: Duration = Duration::from_millis(20);
/// Retry delay after any other failure.
const ERROR_RETRY: Duration = Duration::from_millis(500);
/// A pass that found nothing more to do and took at least this long to
/// compute makes its key rest as long before the next (see
/// [`WorkQueue::done_after`]); cheaper passes run again at once.
const REST_AFTER: Duration = Duration::from_millis(20);

/// What can stop a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// Reading the local store failed.
    #[error(transparent)]
    Store(#[from] fleet_statemachine::Error),
    /// A write failed (refused, or no leader).
    #[error(transparent)]
    Raft(#[from] fleet_raft::Error),
    /// A blocking task died.
    #[error("controller task failed: {0}")]
    Task(String),
}

impl ControllerError {
    /// Whether the write lost a race (precondition or existence changed).
    fn is_conflict(&self) -> bool {
        matches!(
            self,
            ControllerError::Raft(fleet_raft::Error::Refused(
                StoreError::Conflict { .. }
                    | StoreError::GenerationConflict { .. }
                    | StoreError::AlreadyExists { .. }
                    | StoreError::NotFound { .. }
            ))
        )
    }
}

/// Runs the controllers whenever this node leads, until `stopping`.
pub async fn run(consensus: Arc<Consensus>, mut stopping: tokio::sync::watch::Receiver<bool>) {
    let id = consensus.id();
    // Server metrics change only with the vote, role, leader or membership,
    // not with every entry appended or applied.
    let mut metrics = consensus.raft().server_metrics();
    loop {
        let leading = { metrics.borrow_and_update().current_leader == Some(id) };
        if leading {
            tracing::info!(id, "leading: starting controllers");
            let session = tokio::spawn(lead(consensus.clone()));
            loop {
                tokio::select! {
                    changed = metrics.changed() => {
                        if changed.is_err() || metrics.borrow_and_update().current_leader != Some(id) {
                            break;
                        }
                    }
                    _ = stopping.changed() => {
                        session.abort();
                        return;
                    }
                }
            }
            session.abort();
            tracing::info!(id, "no longer leading: controllers stopped");
        } else {
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { return },
                _ = stopping.changed() => return,
            }
        }
    }
}

/// One leadership session: catch up, resync, then follow events.
async fn lead(consensus: Arc<Consensus>) {
    // Everything committed by earlier leaders must be applied here before
    // we read: a read-index round gives the index to wait for.
    loop {
        match consensus.linearizable_index().await {
            Ok(_) => break,
            Err(e) => {
                tracing::debug!("controllers waiting for the read index: {e}");
                tokio::time::sleep(ERROR_RETRY).await;
            }
        }
    }
    let queue: Arc<WorkQueue<ObjectKey>> = Arc::new(WorkQueue::new());
    let caches = Caches::default();
    let recorder = events::EventRecorder::start(consensus.clone());
    let mut tasks = JoinSet::new();
    for _ in 0..WORKERS {
        tasks.spawn(worker(consensus.clone(), queue.clone(), caches.clone(), recorder.clone()));
    }
    drop(recorder);
    tasks.spawn(events::collect_expired(consensus.clone()));
    tasks.spawn(feed::follow(consensus.clone(), queue.clone(), caches));
    // The session ends when aborted (leadership lost); tasks die with the set.
    while tasks.join_next().await.is_some() {}
}

/// What the feed keeps for the steps of one leadership session.
#[derive(Clone, Default)]
struct Caches {
    /// Each cluster's scheduling view.
    clusters: Arc<ClusterCache>,
    /// The override snapshots, decoded and indexed.
    overrides: Arc<OverrideCache>,
    /// When each placement's status was last written (see [`status_pacer`]).
    status_pacer: Arc<status_pacer::StatusPacer>,
}

/// Takes keys off the queue and reconciles them.
async fn worker(
    consensus: Arc<Consensus>,
    queue: Arc<WorkQueue<ObjectKey>>,
    caches: Caches,
    recorder: events::EventRecorder,
) {
    loop {
        let key = queue.next().await;
        let started = std::time::Instant::now();
        let result = reconcile(&consensus, &key, &caches, &recorder).await;
        let (outcome, took) = (reconcile_result(&result), started.elapsed());
        crate::metrics::reconciled(&key.kind, outcome, took);
        tracing::trace!(key = %key, ?took, result = ?outcome, "reconciled");
        let rest = match &result {
            Ok(Pass::Done { cost, .. } | Pass::Finished { cost }) if *cost >= REST_AFTER => *cost,
            _ => Duration::ZERO,
        };
        match result {
            Ok(Pass::Done { recheck_after: None, .. }) => {}
            Ok(Pass::Done { recheck_after: Some(delay), .. }) => queue.add_after(key.clone(), delay),
            // Added while held: queued again when done.
            Ok(Pass::MoreSteps | Pass::Finished { .. }) => queue.add(key.clone()),
            Err(e) if e.is_conflict() => {
                tracing::debug!(placement = %key, "reconcile lost a race, retrying: {e}");
                queue.add_after(key.clone(), CONFLICT_RETRY);
            }
            Err(e) => {
                tracing::warn!(placement = %key, "reconcile failed, retrying: {e}");
                queue.add_after(key.clone(), ERROR_RETRY);
            }
        }
        queue.done_after(key, rest);
    }
}

/// A reconcile's result as `/metrics` counts it.
fn reconcile_result(result: &Result<Pass, ControllerError>) -> crate::metrics::ReconcileResult {
    use crate::metrics::ReconcileResult;
    match result {
        Ok(Pass::Done { .. } | Pass::Finished { .. }) => ReconcileResult::Success,
        Ok(Pass::MoreSteps) => ReconcileResult::Requeue,
        Err(e) if e.is_conflict() => ReconcileResult::Conflict,
        Err(_) => ReconcileResult::Error,
    }
}

/// How a reconcile ended.
enum Pass {
    /// Up to date (look again after this long, if time alone matters);
    /// `cost` is what computing the last step took.
    Done { recheck_after: Option<Duration>, cost: Duration },
    /// The step budget is spent; requeue to let other keys in.
    MoreSteps,
    /// The pass wrote its last step (`cost` to compute); look again, after
    /// a rest as long if it was costly, for what came in meanwhile.
    Finished { cost: Duration },
}

/// Runs steps until the placement is up to date or the step budget is spent.
async fn reconcile(
    consensus: &Arc<Consensus>,
    key: &ObjectKey,
    caches: &Caches,
    recorder: &events::EventRecorder,
) -> Result<Pass, ControllerError> {
    for _ in 0..MAX_STEPS {
        let store = consensus.store().clone();
        let caches = caches.clone();
        let read_key = key.clone();
        let now = now_rfc3339();
        let step_now = now.clone();
        let unix_millis = fleet_api::time::now_unix_millis();
        let unix_now = unix_millis.div_euclid(1000);
        let computing = std::time::Instant::now();
        // Blocking: redb reads, and the cluster list may need a rebuild.
        let next = tokio::task::spawn_blocking(move || {
            if read_key.group == fleet_api::kinds::FLEET_PLACEMENT_GROUP
                && fleet_api::overrides::is_override_kind(&read_key.kind)
            {
                return overrides::next_step(&store, &read_key).map(Some);
            }
            if profiles::is_profile_key(&read_key) {
                return profiles::next_step(&store, &read_key, &step_now).map(Some);
            }
            match ocm::OcmKind::of(&read_key) {
                Some(ocm::OcmKind::ManifestWork) => {
                    return ocm::delivery::next_step(&store, &read_key, &step_now, unix_now).map(Some)
                }
                Some(ocm::OcmKind::ReplicaSet) => {
                    return ocm::replicaset::next_step(&store, &read_key, &step_now, unix_now).map(Some)
                }
                Some(ocm::OcmKind::SetBinding) => {
                    return ocm::clusterset::binding_step(&store, &read_key, &step_now).map(Some)
                }
                _ => {}
            }
            // The feed lists the clusters and override snapshots before it
            // queues anything else.
            let (Some(fleet), Some(overrides)) = (caches.clusters.get(), caches.overrides.get()) else {
                return Ok(None);
            };
            if runs::is_run_key(&read_key) {
                return runs::next_step(&store, &fleet, &overrides, &read_key, unix_millis).map(Some);
            }
            if evictions::is_evictions_key(&read_key) {
                return evictions::next_step(&store, &fleet, &overrides, &step_now).map(Some);
            }
            match ocm::OcmKind::of(&read_key) {
                Some(ocm::OcmKind::Placement) => {
                    ocm::placement::next_step(&store, &fleet, &read_key, &step_now, unix_now).map(Some)
                }
                Some(ocm::OcmKind::ClusterSet) => {
                    ocm::clusterset::set_step(&store, &fleet, &read_key, &step_now).map(Some)
                }
                Some(ocm::OcmKind::ManagedNamespaces) => {
                    ocm::clusterset::managed_namespaces_step(&store, &fleet).map(Some)
                }
                _ => {
                    let pacer = &caches.status_pacer;
                    placement::next_step(&store, &fleet, &overrides, pacer, &read_key, &step_now, unix_now).map(Some)
                }
            }
        })
        .await
        .map_err(|e| ControllerError::Task(e.to_string()))??;
        let computed = computing.elapsed();
        let (steps, last) = match next {
            Some(placement::Next::Write(step)) => (vec![*step], false),
            Some(placement::Next::WriteLast(step)) => (vec![*step], true),
            Some(placement::Next::WriteEach(steps)) => (steps, false),
            Some(placement::Next::Done { recheck_after }) => {
                return Ok(Pass::Done { recheck_after, cost: computed });
            }
            None => return Ok(Pass::Done { recheck_after: Some(ERROR_RETRY), cost: Duration::ZERO }),
        };
        // In order, a few in flight at once: each step checks what it was
        // computed from, so it stands on its own, and the Raft batcher
        // carries concurrent ones in one entry.
        let mut writes = futures::stream::iter(steps.into_iter().map(|Step { ops, events, placement }| {
            let command = Command { now: now.clone(), ops };
            let (count, committing) = (command.ops.len(), std::time::Instant::now());
            async move {
                let written = consensus.write(command).await;
                tracing::trace!(key = %key, ?computed, ops = count, committed = ?committing.elapsed(), "step");
                written.map(|_| (placement, events))
            }
        }))
        .buffered(STEPS_IN_FLIGHT);
        while let Some(written) = writes.next().await {
            let (placement, events) = written?;
            recorder.record(&placement, events);
        }
        if last {
            return Ok(Pass::Finished { cost: computed });
        }
    }
    Ok(Pass::MoreSteps)
}
