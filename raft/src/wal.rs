//! The Raft log on disk: an append-only write-ahead log in segment files.
//!
//! A durable append is one sequential write and one `fdatasync`, where a
//! B-tree commit wrote and synced a dozen scattered pages; every write of
//! the hub pays it on the leader and on a follower.
//!
//! Layout: a directory of segments `<seq>.wal`, written one after the other.
//! A segment is a run of records, each `[payload length: u32 LE][CRC-32 of
//! the payload: u32 LE][payload: MessagePack]`. Every segment starts with a
//! checkpoint (the layout version, the vote, the committed and purged ids so
//! far), so a prefix of segments can be deleted once the log is purged past
//! every entry they hold. Entries, votes, committed ids, truncations and
//! purges are records; reading the segments in order rebuilds the log.
//!
//! A crash can leave the last record of the last segment half-written
//! (never synced, so never acknowledged): opening cuts it off. A damaged
//! record anywhere else is corruption, and opening fails.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fleet_statemachine::TypeConfig;
use openraft::{LogId, RaftLogId, Vote};
use serde::{Deserialize, Serialize};

use crate::codec::{decode, encode};
use crate::error::Error;

type Entry = openraft::Entry<TypeConfig>;

/// A segment is closed, and the next begun, once it holds this many bytes.
const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// A record's header: its payload's length and CRC-32.
const HEADER: usize = 8;
/// The largest payload a record may have (a batch entry is at most a few MiB).
const MAX_PAYLOAD: usize = 512 * 1024 * 1024;

/// The layout version this code writes and reads.
pub const WAL_FORMAT_VERSION: u32 = 1;

/// A record as read back.
#[derive(Debug, Deserialize)]
enum Record {
    Checkpoint { format: u32, vote: Option<Vote<u64>>, committed: Option<LogId<u64>>, purged: Option<LogId<u64>> },
    Entry(Entry),
    Vote(Vote<u64>),
    Committed(Option<LogId<u64>>),
    Truncate(u64),
    Purged(LogId<u64>),
}

/// A record as written (borrowing what it holds); encodes exactly as [`Record`].
#[derive(Serialize)]
enum RecordRef<'a> {
    Checkpoint { format: u32, vote: Option<Vote<u64>>, committed: Option<LogId<u64>>, purged: Option<LogId<u64>> },
    Entry(&'a Entry),
    Vote(Vote<u64>),
    Committed(Option<LogId<u64>>),
    Truncate(u64),
    Purged(LogId<u64>),
}

/// Appends one framed record to `buf`.
fn frame(buf: &mut Vec<u8>, record: &RecordRef<'_>) -> Result<(), Error> {
    let payload = encode(record)?;
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| (l as usize) <= MAX_PAYLOAD)
        .ok_or_else(|| Error::Storage(format!("a log record of {} bytes is over the limit", payload.len())))?;
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    buf.extend_from_slice(&payload);
    Ok(())
}

/// Whether `payload`, at file offset `start`, has a whole 512-byte sector of
/// zeros: a page of a record that a crash kept from reaching the disk.
fn has_zero_sector(payload: &[u8], start: usize) -> bool {
    const SECTOR: usize = 512;
    let first = start.next_multiple_of(SECTOR) - start;
    payload.get(first..).is_some_and(|rest| rest.chunks_exact(SECTOR).any(|s| s.iter().all(|&b| b == 0)))
}

/// Where an entry's record is.
#[derive(Debug, Clone, Copy)]
struct Location {
    segment: u64,
    /// Offset of the payload (after the header).
    offset: u64,
    len: u32,
    log_id: LogId<u64>,
}

/// What one write of records put where.
struct Written {
    /// The segment written to.
    segment: u64,
    /// Its file, to sync.
    file: Arc<File>,
    /// Each record's payload offset and length.
    payloads: Vec<(u64, u32)>,
}

/// One segment file.
struct Segment {
    file: Arc<File>,
    len: u64,
    /// The highest entry index ever written to it.
    max_index: Option<u64>,
}

/// The write-ahead log of one node. Not synchronized: the log store keeps
/// it behind a mutex, writes on one thread and syncs outside the lock.
pub(crate) struct Wal {
    dir: PathBuf,
    /// A segment is closed once it holds this many bytes.
    segment_bytes: u64,
    /// By sequence number; the last one is written to.
    segments: BTreeMap<u64, Segment>,
    entries: BTreeMap<u64, Location>,
    vote: Option<Vote<u64>>,
    committed: Option<LogId<u64>>,
    purged: Option<LogId<u64>>,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Storage(format!("{}: {e}", path.display()))
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}.wal"))
}

