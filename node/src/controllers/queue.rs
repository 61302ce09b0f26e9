//! A deduplicating work queue keyed by object: a key added many times
//! before a worker takes it is processed once, and a key is never processed
//! by two workers at once (an add while it is processed queues it again for
//! after). The shape of client-go's workqueue, which level-triggered
//! controllers need.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;

/// The queue; share it behind an `Arc`.
pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
}

struct State<K> {
    order: VecDeque<K>,
    /// Keys waiting in `order`.
    dirty: BTreeSet<K>,
    /// Keys a worker holds.
    processing: BTreeSet<K>,
    /// Keys added while processed: requeued by `done`.
    again: BTreeSet<K>,
}

impl<K: Ord + Clone + Send + 'static> WorkQueue<K> {
    /// An empty queue.
    pub fn new() -> WorkQueue<K> {
        WorkQueue {
            state: Mutex::new(State {
                order: VecDeque::new(),
                dirty: BTreeSet::new(),
                processing: BTreeSet::new(),
                again: BTreeSet::new(),
            }),
            ready: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` unless it is queued already.
    pub fn add(&self, key: K) {
        let mut state = self.lock();
        if state.processing.contains(&key) {
            state.again.insert(key);
            return;
        }
        if state.dirty.insert(key.clone()) {
            state.order.push_back(key);
            crate::metrics::queue_depth(state.order.len());
            drop(state);
            self.ready.notify_one();
        }
    }

    /// Queues `key` after `delay` (retries after a conflict or an error).
    pub fn add_after(self: &std::sync::Arc<Self>, key: K, delay: Duration) {
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.add(key);
        });
    }

    /// Waits for the next key; the caller must call [`WorkQueue::done`] after.
    pub async fn next(&self) -> K {
        loop {
            let notified = self.ready.notified();
            {
                let mut state = self.lock();
                if let Some(key) = state.order.pop_front() {
                    crate::metrics::queue_depth(state.order.len());
                    state.dirty.remove(&key);
                    state.processing.insert(key.clone());
                    if !state.order.is_empty() {
                        // Wake another worker for the rest.
                        self.ready.notify_one();
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    /// Takes every waiting key out of the queue: what a test reads to see
    /// what an event queued.
    #[cfg(test)]
    pub fn take_all(&self) -> BTreeSet<K> {
        let mut state = self.lock();
        state.order.clear();
        std::mem::take(&mut state.dirty)
    }

    /// Marks `key` processed; it is queued again if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut state = self.lock();
        state.processing.remove(key);
        if state.again.remove(key) && state.dirty.insert(key.clone()) {
            state.order.push_back(key.clone());
            crate::metrics::queue_depth(state.order.len());
            drop(state);
            self.ready.notify_one();
        }
    }

    /// Marks `key` processed after `cooldown`: until then it stays held,
    /// so the events that add it meanwhile queue it once, for after. A
    /// controller gives a key whose pass was costly a rest as long as the
    /// pass, so a stream of events about one large object (a placement on
    /// thousands of clusters whose Works report in) runs its pass at most
    /// half the time instead of back to back.
    pub fn done_after(self: &std::sync::Arc<Self>, key: K, cooldown: Duration) {
        if cooldown.is_zero() {
            self.done(&key);
            return;
        }
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(cooldown).await;
            queue.done(&key);
        });
    }

    /// How many keys wait.
    pub fn len(&self) -> usize {
        self.lock().order.len()
    }

    /// Whether no key waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Ord + Clone + Send + 'static> Default for WorkQueue<K> {
    fn default() -> Self {
        WorkQueue::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dedups_and_never_hands_one_key_to_two_workers() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let first = q.next().await;
        assert_eq!(first, "a");
        // Added while processed: not handed out again until done.
        q.add("a");
        assert_eq!(q.next().await, "b");
        assert!(q.is_empty());
        q.done(&"a");
        assert_eq!(q.next().await, "a");
        q.done(&"a");
        q.done(&"b");
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn a_key_resting_after_its_pass_is_queued_once_when_the_rest_ends() {
        let q = std::sync::Arc::new(WorkQueue::new());
        q.add("a");
        let key = q.next().await;
        let rested = std::time::Instant::now();
        q.done_after(key, Duration::from_millis(200));
        q.add("a");
        q.add("a");
        q.add("b");
        // Only the other key is handed out while "a" rests.
        assert_eq!(q.next().await, "b");
        q.done(&"b");
        assert!(q.is_empty());
        let next = tokio::time::timeout(Duration::from_secs(10), q.next()).await.expect("queued after its rest");
        assert_eq!(next, "a");
        assert!(rested.elapsed() >= Duration::from_millis(200));
        q.done(&"a");
        assert!(q.is_empty());
    }
}
