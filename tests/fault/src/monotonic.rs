//! Default reads are served by whichever node is asked and may be stale,
//! but they must never go back in time for one client (docs/reference/interfaces.md). This
//! checks that per client: no read served at an older revision than one the
//! client already saw, and no key seen at an older resourceVersion than
//! before. [`read_your_writes`] also counts the client's own writes and
//! deletes as seen (a client keeps that promise only if it asks reads for at
//! least the revision of its last write, deletes included, as
//! [`crate::client::Client`] does).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt;

use crate::history::{History, Observed, Op, OpId, Outcome, Response};

/// A read that showed its client an older state than one it had seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regression {
    /// The client.
    pub process: u64,
    /// The read that went back.
    pub op: OpId,
    /// The earlier operation that had shown (or made) the newer state.
    pub earlier: OpId,
    /// What went back, in words.
    pub text: String,
}

impl fmt::Display for Regression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "client {}: operation #{} went back in time: {} (seen in #{})",
            self.process, self.op, self.text, self.earlier
        )
    }
}

/// What one client has seen so far: the newest revision, each key's newest
/// resourceVersion, and keys it deleted itself (with the version floor).
#[derive(Default)]
struct Seen {
    revision: Option<(u64, OpId)>,
    keys: HashMap<String, (u64, OpId)>,
    deleted: HashMap<String, (u64, OpId)>,
}

impl Seen {
    fn revision(&mut self, rv: u64, id: OpId) {
        if self.revision.is_none_or(|(seen, _)| rv > seen) {
            self.revision = Some((rv, id));
        }
    }

    fn key(&mut self, key: &str, rv: u64, id: OpId) {
        self.deleted.remove(key);
        let entry = self.keys.entry(key.to_string()).or_insert((rv, id));
        if rv > entry.0 {
            *entry = (rv, id);
        }
        self.revision(rv, id);
    }

    /// Takes in what a completed operation showed the client.
    fn fold(&mut self, id: OpId, op: &Op, own_writes: bool) {
        match op.outcome {
            Outcome::Ok(Response::Read { observed, served_at }) => {
                if let Some(served) = served_at {
                    self.revision(served, id);
                }
                if let Observed::Present { rv, .. } = observed {
                    self.key(&op.key, rv, id);
                }
            }
            Outcome::Ok(Response::Written { rv }) if own_writes => self.key(&op.key, rv, id),
            Outcome::Ok(Response::Deleted) if own_writes => {
                let floor = self.keys.get(&op.key).map_or(0, |(rv, _)| *rv);
                self.deleted.insert(op.key.clone(), (floor, id));
            }
            _ => {}
        }
    }

    /// Whether read `op` shows something older than what was seen.
    fn regression(&self, op: &Op) -> Option<(OpId, String)> {
        let Outcome::Ok(Response::Read { observed, served_at }) = op.outcome else { return None };
        if let (Some(served), Some((seen, earlier))) = (served_at, self.revision) {
            if served < seen {
                return Some((earlier, format!("served at revision {served} after revision {seen} was seen")));
            }
        }
        let Observed::Present { rv, .. } = observed else { return None };
        if let Some((floor, earlier)) = self.deleted.get(&op.key) {
            if rv <= *floor {
                return Some((*earlier, format!("{:?} read at rv {rv} after the client deleted it", op.key)));
            }
        }
        match self.keys.get(&op.key) {
            Some((seen, earlier)) if rv < *seen => {
                Some((*earlier, format!("{:?} read at rv {rv} after it was seen at rv {seen}", op.key)))
            }
            _ => None,
        }
    }
}

