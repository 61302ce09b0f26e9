//! The state machine as Raft sees it: the node's [`StateMachine`], applying
//! entries only once this node's log holds them on disk. On a follower that
//! is always already so (it counts an entry as accepted only after its
//! fsync); on the leader, whose append returns before its fsync, applying
//! waits for it (see `durable.rs`).

use std::io::Cursor;

use fleet_statemachine::{Stage, StateMachine, TypeConfig};
use openraft::storage::RaftStateMachine;
use openraft::{ErrorSubject, ErrorVerb, LogId, RaftLogId, Snapshot, SnapshotMeta, StorageError, StoredMembership};

use crate::durable::DurableLog;

/// [`StateMachine`] behind the durability gate.
pub(crate) struct DurableApply {
    inner: StateMachine,
    log: DurableLog,
}

impl DurableApply {
    pub(crate) fn new(inner: StateMachine, log: DurableLog) -> DurableApply {
        DurableApply { inner, log }
    }
}

impl RaftStateMachine<TypeConfig> for DurableApply {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, openraft::BasicNode>), StorageError<u64>> {
        self.inner.applied_state().await
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<fleet_statemachine::Response>>, StorageError<u64>>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        if let Some(last) = entries.last().map(|e| e.get_log_id().index) {
            if !self.log.covers(last) {
                let started = std::time::Instant::now();
                self.log.wait_for(last, None).await.map_err(|e| StorageError::IO {
                    source: openraft::StorageIOError::new(
                        ErrorSubject::Logs,
                        ErrorVerb::Write,
                        openraft::AnyError::error(e.to_string()),
                    ),
                })?;
                self.inner.store().metrics().stages.since(Stage::apply_wait_durable, started);
            }
        }
        self.inner.apply(entries).await
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.inner.get_snapshot_builder().await
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        self.inner.begin_receiving_snapshot().await
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, openraft::BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        self.inner.install_snapshot(meta, snapshot).await
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        self.inner.get_current_snapshot().await
    }
}
