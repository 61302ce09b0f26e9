//! Nodes that kept the Raft log in a redb file (`raft-log.redb`) move it to
//! the write-ahead log on their first start with this version: the entries,
//! the vote and the committed and purged ids, copied into a new log that
//! replaces the file only once it is complete and on disk. A crash midway
//! leaves the redb file as it was, and the next start copies it again.

use std::path::Path;

use openraft::{LogId, Vote};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{sync, sync_dir, Wal};
use crate::codec::decode;
use crate::error::Error;

type Entry = openraft::Entry<fleet_statemachine::TypeConfig>;

/// The redb log's file name, beside the write-ahead log's directory.
pub(crate) const LEGACY_FILE: &str = "raft-log.redb";

const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
const STATE: TableDefinition<&str, &[u8]> = TableDefinition::new("state");
/// The last layout version of the redb log.
const LEGACY_FORMAT: u32 = 1;
/// Entries copied per write.
const CHUNK: usize = 256;

fn state<T: serde::de::DeserializeOwned>(
    table: &redb::ReadOnlyTable<&'static str, &'static [u8]>,
    name: &str,
) -> Result<Option<T>, Error> {
    match table.get(name)? {
        Some(v) => Ok(Some(decode(v.value())?)),
        None => Ok(None),
    }
}

/// Moves the redb log beside `dir` (if there is one) into a write-ahead log
/// at `dir`. A log already at `dir` wins: the redb file is a leftover of a
/// move that ended just before it was removed.
pub(crate) fn migrate(dir: &Path) -> Result<(), Error> {
    let legacy = dir.with_file_name(LEGACY_FILE);
    let parent = dir.parent().unwrap_or(Path::new("."));
    if !legacy.exists() {
        return Ok(());
    }
    if dir.exists() {
        std::fs::remove_file(&legacy).map_err(|e| Error::Storage(format!("{}: {e}", legacy.display())))?;
        return sync_dir(parent);
    }
    let db = Database::builder().open(&legacy)?;
    let txn = db.begin_read()?;
    let meta = txn.open_table(STATE)?;
    let format: u32 = state(&meta, "format")?.unwrap_or(LEGACY_FORMAT);
    if format > LEGACY_FORMAT {
        return Err(Error::NewerFormat { path: legacy.display().to_string(), found: format, supported: LEGACY_FORMAT });
    }
    let vote: Option<Vote<u64>> = state(&meta, "vote")?;
    let committed: Option<Option<LogId<u64>>> = state(&meta, "committed")?;
    let purged: Option<LogId<u64>> = state(&meta, "last_purged")?;
    let building = dir.with_extension("moving");
    if building.exists() {
        std::fs::remove_dir_all(&building).map_err(|e| Error::Storage(format!("{}: {e}", building.display())))?;
    }
    let mut wal = Wal::open(&building)?;
    if let Some(vote) = vote {
        wal.save_vote(vote)?;
    }
    if let Some(purged) = purged {
        wal.purge(purged, None)?;
    }
    let log = txn.open_table(LOG)?;
    let mut chunk: Vec<Entry> = Vec::with_capacity(CHUNK);
    let mut copied = 0usize;
    for row in log.iter()? {
        let (_, value) = row?;
        chunk.push(decode(value.value())?);
        if chunk.len() == CHUNK {
            wal.append(&chunk, None)?;
            copied += chunk.len();
            chunk.clear();
        }
    }
    copied += chunk.len();
    let file = wal.append(&chunk, committed)?;
    sync(&file)?;
    drop(wal);
    drop(log);
    drop(meta);
    drop(txn);
    drop(db);
    std::fs::rename(&building, dir).map_err(|e| Error::Storage(format!("{}: {e}", dir.display())))?;
    sync_dir(parent)?;
    std::fs::remove_file(&legacy).map_err(|e| Error::Storage(format!("{}: {e}", legacy.display())))?;
    sync_dir(parent)?;
    tracing::info!(entries = copied, from = %legacy.display(), to = %dir.display(), "moved the Raft log to its write-ahead log");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use fleet_statemachine::{Command, Proposal};
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;
    use crate::codec::encode;

    #[test]
    fn a_redb_log_moves_whole_into_the_write_ahead_log() {
        let dir = tempfile::tempdir().expect("temp dir");
        let legacy = dir.path().join(LEGACY_FILE);
        let wal_dir = dir.path().join("raft-wal");
        let vote = Vote::new(4, 2);
        let committed = Some(LogId::new(CommittedLeaderId::new(4, 2), 540));
        let purged = LogId::new(CommittedLeaderId::new(3, 1), 9);
        {
            let db = Database::create(&legacy).expect("db");
            let txn = db.begin_write().expect("txn");
            {
                let mut log = txn.open_table(LOG).expect("log");
                for index in 10..=600u64 {
                    let proposal =
                        Proposal::new(vec![Command { now: format!("{index}"), ops: vec![] }]).expect("encodable");
                    let entry = Entry {
                        log_id: LogId::new(CommittedLeaderId::new(4, 2), index),
                        payload: EntryPayload::Normal(proposal),
                    };
                    log.insert(index, encode(&entry).expect("encoded").as_slice()).expect("inserted");
                }
                let mut meta = txn.open_table(STATE).expect("state");
                meta.insert("vote", encode(&vote).expect("encoded").as_slice()).expect("vote");
                meta.insert("committed", encode(&committed).expect("encoded").as_slice()).expect("committed");
                meta.insert("last_purged", encode(&purged).expect("encoded").as_slice()).expect("purged");
            }
            txn.commit().expect("commit");
        }
        migrate(&wal_dir).expect("moved");
        assert!(!legacy.exists(), "the redb file is gone once the move is on disk");
        let wal = Wal::open(&wal_dir).expect("opened");
        assert_eq!(wal.vote(), Some(vote));
        assert_eq!(wal.committed(), committed);
        assert_eq!(wal.log_state().0, Some(purged));
        let entries = super::super::read_entries(wal.locate((Bound::Unbounded, Bound::Unbounded))).expect("read");
        assert_eq!(entries.len(), 591);
        assert_eq!(entries.last().map(|e| e.log_id.index), Some(600));
        // Nothing to move the second time.
        migrate(&wal_dir).expect("nothing to do");
    }
}
