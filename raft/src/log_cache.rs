//! The tail of the Raft log, in memory.
//!
//! Right after an entry is appended, it is read back twice on the leader
//! (by each follower's replication stream, then to apply it) and once on a
//! follower (to apply it). Reading those from redb meant a read transaction
//! and a MessagePack decode each time; this cache serves them from memory.
//! Entries are cheap to clone (a [`fleet_statemachine::Proposal`] is shared).
//!
//! Invariant: the cache holds a contiguous run of the log that ends at the
//! log's last entry. Appends enter it when they are handed to the log's write
//! thread, before their commit: openraft reads an entry as soon as `append`
//! returns, and the leader's `append` returns before the fsync. Truncation
//! and purge leave it before theirs. It is bounded by entries and bytes, but
//! never lets go of an entry the file does not hold yet; older entries are
//! read from the file.

use std::collections::VecDeque;
use std::ops::Bound;

use openraft::{EntryPayload, RaftLogId};

use fleet_statemachine::TypeConfig;

type Entry = openraft::Entry<TypeConfig>;

/// Most entries kept.
const MAX_ENTRIES: usize = 2048;
/// Most bytes (of encoded commands) kept. An entry also holds its commands
/// decoded, which take 8-10× their MessagePack encoding (objects as JSON
/// value trees): at 64 MiB the cache held most of a node's 750 MB at 1,000
/// placements. 4 MiB still covers the second or so between
/// an append and its replication and apply under load; older entries come
/// from the file.
const MAX_BYTES: usize = 4 * 1024 * 1024;

/// A contiguous tail of the log.
#[derive(Default)]
pub(crate) struct LogCache {
    entries: VecDeque<Entry>,
    bytes: usize,
    /// The last index the file is known to hold (committed there); the
    /// entries after it are only here.
    written: Option<u64>,
    /// Truncations so far: a write handed over before one may not mark
    /// the entries that replaced the truncated ones as written.
    truncations: u64,
}

fn size_of(entry: &Entry) -> usize {
    match &entry.payload {
        EntryPayload::Normal(proposal) => proposal.encoded_len().max(1),
        EntryPayload::Blank | EntryPayload::Membership(_) => 64,
    }
}

impl LogCache {
    fn first_index(&self) -> Option<u64> {
        self.entries.front().map(|e| e.get_log_id().index)
    }

    fn last_index(&self) -> Option<u64> {
        self.entries.back().map(|e| e.get_log_id().index)
    }

    /// Records entries handed to the file (not yet committed there), and
    /// returns the truncation count to pass to [`LogCache::written_through`].
    pub(crate) fn appended(&mut self, entries: &[Entry]) -> u64 {
        let Some(first) = entries.first().map(|e| e.get_log_id().index) else { return self.truncations };
        match self.last_index() {
            // Overwrites part of the tail: drop it first.
            Some(last) if first <= last => self.truncated(first),
            // Not adjacent to what is held: start over from here.
            Some(last) if first != last + 1 => self.clear(),
            _ => {}
        }
        for entry in entries {
            self.bytes += size_of(entry);
            self.entries.push_back(entry.clone());
        }
        self.evict();
        self.truncations
    }

    /// Records that the file now holds every entry up to `index`, written
    /// by an append handed over when the truncation count was `truncations`;
    /// false (and nothing changes) if the log was truncated since.
    pub(crate) fn written_through(&mut self, index: u64, truncations: u64) -> bool {
        if truncations != self.truncations {
            return false;
        }
        self.written = Some(self.written.map_or(index, |w| w.max(index)));
        self.evict();
        true
    }

    /// Lets go of the oldest entries over the bounds, if the file has them.
    fn evict(&mut self) {
        while self.entries.len() > MAX_ENTRIES || (self.bytes > MAX_BYTES && self.entries.len() > 1) {
            let in_file = self.first_index().zip(self.written).is_some_and(|(first, written)| first <= written);
            if !in_file {
                return;
            }
            self.pop_front();
        }
    }

    /// Forgets entries from `index` on (before they are truncated from the file).
    pub(crate) fn truncated(&mut self, index: u64) {
        self.truncations += 1;
        self.written = self.written.filter(|&w| w < index).or_else(|| index.checked_sub(1));
        while self.last_index().is_some_and(|last| last >= index) {
            if let Some(e) = self.entries.pop_back() {
                self.bytes -= size_of(&e);
            }
        }
    }

