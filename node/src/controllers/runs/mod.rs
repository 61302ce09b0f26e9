//! The staged update run controller (docs/spec/staged-updates.md): for one
//! ClusterStagedUpdateRun or StagedUpdateRun, one pass of
//! `fleet_placement::staged::plan_run` over what the store holds, written
//! back as one command — the run's status and every write the pass decided
//! (bindings moved to the run's snapshot, bindings of clusters no longer
//! chosen deleted, approval requests created or accepted) — with a `Check`
//! of everything the pass read and does not write. A pass computed on a
//! stale view is refused whole and recomputed, so a deposed leader cannot
//! bind a cluster twice or past a gate.
//!
//! Everything a run knows is in its stored status (frozen stages, when each
//! cluster and wait started, which approvals were seen), so a new leader
//! computes the same next step: a timed wait that began before a leader
//! change ends at the same moment after it, and an approval written through
//! any node counts. The pass asks to be looked at again when time alone
//! changes something (a wait ending, a cluster becoming stuck), to the
//! millisecond of that whole second.
//!
//! Reads: the run; its placement with its snapshots, bindings and their
//! readiness as the placement controller counts it ([`Children`]); the
//! strategy and the MemberClusters from the store while the run is not
//! initialized (stages are frozen from them), the feed's cluster cache
//! after (only to notice stage membership changing, SU-11); the approval
//! requests named `<run>-...`; the override snapshots that apply to each
//! chosen cluster (only at initialization).

mod read;
mod write;

use std::time::Duration;

use fleet_api::ObjectKey;
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::overrides::OverrideIndex;
use fleet_placement::staged::{plan_run, RunInput};
use fleet_statemachine::Store;

use super::placement::Next;
use super::ControllerError;

/// The next step for the run at `key`: its pass's command, or when to look
/// again. `now_millis` is the controllers' clock in Unix milliseconds.
pub fn next_step(
    store: &Store,
    clusters: &[ClusterInfo],
    overrides: &OverrideIndex,
    key: &ObjectKey,
    now_millis: i64,
) -> Result<Next, ControllerError> {
    let started = std::time::Instant::now();
    let Some(read) = read::read(store, clusters, overrides, key)? else {
        return Ok(Next::Done { recheck_after: None });
    };
    let read_ms = started.elapsed().as_secs_f64() * 1000.0;
    let now = now_millis.div_euclid(1000);
    let plan = plan_run(&RunInput {
        run_name: &read.run.metadata.name,
        generation: read.run.metadata.generation,
        spec: &read.spec,
        status: &read.status,
        placement: read.placement.as_ref(),
        strategy: read.strategy.as_ref(),
        clusters: &read.cluster_labels,
        bindings: &read.bindings,
        approvals: &read.approvals,
        overrides: &read.overrides,
        now,
    });
    if let Some(why) = &plan.pending {
        tracing::debug!(run = %key, "initialization waits: {why}");
    }
    let recheck_after = plan.requeue_at.map(|at| {
        let millis = at.saturating_mul(1000).saturating_sub(now_millis).max(0);
        Duration::from_millis(u64::try_from(millis).unwrap_or(0))
    });
    let pass_ms = started.elapsed().as_secs_f64() * 1000.0;
    tracing::debug!(run = %key, read_ms, pass_ms, actions = plan.actions.len(), "run pass");
    match write::step(&read, &plan, &fleet_placement::time::rfc3339(now)) {
        Some(step) => Ok(Next::Write(Box::new(step))),
        None => Ok(Next::Done { recheck_after }),
    }
}

/// Whether `key` is a staged update run's.
pub fn is_run_key(key: &ObjectKey) -> bool {
    key.group == fleet_api::kinds::FLEET_PLACEMENT_GROUP
        && matches!(
            key.kind.as_str(),
            fleet_api::staged::CLUSTER_STAGED_UPDATE_RUN | fleet_api::staged::STAGED_UPDATE_RUN
        )
}

#[cfg(test)]
mod tests;
