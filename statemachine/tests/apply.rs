//! The deterministic apply rules, on a real redb file.

use fleet_api::{Object, ObjectKey};
use fleet_statemachine::{Action, Command, EventType, ListQuery, Op, Proposal, Response, Store, StoreError};
use openraft::{CommittedLeaderId, EntryPayload, LogId};
use serde_json::json;

fn obj(v: serde_json::Value) -> Object {
    serde_json::from_value(v).expect("object")
}

fn cm(name: &str, data: &str) -> Object {
    obj(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}, "data": {"k": data}}),
    )
}

struct Harness {
    _dir: tempfile::TempDir,
    store: std::sync::Arc<Store>,
    index: u64,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("state.redb")).expect("open");
        Harness { _dir: dir, store, index: 0 }
    }

    fn run(&mut self, ops: Vec<Op>) -> Response {
        self.index += 1;
        let entry = openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), self.index),
            payload: EntryPayload::Normal(
                Proposal::new(vec![Command { now: "2026-11-21T00:00:00Z".into(), ops }]).expect("encode"),
            ),
        };
        self.store.apply_entries(vec![entry], self.index.is_multiple_of(2)).expect("apply").remove(0).remove(0)
    }

    /// Applies one entry of several commands (each atomic on its own).
    fn run_entry(&mut self, commands: Vec<Command>) -> Vec<Response> {
        self.index += 1;
        let entry = openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), self.index),
            payload: EntryPayload::Normal(Proposal::new(commands).expect("encode")),
        };
        self.store.apply_entries(vec![entry], self.index.is_multiple_of(2)).expect("apply").remove(0)
    }

    fn ok(&mut self, ops: Vec<Op>) -> Vec<fleet_statemachine::OpOutcome> {
        match self.run(ops) {
            Response::Applied { outcomes, .. } => outcomes,
            other => panic!("expected success, got {other:?}"),
        }
    }

    fn refused(&mut self, ops: Vec<Op>) -> StoreError {
        match self.run(ops) {
            Response::Refused { error, .. } => error,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn get(&self, name: &str) -> Option<Object> {
        self.store.get(&ObjectKey::new("", "ConfigMap", "a", name)).expect("get").0
    }
}

fn apply(o: Object) -> Op {
    Op::Apply { object: o, uid: "uid-1".into() }
}

#[test]
fn create_sets_identity_generation_and_version_from_the_command() {
    let mut h = Harness::new();
    let out = h.ok(vec![apply(cm("x", "1"))]);
    assert_eq!(out[0].action, Action::Created);
    let x = h.get("x").expect("stored");
    assert_eq!(x.metadata.uid, "uid-1");
    assert_eq!(x.metadata.generation, 1);
    assert_eq!(x.metadata.creation_timestamp.as_deref(), Some("2026-11-21T00:00:00Z"));
    assert_eq!(x.metadata.resource_version_number(), Some(1));
    assert_eq!(h.store.applied_index(), 1);
}

#[test]
fn generation_grows_on_spec_changes_only_and_unchanged_writes_nothing() {
    let mut h = Harness::new();
    h.ok(vec![apply(cm("x", "1"))]);
    // Same document: unchanged, no new version.
    assert_eq!(h.ok(vec![apply(cm("x", "1"))])[0].action, Action::Unchanged);
    assert_eq!(h.get("x").unwrap().metadata.resource_version_number(), Some(1));
    // A label only: new version, same generation.
    let mut labelled = cm("x", "1");
    labelled.metadata.labels.insert("team".into(), "a".into());
    assert_eq!(h.ok(vec![apply(labelled)])[0].action, Action::Configured);
    let x = h.get("x").unwrap();
    assert_eq!((x.metadata.generation, x.metadata.resource_version_number()), (1, Some(3)));
    // Data change: generation 2.
    h.ok(vec![apply(cm("x", "2"))]);
    assert_eq!(h.get("x").unwrap().metadata.generation, 2);
    // Status only: no generation change; apply never overwrites status.
    let mut with_status = cm("x", "2");
    with_status.rest.insert("status".into(), json!({"ok": true}));
    h.ok(vec![Op::UpdateStatus { object: with_status }]);
    let x = h.get("x").unwrap();
    assert_eq!((x.metadata.generation, x.status().cloned()), (2, Some(json!({"ok": true}))));
    h.ok(vec![apply(cm("x", "3"))]);
    assert_eq!(h.get("x").unwrap().status().cloned(), Some(json!({"ok": true})));
}

#[test]
fn a_refused_op_leaves_the_whole_command_unapplied() {
    let mut h = Harness::new();
    h.ok(vec![apply(cm("x", "1"))]);
    let mut stale = cm("x", "2");
    stale.metadata.resource_version = "99".into();
    let err = h.refused(vec![apply(cm("y", "1")), apply(stale)]);
    assert!(matches!(err, StoreError::Conflict { expected: 99, current: 1, .. }), "{err:?}");
    assert!(h.get("y").is_none(), "the first op of a refused command must not be written");
    assert_eq!(h.store.applied_index(), 2, "a refused command still advances last_applied");
    assert!(matches!(h.refused(vec![Op::Create { object: cm("x", "1") }]), StoreError::AlreadyExists { .. }));
    let missing = ObjectKey::new("", "ConfigMap", "a", "nope");
    assert!(matches!(
        h.refused(vec![Op::Delete { key: missing, resource_version: None }]),
        StoreError::NotFound { .. }
    ));
}

#[test]
fn a_check_passes_only_at_the_read_version_and_writes_nothing() {
    let mut h = Harness::new();
    h.ok(vec![apply(cm("x", "1"))]);
    let key = ObjectKey::new("", "ConfigMap", "a", "x");
    let outcomes = h.ok(vec![Op::Check { key: key.clone(), resource_version: 1 }, apply(cm("y", "1"))]);
    assert_eq!(outcomes[0].action, Action::Unchanged);
    assert_eq!(h.get("x").unwrap().metadata.resource_version_number(), Some(1), "a check writes nothing");
    let err = h.refused(vec![apply(cm("z", "1")), Op::Check { key, resource_version: 3 }]);
    assert!(matches!(err, StoreError::Conflict { expected: 3, current: 1, .. }), "{err:?}");
    assert!(h.get("z").is_none(), "a failed check refuses the whole command");
    let gone = ObjectKey::new("", "ConfigMap", "a", "gone");
    assert!(matches!(h.refused(vec![Op::Check { key: gone, resource_version: 1 }]), StoreError::NotFound { .. }));
}

#[test]
fn a_generation_check_passes_across_status_writes_but_not_spec_changes() {
    let mut h = Harness::new();
    h.ok(vec![apply(cm("x", "1"))]);
    let key = ObjectKey::new("", "ConfigMap", "a", "x");
    let generation = h.get("x").unwrap().metadata.generation;
    let mut with_status = h.get("x").unwrap();
    with_status.metadata.resource_version.clear();
    with_status.rest.insert("status".into(), json!({"seen": true}));
    h.ok(vec![Op::UpdateStatus { object: with_status }]);
    let outcomes = h.ok(vec![Op::CheckGeneration { key: key.clone(), generation }]);
    assert_eq!(outcomes[0].action, Action::Unchanged, "a status write leaves the spec's generation");
    h.ok(vec![apply(cm("x", "2"))]);
    let err = h.refused(vec![apply(cm("z", "1")), Op::CheckGeneration { key: key.clone(), generation }]);
    assert!(
        matches!(err, StoreError::GenerationConflict { expected, current, .. } if expected == generation && current == generation + 1),
        "{err:?}"
    );
    assert!(h.get("z").is_none(), "a failed check refuses the whole command");
    let gone = ObjectKey::new("", "ConfigMap", "a", "gone");
    assert!(matches!(h.refused(vec![Op::CheckGeneration { key: gone, generation: 1 }]), StoreError::NotFound { .. }));
}

#[test]
fn deleting_an_owner_cascades_to_dependents_with_no_other_owner() {
    let mut h = Harness::new();
    let owner_ref = |uid: &str| json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": uid}]);
    let mut owner = cm("owner", "1");
    owner.metadata.uid = "owner-uid".into();
    let mut child = cm("child", "1");
    child.metadata.owner_references = serde_json::from_value(owner_ref("owner-uid")).unwrap();
    child.metadata.uid = "child-uid".into();
    let mut grandchild = cm("grandchild", "1");
    grandchild.metadata.owner_references = serde_json::from_value(owner_ref("child-uid")).unwrap();
    grandchild.metadata.uid = "gc-uid".into();
    let mut shared = cm("shared", "1");
    shared.metadata.owner_references = serde_json::from_value(json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "owner-uid"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "other-uid"}
    ]))
    .unwrap();
    shared.metadata.uid = "shared-uid".into();
    h.ok(vec![
        Op::Create { object: owner },
        Op::Create { object: child },
        Op::Create { object: grandchild },
        Op::Create { object: shared },
    ]);
    let mut sub = h.store.hub().subscribe(h.index).expect("subscribe");
    h.ok(vec![Op::Delete { key: ObjectKey::new("", "ConfigMap", "a", "owner"), resource_version: None }]);
    assert!(h.get("owner").is_none() && h.get("child").is_none() && h.get("grandchild").is_none());
    let shared = h.get("shared").expect("a dependent with another owner stays");
    assert_eq!(shared.metadata.owner_references.len(), 1);
    let mut deleted = Vec::new();
    while let Ok(Some(fleet_statemachine::watch::HubMessage::Event(e))) = sub.receiver.try_recv() {
        if e.event_type == EventType::Deleted {
            deleted.push(e.key.name.clone());
        }
        assert_eq!(e.resource_version, h.index, "one command, one version");
    }
    deleted.sort();
    assert_eq!(deleted, vec!["child", "grandchild", "owner"]);
}

