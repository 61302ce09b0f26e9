//! The controllers' workers: each takes a key off the queue, computes its
//! next step, hands the step's write to a task of its own and takes the
//! next key while the write commits.
//!
//! So when many placements change at once (a thousand placements resynced
//! by a new leader, a PickAll's Works turning Available on a thousand
//! clusters) their status and Work writes wait for Raft together, and the
//! group commit puts them in shared entries, instead of each worker waiting
//! for an entry of its own. What is in flight is bounded by a
//! [`WriteBudget`] (count and bytes).
//!
//! What this keeps:
//! - per-key order: a key stays held (the queue hands it to no other
//!   worker) until its write is answered, and its next step is computed
//!   only then, from the store with that write applied;
//! - each step is its own command, with its own checks and preconditions:
//!   sharing an entry with other placements' steps, it still stands or
//!   falls alone, whole (a refused step is retried by its key alone);
//! - leadership changes: nothing here is remembered across steps but the
//!   queue; a new leader recomputes every step from the store, and a write
//!   of a deposed leader still in flight is refused by its preconditions
//!   if anything it read changed.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_api::ObjectKey;
use tokio::task::JoinSet;

use super::budget::WriteBudget;
use super::queue::WorkQueue;
use super::ControllerError;

/// Retry delay after a conflict (someone wrote in between: re-read soon).
const CONFLICT_RETRY: Duration = Duration::from_millis(20);
/// Retry delay after any other failure.
pub const ERROR_RETRY: Duration = Duration::from_millis(500);

/// What a key needs next.
pub enum Planned<W> {
    /// This write, of about this many bytes.
    Write { write: W, bytes: usize },
    /// Nothing (look again after this long, if time alone matters).
    Done { recheck_after: Option<Duration> },
}

/// How the controllers compute and commit the steps of a key.
pub trait Steps: Send + Sync + 'static {
    /// One step's write, ready to commit.
    type Write: Send + 'static;

    /// Reads the store and computes the next step of `key`.
    fn plan(&self, key: &ObjectKey) -> impl Future<Output = Result<Planned<Self::Write>, ControllerError>> + Send;

    /// Commits a step of `key`; answers once it is applied on this node.
    fn commit(&self, key: &ObjectKey, write: Self::Write) -> impl Future<Output = Result<(), ControllerError>> + Send;
}

/// How one key's turn ended.
enum Pass {
    /// Up to date (look again after this long, if time alone matters).
    Done { recheck_after: Option<Duration> },
    /// A step was written; queue the key again for its next one.
    Written,
}

/// Takes keys off `queue` and moves each one step on, with its write in
/// flight while the next key is computed, until the session ends (the
/// task is aborted; writes still in flight are aborted with it).
pub async fn worker<S: Steps>(steps: Arc<S>, queue: Arc<WorkQueue<ObjectKey>>, budget: Arc<WriteBudget>) {
    // This worker's writes in flight: aborted with it when the session ends.
    let mut in_flight = JoinSet::new();
    loop {
        while in_flight.try_join_next().is_some() {}
        let key = queue.next().await;
        let started = Instant::now();
        let (write, bytes) = match steps.plan(&key).await {
            Ok(Planned::Write { write, bytes }) => (write, bytes),
            Ok(Planned::Done { recheck_after }) => {
                finish(&queue, key, Ok(Pass::Done { recheck_after }), started);
                continue;
            }
            Err(e) => {
                finish(&queue, key, Err(e), started);
                continue;
            }
        };
        // Bounded: a storm of steps waits here rather than queue without end.
        let Some(permit) = budget.acquire(bytes).await else { return };
        let (steps, queue) = (steps.clone(), queue.clone());
        in_flight.spawn(async move {
            let written = steps.commit(&key, write).await;
            drop(permit);
            finish(&queue, key, written.map(|()| Pass::Written), started);
        });
    }
}

/// Queues `key` again as `result` says, and releases it.
fn finish(queue: &Arc<WorkQueue<ObjectKey>>, key: ObjectKey, result: Result<Pass, ControllerError>, started: Instant) {
    crate::metrics::reconciled(&key.kind, reconcile_result(&result), started.elapsed());
    match result {
        Ok(Pass::Done { recheck_after: None }) => {}
        Ok(Pass::Done { recheck_after: Some(delay) }) => queue.add_after(key.clone(), delay),
        // Added while held: queued again (at the back) when done.
        Ok(Pass::Written) => queue.add(key.clone()),
        Err(e) if e.is_conflict() => {
            tracing::debug!(placement = %key, "reconcile lost a race, retrying: {e}");
            queue.add_after(key.clone(), CONFLICT_RETRY);
        }
        Err(e) => {
            tracing::warn!(placement = %key, "reconcile failed, retrying: {e}");
            queue.add_after(key.clone(), ERROR_RETRY);
        }
    }
    queue.done(&key);
}

/// A key's turn as `/metrics` counts it.
fn reconcile_result(result: &Result<Pass, ControllerError>) -> crate::metrics::ReconcileResult {
    use crate::metrics::ReconcileResult;
    match result {
        Ok(Pass::Done { .. }) => ReconcileResult::Success,
        Ok(Pass::Written) => ReconcileResult::Requeue,
        Err(e) if e.is_conflict() => ReconcileResult::Conflict,
        Err(_) => ReconcileResult::Error,
    }
}

#[cfg(test)]
mod tests;
