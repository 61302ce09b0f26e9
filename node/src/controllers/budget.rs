//! How many controller writes, and how many bytes of them, may be in flight
//! at once on the leader.
//!
//! The workers hand each step's write to a task of its own and go on to
//! the next key, so that when many placements change at once their writes
//! wait for Raft together and the group commit puts them in shared entries.
//! The budget bounds that: by count, so a resync of thousands of keys does
//! not queue thousands of writes; and by bytes, so that what the
//! controllers have in flight (and so any entry made of their writes) stays
//! small enough for a busy follower to answer an AppendEntries within
//! openraft's heartbeat-long time-to-live.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget's unit of bytes.
const UNIT: usize = 1024;

/// Writes and bytes in flight; share it behind an `Arc`.
pub struct WriteBudget {
    writes: Arc<Semaphore>,
    units: Arc<Semaphore>,
    max_units: u32,
}

/// A write's share of the budget, given back when dropped.
pub struct WritePermit {
    _write: OwnedSemaphorePermit,
    _bytes: OwnedSemaphorePermit,
}

impl WriteBudget {
    /// At most `writes` writes and `bytes` bytes in flight (at least one
    /// of each).
    pub fn new(writes: usize, bytes: usize) -> WriteBudget {
        let max_units = u32::try_from(bytes.div_ceil(UNIT).max(1)).unwrap_or(u32::MAX);
        WriteBudget {
            writes: Arc::new(Semaphore::new(writes.max(1))),
            units: Arc::new(Semaphore::new(max_units as usize)),
            max_units,
        }
    }

    /// Waits until a write of `bytes` fits, in the order asked. A write
    /// larger than the whole byte budget waits until nothing else is in
    /// flight and then goes alone. `None` only if the budget was closed
    /// (it never is).
    pub async fn acquire(&self, bytes: usize) -> Option<WritePermit> {
        let units = u32::try_from(bytes.div_ceil(UNIT).max(1)).unwrap_or(u32::MAX).min(self.max_units);
        let _write = self.writes.clone().acquire_owned().await.ok()?;
        let _bytes = self.units.clone().acquire_many_owned(units).await.ok()?;
        Some(WritePermit { _write, _bytes })
    }

    /// Writes that could start now without waiting.
    #[cfg(test)]
    fn free_writes(&self) -> usize {
        self.writes.available_permits()
    }

    /// Bytes (in whole units) that could start now without waiting.
    #[cfg(test)]
    fn free_bytes(&self) -> usize {
        self.units.available_permits() * UNIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Whether `future` is still waiting after the runtime had every chance to run it.
    async fn still_waiting<F: std::future::Future>(future: F) -> bool {
        tokio::select! {
            biased;
            _ = future => false,
            _ = async { for _ in 0..100 { tokio::task::yield_now().await } } => true,
        }
    }

    #[tokio::test]
    async fn counts_writes_and_their_bytes() {
        let budget = WriteBudget::new(2, 10 * UNIT);
        let a = budget.acquire(3 * UNIT).await.expect("open");
        assert_eq!((budget.free_writes(), budget.free_bytes()), (1, 7 * UNIT));
        // Rounded up to whole units; an empty write still counts one.
        let b = budget.acquire(1).await.expect("open");
        assert_eq!((budget.free_writes(), budget.free_bytes()), (0, 6 * UNIT));
        assert!(still_waiting(budget.acquire(0)).await, "a third write waits for the count");
        drop(a);
        let c = budget.acquire(5 * UNIT).await.expect("open");
        assert_eq!((budget.free_writes(), budget.free_bytes()), (0, 4 * UNIT));
        drop((b, c));
        assert_eq!((budget.free_writes(), budget.free_bytes()), (2, 10 * UNIT));
    }

    #[tokio::test]
    async fn bytes_bound_writes_before_their_count_does() {
        let budget = WriteBudget::new(10, 10 * UNIT);
        let a = budget.acquire(6 * UNIT).await.expect("open");
        assert!(still_waiting(budget.acquire(6 * UNIT)).await, "12 units do not fit in 10");
        drop(a);
        let _b = budget.acquire(6 * UNIT).await.expect("open");
    }

    #[tokio::test]
    async fn a_write_larger_than_the_budget_goes_alone() {
        let budget = Arc::new(WriteBudget::new(10, 10 * UNIT));
        let small = budget.acquire(UNIT).await.expect("open");
        assert!(still_waiting(budget.acquire(100 * UNIT)).await, "waits for the small one");
        drop(small);
        let big = tokio::time::timeout(Duration::from_secs(10), budget.acquire(100 * UNIT))
            .await
            .expect("alone, it goes")
            .expect("open");
        assert_eq!(budget.free_bytes(), 0);
        assert!(still_waiting(budget.acquire(UNIT)).await, "nothing beside it");
        drop(big);
        assert_eq!(budget.free_bytes(), 10 * UNIT);
    }
}
