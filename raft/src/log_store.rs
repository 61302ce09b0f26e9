//! The Raft log store: openraft's storage API over the write-ahead log
//! ([`crate::wal`], the directory `raft-wal/`).
//!
//! Durability rules (docs/architecture.md, never relaxed):
//! - `save_vote` is synced before it returns;
//! - a follower's `append` fires its callback only after the sync of the
//!   write that holds the entries; the leader's fires once its entries are
//!   handed to the write thread, and what the leader's log holds on disk is
//!   tracked in [`DurableLog`] instead (the argument is in `durable.rs`);
//! - truncation is synced (a truncated suffix must never come back).
//!
//! `committed` and purges may be lazily durable: losing them after a crash
//! only means re-applying or re-purging entries that are still correct. So
//! `save_committed` only remembers the id, and the next log write (append,
//! truncate or purge) stores it with that write: openraft awaits
//! `save_committed` on its core task, and a sync there on every commit
//! index change would be serial latency on every write.
//! Every disk call runs on the log's own threads ([`Lane`]s: one for writes,
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

use crate::durable::DurableLog;
use crate::error::Error;
use crate::log_cache::LogCache;
use crate::wal::{read_entries, sync, Wal};

type Entry = openraft::Entry<TypeConfig>;

/// Threads for log reads that miss the cache: the apply loop and each
/// follower's replication stream can read at once (a 5-node hub has 4).
const READ_THREADS: usize = 4;

/// The durable Raft log of one node. Cheap to clone (shared log).
#[derive(Clone)]
pub struct LogStore {
    wal: Arc<Mutex<Wal>>,
    /// The committed id openraft last saved, until a log write stores it.
    committed: Arc<Mutex<Committed>>,
    /// The tail of the log, for reads.
    cache: Arc<Mutex<LogCache>>,
    /// Durations of the log's syncs, for `/metrics`.
    fsync_seconds: Option<prometheus_client::metrics::histogram::Histogram>,
    /// Where appends are timed, from the call to the sync.
    stages: fleet_statemachine::WriteStages,
    /// How far the file holds the log for sure.
    durable: DurableLog,
    /// This node's id, to know its own appends as the leader (none: every
    /// append waits for its sync).
    node_id: Option<u64>,
    /// The vote last saved or read: whom this node follows, or that it leads.
    vote: Arc<Mutex<Option<Vote<u64>>>>,
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
    /// Opens (or creates) the log in the directory `path`, first moving a
    /// redb log file beside it into it (see `wal/legacy.rs`).
    pub fn open(path: &Path) -> Result<LogStore, Error> {
        crate::wal::legacy::migrate(path)?;
        let wal = Wal::open(path)?;
        let last = wal.last_index();
        let vote = wal.vote();
        let lane =
            |name: &str, threads: usize| Lane::start_shared(name, threads).map_err(|e| Error::Storage(e.to_string()));
        Ok(LogStore {
            wal: Arc::new(Mutex::new(wal)),
            committed: Arc::default(),
            cache: Arc::default(),
            fsync_seconds: None,
            stages: Default::default(),
            durable: DurableLog::new(last),
            node_id: None,
            vote: Arc::new(Mutex::new(vote)),
            write_lane: lane("raft-log-write", 1)?,
            read_lane: lane("raft-log-read", READ_THREADS)?,
        })
    }

    /// Records the duration of every sync in `histogram`.
    pub fn with_fsync_histogram(mut self, histogram: prometheus_client::metrics::histogram::Histogram) -> LogStore {
        self.fsync_seconds = Some(histogram);
        self
    }

    /// Lets this node's appends as the leader return before their sync.
    pub fn with_node_id(mut self, id: u64) -> LogStore {
        self.node_id = Some(id);
        self
    }

    /// Times appends in `stages`.
    pub fn with_stages(mut self, stages: fleet_statemachine::WriteStages) -> LogStore {
        self.stages = stages;
        self
    }

    /// How far the file holds the log for sure.
    pub(crate) fn durable(&self) -> DurableLog {
        self.durable.clone()
    }

    /// Whether `entries` are this node's own, appended as the leader under
    /// the vote it saved: those need not wait for their sync (see
    /// `durable.rs`). A follower's append always waits, even of entries
    /// this node once proposed itself.
    fn appended_as_leader(&self, entries: &[Entry]) -> bool {
        let Some(id) = self.node_id else { return false };
        let vote = *self.vote.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(vote) = vote.filter(|v| v.is_committed() && v.leader_id.node_id == id) else { return false };
        entries.iter().all(|e| e.get_log_id().leader_id == vote.leader_id)
    }

