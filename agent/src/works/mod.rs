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
//!   [`OWNER_ANNOTATION`](crate::target::OWNER_ANNOTATION) naming the deleted
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
//! ([`check_owner`](crate::target::check_owner)) a *different* Work that
//! later holds the same object gets a `ManifestConflict` instead of taking it
//! over — as with any object placed by another placement ("never taken over").
//! Only a Work with the very same namespace and name (the same placement
//! coming back) applies to it again and so adopts it.

pub mod apply;
pub mod compare;
pub mod details;
pub mod ledger;
pub mod report;
pub mod strategy;
pub mod waves;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use fleet_api::member::member_namespace;
use fleet_api::{work, Object};
use fleet_proto::fleet::{KindRef, UpdateStatusRequest, WatchRequest};
use futures::StreamExt;
use tokio::sync::{Mutex, Notify};

use crate::hub::Hub;
use crate::target::Target;
use crate::AgentError;
use ledger::Ledger;

/// How soon a Work that is not settled (not applied, or not available yet) is looked at again.
const RECHECK: Duration = Duration::from_millis(500);
/// How often every Work is checked for drift by default (KubeFleet's period).
pub const DRIFT_CHECK_INTERVAL: Duration = Duration::from_secs(15);
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
}

impl State {
    /// Takes in one watch event (`ADDED`, `MODIFIED` or `DELETED`) and queues
    /// the Work (unless only its status changed). A `DELETED` event carries the Work's last state: its
    /// `propagationPolicy` is kept for [`forget_work`] (unless that state
    /// cannot be read, leaving the decision to the ledger). Returns the Work's
    /// name when it exists.
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
    fn due_for_checks(&mut self) {
        let names: Vec<String> = self.works.keys().filter(|n| !self.queue.contains(*n)).cloned().collect();
        self.checks.extend(names);
    }
}

/// Whether `new` differs from `old` in nothing the agent acts on: same
/// generation (spec), labels, annotations and deletion state — typically
/// the agent's own status report coming back through the watch.
fn only_status_changed(old: &Object, new: &Object) -> bool {
    let (a, b) = (&old.metadata, &new.metadata);
    a.generation == b.generation
        && a.labels == b.labels
        && a.annotations == b.annotations
        && a.deletion_timestamp == b.deletion_timestamp
}

