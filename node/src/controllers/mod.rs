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
//! one at a time) and OCM's placements, ManifestWorks and replica sets
//! (`ocm`).
//!
//! Every write a controller makes is conditional on the versions it read,
//! so a deposed leader's late write is refused.
//!
//! Workers (`pipeline`) compute one key's step at a time and leave its
//! write in flight while they go on to the next key, so the writes of many
//! placements changing at once share Raft entries through the group
//! commit, each still its own command; `budget` bounds what is in flight.

mod budget;
mod clusters;
pub mod events;
mod evictions;
mod feed;
pub mod ocm;
mod overrides;
mod pipeline;
pub mod placement;
pub mod queue;
mod runs;
mod view;

use std::sync::Arc;

use fleet_api::ObjectKey;
use fleet_raft::Consensus;
use fleet_statemachine::{Command, EncodedCommand, Store, StoreError};
use tokio::task::JoinSet;

use crate::service::now_rfc3339;
use budget::WriteBudget;
use clusters::ClusterCache;
use pipeline::{Planned, ERROR_RETRY};
use queue::WorkQueue;

/// Keys whose next step is computed at once (each reads the store on a
/// blocking thread); their writes are in flight beside (see `pipeline`).
const WORKERS: usize = 4;
/// Controller writes in flight at once: enough for the group commit to
/// gather a storm of steps (a thousand placements resynced, a PickAll's
/// Works turning Available) into a few entries, bounded so a resync of
/// thousands of keys does not queue thousands of writes.
const WRITES_IN_FLIGHT: usize = 64;
/// Bytes of controller writes (encoded commands) in flight at once, so
/// that an entry made of them stays well under the batcher's 1 MiB and a
/// busy follower takes it within openraft's heartbeat-long AppendEntries
/// time-to-live. A larger step goes alone.
const BYTES_IN_FLIGHT: usize = 512 * 1024;

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
    let mut metrics = consensus.raft().metrics();
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
    let clusters = Arc::new(ClusterCache::default());
    let recorder = events::EventRecorder::start(consensus.clone());
    let steps = Arc::new(ControllerSteps { consensus: consensus.clone(), clusters: clusters.clone(), recorder });
    let budget = Arc::new(WriteBudget::new(WRITES_IN_FLIGHT, BYTES_IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for _ in 0..WORKERS {
        tasks.spawn(pipeline::worker(steps.clone(), queue.clone(), budget.clone()));
    }
    drop(steps);
    tasks.spawn(events::collect_expired(consensus.clone()));
    tasks.spawn(feed::follow(consensus.clone(), queue.clone(), clusters));
    // The session ends when aborted (leadership lost); tasks die with the set.
    while tasks.join_next().await.is_some() {}
}

/// The controllers' steps on this node's store and Raft.
struct ControllerSteps {
    consensus: Arc<Consensus>,
    clusters: Arc<ClusterCache>,
    recorder: events::EventRecorder,
}

/// A step ready to propose: its command, encoded, and what to record once
/// it committed.
struct StepWrite {
    command: EncodedCommand,
    events: Vec<events::EventNote>,
    placement: fleet_api::Object,
}

impl pipeline::Steps for ControllerSteps {
    type Write = StepWrite;

    async fn plan(&self, key: &ObjectKey) -> Result<Planned<StepWrite>, ControllerError> {
        let store = self.consensus.store().clone();
        let fleet = self.clusters.clone();
        let read_key = key.clone();
        let now = now_rfc3339();
        let unix_millis = unix_millis();
        // Blocking: redb reads, the cluster list may need a rebuild, and
        // the command is encoded here too.
        tokio::task::spawn_blocking(move || {
            let Some(next) = next_step(&store, &fleet, &read_key, &now, unix_millis)? else {
                return Ok(Planned::Done { recheck_after: Some(ERROR_RETRY) });
            };
            let step = match next {
                placement::Next::Write(step) => *step,
                placement::Next::Done { recheck_after } => return Ok(Planned::Done { recheck_after }),
            };
            let command = EncodedCommand::new(Command { now, ops: step.ops })?;
            let bytes = command.encoded_len();
            Ok(Planned::Write { write: StepWrite { command, events: step.events, placement: step.placement }, bytes })
        })
        .await
        .map_err(|e| ControllerError::Task(e.to_string()))?
    }

    async fn commit(&self, _key: &ObjectKey, write: StepWrite) -> Result<(), ControllerError> {
        self.consensus.write_encoded(write.command).await?;
        self.recorder.record(&write.placement, write.events);
        Ok(())
    }
}

/// The next step of the object at `key`, by its kind (`None` until the
/// cluster list is known).
fn next_step(
    store: &Store,
    fleet: &ClusterCache,
    key: &ObjectKey,
    now: &str,
    unix_millis: i64,
) -> Result<Option<placement::Next>, ControllerError> {
    let unix_now = unix_millis.div_euclid(1000);
    if key.group == fleet_api::kinds::FLEET_PLACEMENT_GROUP && fleet_api::overrides::is_override_kind(&key.kind) {
        return overrides::next_step(store, key).map(Some);
    }
    match ocm::OcmKind::of(key) {
        Some(ocm::OcmKind::ManifestWork) => return ocm::delivery::next_step(store, key, now).map(Some),
        Some(ocm::OcmKind::ReplicaSet) => return ocm::replicaset::next_step(store, key, now, unix_now).map(Some),
        _ => {}
    }
    // The feed lists the clusters before it queues anything else.
    let Some(fleet) = fleet.get() else { return Ok(None) };
    if runs::is_run_key(key) {
        return runs::next_step(store, &fleet, key, unix_millis).map(Some);
    }
    if evictions::is_evictions_key(key) {
        return evictions::next_step(store, &fleet, now).map(Some);
    }
    match ocm::OcmKind::of(key) {
        Some(ocm::OcmKind::Placement) => ocm::placement::next_step(store, &fleet, key, now, unix_now).map(Some),
        _ => placement::next_step(store, &fleet, key, now, unix_now).map(Some),
    }
}

/// Milliseconds since the Unix epoch (the controllers' clock for rollout
/// and run timing; whole seconds of it are what the store records).
fn unix_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