#[test]
fn deleting_a_namespace_deletes_what_is_in_it() {
    let mut h = Harness::new();
    let ns: Object =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}))
            .expect("namespace");
    let mut other = cm("keep", "1");
    other.metadata.namespace = Some("b".into());
    h.ok(vec![apply(ns), apply(cm("x", "1")), apply(cm("y", "1")), apply(other)]);
    // Written in the same command as the delete: goes too.
    let outcomes = h.ok(vec![
        apply(cm("z", "1")),
        Op::Delete { key: ObjectKey::new("", "Namespace", "", "a"), resource_version: None },
    ]);
    assert_eq!(outcomes[1].action, Action::Deleted);
    for name in ["x", "y", "z"] {
        assert!(h.get(name).is_none(), "{name} went with its namespace");
    }
    let kept = h.store.get(&ObjectKey::new("", "ConfigMap", "b", "keep")).unwrap().0;
    assert!(kept.is_some(), "other namespaces are untouched");
}

#[test]
fn lists_filter_by_namespace_and_labels() {
    let mut h = Harness::new();
    let mut labelled = cm("l", "1");
    labelled.metadata.labels.insert("app".into(), "web".into());
    h.ok(vec![apply(labelled), apply(cm("u", "1"))]);
    let mut other_ns = cm("z", "1");
    other_ns.metadata.namespace = Some("b".into());
    h.ok(vec![apply(other_ns)]);
    let query = |ns: Option<&str>, sel: &str| ListQuery {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: ns.map(str::to_string),
        selector: (!sel.is_empty()).then(|| fleet_api::LabelSelector::parse(sel).expect("selector")),
    };
    assert_eq!(h.store.list(&query(Some("a"), "")).unwrap().0.len(), 2);
    assert_eq!(h.store.list(&query(None, "")).unwrap().0.len(), 3);
    let (web, index) = h.store.list(&query(None, "app=web")).unwrap();
    assert_eq!((web.len(), index), (1, 2));
    let names = |objects: Vec<Object>| objects.into_iter().map(|o| o.metadata.name).collect::<Vec<_>>();
    let in_b = h.store.namespace_contents("b").unwrap().0;
    assert_eq!(names(in_b), vec!["z"]);
    let prefixed = h.store.list_named_prefix("", "ConfigMap", "a", "l").unwrap().0;
    assert_eq!(names(prefixed), vec!["l"]);
    // A mapped list maps what the query selects, in order, and drops `None`s.
    let (json, index) = h.store.list_map(&query(None, ""), |o| (o.metadata.name != "u").then(|| o.to_json())).unwrap();
    let listed = h.store.list(&query(None, "")).unwrap().0;
    let expected: Vec<Vec<u8>> = listed.iter().filter(|o| o.metadata.name != "u").map(Object::to_json).collect();
    assert_eq!((json, index), (expected, 2));
    let (selected, _) = h.store.list_map(&query(None, "app=web"), |o| Some(o.metadata.name)).unwrap();
    assert_eq!(selected, vec!["l"]);
}