/// Runs the Work loop until the cluster leaves the fleet or a fatal error;
/// every Work is checked for drift each `drift_check_interval`.
pub async fn run<T: Target>(
    cluster: String,
    hub: Arc<Hub>,
    target: Arc<T>,
    data_dir: std::path::PathBuf,
    drift_check_interval: Duration,
) -> Result<(), AgentError> {
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
    // Whichever ends first ends the loop, with its own reason (e.g. the cluster left).
    let result = tokio::select! {
        r = reconcile_forever(&hub, target.as_ref(), &mut ledger, &state, &wake) => r,
        r = &mut watcher => match r {
            Ok(r) => r,
            Err(e) => Err(AgentError::Hub(format!("the Work watch failed: {e}"))),
        },
    };
    watcher.abort();
    checker.abort();
    result
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

/// Reconciles queued Works one at a time, for ever. A Work that is not
/// settled is queued again [`RECHECK`] later without holding up the others
/// (an envelope's Work may wait for the namespace another Work creates).
async fn reconcile_forever<T: Target>(
    hub: &Hub,
    target: &T,
    ledger: &mut Ledger,
    state: &Arc<Mutex<State>>,
    wake: &Arc<Notify>,
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
            Some(work) => reconcile(hub, target, ledger, &name, &work).await?,
            None => forget_work(target, ledger, &name, abandon).await?,
        };
        if !settled {
            let (state, wake) = (state.clone(), wake.clone());
            tokio::spawn(async move {
                tokio::time::sleep(RECHECK).await;
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
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let outcome = apply::apply_work(target, work, previous.as_ref(), reapply, &now).await;
    ledger.set(name, Some(outcome.entry.clone()))?;
    Ok(outcome)
}

/// Reconciles one existing Work and reports its status. Returns whether it is settled.
async fn reconcile<T: Target>(
    hub: &Hub,
    target: &T,
    ledger: &mut Ledger,
    name: &str,
    work: &Object,
) -> Result<bool, AgentError> {
    let outcome = apply_and_record(target, ledger, name, work).await?;
    if work::status_of(work) != outcome.status {
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
    let mut resource_version = 0u64;
    loop {
        let (index, mut client) = hub.client()?;
        let request = WatchRequest {
            kind: Some(KindRef { kind: "works".into(), api_version: String::new() }),
            namespace: namespace.clone(),
            all_namespaces: false,
            label_selector: String::new(),
            resource_version,
            min_resource_version: resource_version,
        };
        let relisting = resource_version == 0;
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

/// Decides how to go on after a watch error: relist on "expired", move to
/// another node when this one is gone, stop when the cluster left the fleet.
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
        tonic::Code::PermissionDenied => Err(AgentError::from_status(status)),
        _ => {
            tracing::info!(endpoint = hub.endpoint(), "work watch interrupted ({}): moving on", status.message());
            hub.rotate(index);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::inspect;
    use crate::target::embedded::{EmbeddedTarget, SimConfig, STORE_DIR};
    use crate::target::{ApplyMode, ApplyRequest, ResourceId, OWNER_ANNOTATION};
    use fleet_api::work::{CONDITION_APPLIED, REASON_SOME_NOT_APPLIED};
    use serde_json::json;

    fn cm(name: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app"}, "data": {"a": "1"}})
    }

    fn cm_id(name: &str) -> ResourceId {
        ResourceId {
            group: "".into(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "app".into(),
            name: name.into(),
        }
    }

    /// A Work of cluster `a`; `policy` is its `deleteOptions.propagationPolicy` (none: the default).
    fn work_object(name: &str, generation: i64, policy: Option<&str>, manifests: Vec<serde_json::Value>) -> Object {
        let mut spec = json!({"workload": {"manifests": manifests}});
        if let Some(p) = policy {
            spec["deleteOptions"] = json!({"propagationPolicy": p});
        }
        serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": name, "namespace": "fleet-member-a", "generation": generation},
            "spec": spec
        }))
        .unwrap()
    }

    /// An agent data dir: the embedded target in it (with namespace `app`,
    /// placed by a Work of its own) and its ledger.
    async fn agent() -> (tempfile::TempDir, EmbeddedTarget, Ledger) {
        let dir = tempfile::tempdir().unwrap();
        let target = EmbeddedTarget::open(&dir.path().join(STORE_DIR), SimConfig::default()).unwrap();
        let ns: Object =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}))
                .unwrap();
        let request = ApplyRequest {
            manifest: &ns,
            mode: ApplyMode::ClientSide,
            owner: "fleet-member-a/namespaces",
            take_over: false,
        };
        target.apply(request).await.unwrap();
        let ledger = Ledger::load(dir.path()).unwrap();
        (dir, target, ledger)
    }

    /// What the loop does with the next queued Work, minus status reporting.
    async fn step(state: &mut State, target: &EmbeddedTarget, ledger: &mut Ledger, name: &str) -> bool {
        assert!(state.queue.remove(name), "{name} is queued");
        let abandon = state.deleted.remove(name);
        match state.works.get(name).cloned() {
            Some(work) => apply_and_record(target, ledger, name, &work).await.unwrap().settled,
            None => forget_work(target, ledger, name, abandon).await.unwrap(),
        }
    }

    #[tokio::test]
    async fn a_work_deleted_with_abandon_leaves_its_objects_as_they_are() {
        let (dir, target, mut ledger) = agent().await;
        let mut state = State::default();
        let w = work_object("w", 1, Some("Abandon"), vec![cm("c")]);
        state.observe("ADDED", w.clone());
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        assert!(ledger.get("w").unwrap().abandon_on_delete);
        let before = target.get(&cm_id("c")).await.unwrap().unwrap();

        assert_eq!(state.observe("DELETED", w), None);
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        let after = target.get(&cm_id("c")).await.unwrap().unwrap();
        assert_eq!(after, before, "untouched, owner annotation included");
        assert_eq!(after.metadata.annotations.get(OWNER_ANNOTATION).map(String::as_str), Some("fleet-member-a/w"));
        assert!(ledger.get("w").is_none(), "forgotten");
        assert!(Ledger::load(dir.path()).unwrap().get("w").is_none(), "durably");
        let shown = inspect(dir.path(), Some("cm"), None, Some("app"), false, false).unwrap();
        assert!(shown.contains("\nc "), "{shown}");
    }

    #[tokio::test]
    async fn a_work_deleted_with_delete_or_no_policy_removes_its_objects() {
        for policy in [None, Some("Delete")] {
            let (dir, target, mut ledger) = agent().await;
            let mut state = State::default();
            let w = work_object("w", 1, policy, vec![cm("c")]);
            state.observe("ADDED", w.clone());
            assert!(step(&mut state, &target, &mut ledger, "w").await);
            assert!(!ledger.get("w").unwrap().abandon_on_delete);
            state.observe("DELETED", w);
            assert!(step(&mut state, &target, &mut ledger, "w").await);
            assert!(target.get(&cm_id("c")).await.unwrap().is_none(), "{policy:?}");
            assert!(ledger.get("w").is_none());
            let shown = inspect(dir.path(), Some("cm"), None, Some("app"), false, false).unwrap();
            assert_eq!(shown, "No resources found in app namespace.\n");
        }
    }

    #[tokio::test]
    async fn a_deletion_found_at_relist_follows_the_policy_in_the_ledger() {
        let (dir, target, mut ledger) = agent().await;
        let mut state = State::default();
        state.observe("ADDED", work_object("keep", 1, Some("Abandon"), vec![cm("k")]));
        state.observe("ADDED", work_object("drop", 1, None, vec![cm("d")]));
        assert!(step(&mut state, &target, &mut ledger, "keep").await);
        assert!(step(&mut state, &target, &mut ledger, "drop").await);

        // The agent restarts while both Works are deleted: only the ledger is left,
        // and the first list simply lacks them.
        drop(ledger);
        let mut ledger = Ledger::load(dir.path()).unwrap();
        let mut state = State::default();
        state.queue.extend(ledger.works());
        assert!(step(&mut state, &target, &mut ledger, "keep").await);
        assert!(step(&mut state, &target, &mut ledger, "drop").await);
        assert!(target.get(&cm_id("k")).await.unwrap().is_some(), "abandoned");
        assert!(target.get(&cm_id("d")).await.unwrap().is_none(), "deleted");
        assert!(ledger.works().is_empty());
    }

    #[tokio::test]
    async fn the_deleted_event_s_last_state_wins_over_the_ledger() {
        let (_dir, target, mut ledger) = agent().await;
        let mut state = State::default();
        state.observe("ADDED", work_object("w", 1, None, vec![cm("c")]));
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        // Switched to Abandon and deleted before the agent applied generation 2.
        state.observe("MODIFIED", work_object("w", 2, Some("Abandon"), vec![cm("c")]));
        state.observe("DELETED", work_object("w", 2, Some("Abandon"), vec![cm("c")]));
        assert_eq!(state.deleted.get("w"), Some(&true));
        assert!(!ledger.get("w").unwrap().abandon_on_delete);
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        assert!(target.get(&cm_id("c")).await.unwrap().is_some());
        assert!(ledger.get("w").is_none());

        // Created again: the pending deletion is void. An unreadable last state decides nothing.
        state.observe("DELETED", work_object("v", 1, Some("Abandon"), vec![]));
        state.observe("ADDED", work_object("v", 2, None, vec![]));
        assert!(!state.deleted.contains_key("v"));
        let mut odd = work_object("v", 2, None, vec![]);
        odd.rest.insert("spec".into(), json!({"workload": {"manifests": []}, "surprise": 1}));
        state.observe("DELETED", odd);
        assert!(!state.deleted.contains_key("v") && !state.works.contains_key("v"));
    }

    #[tokio::test]
    async fn an_abandoned_object_is_a_conflict_for_another_work_and_adopted_by_the_same_one() {
        let (_dir, target, mut ledger) = agent().await;
        let mut state = State::default();
        let w = work_object("w", 1, Some("Abandon"), vec![cm("c")]);
        state.observe("ADDED", w.clone());
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        state.observe("DELETED", w);
        assert!(step(&mut state, &target, &mut ledger, "w").await);

        state.observe("ADDED", work_object("other", 1, None, vec![cm("c")]));
        assert!(!step(&mut state, &target, &mut ledger, "other").await);
        let status = apply::apply_work(&target, &work_object("other", 1, None, vec![cm("c")]), None, true, "t").await;
        let applied = status.status.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).unwrap();
        assert_eq!(applied.reason, REASON_SOME_NOT_APPLIED);
        let manifest = &status.status.manifest_conditions[0].conditions;
        assert!(manifest.iter().any(|c| c.reason == "ManifestConflict"), "{manifest:?}");
        assert!(ledger.get("other").unwrap().placed.is_empty(), "not taken over");

        // The same Work (same namespace and name) coming back applies to it again.
        state.observe("ADDED", work_object("w", 1, None, vec![cm("c")]));
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        assert_eq!(ledger.get("w").unwrap().placed, vec![cm_id("c")]);
    }

    #[tokio::test]
    async fn an_abandoning_work_still_prunes_what_it_no_longer_holds() {
        let (_dir, target, mut ledger) = agent().await;
        let mut state = State::default();
        state.observe("ADDED", work_object("w", 1, Some("Abandon"), vec![cm("c"), cm("gone")]));
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        state.observe("MODIFIED", work_object("w", 2, Some("Abandon"), vec![cm("c")]));
        assert!(step(&mut state, &target, &mut ledger, "w").await);
        assert!(target.get(&cm_id("gone")).await.unwrap().is_none());
        assert!(target.get(&cm_id("c")).await.unwrap().is_some());
    }

    #[test]
    fn changes_come_before_drift_checks_and_a_status_report_coming_back_is_not_a_change() {
        let mut state = State::default();
        let w = work_object("w", 1, None, vec![cm("c")]);
        state.observe("ADDED", w.clone());
        state.observe("ADDED", work_object("v", 1, None, vec![]));
        assert_eq!(state.next(), None, "nothing before the first list");
        state.listed = true;
        assert_eq!((state.next(), state.next(), state.next()), (Some("v".into()), Some("w".into()), None));

        // The agent's own status write comes back: not queued, but kept as the latest version.
        let mut reported = w.clone();
        work::set_status(&mut reported, &work::WorkStatus { conditions: vec![], manifest_conditions: vec![] });
        reported.metadata.resource_version = "9".into();
        state.observe("MODIFIED", reported.clone());
        assert!(state.queue.is_empty());
        assert_eq!(state.works["w"].metadata.resource_version, "9");
        let mut relabelled = reported.clone();
        relabelled.metadata.labels.insert("x".into(), "y".into());
        state.observe("MODIFIED", relabelled);
        assert_eq!(state.next(), Some("w".into()), "a label change is looked at");
        let mut changed = reported;
        changed.metadata.generation = 2;
        state.observe("MODIFIED", changed);
        assert_eq!(state.next(), Some("w".into()), "a spec change is looked at");

        // Drift checks queue every Work, behind any change.
        state.due_for_checks();
        state.observe("MODIFIED", work_object("w", 3, None, vec![]));
        assert_eq!(state.next(), Some("w".into()), "the change first, and it counts as w's check");
        assert_eq!((state.next(), state.next()), (Some("v".into()), None));
    }

    #[test]
    fn an_expired_watch_relists_a_lost_node_moves_on_and_a_revoked_member_stops() {
        let hub = Hub::new(vec!["a:1".into(), "b:2".into()], tonic::transport::ClientTlsConfig::new());
        let mut rv = 42;
        let expired = tonic::Status::failed_precondition("resourceVersion 42 is too old ...: expired, relist");
        handle_watch_error(&hub, 0, &expired, &mut rv).unwrap();
        assert_eq!(rv, 0, "expired: relist from scratch");
        let mut rv = 42;
        handle_watch_error(&hub, 0, &tonic::Status::unavailable("node down"), &mut rv).unwrap();
        assert_eq!((rv, hub.endpoint()), (42, "b:2"), "resume from the same version on the next node");
        let left = tonic::Status::permission_denied("member cluster \"a\" has left the fleet");
        assert!(matches!(handle_watch_error(&hub, 1, &left, &mut rv), Err(AgentError::Left(_))));
    }
}
