//! The Work loop: watch the cluster's namespace on any hub node (resuming
//! from the last resourceVersion when moving to another node, relisting when
//! told the version expired), and reconcile each Work that changed — or that
//! is still settling — into the target and back into the Work's status.
//!
//! # When a Work is looked at
//!
//! - when it is added, or changed other than in its status (a change of its
//!   status alone is the agent's own report coming back: looking again would
//!   clear a drift report the moment it is written, as KubeFleet's
//!   generation-changed rule avoids too);
//! - on every relist of the watch;
//! - every [`RECHECK`] while it is not settled (not applied or not
//!   available yet, drifted under `IfNotDrifted`...);
//! - every drift-check interval (`--drift-check-interval`, default
//!   [`DRIFT_CHECK_INTERVAL`]), settled or not: this is when drift on the
//!   member is found (and, under `whenToApply: Always`, reported and
//!   overwritten) and ReportDiff results are refreshed. These periodic
//!   checks wait in a queue of their own, taken only when no change is
//!   waiting, so a wave of them never holds up a change.
//!
//! # Deleted Works
//!
//! When a Work is deleted on the hub, what it placed on the member cluster
//! follows its `spec.deleteOptions.propagationPolicy`:
//!
//! - `Delete` (the default): every object the ledger says it placed is
//!   deleted (later waves first), retried until none is left.
//! - `Abandon`: the objects stay exactly as they are — spec, status and the
//!   [`OWNER_ANNOTATION`](crate::targets::OWNER_ANNOTATION) naming the deleted
//!   Work included — and the Work is dropped from the ledger, so the agent
//!   never touches them again.
//!
//! The policy is taken from the Work's last state carried by the watch's
//! `DELETED` event; when the deletion is only noticed at a relist (the agent
//! was down or lost the watch, the Work is simply missing), from the ledger,
//! which records the policy of the spec last applied.
//!
//! Pruning is not affected: objects removed from a Work that still exists are
//! always deleted, whatever its policy.
//!
//! An abandoned object keeps its owner annotation, so under the ownership rule
//! ([`check_owner`](crate::targets::check_owner)) a *different* Work that
//! later holds the same object gets a `FailedToTakeOver` instead of taking it
//! over — as with any object placed by another placement ("never taken over").
//! Only a Work with the very same namespace and name (the same placement
//! coming back) applies to it again and so adopts it.

pub mod apply;
pub mod compare;
pub mod details;
pub mod executor;
pub mod feedback;
pub mod ignore;
pub mod ledger;
pub mod provenance;
pub mod redact;
pub mod report;
pub mod report_back;
pub mod strategy;
pub mod waves;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use fleet_api::member::member_namespace;
use fleet_api::{work, Object};
use fleet_proto::fleet::{KindRef, UpdateStatusRequest, WatchRequest};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::{Mutex, Notify};

use crate::hub::Hub;
use crate::targets::{Change, Target};
use crate::AgentError;
use ledger::Ledger;

/// How soon a Work that is not settled (not applied, or not available yet) is looked at again.
const RECHECK: Duration = Duration::from_millis(500);
/// The longest wait before looking again at a Work that stays unsettled on
/// a target that watches: a change to its objects brings it back earlier,
/// so the wait doubles from [`RECHECK`] up to this.
const WATCHED_RECHECK_MAX: Duration = Duration::from_secs(30);
/// How often every Work is checked for drift by default (KubeFleet's period).
pub const DRIFT_CHECK_INTERVAL: Duration = Duration::from_secs(15);
/// The same on a target that watches the kinds it placed: drift is found
/// from the watch at once, so the full check is only a safety net.
pub const WATCHED_CHECK_INTERVAL: Duration = Duration::from_secs(300);
/// Pause before re-watching after an error.
const REWATCH: Duration = Duration::from_millis(200);