fn check(history: &History, own_writes: bool) -> Vec<Regression> {
    let mut by_process: BTreeMap<u64, Vec<OpId>> = BTreeMap::new();
    for (id, op) in history.ops.iter().enumerate() {
        by_process.entry(op.process).or_default().push(id);
    }
    let mut found = Vec::new();
    for (process, mut ids) in by_process {
        ids.sort_by_key(|id| (history.ops[*id].invoke, *id));
        let mut seen = Seen::default();
        // Operations invoked but not yet known complete, by completion time:
        // a read is compared only with what completed before it began.
        let mut pending: BinaryHeap<Reverse<(u64, OpId)>> = BinaryHeap::new();
        for id in ids {
            let op = &history.ops[id];
            while let Some(Reverse((complete, done))) = pending.peek().copied() {
                if complete > op.invoke {
                    break;
                }
                pending.pop();
                seen.fold(done, &history.ops[done], own_writes);
            }
            if let Some((earlier, text)) = seen.regression(op) {
                found.push(Regression { process, op: id, earlier, text });
            }
            if let Some(complete) = op.complete {
                pending.push(Reverse((complete, id)));
            }
        }
    }
    found
}

/// Reads (default or consistent) that went back in time for their client
/// relative to earlier reads; empty when the history is monotonic.
pub fn monotonic_reads(history: &History) -> Vec<Regression> {
    check(history, false)
}

/// Like [`monotonic_reads`], also counting each client's own acknowledged
/// writes and deletes as seen: after writing rv 9, the client must not read
/// the key at an older version.
pub fn read_your_writes(history: &History) -> Vec<Regression> {
    check(history, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Command;

    fn read(process: u64, key: &str, at: u64, observed: Observed, served_at: Option<u64>) -> Op {
        let outcome = Outcome::Ok(Response::Read { observed, served_at });
        Op::new(process, key, Command::Read { consistent: false }, at, at + 5, outcome)
    }

    fn present(rv: u64) -> Observed {
        Observed::Present { rv, digest: rv * 10 }
    }

    #[test]
    fn reads_moving_forward_pass() {
        let history = History::from(vec![
            read(1, "a", 0, present(3), Some(5)),
            read(1, "a", 10, present(3), Some(5)),
            read(1, "b", 20, Observed::Absent, Some(7)),
            read(1, "a", 30, present(8), Some(9)),
            // Another client may be behind the first: only per-client order counts.
            read(2, "a", 40, present(3), Some(4)),
        ]);
        assert_eq!(monotonic_reads(&history), vec![]);
    }

    #[test]
    fn a_stale_key_or_an_older_revision_is_caught() {
        let history = History::from(vec![
            read(1, "a", 0, present(8), Some(9)),
            read(1, "a", 10, present(3), Some(9)),
            read(2, "b", 0, Observed::Absent, Some(12)),
            read(2, "b", 10, Observed::Absent, Some(11)),
        ]);
        let found = monotonic_reads(&history);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].process, found[0].op, found[0].earlier), (1, 1, 0));
        assert!(found[0].text.contains("rv 3 after it was seen at rv 8"), "{}", found[0]);
        assert_eq!((found[1].process, found[1].op, found[1].earlier), (2, 3, 2));
        assert!(found[1].text.contains("revision 11 after revision 12"), "{}", found[1]);
    }

    #[test]
    fn own_writes_count_only_for_read_your_writes() {
        let put = Op::new(1, "a", Command::Put { value: 1 }, 0, 5, Outcome::Ok(Response::Written { rv: 9 }));
        let delete = Op::new(1, "a", Command::Delete { expected: None }, 20, 25, Outcome::Ok(Response::Deleted));
        let history =
            History::from(vec![put, read(1, "a", 10, present(4), Some(4)), delete, read(1, "a", 30, present(9), None)]);
        assert_eq!(monotonic_reads(&history), vec![]);
        let found = read_your_writes(&history);
        assert_eq!(found.iter().map(|r| r.op).collect::<Vec<_>>(), vec![1, 3], "{found:?}");
        assert!(found[1].text.contains("after the client deleted it"), "{}", found[1]);
    }

    #[test]
    fn only_reads_completed_before_a_read_began_count() {
        // The second read overlaps the first (a client with two in flight):
        // it may be served before the first, so no regression.
        let history = History::from(vec![read(1, "a", 0, present(8), Some(9)), read(1, "a", 2, present(3), Some(3))]);
        assert_eq!(monotonic_reads(&history), vec![]);
    }
}
