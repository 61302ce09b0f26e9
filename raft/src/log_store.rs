//! The Raft log on redb, in its own file (`raft-log.redb`).
//!
//! Durability rules (docs/architecture.md, never relaxed):
//! - `save_vote` commits with fsync before it returns;
//! - `append` fires its callback only after the fsync'd commit that holds the entries;
//! - truncation is fsync'd (a truncated suffix must never come back).
//!
//! `committed` and purges may be lazily durable: losing them after a crash
//! only means re-applying or re-purging entries that are still correct. So
//! `save_committed` only remembers the id, and the next log write (append,
//! truncate or purge) stores it in that write's transaction: openraft awaits
//! `save_committed` on its core task, and a redb commit there on every
//! commit index change was serial latency on every write.
//! Every redb call runs on the log's own threads ([`Lane`]s: one for writes,
//! a few for reads that miss the cache), never on the async runtime.
//! Recently appended entries are also kept in memory ([`LogCache`]) for
//! replication and apply to read.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::{Arc, Mutex};

use fleet_statemachine::{Lane, TypeConfig};
use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogId, StorageError, Vote};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use crate::codec::{decode, encode};
use crate::error::Error;
use crate::log_cache::LogCache;

type Entry = openraft::Entry<TypeConfig>;

const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
const STATE: TableDefinition<&str, &[u8]> = TableDefinition::new("state");
const VOTE: &str = "vote";
const COMMITTED: &str = "committed";
const LAST_PURGED: &str = "last_purged";
/// The layout version of the log file (see [`LOG_FORMAT_VERSION`]).
const FORMAT: &str = "format";
/// The layout version this code writes and reads. A log file without one
/// was written before versions were recorded, in this same layout.
pub const LOG_FORMAT_VERSION: u32 = 1;
/// redb's page cache for the log file. redb's default is 1 GiB, and it
/// keeps every page it reads or writes until that is full: the log file's
/// pages grew each node by its whole size. Recent entries
/// are served from [`LogCache`]; the file is read for older ones (a
/// follower catching up) and written by appends, which need only the pages
/// of the tree's right edge.
const PAGE_CACHE_BYTES: usize = 16 * 1024 * 1024;
/// Threads for log reads that miss the cache: the apply loop and each
/// follower's replication stream can read at once (a 5-node hub has 4).
const READ_THREADS: usize = 4;

/// The durable Raft log of one node. Cheap to clone (shared database).
#[derive(Clone)]
pub struct LogStore {
    db: Arc<Database>,
    /// The committed id openraft last saved, until a log write stores it.
    committed: Arc<Mutex<Committed>>,
    /// The tail of the log, for reads.
    cache: Arc<Mutex<LogCache>>,
    /// Durations of the durable (fsync'd) commits, for `/metrics`.
    fsync_seconds: Option<prometheus_client::metrics::histogram::Histogram>,
    /// Appends, truncations, purges and votes, in order.
    write_lane: Lane,
    /// Reads that miss the cache (entries to apply, a lagging follower's
    /// entries), which must not hold up appends nor, on a few threads, one
    /// another.
    read_lane: Lane,
}

/// The committed log id as saved, and whether the file has it yet.
#[derive(Default)]
struct Committed {
    latest: Option<Option<LogId<u64>>>,
    stored: bool,
}

impl LogStore {
    /// Opens (or creates) the log at `path`.
    pub fn open(path: &Path) -> Result<LogStore, Error> {
        let db = Database::builder().set_cache_size(PAGE_CACHE_BYTES).create(path)?;
        let txn = db.begin_write()?;
        txn.open_table(LOG)?;
        {
            let mut state = txn.open_table(STATE)?;
            let found = match state.get(FORMAT)? {
                Some(v) => decode::<u32>(v.value())?,
                None => LOG_FORMAT_VERSION,
            };
            if found > LOG_FORMAT_VERSION {
                return Err(Error::NewerFormat {
                    path: path.display().to_string(),
                    found,
                    supported: LOG_FORMAT_VERSION,
                });
            }
            state.insert(FORMAT, encode(&LOG_FORMAT_VERSION)?.as_slice())?;
        }
        txn.commit()?;
        let lane =
            |name: &str, threads: usize| Lane::start_shared(name, threads).map_err(|e| Error::Storage(e.to_string()));
        Ok(LogStore {
            db: Arc::new(db),
            committed: Arc::default(),
            cache: Arc::default(),
            fsync_seconds: None,
            write_lane: lane("raft-log-write", 1)?,
            read_lane: lane("raft-log-read", READ_THREADS)?,
        })
    }

