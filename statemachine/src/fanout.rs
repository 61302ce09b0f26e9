//! Live delivery of watch events to the watchers that want them.
//!
//! Each watcher says which events it wants (an [`Interest`]: a namespace or
//! every namespace, a test on the object's key, and objects it wants
//! wherever they are) and gets its own queue. Publishing an event looks up
//! only the watchers of the event's namespace, of its exact object, and the
//! few that watch every namespace, so an event wakes the watchers it
//! concerns and no others: a node serving thousands of agents, each
//! watching the Works of its own namespace, wakes one of them for a Work
//! written, not all of them.
//!
//! A watcher whose queue is full when an event comes has fallen behind: it
//! is dropped from the registry, and its queue ends, after what it already
//! holds, with [`Ended::Lagged`] (it resumes from its last version or
//! relists, as with any fallen-behind watch).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fleet_api::ObjectKey;
use tokio::sync::mpsc;

use crate::watch::{HubMessage, WatchEvent};

/// Which live events one watcher wants.
pub struct Interest {
    /// Only objects of this namespace (`""`: cluster-scoped ones); `None`: any.
    namespace: Option<String>,
    /// Of the objects in scope, those it wants.
    wanted: Box<dyn Fn(&ObjectKey) -> bool + Send + Sync>,
    /// These objects too, wherever they are and whatever `wanted` says.
    also: Vec<ObjectKey>,
}

impl Interest {
    /// Every event.
    pub fn everything() -> Interest {
        Interest::anywhere(|_| true)
    }

    /// The events, in any namespace, whose key `wanted` accepts.
    pub fn anywhere(wanted: impl Fn(&ObjectKey) -> bool + Send + Sync + 'static) -> Interest {
        Interest { namespace: None, wanted: Box::new(wanted), also: Vec::new() }
    }

    /// The events of objects in `namespace` (`""`: cluster-scoped ones)
    /// whose key `wanted` accepts.
    pub fn in_namespace(namespace: &str, wanted: impl Fn(&ObjectKey) -> bool + Send + Sync + 'static) -> Interest {
        Interest { namespace: Some(namespace.to_string()), wanted: Box::new(wanted), also: Vec::new() }
    }

    /// Also every event of the object `key`.
    pub fn and_object(mut self, key: ObjectKey) -> Interest {
        self.also.push(key);
        self
    }

    /// Whether a watcher with this interest wants an event of `key`.
    pub fn wants(&self, key: &ObjectKey) -> bool {
        self.also.contains(key) || (self.namespace.as_ref().is_none_or(|n| *n == key.namespace) && (self.wanted)(key))
    }
}

/// Why a watcher's live events ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It fell further behind than its queue holds: resume or relist.
    Lagged,
    /// The hub is gone (the node is stopping).
    Closed,
}

/// One watcher's live events, in the order they were applied.
pub struct LiveEvents {
    receiver: mpsc::Receiver<HubMessage>,
    lagged: Arc<AtomicBool>,
    /// Where to take this watcher out when it is dropped.
    registration: Option<(Arc<Mutex<Registry>>, u64)>,
}

impl LiveEvents {
    /// A receiver that has ended already (closed).
    pub fn ended() -> LiveEvents {
        let (_, receiver) = mpsc::channel(1);
        LiveEvents { receiver, lagged: Arc::new(AtomicBool::new(false)), registration: None }
    }

    /// The next message, once there is one.
    pub async fn recv(&mut self) -> Result<HubMessage, Ended> {
        match self.receiver.recv().await {
            Some(message) => Ok(message),
            None => Err(self.end()),
        }
    }

    /// The next message if one is waiting (`Ok(None)`: none now).
    pub fn try_recv(&mut self) -> Result<Option<HubMessage>, Ended> {
        match self.receiver.try_recv() {
            Ok(message) => Ok(Some(message)),
            Err(mpsc::error::TryRecvError::Empty) => Ok(None),
            Err(mpsc::error::TryRecvError::Disconnected) => Err(self.end()),
        }
    }

    fn end(&self) -> Ended {
        if self.lagged.load(Ordering::Acquire) {
            Ended::Lagged
        } else {
            Ended::Closed
        }
    }
}

impl Drop for LiveEvents {
    fn drop(&mut self) {
        if let Some((registry, id)) = self.registration.take() {
            lock(&registry).remove(id);
        }
    }
}

struct Watcher {
    interest: Interest,
    sender: mpsc::Sender<HubMessage>,
    lagged: Arc<AtomicBool>,
}