/// The Works of this cluster as last seen, and which need reconciling.
#[derive(Default)]
struct State {
    works: BTreeMap<String, Object>,
    /// Works to look at because something happened to them (first).
    queue: BTreeSet<String>,
    /// Works due for their periodic drift check (when `queue` is empty).
    checks: BTreeSet<String>,
    /// Works deleted by a watch event and not yet reconciled: whether their
    /// last state said `propagationPolicy: Abandon`.
    deleted: BTreeMap<String, bool>,
    /// Whether a first full list arrived: until then a missing Work may just
    /// not be known yet, so nothing is reconciled.
    listed: bool,
    /// How many times in a row each Work was found unsettled (for the
    /// backoff of [`WATCHED_RECHECK_MAX`]).
    unsettled: BTreeMap<String, u32>,
}

impl State {
    /// Takes in one watch event (`ADDED`, `MODIFIED` or `DELETED`) and queues
    /// the Work (unless only its status changed). A `DELETED` event carries
    /// the Work's last state: its `propagationPolicy` is kept for
    /// [`forget_work`] (unless that state cannot be read, leaving the
    /// decision to the ledger). Returns the Work's name when it exists.
    fn observe(&mut self, kind: &str, object: Object) -> Option<String> {
        let name = object.metadata.name.clone();
        let status_only =
            kind == "MODIFIED" && self.works.get(&name).is_some_and(|old| only_status_changed(old, &object));
        if !status_only {
            self.queue.insert(name.clone());
        }
        if kind == "DELETED" {
            self.works.remove(&name);
            // A last state that does not read as a Work spec decides nothing: the ledger does.
            let spec = object.spec().and_then(|s| serde_json::from_value::<work::WorkSpec>(s.clone()).ok());
            match spec {
                Some(spec) => self.deleted.insert(name, spec.abandons_on_delete()),
                None => self.deleted.remove(&name),
            };
            None
        } else {
            self.deleted.remove(&name);
            self.works.insert(name.clone(), object);
            Some(name)
        }
    }

    /// Whether an event delivered again (at or before the last version
    /// received, after resuming one version early) is already taken in: the
    /// Work is held at that version, or a deleted Work is no longer held.
    fn already_has(&self, kind: &str, object: &Object) -> bool {
        let held = self.works.get(&object.metadata.name);
        match kind {
            "DELETED" => held.is_none(),
            _ => held.is_some_and(|h| h.metadata.resource_version == object.metadata.resource_version),
        }
    }

    /// The next Work to look at: a changed one first, else one due for its drift check.
    fn next(&mut self) -> Option<String> {
        if !self.listed {
            return None;
        }
        let name = self.queue.pop_first().or_else(|| self.checks.pop_first())?;
        self.checks.remove(&name);
        Some(name)
    }

    /// Queues every existing Work for its periodic drift check.
    /// Records whether `name` settled, and returns how long to wait before
    /// looking at it again if it did not: [`RECHECK`], or on a target that
    /// watches a doubling wait up to [`WATCHED_RECHECK_MAX`].
    fn recheck_after(&mut self, name: &str, settled: bool, watching: bool) -> Duration {
        if settled {
            self.unsettled.remove(name);
            return RECHECK;
        }
        let tries = self.unsettled.entry(name.to_string()).or_default();
        *tries = tries.saturating_add(1);
        if !watching {
            return RECHECK;
        }
        RECHECK.saturating_mul(1 << (*tries - 1).min(6)).min(WATCHED_RECHECK_MAX)
    }

    /// Takes in a change a watching target saw: the Work named by `owner`
    /// (`<namespace>/<name>`) is queued if it is one of this cluster's.
    fn changed(&mut self, change: Change) {
        match change {
            Change::Work(owner) => {
                let Some((namespace, name)) = owner.split_once('/') else { return };
                let ours = self.works.get(name).is_some_and(|w| w.metadata.namespace.as_deref() == Some(namespace));
                if ours {
                    self.queue.insert(name.to_string());
                }
            }
            Change::Resync => self.due_for_checks(),
        }
    }

    fn due_for_checks(&mut self) {
        let names: Vec<String> = self.works.keys().filter(|n| !self.queue.contains(*n)).cloned().collect();
        self.checks.extend(names);
    }
}

/// Whether `new` differs from `old` in nothing the agent acts on: same
/// generation (spec), labels, annotations and deletion state — typically
/// the agent's own status report coming back through the watch.
/// `<namespace>/<name>` of a Work: how its objects' owner annotation and
/// the targets name it.
fn work_owner(work: &Object) -> String {
    format!("{}/{}", work.metadata.namespace.as_deref().unwrap_or_default(), work.metadata.name)
}

