//! The fan-out delivers each event to exactly the watchers that want it, in
//! order, ends a fallen-behind watcher with `Lagged`, and forgets dropped ones.

use std::sync::Arc;

use fleet_api::{Object, ObjectKey};
use proptest::prelude::*;

use super::*;
use crate::watch::EventType;

fn key(kind: &str, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new("", kind, namespace, name)
}

fn event(key: &ObjectKey, rv: u64) -> Arc<WatchEvent> {
    let object: Object = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": key.kind, "metadata": {"name": key.name, "namespace": key.namespace}
    }))
    .unwrap();
    Arc::new(WatchEvent {
        event_type: EventType::Added,
        key: key.clone(),
        object: Arc::new(object),
        resource_version: rv,
        size: 0,
        previous: None,
    })
}

/// The resourceVersions queued for `live`, in order.
fn drain(live: &mut LiveEvents) -> Vec<u64> {
    let mut got = Vec::new();
    while let Ok(Some(message)) = live.try_recv() {
        if let HubMessage::Event(e) = message {
            got.push(e.resource_version);
        }
    }
    got
}

#[test]
fn an_event_reaches_its_namespace_its_object_and_everywhere_watchers_only() {
    let fanout = Fanout::default();
    let mut works_a = fanout.subscribe(Interest::in_namespace("a", |k| k.kind == "Work"), 10);
    let cluster_a = key("MemberCluster", "", "a");
    let mut member_a =
        fanout.subscribe(Interest::in_namespace("a", |k| k.kind == "Work").and_object(cluster_a.clone()), 10);
    let mut works_b = fanout.subscribe(Interest::in_namespace("b", |k| k.kind == "Work"), 10);
    let mut clusters = fanout.subscribe(Interest::anywhere(|k| k.kind == "MemberCluster"), 10);
    let mut all = fanout.subscribe(Interest::everything(), 10);
    fanout.publish(event(&key("Work", "a", "w"), 1));
    fanout.publish(event(&key("ConfigMap", "a", "c"), 2));
    fanout.publish(event(&cluster_a, 3));
    fanout.publish(event(&key("MemberCluster", "", "b"), 4));
    fanout.publish(event(&key("Work", "b", "w"), 5));
    assert_eq!(drain(&mut works_a), vec![1]);
    assert_eq!(drain(&mut member_a), vec![1, 3], "its namespace's Works and its own cluster");
    assert_eq!(drain(&mut works_b), vec![5]);
    assert_eq!(drain(&mut clusters), vec![3, 4]);
    assert_eq!(drain(&mut all), vec![1, 2, 3, 4, 5]);
}

#[test]
fn a_full_queue_ends_with_lagged_after_what_it_holds_and_a_reset_reaches_everyone() {
    let fanout = Fanout::default();
    let mut slow = fanout.subscribe(Interest::everything(), 2);
    let mut other = fanout.subscribe(Interest::in_namespace("x", |_| true), 2);
    for rv in 1..=3 {
        fanout.publish(event(&key("ConfigMap", "a", "c"), rv));
    }
    assert_eq!(fanout.watchers(), 1, "the watcher that fell behind is dropped");
    assert!(matches!(slow.try_recv(), Ok(Some(HubMessage::Event(e))) if e.resource_version == 1));
    assert!(matches!(slow.try_recv(), Ok(Some(HubMessage::Event(e))) if e.resource_version == 2));
    assert_eq!(slow.try_recv().err(), Some(Ended::Lagged));
    fanout.broadcast(HubMessage::Reset { resource_version: 9 });
    assert!(matches!(other.try_recv(), Ok(Some(HubMessage::Reset { resource_version: 9 }))));
    drop(other);
    assert_eq!(fanout.watchers(), 0);
    assert_eq!(LiveEvents::ended().try_recv().err(), Some(Ended::Closed));
}

#[tokio::test]
async fn a_waiting_watcher_wakes_for_its_event() {
    let fanout = Fanout::default();
    let mut live = fanout.subscribe(Interest::in_namespace("a", |_| true), 4);
    let waiting = tokio::spawn(async move { live.recv().await.map(|_| ()) });
    fanout.publish(event(&key("Work", "a", "w"), 1));
    assert_eq!(waiting.await.unwrap(), Ok(()));
}

/// A watcher's interest as the property test draws it.
#[derive(Debug, Clone)]
struct Drawn {
    namespace: Option<String>,
    kind: Option<String>,
    object: Option<ObjectKey>,
}

impl Drawn {
    fn interest(&self) -> Interest {
        let kind = self.kind.clone();
        let wanted = move |k: &ObjectKey| kind.as_ref().is_none_or(|kind| *kind == k.kind);
        let interest = match &self.namespace {
            Some(namespace) => Interest::in_namespace(namespace, wanted),
            None => Interest::anywhere(wanted),
        };
        match &self.object {
            Some(object) => interest.and_object(object.clone()),
            None => interest,
        }
    }
}

fn drawn_key() -> impl Strategy<Value = ObjectKey> {
    (prop::sample::select(vec!["Work", "ConfigMap", "MemberCluster"]), prop::sample::select(vec!["", "a", "b"]), 0..3u8)
        .prop_map(|(kind, namespace, name)| key(kind, namespace, &format!("o{name}")))
}

fn drawn() -> impl Strategy<Value = Drawn> {
    (
        prop::option::of(prop::sample::select(vec!["", "a", "b"]).prop_map(String::from)),
        prop::option::of(prop::sample::select(vec!["Work", "ConfigMap"]).prop_map(String::from)),
        prop::option::of(drawn_key()),
    )
        .prop_map(|(namespace, kind, object)| Drawn { namespace, kind, object })
}

proptest! {
    /// Whatever the watchers and events, each watcher receives exactly the
    /// events its interest wants, once each, in publishing order; dropped
    /// watchers leave the registry.
    #[test]
    fn each_watcher_gets_exactly_what_it_wants_in_order(
        watchers in prop::collection::vec(drawn(), 0..8),
        events in prop::collection::vec(drawn_key(), 0..40),
        dropped in prop::collection::vec(any::<bool>(), 8),
    ) {
        let fanout = Fanout::default();
        let mut live: Vec<Option<LiveEvents>> =
            watchers.iter().map(|w| Some(fanout.subscribe(w.interest(), 64))).collect();
        for (i, slot) in live.iter_mut().enumerate() {
            if dropped[i] {
                *slot = None;
            }
        }
        prop_assert_eq!(fanout.watchers(), live.iter().filter(|l| l.is_some()).count());
        for (rv, key) in events.iter().enumerate() {
            fanout.publish(event(key, rv as u64 + 1));
        }
        for (w, slot) in watchers.iter().zip(&mut live) {
            let Some(receiver) = slot else { continue };
            let oracle = w.interest();
            let want: Vec<u64> = events
                .iter()
                .enumerate()
                .filter(|(_, k)| oracle.wants(k))
                .map(|(rv, _)| rv as u64 + 1)
                .collect();
            prop_assert_eq!(drain(receiver), want);
        }
    }
}
