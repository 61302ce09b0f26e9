//! Tests of the Work loop: deleted Works and their propagation policy,
//! what is queued when, and how watch errors are handled.

use super::*;
use crate::inspect::inspect;
use crate::targets::embedded::{EmbeddedTarget, SimConfig, STORE_DIR};
use crate::targets::{ApplyMode, ApplyRequest, ResourceId, OWNER_ANNOTATION};
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
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}})).unwrap();
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
    assert!(manifest.iter().any(|c| c.reason == "FailedToTakeOver"), "{manifest:?}");
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
    let replaced = tonic::Status::permission_denied("this certificate (serial 1f) is no longer a credential of ...");
    handle_watch_error(&hub, 1, &replaced, &mut rv).unwrap();
    assert_eq!(rv, 42, "replaced: resume from the same version with the current certificate");
    let left = tonic::Status::permission_denied("member cluster \"a\" has left the fleet");
    assert!(matches!(handle_watch_error(&hub, 1, &left, &mut rv), Err(AgentError::Left(_))));
}

#[test]
fn a_resumed_watch_starts_one_version_early_and_drops_what_it_already_has() {
    assert_eq!((resume_point(0), resume_point(1), resume_point(42)), (0, 0, 41));
    let work = |name: &str, rv: &str| {
        let mut o = work_object(name, 1, None, vec![]);
        o.metadata.resource_version = rv.to_string();
        o
    };
    let mut state = State::default();
    state.observe("ADDED", work("main", "41"));
    // Entry 41 changed two Works; the stream broke after the first.
    assert!(state.already_has("ADDED", &work("main", "41")), "seen: dropped");
    assert!(!state.already_has("ADDED", &work("envelope", "41")), "the rest of the entry: kept");
    assert!(!state.already_has("MODIFIED", &work("main", "42")));
    assert!(!state.already_has("DELETED", &work("main", "41")), "a deletion of a held Work: kept");
    assert!(state.already_has("DELETED", &work("gone", "41")), "a deletion already taken in: dropped");
}

#[test]
fn a_watched_change_queues_only_this_clusters_work() {
    let mut state = State::default();
    state.works.insert("w".into(), work_object("w", 1, None, vec![cm("c")]));
    state.changed(Change::Work("fleet-member-b/w".into()));
    state.changed(Change::Work("fleet-member-a/other".into()));
    state.changed(Change::Work("no-slash".into()));
    assert!(state.queue.is_empty(), "{:?}", state.queue);
    state.changed(Change::Work("fleet-member-a/w".into()));
    assert_eq!(state.queue.iter().collect::<Vec<_>>(), ["w"]);

    // A resync makes every Work due for its check.
    state.queue.clear();
    state.changed(Change::Resync);
    assert_eq!(state.checks.iter().collect::<Vec<_>>(), ["w"]);
}

#[test]
fn unsettled_works_back_off_only_on_a_watching_target() {
    let mut state = State::default();
    let waits: Vec<u128> = (0..9).map(|_| state.recheck_after("w", false, true).as_millis()).collect();
    assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    // Settling resets the backoff.
    assert_eq!(state.recheck_after("w", true, true), RECHECK);
    assert_eq!(state.recheck_after("w", false, true), RECHECK);
    // A polled target looks again at the same pace every time.
    for _ in 0..5 {
        assert_eq!(state.recheck_after("p", false, false), RECHECK);
    }
}
