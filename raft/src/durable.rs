//! How far this node's Raft log is on disk, for the leader's early append.
//!
//! openraft 0.9 waits for the leader's own log append to be fsync'd before
//! it sends the new entries to the followers, so one write paid for two
//! fsyncs one after the other. The log store lets the leader's append count
//! as done as soon as its entries are in memory and handed to the log's
//! write thread, and the fsync runs while the entries travel to the
//! followers. What keeps an acknowledged write on disk on a majority:
//!
//! - a follower answers an AppendEntries only after its own fsync (its
//!   appends still wait), so a commit still needs a majority of which every
//!   node but the leader has the entry on disk;
//! - nothing is applied anywhere, so nothing is answered or read, before
//!   the leader's own fsync too: the leader's state machine waits for this
//!   log to be durable up to the entries it applies
//!   ([`crate::gate::DurableApply`]), and the leader tells the followers a
//!   commit index only up to what its log holds on disk (an AppendEntries
//!   without entries waits for it; one with entries carries no commit index
//!   past it), so no follower applies an entry the leader might lose in a
//!   crash.
//!
//! An entry the leader loses in a crash before its fsync was therefore
//! never applied, answered or read on any node, and another leader may
//! overwrite it: it was never acknowledged.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::error::Error;

/// What the log file holds for sure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnDisk {
    /// Every entry up to this index (none: nothing, or only a purged prefix).
    Through(Option<u64>),
    /// A durable commit of the log failed: the node must stop.
    Failed,
}

/// The durable end of this node's log, shared by the log store (which moves
/// it), the state machine's gate and the replication client (which wait
/// for it). Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct DurableLog {
    tx: Arc<watch::Sender<OnDisk>>,
}

impl DurableLog {
    /// A log whose file holds every entry up to `last`.
    pub(crate) fn new(last: Option<u64>) -> DurableLog {
        DurableLog { tx: Arc::new(watch::Sender::new(OnDisk::Through(last))) }
    }

    /// The file now holds every entry up to `index`.
    pub(crate) fn written_through(&self, index: u64) {
        self.tx.send_if_modified(|state| match *state {
            OnDisk::Through(last) if last.is_none_or(|l| l < index) => {
                *state = OnDisk::Through(Some(index));
                true
            }
            _ => false,
        });
    }

    /// The entries from `from` on are about to be removed from the file.
    pub(crate) fn truncated(&self, from: u64) {
        self.tx.send_if_modified(|state| match *state {
            OnDisk::Through(Some(last)) if last >= from => {
                *state = OnDisk::Through(from.checked_sub(1));
                true
            }
            _ => false,
        });
    }

    /// A durable commit failed: every waiter fails from now on.
    pub(crate) fn failed(&self) {
        self.tx.send_replace(OnDisk::Failed);
    }

    /// Whether the file holds every entry up to `index`.
    pub(crate) fn covers(&self, index: u64) -> bool {
        matches!(*self.tx.borrow(), OnDisk::Through(Some(last)) if last >= index)
    }

    /// Waits until the file holds every entry up to `index`; fails if a
    /// durable commit failed, or after `timeout` (`None`: no limit).
    pub(crate) async fn wait_for(&self, index: u64, timeout: Option<Duration>) -> Result<(), Error> {
        let mut rx = self.tx.subscribe();
        let reached = rx.wait_for(|state| match *state {
            OnDisk::Through(last) => last.is_some_and(|l| l >= index),
            OnDisk::Failed => true,
        });
        let state = match timeout {
            Some(limit) => match tokio::time::timeout(limit, reached).await {
                Ok(state) => state.map(|s| *s),
                Err(_) => return Err(Error::Storage(format!("the log is not on disk up to {index} after {limit:?}"))),
            },
            None => reached.await.map(|s| *s),
        };
        match state {
            Ok(OnDisk::Through(_)) => Ok(()),
            Ok(OnDisk::Failed) => {
                Err(Error::Storage(format!("a durable commit of the log failed before index {index}")))
            }
            Err(_) => Err(Error::ShuttingDown),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_see_the_file_grow_shrink_and_fail() {
        let log = DurableLog::new(Some(4));
        assert!(log.covers(4) && !log.covers(5));
        let waiting = tokio::spawn({
            let log = log.clone();
            async move { log.wait_for(6, None).await }
        });
        log.written_through(5);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "5 is not 6");
        log.written_through(6);
        assert!(waiting.await.expect("joined").is_ok());
        log.written_through(3);
        assert!(log.covers(6), "an older write never takes back a newer one");
        log.truncated(5);
        assert!(log.covers(4) && !log.covers(5));
        let timed_out = log.wait_for(5, Some(Duration::from_millis(10))).await;
        assert!(matches!(timed_out, Err(Error::Storage(_))), "{timed_out:?}");
        let waiting = tokio::spawn({
            let log = log.clone();
            async move { log.wait_for(9, None).await }
        });
        log.failed();
        assert!(matches!(waiting.await.expect("joined"), Err(Error::Storage(_))));
        assert!(!log.covers(1));
    }
}
