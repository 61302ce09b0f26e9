//! The workers against a store of step counters: each key needs a number
//! of steps, each step's write must be computed from the state its
//! previous step left, and the test controls when writes commit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use fleet_statemachine::StoreError;
use tokio::sync::watch;

use super::*;

const WORKERS: usize = 4;

fn key(i: usize) -> ObjectKey {
    ObjectKey::new("placement.kubernetes-fleet.io", "ClusterResourcePlacement", "", &format!("p-{i:03}"))
}

#[derive(Default)]
struct Counters {
    /// Steps committed per key: the "store".
    committed: BTreeMap<ObjectKey, u32>,
    /// Keys with a write in flight.
    writing: BTreeSet<ObjectKey>,
    /// The most writes seen in flight at once.
    max_in_flight: usize,
    /// Commits per key, in the order they happened (step numbers).
    log: BTreeMap<ObjectKey, Vec<u32>>,
    /// Refusals still to give, per key.
    refuse: BTreeMap<ObjectKey, u32>,
    /// Refusals given, per key.
    refused: BTreeMap<ObjectKey, u32>,
    /// What went wrong.
    violations: Vec<String>,
}

/// Steps over [`Counters`]; commits wait while `open` is false.
struct Fake {
    wanted: u32,
    state: Mutex<Counters>,
    open: watch::Receiver<bool>,
}

impl Fake {
    fn new(wanted: u32, open: watch::Receiver<bool>) -> Fake {
        Fake { wanted, state: Mutex::new(Counters::default()), open }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        self.state.lock().expect("not poisoned")
    }
}

impl Steps for Fake {
    type Write = u32;

    async fn plan(&self, key: &ObjectKey) -> Result<Planned<u32>, ControllerError> {
        let done = self.lock().committed.get(key).copied().unwrap_or(0);
        Ok(if done >= self.wanted {
            Planned::Done { recheck_after: None }
        } else {
            Planned::Write { write: done, bytes: 100 }
        })
    }

    async fn commit(&self, key: &ObjectKey, step: u32) -> Result<(), ControllerError> {
        {
            let mut s = self.lock();
            if !s.writing.insert(key.clone()) {
                s.violations.push(format!("two writes of {key} at once"));
            }
            s.max_in_flight = s.max_in_flight.max(s.writing.len());
        }
        let mut open = self.open.clone();
        let _ = open.wait_for(|open| *open).await;
        // Let other keys' plans and writes run in between.
        tokio::task::yield_now().await;
        let mut s = self.lock();
        s.writing.remove(key);
        if let Some(left) = s.refuse.get_mut(key).filter(|left| **left > 0) {
            *left -= 1;
            *s.refused.entry(key.clone()).or_default() += 1;
            let conflict = StoreError::Conflict { key: key.clone(), expected: 1, current: 2 };
            return Err(ControllerError::Raft(fleet_raft::Error::Refused(conflict)));
        }
        let done = s.committed.entry(key.clone()).or_default();
        if *done != step {
            let was = *done;
            s.violations.push(format!("{key}: step {step} computed before step {} committed", was));
            return Ok(());
        }
        *done += 1;
        s.log.entry(key.clone()).or_default().push(step);
        Ok(())
    }
}

/// Starts the workers on `keys`.
fn start(fake: &Arc<Fake>, budget: WriteBudget, keys: usize) -> JoinSet<()> {
    let queue = Arc::new(WorkQueue::new());
    let budget = Arc::new(budget);
    let mut workers = JoinSet::new();
    for _ in 0..WORKERS {
        workers.spawn(worker(fake.clone(), queue.clone(), budget.clone()));
    }
    for i in 0..keys {
        queue.add(key(i));
    }
    workers
}

/// Polls `done` until it holds (or fails the test after a generous deadline).
async fn until(what: &str, fake: &Fake, done: impl Fn(&Counters) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(&fake.lock()) {
        assert!(Instant::now() < deadline, "{what}: not within the deadline");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_keys_writes_are_in_flight_together_up_to_the_budget() {
    let (open, gate) = watch::channel(false);
    let fake = Arc::new(Fake::new(1, gate));
    let _workers = start(&fake, WriteBudget::new(32, 1 << 20), 200);
    // Far more than one write per worker wait together...
    until("32 writes in flight", &fake, |s| s.writing.len() == 32).await;
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    // ...and never more than the budget.
    assert_eq!(fake.lock().max_in_flight, 32);
    open.send_replace(true);
    until("every key written", &fake, |s| s.log.len() == 200).await;
    let s = fake.lock();
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    assert_eq!(s.max_in_flight, 32);
    assert!(s.log.values().all(|steps| steps == &[0]), "one step each, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_byte_budget_bounds_writes_in_flight_too() {
    let (open, gate) = watch::channel(false);
    let fake = Arc::new(Fake::new(1, gate));
    // 100 bytes a write, rounded up to 1 KiB: 5 fit in 5 KiB.
    let _workers = start(&fake, WriteBudget::new(32, 5 * 1024), 50);
    until("5 writes in flight", &fake, |s| s.writing.len() == 5).await;
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(fake.lock().max_in_flight, 5);
    open.send_replace(true);
    until("every key written", &fake, |s| s.log.len() == 50).await;
    assert!(fake.lock().violations.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_key_steps_in_order_one_write_at_a_time() {
    let (_open, gate) = watch::channel(true);
    let fake = Arc::new(Fake::new(6, gate));
    let _workers = start(&fake, WriteBudget::new(16, 1 << 20), 60);
    until("six steps of every key", &fake, |s| s.log.len() == 60 && s.log.values().all(|l| l.len() == 6)).await;
    let s = fake.lock();
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    for (key, steps) in &s.log {
        assert_eq!(steps, &[0, 1, 2, 3, 4, 5], "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_step_is_retried_by_its_key_alone() {
    let (open, gate) = watch::channel(false);
    let fake = Arc::new(Fake::new(3, gate));
    fake.lock().refuse.insert(key(7), 2);
    let _workers = start(&fake, WriteBudget::new(16, 1 << 20), 20);
    // Key 7's refused write shares its moment with the others' writes.
    until("every first write in flight", &fake, |s| s.writing.len() == 16).await;
    open.send_replace(true);
    until("three steps of every key", &fake, |s| s.log.len() == 20 && s.log.values().all(|l| l.len() == 3)).await;
    let s = fake.lock();
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    assert_eq!(s.refused.get(&key(7)), Some(&2));
    assert_eq!(s.refused.len(), 1, "no other key was refused");
    for (key, steps) in &s.log {
        assert_eq!(steps, &[0, 1, 2], "{key}: each step committed once, in order");
    }
}