    /// Records the duration of every durable commit in `histogram`.
    pub fn with_fsync_histogram(mut self, histogram: prometheus_client::metrics::histogram::Histogram) -> LogStore {
        self.fsync_seconds = Some(histogram);
        self
    }

    /// Commits `txn`, timing it if it is durable (an fsync).
    fn commit_timed(&self, txn: redb::WriteTransaction, durable: bool) -> Result<(), Error> {
        let started = std::time::Instant::now();
        txn.commit()?;
        if let (true, Some(histogram)) = (durable, &self.fsync_seconds) {
            histogram.observe(started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    fn committed(&self) -> std::sync::MutexGuard<'_, Committed> {
        self.committed.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, LogCache> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Commits `txn`, storing in it the saved committed id if the file lacks it.
    fn commit_with_committed(&self, txn: redb::WriteTransaction, durable: bool) -> Result<(), Error> {
        let unstored = {
            let committed = self.committed();
            committed.latest.filter(|_| !committed.stored)
        };
        if let Some(latest) = unstored {
            txn.open_table(STATE)?.insert(COMMITTED, encode(&latest)?.as_slice())?;
        }
        self.commit_timed(txn, durable)?;
        if let Some(latest) = unstored {
            let mut committed = self.committed();
            // Unless a newer id was saved meanwhile.
            if committed.latest == Some(latest) {
                committed.stored = true;
            }
        }
        Ok(())
    }

    fn read_state<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<Option<T>, Error> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(STATE)?;
        match table.get(name)? {
            Some(v) => Ok(Some(decode(v.value())?)),
            None => Ok(None),
        }
    }

    fn write_state<T: serde::Serialize>(&self, name: &str, value: &T, durability: Durability) -> Result<(), Error> {
        let bytes = encode(value)?;
        let mut txn = self.db.begin_write()?;
        txn.set_durability(durability)?;
        txn.open_table(STATE)?.insert(name, bytes.as_slice())?;
        self.commit_timed(txn, matches!(durability, Durability::Immediate))?;
        Ok(())
    }

    fn entries(&self, start: Bound<u64>, end: Bound<u64>) -> Result<Vec<Entry>, Error> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(LOG)?;
        let mut out = Vec::new();
        for row in table.range::<u64>((start, end))? {
            let (_, v) = row?;
            out.push(decode(v.value())?);
        }
        Ok(out)
    }

    fn log_state(&self) -> Result<LogState<TypeConfig>, Error> {
        let last_purged: Option<LogId<u64>> = self.read_state(LAST_PURGED)?;
        let txn = self.db.begin_read()?;
        let table = txn.open_table(LOG)?;
        let last = match table.last()? {
            Some((_, v)) => Some(*decode::<Entry>(v.value())?.get_log_id()),
            None => last_purged,
        };
        Ok(LogState { last_purged_log_id: last_purged, last_log_id: last })
    }

    fn append_blocking(&self, entries: Vec<Entry>) -> Result<(), Error> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        {
            let mut table = txn.open_table(LOG)?;
            for entry in &entries {
                table.insert(entry.get_log_id().index, encode(entry)?.as_slice())?;
            }
        }
        self.commit_with_committed(txn, true)?;
        self.cache().appended(&entries);
        Ok(())
    }