/// Every watcher, indexed by where its events can come from.
#[derive(Default)]
pub(crate) struct Registry {
    next: u64,
    watchers: HashMap<u64, Watcher>,
    by_namespace: HashMap<String, Vec<u64>>,
    by_object: HashMap<ObjectKey, Vec<u64>>,
    anywhere: Vec<u64>,
}

fn lock(registry: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    // Every change to the registry is whole before the lock is released.
    registry.lock().unwrap_or_else(|p| p.into_inner())
}

fn unlist(ids: &mut Vec<u64>, id: u64) {
    if let Some(at) = ids.iter().position(|&i| i == id) {
        ids.swap_remove(at);
    }
}

/// Takes `id` out of `index`'s list at `key`, and the list once empty.
fn unindex<K: std::hash::Hash + Eq>(index: &mut HashMap<K, Vec<u64>>, key: &K, id: u64) {
    if let Some(ids) = index.get_mut(key) {
        unlist(ids, id);
        if ids.is_empty() {
            index.remove(key);
        }
    }
}

impl Registry {
    fn add(&mut self, interest: Interest, capacity: usize) -> (u64, mpsc::Receiver<HubMessage>, Arc<AtomicBool>) {
        let id = self.next;
        self.next += 1;
        match &interest.namespace {
            Some(namespace) => self.by_namespace.entry(namespace.clone()).or_default().push(id),
            None => self.anywhere.push(id),
        }
        for key in &interest.also {
            self.by_object.entry(key.clone()).or_default().push(id);
        }
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        let lagged = Arc::new(AtomicBool::new(false));
        self.watchers.insert(id, Watcher { interest, sender, lagged: lagged.clone() });
        (id, receiver, lagged)
    }

    fn remove(&mut self, id: u64) {
        let Some(watcher) = self.watchers.remove(&id) else { return };
        match &watcher.interest.namespace {
            Some(namespace) => unindex(&mut self.by_namespace, namespace, id),
            None => unlist(&mut self.anywhere, id),
        }
        for key in &watcher.interest.also {
            unindex(&mut self.by_object, key, id);
        }
    }

    /// The watchers that want an event of `key`, each once.
    fn interested(&self, key: &ObjectKey) -> Vec<u64> {
        let scoped = self.by_namespace.get(&key.namespace).into_iter().flatten();
        let mut ids: Vec<u64> = scoped
            .chain(&self.anywhere)
            .filter(|id| self.watchers.get(id).is_some_and(|w| (w.interest.wanted)(key)))
            .chain(self.by_object.get(key).into_iter().flatten())
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Queues `message` for each of `ids`; a watcher whose queue is full
    /// has fallen behind and is dropped, one whose receiver is gone too.
    fn send(&mut self, ids: impl IntoIterator<Item = u64>, message: &HubMessage) {
        let mut gone = Vec::new();
        for id in ids {
            let Some(watcher) = self.watchers.get(&id) else { continue };
            match watcher.sender.try_send(message.clone()) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    watcher.lagged.store(true, Ordering::Release);
                    gone.push(id);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => gone.push(id),
            }
        }
        for id in gone {
            self.remove(id);
        }
    }
}

/// The registry of one hub, shared with the receivers it hands out (they
/// take themselves out when dropped).
#[derive(Clone, Default)]
pub(crate) struct Fanout {
    registry: Arc<Mutex<Registry>>,
}

impl Fanout {
    /// Registers a watcher with `interest` and a queue of `capacity` messages.
    pub(crate) fn subscribe(&self, interest: Interest, capacity: usize) -> LiveEvents {
        let (id, receiver, lagged) = lock(&self.registry).add(interest, capacity);
        LiveEvents { receiver, lagged, registration: Some((self.registry.clone(), id)) }
    }

    /// Queues `event` for the watchers that want it.
    pub(crate) fn publish(&self, event: Arc<WatchEvent>) {
        let mut registry = lock(&self.registry);
        let ids = registry.interested(&event.key);
        if !ids.is_empty() {
            registry.send(ids, &HubMessage::Event(event));
        }
    }

    /// Queues `message` for every watcher.
    pub(crate) fn broadcast(&self, message: HubMessage) {
        let mut registry = lock(&self.registry);
        let ids: Vec<u64> = registry.watchers.keys().copied().collect();
        registry.send(ids, &message);
    }

    /// How many watchers are registered.
    pub(crate) fn watchers(&self) -> usize {
        lock(&self.registry).watchers.len()
    }
}

#[cfg(test)]
#[path = "fanout_tests.rs"]
mod tests;