#[test]
fn a_label_selector_watch_sees_objects_enter_and_leave_it() {
    let mut h = Harness::new();
    let mut sub = h.store.hub().subscribe(0).expect("subscribe");
    let labelled = |app: &str, data: &str| {
        let mut o = cm("w", data);
        if !app.is_empty() {
            o.metadata.labels.insert("app".into(), app.into());
        }
        o
    };
    // Created matching; data change; relabelled out; changed while out;
    // relabelled in; deleted while matching; created not matching.
    h.ok(vec![apply(labelled("web", "1"))]);
    h.ok(vec![apply(labelled("web", "2"))]);
    h.ok(vec![apply(labelled("db", "2"))]);
    h.ok(vec![apply(labelled("db", "3"))]);
    h.ok(vec![apply(labelled("web", "3"))]);
    h.ok(vec![Op::Delete { key: ObjectKey::new("", "ConfigMap", "a", "w"), resource_version: None }]);
    h.ok(vec![apply(labelled("", "4"))]);
    let web = ListQuery {
        kind: "ConfigMap".into(),
        selector: Some(fleet_api::LabelSelector::parse("app=web").expect("selector")),
        ..Default::default()
    };
    let everything = ListQuery { kind: "ConfigMap".into(), ..Default::default() };
    let (mut seen_by_web, mut seen_by_all) = (Vec::new(), Vec::new());
    while let Ok(Some(fleet_statemachine::watch::HubMessage::Event(e))) = sub.receiver.try_recv() {
        let view = |q: &ListQuery| q.view_of(&e).map(|(t, o)| (t, o.metadata.labels.get("app").cloned()));
        seen_by_web.push(view(&web));
        seen_by_all.push(view(&everything).map(|(t, _)| t));
    }
    use EventType::{Added, Deleted, Modified};
    let web_app = Some("web".to_string());
    let expected = vec![
        Some((Added, web_app.clone())),
        Some((Modified, web_app.clone())),
        Some((Deleted, web_app.clone())), // the last state the watch matched
        None,
        Some((Added, web_app.clone())),
        Some((Deleted, web_app)),
        None,
    ];
    assert_eq!(seen_by_web, expected);
    assert_eq!(
        seen_by_all,
        vec![Some(Added), Some(Modified), Some(Modified), Some(Modified), Some(Modified), Some(Deleted), Some(Added)]
    );
    let other_kind = ListQuery { kind: "Secret".into(), ..Default::default() };
    assert!(h.store.hub().subscribe(0).expect("subscribe").backlog.iter().all(|e| other_kind.view_of(e).is_none()));
}