    fn truncate_blocking(&self, from: u64) -> Result<(), Error> {
        self.cache().truncated(from);
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        txn.open_table(LOG)?.retain_in::<u64, _>(from.., |_, _| false)?;
        self.commit_with_committed(txn, true)
    }

    fn purge_blocking(&self, log_id: LogId<u64>) -> Result<(), Error> {
        self.cache().purged(log_id.index);
        let bytes = encode(&log_id)?;
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::None)?;
        {
            txn.open_table(STATE)?.insert(LAST_PURGED, bytes.as_slice())?;
            txn.open_table(LOG)?.retain_in::<u64, _>(..=log_id.index, |_, _| false)?;
        }
        self.commit_with_committed(txn, false)
    }
}

fn to_bounds<RB: RangeBounds<u64>>(range: &RB) -> (Bound<u64>, Bound<u64>) {
    (range.start_bound().cloned(), range.end_bound().cloned())
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError<u64>> {
        let (start, end) = to_bounds(&range);
        if let Some(cached) = self.cache().get(start, end) {
            return Ok(cached);
        }
        let this = self.clone();
        self.read_lane.run_io(ErrorSubject::Logs, ErrorVerb::Read, move || this.entries(start, end)).await
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<u64>> {
        let this = self.clone();
        self.read_lane.run_io(ErrorSubject::Logs, ErrorVerb::Read, move || this.log_state()).await
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        let this = self.clone();
        let vote = *vote;
        self.write_lane
            .run_io(ErrorSubject::Vote, ErrorVerb::Write, move || this.write_state(VOTE, &vote, Durability::Immediate))
            .await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        let this = self.clone();
        self.read_lane.run_io(ErrorSubject::Vote, ErrorVerb::Read, move || this.read_state(VOTE)).await
    }

    async fn save_committed(&mut self, committed: Option<LogId<u64>>) -> Result<(), StorageError<u64>> {
        let mut saved = self.committed();
        saved.latest = Some(committed);
        saved.stored = false;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        if let Some(latest) = self.committed().latest {
            return Ok(latest);
        }
        let this = self.clone();
        self.read_lane
            .run_io(ErrorSubject::Store, ErrorVerb::Read, move || {
                Ok::<_, Error>(this.read_state::<Option<LogId<u64>>>(COMMITTED)?.flatten())
            })
            .await
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let this = self.clone();
        let result =
            self.write_lane.run_io(ErrorSubject::Logs, ErrorVerb::Write, move || this.append_blocking(entries)).await;
        // The callback reports durability: only after the fsync'd commit.
        match &result {
            Ok(()) => callback.log_io_completed(Ok(())),
            Err(e) => callback.log_io_completed(Err(std::io::Error::other(e.to_string()))),
        }
        result
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let this = self.clone();
        self.write_lane
            .run_io(ErrorSubject::Logs, ErrorVerb::Delete, move || this.truncate_blocking(log_id.index))
            .await
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let this = self.clone();
        self.write_lane.run_io(ErrorSubject::Logs, ErrorVerb::Delete, move || this.purge_blocking(log_id)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_file_of_a_newer_format_is_refused_with_a_clear_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("raft.redb");
        drop(LogStore::open(&path).expect("a new log"));
        drop(LogStore::open(&path).expect("reopened at the same version"));
        {
            let db = Database::create(&path).expect("db");
            let txn = db.begin_write().expect("txn");
            {
                let mut state = txn.open_table(STATE).expect("state");
                let newer = encode(&(LOG_FORMAT_VERSION + 1)).expect("encode");
                state.insert(FORMAT, newer.as_slice()).expect("insert");
            }
            txn.commit().expect("commit");
        }
        let err = LogStore::open(&path).err().expect("a newer format refused");
        let message = err.to_string();
        assert!(matches!(err, Error::NewerFormat { found, .. } if found == LOG_FORMAT_VERSION + 1), "{message}");
        assert!(message.contains("raft.redb") && message.contains("newer than the version 1"), "{message}");
    }
}
