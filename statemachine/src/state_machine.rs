//! openraft's view of the store: [`RaftStateMachine`] and
//! [`RaftSnapshotBuilder`] over [`Store`], with every redb call moved off the
//! async runtime threads onto the state machine's own [`Lane`]s.

use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{ErrorSubject, ErrorVerb, RaftSnapshotBuilder, Snapshot};

use crate::command::Response;
use crate::error::Error;
use crate::lane::Lane;
use crate::raft_types::{LogId, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use crate::store::Store;

/// Apply calls between two fsync'd state-machine commits. In between, commits
/// are not fsync'd: the Raft log holds the entries until a snapshot (which
/// forces a durable commit first) lets it be purged.
const DURABLE_EVERY: u64 = 64;

/// The Raft state machine of one node.
#[derive(Clone)]
pub struct StateMachine {
    store: Arc<Store>,
    applies: Arc<AtomicU64>,
    /// Applies and other state-machine reads and writes, in order.
    apply_lane: Lane,
    /// Snapshot work, which can take long (serializing the whole state for a
    /// follower) and must not hold up applies.
    snapshot_lane: Lane,
}

impl StateMachine {
    /// Opens the state machine (`state.redb`) in `dir`.
    pub fn open(dir: &Path) -> Result<StateMachine, Error> {
        std::fs::create_dir_all(dir)?;
        let store = Store::open(&dir.join("state.redb"))?;
        // Earlier versions kept a serialized copy of the state here; the
        // state machine itself is the snapshot now.
        for stale in ["snapshot.bin", "snapshot.tmp"] {
            match std::fs::remove_file(dir.join(stale)) {
                Ok(()) => tracing::info!(file = stale, "removed the snapshot file of an earlier version"),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        let lane = |name: &str| Lane::start(name).map_err(|e| Error::Storage(e.to_string()));
        Ok(StateMachine {
            store,
            applies: Arc::new(AtomicU64::new(0)),
            apply_lane: lane("raft-apply")?,
            snapshot_lane: lane("raft-snapshot")?,
        })
    }

    /// The object store, for reads and watches.
    pub fn store(&self) -> Arc<Store> {
        self.store.clone()
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let store = self.store.clone();
        self.apply_lane.run_io(ErrorSubject::StateMachine, ErrorVerb::Read, move || store.applied_state()).await
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Response>>, StorageError>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        // Counted here, outside the deterministic apply.
        let commands: usize = entries
            .iter()
            .map(|e| match &e.payload {
                openraft::EntryPayload::Normal(proposal) => proposal.len(),
                _ => 0,
            })
            .sum();
        self.store.metrics().applied_commands.inc_by(commands as u64);
        let store = self.store.clone();
        let durable = self.applies.fetch_add(1, Ordering::Relaxed) % DURABLE_EVERY == DURABLE_EVERY - 1;
        let started = std::time::Instant::now();
        let applied = self
            .apply_lane
            .run_io(ErrorSubject::StateMachine, ErrorVerb::Write, move || store.apply_entries(entries, durable))
            .await;
        self.store.metrics().stages.since(crate::Stage::apply, started);
        applied
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        tracing::info!(snapshot = %meta.snapshot_id, bytes = data.len(), "installing snapshot from the leader");
        let store = self.store.clone();
        let meta = meta.clone();
        let started = std::time::Instant::now();
        let id = meta.snapshot_id.clone();
        self.snapshot_lane
            .run_io(ErrorSubject::Snapshot(None), ErrorVerb::Write, move || {
                store.install_snapshot_content(&meta, &data)
            })
            .await?;
        tracing::info!(snapshot = %id, millis = started.elapsed().as_millis() as u64, "installed the snapshot");
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let store = self.store.clone();
        let current = self
            .snapshot_lane
            .run_io(ErrorSubject::Snapshot(None), ErrorVerb::Read, move || store.current_snapshot())
            .await?;
        Ok(current.map(|(meta, data)| Snapshot { meta, snapshot: Box::new(Cursor::new(data)) }))
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    /// Records a snapshot of the applied state (durably, without serializing
    /// it: see `snapshot.rs`). The content returned is empty: openraft keeps
    /// only the metadata of a built snapshot, and asks for the content with
    /// `get_current_snapshot` when a follower needs it.
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let store = self.store.clone();
        let meta = self
            .snapshot_lane
            .run_io(ErrorSubject::Snapshot(None), ErrorVerb::Write, move || store.record_snapshot())
            .await?;
        tracing::info!(snapshot = %meta.snapshot_id, "recorded a snapshot; the log may be purged behind it");
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(Vec::new())) })
    }
}