    /// Forgets entries up to `index` inclusive (before they are purged from the file).
    pub(crate) fn purged(&mut self, index: u64) {
        while self.first_index().is_some_and(|first| first <= index) {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        if let Some(e) = self.entries.pop_front() {
            self.bytes -= size_of(&e);
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// The entries in `range` if the cache holds every one of them that the
    /// log holds; `None` if some must come from the file.
    pub(crate) fn get(&self, start: Bound<u64>, end: Bound<u64>) -> Option<Vec<Entry>> {
        let first = self.first_index()?;
        let last = self.last_index()?;
        let from = match start {
            Bound::Included(s) => s,
            Bound::Excluded(s) => s.checked_add(1)?,
            Bound::Unbounded => 0,
        };
        // Exclusive end, capped at what exists (the cache ends where the log ends).
        let to = match end {
            Bound::Included(e) => e.saturating_add(1),
            Bound::Excluded(e) => e,
            Bound::Unbounded => u64::MAX,
        }
        .min(last + 1);
        if from >= to {
            return Some(Vec::new());
        }
        if from < first {
            return None;
        }
        let skip = usize::try_from(from - first).ok()?;
        let take = usize::try_from(to - from).ok()?;
        Some(self.entries.iter().skip(skip).take(take).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_statemachine::{Command, Proposal};
    use openraft::{CommittedLeaderId, LogId};

    fn entry(index: u64) -> Entry {
        let proposal = Proposal::new(vec![Command { now: format!("{index}"), ops: vec![] }]).unwrap();
        Entry { log_id: LogId::new(CommittedLeaderId::new(1, 1), index), payload: EntryPayload::Normal(proposal) }
    }

    fn indexes(entries: Option<Vec<Entry>>) -> Option<Vec<u64>> {
        entries.map(|v| v.iter().map(|e| e.get_log_id().index).collect())
    }

    fn run(from: u64, to: u64) -> Vec<Entry> {
        (from..=to).map(entry).collect()
    }

    #[test]
    fn serves_only_ranges_it_holds_whole() {
        let mut c = LogCache::default();
        assert_eq!(indexes(c.get(Bound::Included(1), Bound::Unbounded)), None);
        c.appended(&run(5, 9));
        assert_eq!(indexes(c.get(Bound::Included(5), Bound::Excluded(8))), Some(vec![5, 6, 7]));
        assert_eq!(indexes(c.get(Bound::Included(7), Bound::Unbounded)), Some(vec![7, 8, 9]));
        assert_eq!(indexes(c.get(Bound::Included(8), Bound::Included(20))), Some(vec![8, 9]));
        assert_eq!(indexes(c.get(Bound::Included(4), Bound::Excluded(7))), None, "4 is only in the file");
        assert_eq!(indexes(c.get(Bound::Included(12), Bound::Excluded(15))), Some(vec![]), "past the end of the log");
    }

    #[test]
    fn truncate_purge_and_overwrite_keep_it_equal_to_the_log() {
        let mut c = LogCache::default();
        c.appended(&run(1, 10));
        c.truncated(8);
        assert_eq!(indexes(c.get(Bound::Included(6), Bound::Unbounded)), Some(vec![6, 7]));
        c.purged(3);
        assert_eq!(indexes(c.get(Bound::Included(3), Bound::Unbounded)), None);
        assert_eq!(indexes(c.get(Bound::Included(4), Bound::Excluded(6))), Some(vec![4, 5]));
        // An append that overwrites part of the tail replaces it.
        c.appended(&run(6, 9));
        assert_eq!(indexes(c.get(Bound::Included(4), Bound::Unbounded)), Some(vec![4, 5, 6, 7, 8, 9]));
        // One that leaves a gap restarts the cache.
        c.appended(&run(20, 21));
        assert_eq!(indexes(c.get(Bound::Included(9), Bound::Unbounded)), None);
        assert_eq!(indexes(c.get(Bound::Included(20), Bound::Unbounded)), Some(vec![20, 21]));
        // One before everything held restarts it too.
        c.appended(&run(2, 3));
        assert_eq!(indexes(c.get(Bound::Included(2), Bound::Unbounded)), Some(vec![2, 3]));
    }

    #[test]
    fn stays_within_its_bounds() {
        let mut c = LogCache::default();
        for i in 0..(MAX_ENTRIES as u64 + 100) {
            let truncations = c.appended(&[entry(i + 1)]);
            assert!(c.written_through(i + 1, truncations));
        }
        assert_eq!(c.entries.len(), MAX_ENTRIES);
        assert_eq!(c.first_index(), Some(101));
        assert_eq!(c.bytes, c.entries.iter().map(size_of).sum::<usize>());
    }

    #[test]
    fn keeps_every_entry_the_file_does_not_hold_yet() {
        let mut c = LogCache::default();
        let over = MAX_ENTRIES as u64 + 100;
        let truncations = c.appended(&run(1, over));
        assert_eq!(c.entries.len() as u64, over, "nothing is in the file yet");
        assert!(c.written_through(50, truncations));
        assert_eq!(c.first_index(), Some(51), "only what the file holds goes");
        assert!(c.written_through(over, truncations));
        assert_eq!(c.entries.len(), MAX_ENTRIES);
        // A truncation takes back what the file is known to hold.
        c.truncated(over - 10);
        assert_eq!(c.written, Some(over - 11));
        let after = c.appended(&run(over - 10, over + MAX_ENTRIES as u64));
        assert_eq!(c.first_index(), Some(over - 10), "the file holds none of them");
        assert!(!c.written_through(over, truncations), "a write handed over before the truncation");
        assert_eq!(c.first_index(), Some(over - 10));
        assert!(c.written_through(over, after));
        assert_eq!(c.first_index(), Some(over + 1));
    }
}
