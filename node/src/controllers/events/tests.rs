//! How recorded notes become Event writes, against a real store on a
//! temporary file (no Raft): repeats counted, stored events counted into,
//! the per-object cap kept.

use super::*;
use crate::controllers::testkit::Fixture;

/// Records `notes` about `involved` at `now`, as the writer would, and
/// commits them.
trait Record {
    fn record(&mut self, involved: &Object, notes: &[EventNote], now: &str) -> Vec<Op>;
}

impl Record for Fixture {
    fn record(&mut self, involved: &Object, notes: &[EventNote], now: &str) -> Vec<Op> {
        let ops = batch_ops(&self.store, &[(involved.clone(), notes.to_vec())], now).unwrap();
        self.apply(ops.clone(), now);
        ops
    }
}

fn placement(name: &str) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": name, "uid": "u-1"}
    }))
    .unwrap()
}

fn at(second: u32) -> String {
    format!("2026-11-27T10:{:02}:{:02}Z", second / 60, second % 60)
}

fn count(object: &Object) -> i64 {
    object.rest.get("count").and_then(Value::as_i64).unwrap_or(0)
}

#[test]
fn repeats_in_one_batch_become_one_event_with_their_count() {
    let fixture = Fixture::new();
    let web = placement("web");
    let notes = vec![
        EventNote::normal("Scheduled", "picked 2 clusters"),
        EventNote::normal("Scheduled", "picked 2 clusters"),
        EventNote::warning("Failed", "cluster east is full"),
    ];
    let ops = batch_ops(&fixture.store, &[(web.clone(), notes)], &at(0)).unwrap();
    let created: Vec<&Object> = ops
        .iter()
        .map(|op| match op {
            Op::Create { object } => object,
            other => panic!("not a create: {other:?}"),
        })
        .collect();
    assert_eq!(created.iter().map(|e| count(e)).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(created[0].metadata.namespace.as_deref(), Some("default"), "cluster-scoped: the default namespace");
    assert!(created.iter().all(|e| e.metadata.name.starts_with("web.")));
    assert_eq!(created[1].rest["type"], "Warning");
    assert_eq!(created[0].rest["involvedObject"]["name"], "web");
    assert_eq!(created[0].rest["lastTimestamp"], at(0));
}

#[test]
fn a_repeat_of_a_stored_event_counts_into_it() {
    let mut fixture = Fixture::new();
    let web = placement("web");
    let note = EventNote::normal("Scheduled", "picked 2 clusters");
    fixture.record(&web, &[note.clone(), note.clone()], &at(0));
    let ops = fixture.record(&web, std::slice::from_ref(&note), &at(30));
    let [Op::Update { object }] = ops.as_slice() else { panic!("not one update: {ops:?}") };
    assert_eq!(count(object), 3);
    assert_eq!(object.rest["firstTimestamp"], at(0));
    assert_eq!(object.rest["lastTimestamp"], at(30));
}

#[test]
fn the_oldest_events_of_an_object_go_beyond_the_cap_never_one_just_repeated() {
    let mut fixture = Fixture::new();
    let web = placement("web");
    let note = |i: usize| EventNote::normal("Step", format!("step {i}"));
    for i in 0..MAX_EVENTS_PER_OBJECT {
        fixture.record(&web, &[note(i)], &at(i as u32));
    }
    // Another object's events are not counted against this one's cap.
    fixture.record(&placement("api"), &[note(0)], &at(100));

    // The oldest is repeated and two new ones come: the two oldest of the
    // others make room.
    let ops = fixture.record(&web, &[note(0), note(100), note(101)], &at(200));
    let deleted: Vec<String> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Delete { key, .. } => Some(key.name.clone()),
            _ => None,
        })
        .collect();
    let name = |i: usize| event_name(&web, &note(i));
    assert_eq!(deleted, [name(1), name(2)]);
    assert_eq!(ops.iter().filter(|op| matches!(op, Op::Create { .. })).count(), 2);
    let query = ListQuery { group: String::new(), kind: "Event".into(), namespace: None, selector: None };
    let (events, _) = fixture.store.list(&query).unwrap();
    assert_eq!(events.iter().filter(|e| is_about(e, &web)).count(), MAX_EVENTS_PER_OBJECT);
}

/// A batch noting more new events about one object than the cap holds
/// (a placement scheduled onto thousands of clusters) creates only the
/// newest that fit, and the stored ones make room for them.
#[test]
fn a_batch_over_the_cap_creates_only_its_newest_events() {
    let mut fixture = Fixture::new();
    let web = placement("web");
    let note = |i: usize| EventNote::normal("ClusterScheduled", format!("cluster {i}"));
    fixture.record(&web, &[note(0), note(1)], &at(0));
    let many: Vec<EventNote> = (100..100 + 3 * MAX_EVENTS_PER_OBJECT).map(note).collect();
    let ops = fixture.record(&web, &many, &at(10));
    let created: Vec<String> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Create { object } => Some(object.metadata.name.clone()),
            _ => None,
        })
        .collect();
    let newest: Vec<String> = many[many.len() - MAX_EVENTS_PER_OBJECT..].iter().map(|n| event_name(&web, n)).collect();
    assert_eq!(created, newest);
    let deletes = ops.iter().filter(|op| matches!(op, Op::Delete { .. })).count();
    assert_eq!(deletes, 2, "the stored ones make room");
    let query = ListQuery { group: String::new(), kind: "Event".into(), namespace: None, selector: None };
    let (events, _) = fixture.store.list(&query).unwrap();
    assert_eq!(events.iter().filter(|e| is_about(e, &web)).count(), MAX_EVENTS_PER_OBJECT);
}

#[test]
fn an_event_name_is_stable_per_note_and_fits_a_name() {
    let web = placement("web");
    let note = EventNote::normal("Scheduled", "picked 2 clusters");
    assert_eq!(event_name(&web, &note), event_name(&web, &note.clone()));
    assert_ne!(event_name(&web, &note), event_name(&web, &EventNote::normal("Scheduled", "picked 3 clusters")));
    let long = placement(&"a".repeat(253));
    let name = event_name(&long, &note);
    assert_eq!(name.len(), 253);
    assert!(name.starts_with("aaa") && name.contains('.'));
}
