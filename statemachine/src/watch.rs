//! Watch events: an in-memory broadcast plus a bounded history, so a watcher
//! can resume from a resourceVersion without missing or repeating events, and
//! one that asks for a version older than the history gets a clear "expired,
//! relist" answer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use fleet_api::{Object, ObjectKey};
use tokio::sync::broadcast;

/// How many events the history keeps by default.
pub const DEFAULT_HISTORY: usize = 20_000;
/// How many bytes of objects the history keeps by default: large objects
/// (Works carry whole manifests) must not let 20,000 events grow a node by
/// gigabytes; a watcher further behind gets "expired, relist".
pub const DEFAULT_HISTORY_BYTES: usize = 64 * 1024 * 1024;
/// How far a live watcher may fall behind before it is told to resume.
const BROADCAST_CAPACITY: usize = 16_384;

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

/// What the broadcast carries.
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
    history: VecDeque<Arc<WatchEvent>>,
    /// Every event with a resourceVersion greater than `floor` is in `history`.
    floor: u64,
    capacity: usize,
    /// Sum of the sizes of the events in `history`.
    bytes: usize,
    byte_budget: usize,
}

/// The event fan-out of one node's state machine.
pub struct WatchHub {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<HubMessage>,
}

/// A new watcher: the backlog it must send first, then the live receiver.
pub struct Subscription {
    pub backlog: Vec<Arc<WatchEvent>>,
    pub receiver: broadcast::Receiver<HubMessage>,
}

impl WatchHub {
    /// A hub whose history starts after `applied` (nothing older can be resumed).
    pub fn new(applied: u64, capacity: usize) -> WatchHub {
        WatchHub::with_budget(applied, capacity, DEFAULT_HISTORY_BYTES)
    }

    /// A hub keeping at most `capacity` events and `byte_budget` bytes of
    /// objects (the newest event is always kept).
    pub fn with_budget(applied: u64, capacity: usize, byte_budget: usize) -> WatchHub {
        let (tx, _) = broadcast::channel(BROADCAST_CAPACITY);
        let inner =
            Inner { history: VecDeque::new(), floor: applied, capacity: capacity.max(1), bytes: 0, byte_budget };
        WatchHub { inner: Mutex::new(inner), tx }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the history half-updated
        // in a way that matters more than losing the node, so recover the guard.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records and broadcasts the events of one applied batch.
    pub fn publish(&self, events: Vec<WatchEvent>) {
        if events.is_empty() {
            return;
        }
        let mut inner = self.lock();
        for event in events {
            let event = Arc::new(event);
            inner.bytes += event.size;
            inner.history.push_back(event.clone());
            // No receiver is not an error: nobody is watching.
            let _ = self.tx.send(HubMessage::Event(event));
        }
        while inner.history.len() > inner.capacity || (inner.bytes > inner.byte_budget && inner.history.len() > 1) {
            let Some(old) = inner.history.pop_front() else { break };
            inner.bytes -= old.size;
            inner.floor = inner.floor.max(old.resource_version);
        }
    }

    /// Forgets all history: the state was replaced at `resource_version`.
    pub fn reset(&self, resource_version: u64) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.bytes = 0;
        inner.floor = resource_version;
        let _ = self.tx.send(HubMessage::Reset { resource_version });
    }

    /// Subscribes to every event after `from`. Events already in the history
    /// come back as the backlog; later ones arrive on the receiver. Taken
    /// under one lock, so nothing is missed or repeated between the two.
    pub fn subscribe(&self, from: u64) -> Result<Subscription, Expired> {
        let inner = self.lock();
        if from < inner.floor {
            return Err(Expired { requested: from, oldest: inner.floor });
        }
        let start = inner.history.partition_point(|e| e.resource_version <= from);
        let backlog = inner.history.range(start..).cloned().collect();
        Ok(Subscription { backlog, receiver: self.tx.subscribe() })
    }

    /// The oldest resourceVersion a watch can resume from.
    pub fn oldest_resumable(&self) -> u64 {
        self.lock().floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(rv: u64, name: &str) -> WatchEvent {
        let object: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}
        }))
        .unwrap();
        WatchEvent {
            event_type: EventType::Added,
            key: ObjectKey::of(&object),
            object: Arc::new(object),
            resource_version: rv,
            size: 100,
            previous: None,
        }
    }

    #[test]
    fn resumes_without_gap_or_repeat() {
        let hub = WatchHub::new(0, 100);
        hub.publish(vec![ev(1, "a"), ev(2, "b")]);
        let mut sub = hub.subscribe(1).unwrap();
        assert_eq!(sub.backlog.iter().map(|e| e.resource_version).collect::<Vec<_>>(), vec![2]);
        hub.publish(vec![ev(3, "c")]);
        match sub.receiver.try_recv().unwrap() {
            HubMessage::Event(e) => assert_eq!(e.resource_version, 3),
            other => panic!("unexpected {other:?}"),
        }
        assert!(sub.receiver.try_recv().is_err());
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
    fn the_byte_budget_bounds_the_history_but_keeps_the_newest_event() {
        // Room for 3 events of 100 bytes, however many the count allows.
        let hub = WatchHub::with_budget(0, 1000, 300);
        hub.publish((1..=5).map(|rv| ev(rv, "x")).collect());
        assert_eq!(hub.oldest_resumable(), 2, "events 1 and 2 went to stay within 300 bytes");
        assert_eq!(hub.subscribe(2).unwrap().backlog.len(), 3);
        let mut big = ev(6, "big");
        big.size = 10_000;
        hub.publish(vec![big]);
        assert_eq!(hub.subscribe(5).unwrap().backlog.len(), 1, "an event over the budget is still kept alone");
        assert!(hub.subscribe(4).is_err());
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