    fn wal(&self) -> std::sync::MutexGuard<'_, Wal> {
        self.wal.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn committed(&self) -> std::sync::MutexGuard<'_, Committed> {
        self.committed.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, LogCache> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Syncs `file`, timing it.
    fn sync_timed(&self, file: &std::fs::File) -> Result<(), Error> {
        let started = std::time::Instant::now();
        sync(file)?;
        if let Some(histogram) = &self.fsync_seconds {
            histogram.observe(started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// Runs a write of the log that can carry the saved committed id if the
    /// file lacks it, and notes it stored once the write is done.
    fn with_committed<T>(
        &self,
        write: impl FnOnce(Option<Option<LogId<u64>>>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let unstored = {
            let committed = self.committed();
            committed.latest.filter(|_| !committed.stored)
        };
        let written = write(unstored)?;
        if let Some(latest) = unstored {
            let mut committed = self.committed();
            // Unless a newer id was saved meanwhile.
            if committed.latest == Some(latest) {
                committed.stored = true;
            }
        }
        Ok(written)
    }

    fn append_blocking(&self, entries: &[Entry]) -> Result<(), Error> {
        self.with_committed(|committed| {
            let file = self.wal().append(entries, committed)?;
            self.sync_timed(&file)
        })
    }

    /// Writes `entries` (already in the cache) and records them as durable,
    /// or the failure that stops the node. `truncations` is the cache's
    /// count when the append was handed over: a truncation since has taken
    /// the entries back.
    fn write_appended(&self, entries: &[Entry], truncations: u64, started: std::time::Instant) -> Result<(), Error> {
        let Some(last) = entries.last().map(|e| e.get_log_id().index) else { return Ok(()) };
        match self.append_blocking(entries) {
            Ok(()) => {
                // Under the cache's lock, in step with truncations.
                let mut cache = self.cache();
                if cache.written_through(last, truncations) {
                    self.durable.written_through(last);
                }
                drop(cache);
                self.stages.since(fleet_statemachine::Stage::log_append, started);
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, last, "a durable append to the Raft log failed");
                self.durable.failed();
                Err(e)
            }
        }
    }

    fn truncate_blocking(&self, from: u64) -> Result<(), Error> {
        self.with_committed(|committed| {
            let file = self.wal().truncate(from, committed)?;
            self.sync_timed(&file)
        })
    }

    fn purge_blocking(&self, log_id: LogId<u64>) -> Result<(), Error> {
        self.with_committed(|committed| self.wal().purge(log_id, committed))
    }

    fn save_vote_blocking(&self, vote: Vote<u64>) -> Result<(), Error> {
        let file = self.wal().save_vote(vote)?;
        self.sync_timed(&file)
    }

    fn entries(&self, start: Bound<u64>, end: Bound<u64>) -> Result<Vec<Entry>, Error> {
        let found = self.wal().locate((start, end));
        read_entries(found)
    }
}

/// A failed write of the log as openraft's storage error.
fn io_error(verb: ErrorVerb, e: &dyn std::fmt::Display) -> StorageError<u64> {
    StorageError::IO {
        source: openraft::StorageIOError::new(ErrorSubject::Logs, verb, openraft::AnyError::error(e.to_string())),
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
        let (last_purged_log_id, last_log_id) = self.wal().log_state();
        Ok(LogState { last_purged_log_id, last_log_id })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        let this = self.clone();
        let vote = *vote;
        self.write_lane.run_io(ErrorSubject::Vote, ErrorVerb::Write, move || this.save_vote_blocking(vote)).await?;
        *self.vote.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self.wal().vote())
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
        Ok(self.wal().committed())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let started = std::time::Instant::now();
        let as_leader = self.appended_as_leader(&entries);
        // Readable from now on (openraft reads them as soon as this returns).
        let truncations = self.cache().appended(&entries);
        let this = self.clone();
        let written = self
            .write_lane
            .submit(move || this.write_appended(&entries, truncations, started))
            .map_err(|e| io_error(ErrorVerb::Write, &e))?;
        if as_leader {
            // The sync goes on while the entries travel to the followers;
            // nothing is applied before it ends (see `durable.rs`).
            callback.log_io_completed(Ok(()));
            return Ok(());
        }
        // The callback reports durability: only after the sync.
        let result = match written.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(io_error(ErrorVerb::Write, &e)),
            Err(e) => Err(io_error(ErrorVerb::Write, &e)),
        };
        match &result {
            Ok(()) => callback.log_io_completed(Ok(())),
            Err(e) => callback.log_io_completed(Err(std::io::Error::other(e.to_string()))),
        }
        result
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        // In call order with appends, which enter the cache when called.
        {
            let mut cache = self.cache();
            cache.truncated(log_id.index);
            self.durable.truncated(log_id.index);
        }
        let this = self.clone();
        self.write_lane
            .run_io(ErrorSubject::Logs, ErrorVerb::Delete, move || this.truncate_blocking(log_id.index))
            .await
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        self.cache().purged(log_id.index);
        let this = self.clone();
        self.write_lane.run_io(ErrorSubject::Logs, ErrorVerb::Delete, move || this.purge_blocking(log_id)).await
    }
}
