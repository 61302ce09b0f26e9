//! Watch events: an in-memory broadcast plus a bounded history, so a watcher
//! can resume from a resourceVersion without missing or repeating events, and
//! one that asks for a version older than the history gets a clear "expired,
//! relist" answer.
//!
//! The history keeps each event's object as its stored JSON, not decoded: a
//! decoded object takes several times the bytes of its JSON, and at 1,000
//! placements the decoded history was the largest part of a node's memory
//! (profiled with heaptrack). It is decoded again only for a watcher that
//! resumes from it. Live events reach the watchers that want them decoded,
//! through the fan-out (`fanout.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use fleet_api::{Object, ObjectKey};

use crate::fanout::{Fanout, Interest, LiveEvents};

/// How many events the history keeps by default.
pub const DEFAULT_HISTORY: usize = 20_000;
/// How many bytes of objects (their stored JSON) the history keeps by
/// default: large objects (Works carry whole manifests) must not let 20,000
/// events grow a node by gigabytes; a watcher further behind gets "expired,
/// relist".
pub const DEFAULT_HISTORY_BYTES: usize = 32 * 1024 * 1024;
/// How far a live watcher may fall behind (events it wants, queued) before
/// it is told to resume.
pub const LIVE_CAPACITY: usize = 16_384;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    /// The Kubernetes wire name (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn as_str(&self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as applied at `resource_version` (the log index).
#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub event_type: EventType,
    pub key: ObjectKey,
    /// The object after the change (for a delete, its last state).
    pub object: Arc<Object>,
    pub resource_version: u64,
    /// The object's stored size in bytes (for the history's byte budget).
    pub size: usize,
    /// For a Modified event that changed the labels: the object before the
    /// change (stamped with this event's resourceVersion), so a
    /// label-selector watch can tell an object entering or leaving it, and
    /// show one that left as Kubernetes does. `None` otherwise.
    pub previous: Option<Arc<Object>>,
}

/// The stored JSON of an event's objects, for the history.
#[derive(Debug, Clone, Default)]
pub struct EventJson {
    /// `object` as stored (for a delete: as it was last stored).
    pub object: Vec<u8>,
    /// `previous` as it was stored, if the event has one.
    pub previous: Option<Vec<u8>>,
}

/// An event as the history keeps it: JSON instead of decoded objects, and
/// the object's key, so a resuming watcher decodes only its own kind's
/// events.
struct Recorded {
    event_type: EventType,
    key: ObjectKey,
    resource_version: u64,
    object: Box<[u8]>,
    previous: Option<Box<[u8]>>,
}

impl Recorded {
    fn new(event: &WatchEvent, json: EventJson) -> Recorded {
        Recorded {
            event_type: event.event_type,
            key: event.key.clone(),
            resource_version: event.resource_version,
            object: json.object.into_boxed_slice(),
            previous: json.previous.map(Vec::into_boxed_slice),
        }
    }

    fn size(&self) -> usize {
        self.object.len() + self.previous.as_ref().map_or(0, |p| p.len())
    }

    /// The event again. Objects are stamped with the event's
    /// resourceVersion, as apply stamps them (a deleted object and the
    /// state before a label change carry the version of the change).
    fn decode(&self) -> Option<WatchEvent> {
        let stamped = |bytes: &[u8]| {
            let mut object = Object::from_json(bytes).ok()?;
            object.metadata.set_resource_version(self.resource_version);
            Some(Arc::new(object))
        };
        let object = stamped(&self.object)?;
        let previous = match &self.previous {
            Some(bytes) => Some(stamped(bytes)?),
            None => None,
        };
        Some(WatchEvent {
            event_type: self.event_type,
            key: self.key.clone(),
            object,
            resource_version: self.resource_version,
            size: self.size(),
            previous,
        })
    }
}

/// What a watcher's live queue carries.
#[derive(Debug, Clone)]
pub enum HubMessage {
    /// One event.
    Event(Arc<WatchEvent>),
    /// The whole state was replaced (snapshot installed): every watcher must relist.
    Reset { resource_version: u64 },
}