/// Makes a new file's directory entry durable.
fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io(dir, e))
}

impl Wal {
    /// Opens the log in `dir`, creating it if needed, and reads it back.
    pub(crate) fn open(dir: &Path) -> Result<Wal, Error> {
        Wal::open_sized(dir, SEGMENT_BYTES)
    }

    /// [`Wal::open`] with segments closed at `segment_bytes`.
    fn open_sized(dir: &Path, segment_bytes: u64) -> Result<Wal, Error> {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let mut seqs = Vec::new();
        for item in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let name = item.map_err(|e| io(dir, e))?.file_name();
            let name = name.to_string_lossy();
            if let Some(seq) = name.strip_suffix(".wal").and_then(|s| s.parse::<u64>().ok()) {
                seqs.push(seq);
            }
        }
        seqs.sort_unstable();
        let mut wal = Wal {
            dir: dir.to_path_buf(),
            segment_bytes,
            segments: BTreeMap::new(),
            entries: BTreeMap::new(),
            vote: None,
            committed: None,
            purged: None,
        };
        let last = seqs.last().copied();
        for seq in seqs {
            wal.replay(seq, Some(seq) == last)?;
        }
        if wal.segments.is_empty() {
            wal.begin_segment(1)?;
        }
        Ok(wal)
    }

    /// Reads segment `seq` back; a torn record at the end of the last
    /// segment is cut off.
    fn replay(&mut self, seq: u64, last: bool) -> Result<(), Error> {
        let path = segment_path(&self.dir, seq);
        let data = std::fs::read(&path).map_err(|e| io(&path, e))?;
        let mut offset = 0usize;
        let mut max_index = None;
        let mut first = true;
        while offset < data.len() {
            let torn = |why: &str| -> Result<(), Error> {
                if last {
                    return Ok(());
                }
                Err(Error::Storage(format!("{}: corrupt record at offset {offset}: {why}", path.display())))
            };
            let Some(header) = data.get(offset..offset + HEADER) else {
                torn("incomplete header")?;
                break;
            };
            let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
            let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
            let start = offset + HEADER;
            let payload = match data.get(start..start.saturating_add(len)) {
                Some(p) if len > 0 && len <= MAX_PAYLOAD && crc32fast::hash(p) == crc => p,
                // Past the end of the file, or zeros where a write never
                // landed: the last write was cut short by a crash.
                None => {
                    torn("incomplete payload")?;
                    break;
                }
                Some(p) if len == 0 || has_zero_sector(p, start) => {
                    torn("a record never completely written")?;
                    break;
                }
                // Written whole and changed since: never cut off silently.
                Some(_) => {
                    return Err(Error::Storage(format!(
                        "{}: corrupt record at offset {offset}: its checksum does not match",
                        path.display()
                    )))
                }
            };
            let record: Record = decode(payload).map_err(|e| {
                Error::Storage(format!("{}: unreadable record at offset {offset}: {e}", path.display()))
            })?;
            if first {
                match &record {
                    Record::Checkpoint { format, .. } if *format > WAL_FORMAT_VERSION => {
                        return Err(Error::NewerFormat {
                            path: path.display().to_string(),
                            found: *format,
                            supported: WAL_FORMAT_VERSION,
                        })
                    }
                    Record::Checkpoint { .. } => {}
                    _ => return Err(Error::Storage(format!("{}: does not start with a checkpoint", path.display()))),
                }
                first = false;
            }
            let location = |log_id| Location { segment: seq, offset: start as u64, len: len as u32, log_id };
            match record {
                Record::Checkpoint { vote, committed, purged, .. } => {
                    self.vote = vote.or(self.vote);
                    self.committed = self.committed.max(committed);
                    if let Some(purged) = purged {
                        self.note_purged(purged);
                    }
                }
                Record::Entry(entry) => {
                    let log_id = *entry.get_log_id();
                    self.entries.split_off(&log_id.index);
                    self.entries.insert(log_id.index, location(log_id));
                    max_index = max_index.max(Some(log_id.index));
                }
                Record::Vote(vote) => self.vote = Some(vote),
                Record::Committed(committed) => self.committed = committed,
                Record::Truncate(from) => {
                    self.entries.split_off(&from);
                }
                Record::Purged(purged) => self.note_purged(purged),
            }
            offset = start + len;
        }
        let file = OpenOptions::new().read(true).write(true).open(&path).map_err(|e| io(&path, e))?;
        if offset < data.len() {
            tracing::warn!(segment = %path.display(), offset, bytes = data.len() - offset, "cutting off a torn record at the end of the Raft log");
            file.set_len(offset as u64).and_then(|()| file.sync_all()).map_err(|e| io(&path, e))?;
        }
        if first {
            // Created, but its checkpoint never reached the disk: begin it again.
            file.set_len(0).map_err(|e| io(&path, e))?;
            let mut segment = Segment { file: Arc::new(file), len: 0, max_index: None };
            self.write_checkpoint(&mut segment, &path)?;
            self.segments.insert(seq, segment);
            return Ok(());
        }
        self.segments.insert(seq, Segment { file: Arc::new(file), len: offset as u64, max_index });
        Ok(())
    }

    fn note_purged(&mut self, purged: LogId<u64>) {
        if Some(purged) > self.purged {
            self.purged = Some(purged);
        }
        let kept = self.entries.split_off(&(purged.index + 1));
        self.entries = kept;
    }

    fn write_checkpoint(&self, segment: &mut Segment, path: &Path) -> Result<(), Error> {
        let mut buf = Vec::new();
        let checkpoint = RecordRef::Checkpoint {
            format: WAL_FORMAT_VERSION,
            vote: self.vote,
            committed: self.committed,
            purged: self.purged,
        };
        frame(&mut buf, &checkpoint)?;
        segment.file.write_all_at(&buf, segment.len).map_err(|e| io(path, e))?;
        segment.len += buf.len() as u64;
        segment.file.sync_data().map_err(|e| io(path, e))
    }

    /// Starts segment `seq` with a checkpoint, durably.
    fn begin_segment(&mut self, seq: u64) -> Result<(), Error> {
        let path = segment_path(&self.dir, seq);
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path).map_err(|e| io(&path, e))?;
        let mut segment = Segment { file: Arc::new(file), len: 0, max_index: None };
        self.write_checkpoint(&mut segment, &path)?;
        sync_dir(&self.dir)?;
        self.segments.insert(seq, segment);
        Ok(())
    }

    /// The segment written to, beginning a new one when it is full.
    fn active(&mut self) -> Result<u64, Error> {
        let (&seq, segment) = self.segments.last_key_value().ok_or_else(|| Error::Storage("no log segment".into()))?;
        if segment.len < self.segment_bytes {
            return Ok(seq);
        }
        self.begin_segment(seq + 1)?;
        Ok(seq + 1)
    }

    /// Writes `records` at the end of the log (not synced).
    fn write(&mut self, records: &[RecordRef<'_>]) -> Result<Written, Error> {
        let seq = self.active()?;
        let mut buf = Vec::new();
        let mut payloads = Vec::with_capacity(records.len());
        let segment = self.segments.get_mut(&seq).ok_or_else(|| Error::Storage("no log segment".into()))?;
        for record in records {
            let before = buf.len();
            frame(&mut buf, record)?;
            payloads.push((segment.len + (before + HEADER) as u64, (buf.len() - before - HEADER) as u32));
        }
        let path = segment_path(&self.dir, seq);
        segment.file.write_all_at(&buf, segment.len).map_err(|e| io(&path, e))?;
        segment.len += buf.len() as u64;
        Ok(Written { segment: seq, file: segment.file.clone(), payloads })
    }

    /// Writes `entries` (and `committed`, if given) at the end of the log,
    /// not yet synced; returns the file to sync.
    pub(crate) fn append(
        &mut self,
        entries: &[Entry],
        committed: Option<Option<LogId<u64>>>,
    ) -> Result<Arc<File>, Error> {
        let mut records: Vec<RecordRef<'_>> = entries.iter().map(RecordRef::Entry).collect();
        records.extend(committed.map(RecordRef::Committed));
        let Written { segment: seq, file, payloads } = self.write(&records)?;
        for (entry, (offset, len)) in entries.iter().zip(payloads) {
            let log_id = *entry.get_log_id();
            self.entries.split_off(&log_id.index);
            self.entries.insert(log_id.index, Location { segment: seq, offset, len, log_id });
        }
        if let Some(segment) = self.segments.get_mut(&seq) {
            segment.max_index = segment.max_index.max(entries.last().map(|e| e.get_log_id().index));
        }
        if let Some(committed) = committed {
            self.committed = committed;
        }
        Ok(file)
    }

    /// Records `vote`; returns the file to sync.
    pub(crate) fn save_vote(&mut self, vote: Vote<u64>) -> Result<Arc<File>, Error> {
        let file = self.write(&[RecordRef::Vote(vote)])?.file;
        self.vote = Some(vote);
        Ok(file)
    }

    /// Removes the entries from `from` on; returns the file to sync.
    pub(crate) fn truncate(&mut self, from: u64, committed: Option<Option<LogId<u64>>>) -> Result<Arc<File>, Error> {
        let mut records = vec![RecordRef::Truncate(from)];
        records.extend(committed.map(RecordRef::Committed));
        let file = self.write(&records)?.file;
        self.entries.split_off(&from);
        if let Some(committed) = committed {
            self.committed = committed;
        }
        Ok(file)
    }

    /// Forgets the entries up to `purged` and deletes the segments that
    /// hold nothing after it (not synced: a purge may be lost in a crash
    /// and done again).
    pub(crate) fn purge(&mut self, purged: LogId<u64>, committed: Option<Option<LogId<u64>>>) -> Result<(), Error> {
        let mut records = vec![RecordRef::Purged(purged)];
        records.extend(committed.map(RecordRef::Committed));
        self.write(&records)?;
        if let Some(committed) = committed {
            self.committed = committed;
        }
        self.note_purged(purged);
        let active = self.segments.last_key_value().map(|(&seq, _)| seq);
        let done: Vec<u64> = self
            .segments
            .iter()
            .take_while(|(&seq, s)| Some(seq) != active && s.max_index.is_none_or(|m| m <= purged.index))
            .map(|(&seq, _)| seq)
            .collect();
        for seq in done {
            self.segments.remove(&seq);
            let path = segment_path(&self.dir, seq);
            std::fs::remove_file(&path).map_err(|e| io(&path, e))?;
        }
        Ok(())
    }

    /// Where the entries with indexes in `range` are, with their files.
    pub(crate) fn locate(&self, range: (std::ops::Bound<u64>, std::ops::Bound<u64>)) -> Vec<(Arc<File>, u64, u32)> {
        self.entries
            .range(range)
            .filter_map(|(_, l)| self.segments.get(&l.segment).map(|s| (s.file.clone(), l.offset, l.len)))
            .collect()
    }

    /// The vote last saved.
    pub(crate) fn vote(&self) -> Option<Vote<u64>> {
        self.vote
    }

    /// The committed id last stored.
    pub(crate) fn committed(&self) -> Option<LogId<u64>> {
        self.committed
    }

    /// The last purged id and the last entry's id (or the purged one).
    pub(crate) fn log_state(&self) -> (Option<LogId<u64>>, Option<LogId<u64>>) {
        let last = self.entries.last_key_value().map(|(_, l)| l.log_id).or(self.purged);
        (self.purged, last)
    }

    /// The last entry's index.
    pub(crate) fn last_index(&self) -> Option<u64> {
        self.entries.last_key_value().map(|(&i, _)| i)
    }
}

/// Reads the entries `locate` found.
pub(crate) fn read_entries(found: Vec<(Arc<File>, u64, u32)>) -> Result<Vec<Entry>, Error> {
    found
        .into_iter()
        .map(|(file, offset, len)| {
            let mut payload = vec![0u8; len as usize];
            file.read_exact_at(&mut payload, offset)
                .map_err(|e| Error::Storage(format!("reading the Raft log: {e}")))?;
            match decode::<Record>(&payload)? {
                Record::Entry(entry) => Ok(entry),
                other => Err(Error::Storage(format!("the Raft log has {other:?} where an entry should be"))),
            }
        })
        .collect()
}

/// Syncs a file the log wrote to.
pub(crate) fn sync(file: &File) -> Result<(), Error> {
    file.sync_data().map_err(|e| Error::Storage(format!("syncing the Raft log: {e}")))
}

pub(crate) mod legacy;

#[cfg(test)]
mod tests;