#[test]
fn commands_batched_in_one_entry_stand_or_fall_alone_and_emit_one_event_per_object() {
    let mut h = Harness::new();
    h.ok(vec![apply(cm("x", "1"))]);
    let mut sub = h.store.hub().subscribe(h.index).expect("subscribe");
    h.index += 1;
    let mut stale = cm("y", "1");
    stale.metadata.resource_version = "99".into();
    let command = |ops: Vec<Op>| Command { now: "2026-11-21T00:00:01Z".into(), ops };
    let entry = openraft::Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), h.index),
        payload: EntryPayload::Normal(
            Proposal::new(vec![
                command(vec![apply(cm("x", "2"))]),
                // Refused (stale precondition): its earlier op is taken back, the others stand.
                command(vec![apply(cm("z", "1")), apply(stale)]),
                command(vec![apply(cm("x", "3"))]),
            ])
            .expect("encode"),
        ),
    };
    let replies = h.store.apply_entries(vec![entry], false).expect("apply").remove(0);
    assert!(matches!(replies[0], Response::Applied { .. }));
    assert!(matches!(replies[1], Response::Refused { error: StoreError::NotFound { .. }, .. }));
    assert!(matches!(replies[2], Response::Applied { .. }));
    assert!(h.get("z").is_none(), "the refused command left nothing behind");
    let x = h.get("x").expect("x");
    assert_eq!(x.rest["data"]["k"], "3");
    assert_eq!(x.metadata.generation, 3, "two spec changes, two generations");
    // One event for x at this index, holding its final state.
    let mut events = Vec::new();
    while let Ok(Some(fleet_statemachine::watch::HubMessage::Event(e))) = sub.receiver.try_recv() {
        events.push(e);
    }
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!((events[0].event_type, events[0].resource_version), (EventType::Modified, h.index));
    assert_eq!(events[0].object.rest["data"]["k"], "3");
}

