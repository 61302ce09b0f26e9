//! Fairness between the hub's users: each user has a few seats (requests
//! handled at once) and a short queue; a request that finds both full, or
//! waits longer than the queue allows, is refused with 429 Too Many
//! Requests and `Retry-After`, as the Kubernetes API's priority and
//! fairness does. One user's flood (a script listing in a loop, a storm of
//! watches being opened) then waits behind itself, not in front of the
//! others: their requests find their own seats free.
//!
//! Exempt, as Kubernetes exempts `system:masters`: the `system:masters`
//! group (admin), member agents (their heartbeats and Work) and hub nodes.
//! A request holds its seat while it is handled; a watch, until its stream
//! has started (an open watch holds no seat, but each user keeps a bounded
//! number of watches open: [`Fairness::watch`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_proto::tls::Identity;
use fleet_rbac::bootstrap::MASTERS_GROUP;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many requests each user gets at once, and how many may wait.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Requests of one user handled at once.
    pub seats: usize,
    /// Requests of one user waiting for a seat, at most.
    pub queue: usize,
    /// Longest wait for a seat.
    pub wait: Duration,
    /// Watches of one user open at once.
    pub watches: usize,
}

/// Seconds a refused client is told to wait before retrying.
pub const RETRY_AFTER_SECONDS: u64 = 1;

/// One user's seats and queue.
struct Lane {
    seats: Arc<Semaphore>,
    waiting: AtomicUsize,
    /// Watches open.
    watches: AtomicUsize,
}

/// The per-user lanes of one node.
pub struct Fairness {
    limits: Limits,
    lanes: Mutex<HashMap<String, Arc<Lane>>>,
}

/// A seat: released when dropped. Exempt requests hold none.
pub struct Seat(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// An open watch of a limited user: counted until dropped (the watch's
/// stream holds it).
pub struct WatchSlot(Option<Arc<Lane>>);

impl Drop for WatchSlot {
    fn drop(&mut self) {
        if let Some(lane) = &self.0 {
            lane.watches.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Why a request got no seat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooMany {
    pub message: String,
}

impl Fairness {
    /// Lanes with `limits`.
    pub fn new(limits: Limits) -> Arc<Fairness> {
        Arc::new(Fairness { limits, lanes: Mutex::new(HashMap::new()) })
    }

    fn lane(&self, user: &str) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        lanes
            .entry(user.to_string())
            .or_insert_with(|| {
                Arc::new(Lane {
                    seats: Arc::new(Semaphore::new(self.limits.seats.max(1))),
                    waiting: AtomicUsize::new(0),
                    watches: AtomicUsize::new(0),
                })
            })
            .clone()
    }

    /// A seat for a request of `identity`: at once, after waiting in its
    /// user's queue, or refused.
    pub async fn seat(&self, identity: &Identity) -> Result<Seat, TooMany> {
        let Some(user) = crate::rbac::user_of(identity) else { return Ok(Seat(None)) };
        if user.groups.iter().any(|g| g == MASTERS_GROUP) {
            return Ok(Seat(None));
        }
        let lane = self.lane(&user.name);
        if let Ok(permit) = lane.seats.clone().try_acquire_owned() {
            return Ok(Seat(Some(permit)));
        }
        let limits = self.limits;
        let refuse = |why: String| TooMany {
            message: format!(
                "too many requests from user {:?}: {why} (each user has {} requests handled at once and {} \
                 waiting); retry after {RETRY_AFTER_SECONDS}s",
                user.name, limits.seats, limits.queue
            ),
        };
        // Join the queue, unless it is full.
        let joined =
            lane.waiting.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < limits.queue).then_some(n + 1));
        if joined.is_err() {
            return Err(refuse(format!("{} already wait", limits.queue)));
        }
        let waited = tokio::time::timeout(limits.wait, lane.seats.clone().acquire_owned()).await;
        lane.waiting.fetch_sub(1, Ordering::AcqRel);
        match waited {
            Ok(Ok(permit)) => Ok(Seat(Some(permit))),
            Ok(Err(_)) => Err(refuse("the node is stopping".into())),
            Err(_) => Err(refuse(format!("none of its requests ended within {:?}", limits.wait))),
        }
    }
}

impl Fairness {
    /// A slot for one more open watch of `identity`, or a refusal when its
    /// user has as many open as it may.
    pub fn watch(&self, identity: &Identity) -> Result<WatchSlot, TooMany> {
        let Some(user) = crate::rbac::user_of(identity) else { return Ok(WatchSlot(None)) };
        if user.groups.iter().any(|g| g == MASTERS_GROUP) {
            return Ok(WatchSlot(None));
        }
        let lane = self.lane(&user.name);
        let limit = self.limits.watches;
        match lane.watches.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < limit).then_some(n + 1)) {
            Ok(_) => Ok(WatchSlot(Some(lane))),
            Err(_) => Err(TooMany {
                message: format!(
                    "too many watches from user {:?}: it has {limit} open, as many as a user may; end one, or retry \
                     after {RETRY_AFTER_SECONDS}s",
                    user.name
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> Identity {
        Identity::User { name: name.into(), groups: vec!["team".into()] }
    }

    #[tokio::test]
    async fn a_user_waits_behind_itself_not_behind_others() {
        let fairness = Fairness::new(Limits { seats: 2, queue: 1, wait: Duration::from_millis(50), watches: 2 });
        let (bob, alice) = (user("bob"), user("alice"));
        let held = [fairness.seat(&bob).await.unwrap(), fairness.seat(&bob).await.unwrap()];
        // bob's third waits and then gives up; his fourth, with the queue full, is refused at once.
        let (queued, refused) = tokio::join!(fairness.seat(&bob), async {
            tokio::task::yield_now().await;
            fairness.seat(&bob).await
        });
        assert!(queued.is_err_and(|e| e.message.contains("within")));
        assert!(refused.is_err_and(|e| e.message.contains("1 already wait") && e.message.contains("\"bob\"")));
        // alice is not behind bob; admin and members are not limited at all.
        assert!(fairness.seat(&alice).await.is_ok());
        for _ in 0..10 {
            std::mem::forget(fairness.seat(&Identity::Admin).await.unwrap());
            std::mem::forget(fairness.seat(&Identity::Member("m".into())).await.unwrap());
        }
        // A seat given back is bob's again.
        drop(held);
        assert!(fairness.seat(&bob).await.is_ok());
    }

    #[test]
    fn a_user_keeps_a_bounded_number_of_watches_open() {
        let limits = Limits { seats: 1, queue: 1, wait: Duration::from_millis(1), watches: 2 };
        let fairness = Fairness::new(limits);
        let bob = user("bob");
        let open = [fairness.watch(&bob).unwrap(), fairness.watch(&bob).unwrap()];
        assert!(fairness.watch(&bob).is_err_and(|e| e.message.contains("2 open")));
        assert!(fairness.watch(&user("alice")).is_ok());
        assert!(fairness.watch(&Identity::Member("m".into())).is_ok());
        drop(open);
        assert!(fairness.watch(&bob).is_ok());
    }
}