fn only_status_changed(old: &Object, new: &Object) -> bool {
    let (a, b) = (&old.metadata, &new.metadata);
    a.generation == b.generation
        && a.labels == b.labels
        && a.annotations == b.annotations
        && a.deletion_timestamp == b.deletion_timestamp
}

/// Runs the Work loop until the cluster leaves the fleet or a fatal error;
/// every Work is checked for drift each `drift_check_interval` (by default
/// [`DRIFT_CHECK_INTERVAL`], or [`WATCHED_CHECK_INTERVAL`] when the target
/// watches: then each change it sees brings its Work back at once).
pub async fn run<T: Target>(
    cluster: String,
    hub: Arc<Hub>,
    target: Arc<T>,
    data_dir: std::path::PathBuf,
    drift_check_interval: Option<Duration>,
    namespaces_moved: Arc<Notify>,
    collect_namespaces: bool,
) -> Result<(), AgentError> {
    let changes = target.take_changes();
    let watching = changes.is_some();
    let drift_check_interval =
        drift_check_interval.unwrap_or(if watching { WATCHED_CHECK_INTERVAL } else { DRIFT_CHECK_INTERVAL });
    let state = Arc::new(Mutex::new(State::default()));
    let wake = Arc::new(Notify::new());
    let mut ledger = Ledger::load(&data_dir)?;
    {
        // Works recorded before a restart are checked once the first list tells what still exists.
        let mut s = state.lock().await;
        s.queue.extend(ledger.works());
    }
    let mut watcher = tokio::spawn(watch(cluster.clone(), hub.clone(), state.clone(), wake.clone()));
    let checker = tokio::spawn(check_periodically(drift_check_interval, state.clone(), wake.clone()));
    let follower = changes.map(|changes| tokio::spawn(follow_changes(changes, state.clone(), wake.clone())));
    // Whichever ends first ends the loop, with its own reason (e.g. the cluster left).
    let result = tokio::select! {
        r = reconcile_forever(
            &hub,
            target.as_ref(),
            &mut ledger,
            &state,
            &wake,
            watching,
            Heartbeats { cluster: &cluster, withdrawn: &namespaces_moved, collect_namespaces },
        ) => r,
        r = &mut watcher => match r {
            Ok(r) => r,
            Err(e) => Err(AgentError::Hub(format!("the Work watch failed: {e}"))),
        },
    };
    watcher.abort();
    checker.abort();
    if let Some(follower) = follower {
        follower.abort();
    }
    result
}

/// Queues the Works a watching target reports changes to.
async fn follow_changes(
    mut changes: tokio::sync::mpsc::UnboundedReceiver<Change>,
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
) {
    while let Some(change) = changes.recv().await {
        state.lock().await.changed(change);
        wake.notify_one();
    }
}

/// Queues every Work for a drift check each `interval` (the first after one interval).
async fn check_periodically(interval: Duration, state: Arc<Mutex<State>>, wake: Arc<Notify>) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        state.lock().await.due_for_checks();
        wake.notify_one();
    }
}

/// How the Work loop tells the hub about namespaces: the cluster to beat
/// for, the heartbeat loop's nudge for withdrawn ones, and whether the
/// agent reports namespaces at all (`--collect-namespaces`).
#[derive(Clone, Copy)]
struct Heartbeats<'a> {
    cluster: &'a str,
    withdrawn: &'a Notify,
    collect_namespaces: bool,
}

/// Reconciles queued Works one at a time, for ever. A Work that is not
/// settled is queued again [`RECHECK`] later without holding up the others
/// (an envelope's Work may wait for the namespace another Work creates).
async fn reconcile_forever<T: Target>(
    hub: &Hub,
    target: &T,
    ledger: &mut Ledger,
    state: &Arc<Mutex<State>>,
    wake: &Arc<Notify>,
    watching: bool,
    heartbeats: Heartbeats<'_>,
) -> Result<(), AgentError> {
    loop {
        let next = state.lock().await.next();
        let Some(name) = next else {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(RECHECK) => {}
            }
            continue;
        };
        let (work, abandon) = {
            let mut s = state.lock().await;
            (s.works.get(&name).cloned(), s.deleted.remove(&name))
        };
        let settled = match work {
            Some(work) => reconcile(heartbeats, hub, target, ledger, &name, &work).await?,
            None => {
                if heartbeats.collect_namespaces {
                    heartbeats.withdrawn.notify_one();
                }
                forget_work(target, ledger, &name, abandon).await?
            }
        };
        let delay = state.lock().await.recheck_after(&name, settled, watching);
        if !settled {
            let (state, wake) = (state.clone(), wake.clone());
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                state.lock().await.queue.insert(name);
                wake.notify_one();
            });
        }
    }
}