mod namespace_index {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    /// A ConfigMap or a Secret `name` in namespace `ns`.
    fn object(secret: bool, ns: &str, name: &str) -> Object {
        let kind = if secret { "Secret" } else { "ConfigMap" };
        obj(json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": ns}}))
    }

    fn names(objects: Vec<Object>) -> Vec<String> {
        objects.into_iter().map(|o| format!("{}/{}", o.kind, o.metadata.name)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// After any sequence of creates and deletes (some in one entry,
        /// some refused), and after reopening the file, a namespace's
        /// contents read through the index are exactly the objects a model
        /// of the store holds in it, in key order.
        #[test]
        fn namespace_contents_agree_with_a_model(steps in prop::collection::vec((any::<bool>(), any::<bool>(), 0u8..3, 0u8..4), 1..30)) {
            let mut h = Harness::new();
            let mut model: BTreeMap<String, (String, String)> = BTreeMap::new();
            for (i, (delete, secret, ns, name)) in steps.iter().enumerate() {
                let (ns, name) = (format!("ns{ns}"), format!("o{name}"));
                let o = object(*secret, &ns, &name);
                let key = ObjectKey::of(&o);
                if *delete {
                    let _ = h.run(vec![Op::Delete { key: key.clone(), resource_version: None }]);
                    model.remove(&key.storage_key());
                } else {
                    // Every third create shares its entry with a refused op: nothing of it lands.
                    let refused = i % 3 == 0 && !model.contains_key(&key.storage_key());
                    let mut ops = vec![Op::Apply { object: o.clone(), uid: format!("uid-{i}") }];
                    if refused {
                        ops.push(Op::Check { key: ObjectKey::new("", "ConfigMap", "none", "none"), resource_version: 1 });
                    }
                    let _ = h.run(ops);
                    if !refused {
                        model.insert(key.storage_key(), (ns.clone(), format!("{}/{}", o.kind, name)));
                    }
                }
            }
            let expect = |model: &BTreeMap<String, (String, String)>, ns: &str| -> Vec<String> {
                model.values().filter(|(n, _)| n == ns).map(|(_, k)| k.clone()).collect()
            };
            for ns in ["ns0", "ns1", "ns2", "none"] {
                prop_assert_eq!(names(h.store.namespace_contents(ns).unwrap().0), expect(&model, ns));
            }
            let path = h._dir.path().join("state.redb");
            drop(std::mem::replace(&mut h.store, Store::open(&h._dir.path().join("other.redb")).unwrap()));
            let reopened = Store::open(&path).unwrap();
            for ns in ["ns0", "ns1", "ns2"] {
                prop_assert_eq!(names(reopened.namespace_contents(ns).unwrap().0), expect(&model, ns));
            }
        }

        /// Deleting a Namespace (read through the index) takes exactly what a
        /// scan of every key finds in it, including objects written earlier
        /// in the same entry, after any sequence of writes and deletes; a
        /// refused delete takes nothing.
        #[test]
        fn namespace_deletes_take_what_a_full_scan_finds(steps in prop::collection::vec((0u8..5, 0u8..3, 0u8..4, any::<bool>()), 1..40)) {
            let mut h = Harness::new();
            // The model: every stored key, as a full scan would list it.
            let mut model: BTreeSet<String> = BTreeSet::new();
            let mut entry: Vec<Command> = Vec::new();
            for (i, (op, ns, name, close)) in steps.iter().enumerate() {
                let ns = format!("ns{ns}");
                let namespace = obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
                let namespace_key = ObjectKey::of(&namespace).storage_key();
                let o = object(*op == 1, &ns, &format!("o{name}"));
                let key = ObjectKey::of(&o);
                let ops = match op {
                    0 | 1 => {
                        model.insert(key.storage_key());
                        vec![Op::Apply { object: o, uid: format!("uid-{i}") }]
                    }
                    2 => {
                        model.remove(&key.storage_key());
                        vec![Op::Delete { key, resource_version: None }]
                    }
                    3 => {
                        model.insert(namespace_key);
                        vec![Op::Apply { object: namespace, uid: format!("uid-{i}") }]
                    }
                    _ => {
                        if model.contains(&namespace_key) {
                            let prefix_free = |k: &String| k.split('/').nth(2) != Some(ns.as_str());
                            model.retain(|k| *k != namespace_key && prefix_free(k));
                        }
                        vec![Op::Delete { key: ObjectKey::of(&namespace), resource_version: None }]
                    }
                };
                entry.push(Command { now: "2026-11-21T00:00:00Z".into(), ops });
                if *close || i + 1 == steps.len() {
                    h.run_entry(std::mem::take(&mut entry));
                }
            }
            let mut stored = BTreeSet::new();
            for kind in ["ConfigMap", "Secret", "Namespace"] {
                let query = ListQuery { group: String::new(), kind: kind.into(), namespace: None, selector: None };
                stored.extend(h.store.list(&query).unwrap().0.iter().map(|o| ObjectKey::of(o).storage_key()));
            }
            prop_assert_eq!(&stored, &model);
            for ns in ["ns0", "ns1", "ns2"] {
                let contents: BTreeSet<String> =
                    h.store.namespace_contents(ns).unwrap().0.iter().map(|o| ObjectKey::of(o).storage_key()).collect();
                let scanned: BTreeSet<String> = model.iter().filter(|k| k.split('/').nth(2) == Some(ns)).cloned().collect();
                prop_assert_eq!(contents, scanned);
            }
        }
    }
}

#[test]
fn an_object_with_finalizers_is_marked_and_goes_with_its_last_finalizer() {
    let mut h = Harness::new();
    let mut guarded = cm("guarded", "1");
    guarded.metadata.finalizers = vec!["example.com/a".into(), "example.com/b".into()];
    h.ok(vec![apply(guarded)]);
    let key = ObjectKey::new("", "ConfigMap", "a", "guarded");
    let out = h.ok(vec![Op::Delete { key: key.clone(), resource_version: None }]);
    assert_eq!(out[0].action, Action::Configured, "marked, not deleted");
    let marked = h.get("guarded").expect("still there");
    assert_eq!(marked.metadata.deletion_timestamp.as_deref(), Some("2026-11-21T00:00:00Z"));
    assert_eq!(marked.metadata.generation, 2);
    let again = h.ok(vec![Op::Delete { key: key.clone(), resource_version: None }]);
    assert_eq!(again[0].action, Action::Unchanged, "a second delete changes nothing");

    let mut added = marked.clone();
    added.metadata.finalizers.push("example.com/c".into());
    let err = h.refused(vec![Op::Update { object: added }]).to_string();
    assert!(err.contains("no new finalizers can be added"), "{err}");

    let mut one_left = marked.clone();
    one_left.metadata.finalizers = vec!["example.com/b".into()];
    assert_eq!(h.ok(vec![Op::Update { object: one_left }])[0].action, Action::Configured);
    let mut none_left = h.get("guarded").expect("one finalizer left");
    none_left.metadata.finalizers.clear();
    let mut sub = h.store.hub().subscribe(h.index).expect("subscribe");
    assert_eq!(h.ok(vec![Op::Update { object: none_left }])[0].action, Action::Deleted);
    assert!(h.get("guarded").is_none(), "the last finalizer's removal deletes it");
    match sub.receiver.try_recv() {
        Ok(Some(fleet_statemachine::watch::HubMessage::Event(e))) => assert_eq!(e.event_type, EventType::Deleted),
        other => panic!("expected a DELETED event, got {other:?}"),
    }
}

#[test]
fn a_dependent_with_finalizers_is_marked_when_its_owner_goes() {
    let mut h = Harness::new();
    let mut owner = cm("owner", "1");
    owner.metadata.uid = "owner-uid".into();
    let mut child: Object = obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "child", "namespace": "a", "uid": "child-uid", "finalizers": ["example.com/keep"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "owner-uid"}]}}));
    child.metadata.uid = "child-uid".into();
    h.ok(vec![Op::Create { object: owner }, Op::Create { object: child }]);
    h.ok(vec![Op::Delete { key: ObjectKey::new("", "ConfigMap", "a", "owner"), resource_version: None }]);
    assert!(h.get("owner").is_none());
    let child = h.get("child").expect("held by its finalizer");
    assert!(child.metadata.deletion_timestamp.is_some() && child.metadata.owner_references.is_empty());
}