/// A watch that asked for history the hub no longer has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resourceVersion {requested} is too old (the oldest this node can resume from is {oldest}): expired, relist")]
pub struct Expired {
    pub requested: u64,
    pub oldest: u64,
}

struct Inner {
    history: VecDeque<Arc<Recorded>>,
    /// Every event with a resourceVersion greater than `floor` is in `history`.
    floor: u64,
    capacity: usize,
    /// Bytes of JSON in `history`.
    bytes: usize,
    byte_budget: usize,
}

/// The event fan-out of one node's state machine.
pub struct WatchHub {
    inner: Mutex<Inner>,
    fanout: Fanout,
}

/// A new watcher: the backlog it must send first, then the live receiver.
pub struct Subscription {
    pub backlog: Vec<Arc<WatchEvent>>,
    pub receiver: LiveEvents,
}

impl WatchHub {
    /// A hub whose history starts after `applied` (nothing older can be resumed).
    pub fn new(applied: u64, capacity: usize) -> WatchHub {
        WatchHub::with_budget(applied, capacity, DEFAULT_HISTORY_BYTES)
    }

    /// A hub keeping at most `capacity` events and `byte_budget` bytes of
    /// objects (the newest event is always kept).
    pub fn with_budget(applied: u64, capacity: usize, byte_budget: usize) -> WatchHub {
        let inner =
            Inner { history: VecDeque::new(), floor: applied, capacity: capacity.max(1), bytes: 0, byte_budget };
        WatchHub { inner: Mutex::new(inner), fanout: Fanout::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the history half-updated
        // in a way that matters more than losing the node, so recover the guard.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the events of one applied batch, each with the stored JSON
    /// of its objects (what the history keeps), and queues each for the
    /// watchers that want it.
    pub fn publish(&self, events: Vec<(WatchEvent, EventJson)>) {
        if events.is_empty() {
            return;
        }
        let mut inner = self.lock();
        for (event, json) in events {
            let recorded = Recorded::new(&event, json);
            inner.bytes += recorded.size();
            inner.history.push_back(Arc::new(recorded));
            self.fanout.publish(Arc::new(event));
        }
        while inner.history.len() > inner.capacity || (inner.bytes > inner.byte_budget && inner.history.len() > 1) {
            let Some(old) = inner.history.pop_front() else { break };
            inner.bytes -= old.size();
            inner.floor = inner.floor.max(old.resource_version);
        }
    }

    /// Forgets all history: the state was replaced at `resource_version`.
    pub fn reset(&self, resource_version: u64) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.bytes = 0;
        inner.floor = resource_version;
        self.fanout.broadcast(HubMessage::Reset { resource_version });
    }

    /// Subscribes to every event after `from`. Events already in the history
    /// come back as the backlog; later ones arrive on the receiver. Taken
    /// under one lock, so nothing is missed or repeated between the two (the
    /// backlog is decoded after it is released, so apply does not wait).
    pub fn subscribe(&self, from: u64) -> Result<Subscription, Expired> {
        self.subscribe_to(from, Interest::everything())
    }

    /// [`WatchHub::subscribe`] to the events whose key `wanted` accepts,
    /// in any namespace.
    pub fn subscribe_where(
        &self,
        from: u64,
        wanted: impl Fn(&ObjectKey) -> bool + Send + Sync + 'static,
    ) -> Result<Subscription, Expired> {
        self.subscribe_to(from, Interest::anywhere(wanted))
    }

    /// [`WatchHub::subscribe`] to the events `interest` names: the backlog
    /// holds only those (a watcher resuming after thousands of events of
    /// other kinds, an agent reconnecting for its Works, decodes only its
    /// own), and so does the receiver (an event wakes only the watchers it
    /// concerns).
    pub fn subscribe_to(&self, from: u64, interest: Interest) -> Result<Subscription, Expired> {
        let (recorded, receiver) = {
            let inner = self.lock();
            let recorded = Self::recorded_since(&inner, from, |key| interest.wants(key))?;
            (recorded, self.fanout.subscribe(interest, LIVE_CAPACITY))
        };
        Ok(Subscription { backlog: Self::decoded(from, recorded)?, receiver })
    }

    /// The history's events after `from` whose key `wanted` accepts,
    /// without subscribing to later ones.
    pub fn events_since(
        &self,
        from: u64,
        wanted: impl Fn(&ObjectKey) -> bool,
    ) -> Result<Vec<Arc<WatchEvent>>, Expired> {
        let recorded = Self::recorded_since(&self.lock(), from, wanted)?;
        Self::decoded(from, recorded)
    }

    fn recorded_since(
        inner: &Inner,
        from: u64,
        wanted: impl Fn(&ObjectKey) -> bool,
    ) -> Result<Vec<Arc<Recorded>>, Expired> {
        if from < inner.floor {
            return Err(Expired { requested: from, oldest: inner.floor });
        }
        let start = inner.history.partition_point(|e| e.resource_version <= from);
        Ok(inner.history.range(start..).filter(|e| wanted(&e.key)).cloned().collect())
    }

    fn decoded(from: u64, recorded: Vec<Arc<Recorded>>) -> Result<Vec<Arc<WatchEvent>>, Expired> {
        let mut backlog = Vec::with_capacity(recorded.len());
        for record in recorded {
            // Apply wrote this JSON; should it not decode, the watcher relists
            // from the store rather than miss the event.
            let event = record.decode().ok_or(Expired { requested: from, oldest: record.resource_version })?;
            backlog.push(Arc::new(event));
        }
        Ok(backlog)
    }

    /// How many watchers receive live events.
    pub fn watchers(&self) -> usize {
        self.fanout.watchers()
    }

    /// The oldest resourceVersion a watch can resume from.
    pub fn oldest_resumable(&self) -> u64 {
        self.lock().floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event whose stored JSON takes 200 bytes.
    fn ev(rv: u64, name: &str) -> (WatchEvent, EventJson) {
        let mut object: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}
        }))
        .unwrap();
        object.metadata.set_resource_version(rv);
        let mut json = object.to_json();
        assert!(json.len() <= 200);
        json.resize(200, b' ');
        let event = WatchEvent {
            event_type: EventType::Added,
            key: ObjectKey::of(&object),
            object: Arc::new(object),
            resource_version: rv,
            size: 200,
            previous: None,
        };
        (event, EventJson { object: json, previous: None })
    }

    #[test]
    fn resumes_without_gap_or_repeat() {
        let hub = WatchHub::new(0, 100);
        hub.publish(vec![ev(1, "a"), ev(2, "b")]);
        let mut sub = hub.subscribe(1).unwrap();
        assert_eq!(sub.backlog.iter().map(|e| e.resource_version).collect::<Vec<_>>(), vec![2]);
        hub.publish(vec![ev(3, "c")]);
        match sub.receiver.try_recv().unwrap() {
            Some(HubMessage::Event(e)) => assert_eq!(e.resource_version, 3),
            other => panic!("unexpected {other:?}"),
        }
        assert!(sub.receiver.try_recv().unwrap().is_none());
    }

    #[test]
    fn too_old_is_expired_and_batches_are_not_split() {
        let hub = WatchHub::new(0, 3);
        hub.publish(vec![ev(1, "a"), ev(2, "b"), ev(2, "c"), ev(3, "d")]);
        // Evicting the event at 1 makes 1 the floor: resuming from 0 is expired.
        assert_eq!(hub.subscribe(0).err(), Some(Expired { requested: 0, oldest: 1 }));
        let sub = hub.subscribe(1).unwrap();
        assert_eq!(sub.backlog.len(), 3);
        hub.publish(vec![ev(4, "e")]);
        // Now one of the two events at 2 is gone: resuming from 1 must relist.
        assert!(hub.subscribe(1).is_err());
        assert_eq!(hub.subscribe(2).unwrap().backlog.len(), 2);
    }

    #[test]
    fn a_filtered_subscription_holds_only_the_wanted_keys_in_backlog_and_receiver() {
        let hub = WatchHub::new(0, 100);
        hub.publish(vec![ev(1, "mine-1"), ev(2, "other"), ev(3, "mine-2")]);
        let mut sub = hub.subscribe_where(1, |key| key.name.starts_with("mine")).unwrap();
        let backlog: Vec<(u64, &str)> = sub.backlog.iter().map(|e| (e.resource_version, e.key.name.as_str())).collect();
        assert_eq!(backlog, vec![(3, "mine-2")], "after 1, and not the other object");
        hub.publish(vec![ev(4, "other"), ev(5, "mine-3")]);
        match sub.receiver.try_recv().unwrap() {
            Some(HubMessage::Event(e)) => assert_eq!(e.resource_version, 5, "the other object is not delivered"),
            other => panic!("unexpected {other:?}"),
        }
        assert!(sub.receiver.try_recv().unwrap().is_none());
        let events = hub.events_since(3, |key| key.name == "other").unwrap();
        assert_eq!(events.iter().map(|e| e.resource_version).collect::<Vec<_>>(), vec![4]);
        assert_eq!(hub.watchers(), 1, "reading the history subscribes nobody");
        drop(sub);
        assert_eq!(hub.watchers(), 0, "a dropped receiver takes itself out");
    }

    #[test]
    fn the_byte_budget_bounds_the_history_but_keeps_the_newest_event() {
        // Room for 3 events of 200 bytes, however many the count allows.
        let hub = WatchHub::with_budget(0, 1000, 600);
        hub.publish((1..=5).map(|rv| ev(rv, "x")).collect());
        assert_eq!(hub.oldest_resumable(), 2, "events 1 and 2 went to stay within 600 bytes");
        assert_eq!(hub.subscribe(2).unwrap().backlog.len(), 3);
        let mut big = ev(6, "big");
        big.1.object.resize(10_000, b' ');
        hub.publish(vec![big]);
        assert_eq!(hub.subscribe(5).unwrap().backlog.len(), 1, "an event over the budget is still kept alone");
        assert!(hub.subscribe(4).is_err());
    }

    #[test]
    fn the_backlog_is_decoded_from_the_stored_json_stamped_with_its_version() {
        let hub = WatchHub::new(0, 100);
        let (mut deleted, mut json) = ev(7, "gone");
        // A delete carries the object as last stored (an older version),
        // stamped with the delete's version; so does the state before a
        // label change.
        let (_, stored) = ev(3, "gone");
        json.object = stored.object.clone();
        json.previous = Some(stored.object);
        deleted.event_type = EventType::Deleted;
        let mut previous = Object::clone(&deleted.object);
        previous.metadata.set_resource_version(7);
        deleted.previous = Some(Arc::new(previous));
        hub.publish(vec![(deleted.clone(), json)]);
        let backlog = hub.subscribe(0).unwrap().backlog;
        let got = &backlog[0];
        assert_eq!((got.event_type, got.resource_version, &got.key), (EventType::Deleted, 7, &deleted.key));
        assert_eq!(*got.object, *deleted.object);
        assert_eq!(got.object.metadata.resource_version, "7");
        assert_eq!(got.previous.as_deref(), deleted.previous.as_deref());
    }

    #[test]
    fn json_that_does_not_decode_makes_the_watcher_relist() {
        let hub = WatchHub::new(0, 100);
        let (event, _) = ev(4, "x");
        hub.publish(vec![(event, EventJson { object: b"{not json".to_vec(), previous: None })]);
        assert_eq!(hub.subscribe(3).err(), Some(Expired { requested: 3, oldest: 4 }));
    }

    #[test]
    fn reset_expires_everything_before_it() {
        let hub = WatchHub::new(5, 10);
        assert!(hub.subscribe(4).is_err());
        hub.reset(9);
        assert!(hub.subscribe(8).is_err());
        assert!(hub.subscribe(9).unwrap().backlog.is_empty());
    }
}