/// Handles a Work that no longer exists on the hub, by its
/// `propagationPolicy` (see the [module docs](self)): `abandon` is what its
/// last state said when the watch reported the deletion, `None` when the
/// deletion was found by a relist — then the ledger's record decides.
///
/// `Abandon` leaves every object it placed untouched (owner annotation
/// included) and forgets the Work; `Delete` deletes them and forgets the Work
/// once all are gone. Returns whether it is settled (`false`: some objects
/// could not be deleted yet and are kept in the ledger to retry).
pub async fn forget_work<T: Target>(
    target: &T,
    ledger: &mut Ledger,
    name: &str,
    abandon: Option<bool>,
) -> Result<bool, AgentError> {
    let Some(previous) = ledger.get(name).cloned() else {
        return Ok(true);
    };
    if abandon.unwrap_or(previous.abandon_on_delete) {
        tracing::info!(
            work = name,
            objects = previous.placed.len(),
            "work deleted with propagationPolicy Abandon: left everything it placed on the cluster"
        );
        ledger.set(name, None)?;
        return Ok(true);
    }
    let left = apply::remove_work(target, &previous).await;
    if left.is_empty() {
        tracing::info!(work = name, "work deleted: removed everything it placed");
        ledger.set(name, None)?;
        Ok(true)
    } else {
        // The decision is made: retries delete the rest even if found again only via the ledger.
        ledger.set(name, Some(ledger::Entry { generation: 0, placed: left, ..ledger::Entry::default() }))?;
        Ok(false)
    }
}

/// Applies (or re-checks) an existing Work and records the outcome in the
/// ledger, without reporting status.
async fn apply_and_record<T: Target>(
    target: &T,
    ledger: &mut Ledger,
    name: &str,
    work: &Object,
) -> Result<apply::WorkOutcome, AgentError> {
    let previous = ledger.get(name).cloned();
    let reapply = previous.as_ref().is_none_or(|p| p.generation != work.metadata.generation);
    let observed_at = fleet_api::time::rfc3339_millis(std::time::SystemTime::now());
    let outcome = apply::apply_work(target, work, previous.as_ref(), reapply, &observed_at).await;
    ledger.set(name, Some(outcome.entry.clone()))?;
    Ok(outcome)
}

/// Reconciles one existing Work and reports its status. Returns whether it is settled.
/// Whether the Work places a Namespace (its coming or going is news for the
/// heartbeat).
fn places_namespace(work: &Object) -> bool {
    let manifests = work.spec().and_then(|s| s.pointer("/workload/manifests")).and_then(Value::as_array);
    manifests.into_iter().flatten().any(|m| m["apiVersion"] == "v1" && m["kind"] == "Namespace")
}

