//! openraft's view of the store: [`RaftStateMachine`] and
//! [`RaftSnapshotBuilder`] over [`Store`], with every redb call moved off the
//! async runtime threads.

use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{ErrorSubject, ErrorVerb, RaftSnapshotBuilder, Snapshot, StorageIOError};

use crate::command::Response;
use crate::error::Error;
use crate::raft_types::{LogId, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use crate::snapshot::SnapshotFile;
use crate::store::Store;

/// Apply calls between two fsync'd state-machine commits. In between, commits
/// are not fsync'd: the Raft log holds the entries until a snapshot (which
/// forces a durable commit first) lets it be purged.
const DURABLE_EVERY: u64 = 64;

/// The Raft state machine of one node.
#[derive(Clone)]
pub struct StateMachine {
    store: Arc<Store>,
    snapshot: Arc<SnapshotFile>,
    applies: Arc<AtomicU64>,
}

impl StateMachine {
    /// Opens the state machine (`state.redb` and `snapshot.bin`) in `dir`.
    pub fn open(dir: &Path) -> Result<StateMachine, Error> {
        std::fs::create_dir_all(dir)?;
        let store = Store::open(&dir.join("state.redb"))?;
        Ok(StateMachine { store, snapshot: Arc::new(SnapshotFile::new(dir)), applies: Arc::new(AtomicU64::new(0)) })
    }

    /// The object store, for reads and watches.
    pub fn store(&self) -> Arc<Store> {
        self.store.clone()
    }
}

fn sm_err(verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError {
    StorageError::IO { source: StorageIOError::new(ErrorSubject::StateMachine, verb, openraft::AnyError::error(e)) }
}

fn snap_err(verb: ErrorVerb, e: impl std::fmt::Display) -> StorageError {
    StorageError::IO { source: StorageIOError::new(ErrorSubject::Snapshot(None), verb, openraft::AnyError::error(e)) }
}

async fn blocking<T: Send + 'static>(
    verb: ErrorVerb,
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, StorageError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(sm_err(verb, e)),
        Err(e) => Err(sm_err(verb, e)),
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let store = self.store.clone();
        blocking(ErrorVerb::Read, move || store.applied_state()).await
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Response>>, StorageError>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<_> = entries.into_iter().collect();
        let store = self.store.clone();
        let durable = self.applies.fetch_add(1, Ordering::Relaxed) % DURABLE_EVERY == DURABLE_EVERY - 1;
        blocking(ErrorVerb::Write, move || store.apply_entries(entries, durable)).await
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
        let file = self.snapshot.clone();
        let meta = meta.clone();
        // Install into the state machine first (durably), then keep the file:
        // a crash in between leaves a state machine ahead of the file, never behind.
        match tokio::task::spawn_blocking(move || {
            store.install_snapshot_content(&data)?;
            file.save(&meta, data)
        })
        .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(snap_err(ErrorVerb::Write, e)),
            Err(e) => Err(snap_err(ErrorVerb::Write, e)),
        }
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let file = self.snapshot.clone();
        let loaded = match tokio::task::spawn_blocking(move || file.load()).await {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Err(snap_err(ErrorVerb::Read, e)),
            Err(e) => return Err(snap_err(ErrorVerb::Read, e)),
        };
        Ok(loaded.map(|(meta, data)| Snapshot { meta, snapshot: Box::new(Cursor::new(data.as_ref().clone())) }))
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let store = self.store.clone();
        let file = self.snapshot.clone();
        let built = tokio::task::spawn_blocking(move || {
            let (last_applied, membership, data) = store.build_snapshot_content()?;
            let snapshot_id = match &last_applied {
                Some(l) => format!("{}-{}-{}", l.leader_id.term, l.leader_id.node_id, l.index),
                None => "empty".to_string(),
            };
            let meta = SnapshotMeta { last_log_id: last_applied, last_membership: membership, snapshot_id };
            file.save(&meta, data.clone())?;
            Ok::<_, Error>((meta, data))
        })
        .await;
        match built {
            Ok(Ok((meta, data))) => Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(data)) }),
            Ok(Err(e)) => Err(snap_err(ErrorVerb::Write, e)),
            Err(e) => Err(snap_err(ErrorVerb::Write, e)),
        }
    }
}
