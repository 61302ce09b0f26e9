//! Heartbeat arrivals, kept by the leader in memory (soft state), and the
//! leader-only loop that marks silent clusters `Healthy=Unknown`.
//!
//! The loop reads the clusters' periods and conditions from the in-memory
//! [`liveness`](super::liveness) view (followed from the store's events),
//! and reads from the store only a cluster found overdue, before writing
//! its status; an idle fleet costs a walk over a small map per check.
//!
//! A new leader has no arrival times: it gives every cluster a fresh grace
//! period from the moment it became leader, so a leader change never marks
//! the whole fleet unhealthy at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleet_api::kinds::FLEET_CLUSTER_GROUP;
use fleet_api::member;
use fleet_api::time::now_rfc3339;
use fleet_api::ObjectKey;
use fleet_raft::Consensus;
use fleet_statemachine::{Command, Op};

use super::liveness::{self, SharedView};
use super::status;
use crate::blocking::blocking;

/// How often the leader checks for silent clusters.
const CHECK_EVERY: Duration = Duration::from_millis(500);
/// Missed periods before a cluster is unhealthy.
const MISSED_PERIODS: u32 = 3;

/// Last heartbeat arrival per cluster, on the leader.
#[derive(Default)]
pub struct Arrivals {
    inner: Mutex<ArrivalState>,
}

#[derive(Default)]
struct ArrivalState {
    leader_since: Option<Instant>,
    last: HashMap<String, Instant>,
}

impl Arrivals {
    fn lock(&self) -> std::sync::MutexGuard<'_, ArrivalState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a heartbeat from `cluster` now.
    pub fn record(&self, cluster: &str) {
        self.lock().last.insert(cluster.to_string(), Instant::now());
    }

    /// How long ago each cluster was last heard of, by this leader.
    pub fn ages(&self) -> std::collections::BTreeMap<String, Duration> {
        self.lock().last.iter().map(|(c, t)| (c.clone(), t.elapsed())).collect()
    }

    /// When `cluster` was last heard of (or when this node became leader).
    fn last_heard(&self, cluster: &str) -> Option<Instant> {
        let state = self.lock();
        state.last.get(cluster).copied().or(state.leader_since)
    }

    /// Every cluster's [`Arrivals::last_heard`], under one lock.
    fn snapshot(&self) -> (HashMap<String, Instant>, Option<Instant>) {
        let state = self.lock();
        (state.last.clone(), state.leader_since)
    }

    /// Leadership changed: start over with a fresh grace period, or forget.
    fn set_leader(&self, leading: bool) {
        let mut state = self.lock();
        state.last.clear();
        state.leader_since = leading.then(Instant::now);
    }

    fn is_leading(&self) -> bool {
        self.lock().leader_since.is_some()
    }
}

/// Runs the health check while this node leads, until the node stops.
pub async fn run(consensus: Arc<Consensus>, arrivals: Arc<Arrivals>, mut stopping: tokio::sync::watch::Receiver<bool>) {
    let view: SharedView = Arc::default();
    let follower = tokio::spawn(liveness::follow(consensus.store().clone(), view.clone()));
    let mut tick = tokio::time::interval(CHECK_EVERY);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopping.changed() => {
                follower.abort();
                return;
            }
        }
        let leading = consensus.leader().is_some_and(|(l, _)| l == consensus.id());
        if leading != arrivals.is_leading() {
            arrivals.set_leader(leading);
        }
        if leading {
            if let Err(e) = check_once(&consensus, &arrivals, &view).await {
                tracing::warn!("member health check: {e}");
            }
        }
    }
}

async fn check_once(consensus: &Arc<Consensus>, arrivals: &Arrivals, view: &SharedView) -> Result<(), String> {
    let (last, leader_since) = arrivals.snapshot();
    let heard = |cluster: &str| last.get(cluster).copied().or(leader_since);
    let overdue = match liveness::lock(view).as_ref() {
        Some(view) => view.overdue(heard, MISSED_PERIODS, Instant::now()),
        None => return Ok(()),
    };
    for name in overdue {
        let store = consensus.store().clone();
        let key = ObjectKey::new(FLEET_CLUSTER_GROUP, "MemberCluster", "", &name);
        let read = blocking(move || store.get(&key).map(|(o, _)| o).map_err(crate::error::storage_error))
            .await
            .map_err(|s| s.message().to_string())?;
        let Some(mc) = read else { continue };
        // The view may trail the store: judge the object as stored.
        let Some(last) = arrivals.last_heard(&name) else { continue };
        let silent = last.elapsed();
        let period = Duration::from_secs(member::spec_of(&mc).heartbeat_period().max(1) as u64);
        if silent <= period * MISSED_PERIODS {
            continue;
        }
        let current = member::status_of(&mc);
        let joined = current.conditions.iter().any(|c| c.type_ == member::CONDITION_JOINED && c.is_true());
        if !joined {
            continue;
        }
        if let Some(next) = status::after_timeout(&current, silent.as_secs(), &now_rfc3339()) {
            let mut updated = mc.clone();
            member::set_status(&mut updated, &next);
            // Conditional on the version read: never act on a stale view.
            match consensus.write(Command { now: now_rfc3339(), ops: vec![Op::UpdateStatus { object: updated }] }).await
            {
                Ok(_) => {
                    tracing::info!(cluster = %name, "member cluster missed its heartbeats: Healthy=Unknown")
                }
                Err(e) => tracing::debug!(cluster = %name, "health write skipped: {e}"),
            }
        }
    }
    Ok(())
}