/// Applies a Work and reports its status; whether it is settled.
async fn reconcile<T: Target>(
    heartbeats: Heartbeats<'_>,
    hub: &Hub,
    target: &T,
    ledger: &mut Ledger,
    name: &str,
    work: &Object,
) -> Result<bool, AgentError> {
    let outcome = apply_and_record(target, ledger, name, work).await?;
    if work::status_of(work) != outcome.status {
        // A namespace it placed must be known to the hub (the cluster's
        // status.namespaces, read by ResourcePlacements' namespace affinity)
        // before the Work says it is applied.
        if heartbeats.collect_namespaces && places_namespace(work) {
            match crate::heartbeat::beat(heartbeats.cluster, hub, target, true).await {
                Err(AgentError::Left(why)) => return Err(AgentError::Left(why)),
                Err(e) => tracing::warn!("heartbeat before reporting {name} failed: {e}"),
                Ok(_) => {}
            }
        }
        let mut updated = work.clone();
        work::set_status(&mut updated, &outcome.status);
        let request = UpdateStatusRequest { object: updated.to_json() };
        match hub
            .call(|mut c| {
                let request = request.clone();
                async move { c.update_status(request).await }
            })
            .await
        {
            Ok(_) => {}
            // The Work changed meanwhile: its new version is on its way through the watch.
            Err(AgentError::Stale(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(outcome.settled)
}

/// Keeps `state` equal to the Works of the cluster's namespace.
async fn watch(cluster: String, hub: Arc<Hub>, state: Arc<Mutex<State>>, wake: Arc<Notify>) -> Result<(), AgentError> {
    let namespace = member_namespace(&cluster);
    // The last version received (0: list first).
    let mut resource_version = 0u64;
    loop {
        let (index, mut client) = hub.client()?;
        let from = resume_point(resource_version);
        let request = WatchRequest {
            kind: Some(KindRef { kind: "works".into(), api_version: String::new() }),
            namespace: namespace.clone(),
            all_namespaces: false,
            label_selector: String::new(),
            resource_version: from,
            min_resource_version: resource_version,
        };
        let relisting = from == 0;
        let mut seen_in_list = BTreeSet::new();
        let stream = client.watch(request).await;
        let mut stream = match stream {
            Ok(s) => s.into_inner(),
            Err(status) => {
                handle_watch_error(&hub, index, &status, &mut resource_version)?;
                tokio::time::sleep(REWATCH).await;
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    let again = !relisting && event.resource_version <= resource_version;
                    resource_version = resource_version.max(event.resource_version);
                    let mut s = state.lock().await;
                    match event.r#type.as_str() {
                        "BOOKMARK" => {
                            if relisting {
                                // Works that vanished while we were not watching.
                                let gone: Vec<String> =
                                    s.works.keys().filter(|k| !seen_in_list.contains(*k)).cloned().collect();
                                for name in gone {
                                    s.works.remove(&name);
                                    s.queue.insert(name);
                                }
                                s.listed = true;
                            }
                        }
                        kind => {
                            let Ok(object) = Object::from_json(&event.object) else { continue };
                            if again && s.already_has(kind, &object) {
                                continue;
                            }
                            if let Some(name) = s.observe(kind, object) {
                                seen_in_list.insert(name);
                            }
                        }
                    }
                    drop(s);
                    wake.notify_one();
                }
                Err(status) => {
                    handle_watch_error(&hub, index, &status, &mut resource_version)?;
                    break;
                }
            }
        }
        tokio::time::sleep(REWATCH).await;
    }
}

/// Where a broken watch resumes: one version before the last received
/// (0 stays 0: list). One Raft entry can change several Works under one
/// resourceVersion, and a stream broken between them would otherwise lose
/// the rest of that entry; what comes again is dropped by
/// [`State::already_has`].
fn resume_point(last_received: u64) -> u64 {
    last_received.saturating_sub(1)
}

/// Decides how to go on after a watch error: relist on "expired", move to
/// another node when this one is gone, watch again when the stream's
/// certificate was replaced, stop when the cluster left the fleet.
fn handle_watch_error(
    hub: &Hub,
    index: usize,
    status: &tonic::Status,
    resource_version: &mut u64,
) -> Result<(), AgentError> {
    match status.code() {
        tonic::Code::FailedPrecondition if status.message().contains("expired") => {
            tracing::info!("work watch expired at {resource_version}: relisting");
            *resource_version = 0;
            Ok(())
        }
        // The stream was opened with a certificate since replaced by a
        // renewal: watch again, resuming, with the current one (a
        // connection made after the renewal presents it).
        tonic::Code::PermissionDenied if status.message().contains("no longer a credential") => {
            tracing::info!("work watch ended: its certificate was replaced; watching again with the current one");
            Ok(())
        }
        tonic::Code::PermissionDenied => Err(AgentError::from_status(status)),
        _ => {
            tracing::info!(endpoint = hub.endpoint(), "work watch interrupted ({}): moving on", status.message());
            hub.rotate(index);
            Ok(())
        }
    }
}

#[cfg(test)]
#[path = "loop_tests.rs"]
mod tests;
