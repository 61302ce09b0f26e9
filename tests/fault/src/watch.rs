//! A watch stream, resumed across faults, must deliver every committed
//! change of the watched keys exactly once and in order. This compares what
//! a watcher received with the reference list of committed changes.
//!
//! Order is by resourceVersion, not strictly increasing from one event to
//! the next: one Raft entry (a `Batch`) can change several objects, and all
//! their events carry that entry's index. A (resourceVersion, key) pair is
//! unique.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was deleted.
    Deleted,
}

/// One event a watcher received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    /// The event's resourceVersion (the entry that made the change).
    pub rv: u64,
    /// The object's key.
    pub key: String,
    /// What happened to it.
    pub kind: EventKind,
}

/// One committed change of a watched key, from a source of truth (for
/// example the changes an undisturbed watcher saw, or the acknowledged
/// writes when every write was acknowledged).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    /// The entry that made it.
    pub rv: u64,
    /// The object's key.
    pub key: String,
    /// Whether it deleted the object.
    pub deleted: bool,
}

/// What a watcher received, and the window it covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchStream {
    /// The watch started after this resourceVersion (exclusive).
    pub from: u64,
    /// Known delivered through this resourceVersion (the watcher waited
    /// until it got there); otherwise the last event's bounds the window.
    pub until: Option<u64>,
    /// The events, in the order received (across reconnections).
    pub events: Vec<WatchEvent>,
}

/// One way a stream broke its promise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchProblem {
    /// Event `index` has an older resourceVersion than the one before it.
    OutOfOrder {
        /// Position in the stream.
        index: usize,
        /// Its resourceVersion.
        rv: u64,
        /// The resourceVersion of the event before it.
        previous: u64,
    },
    /// Event `index` repeats a change already delivered.
    Duplicate {
        /// Position in the stream.
        index: usize,
        /// Its resourceVersion.
        rv: u64,
        /// Its key.
        key: String,
    },
    /// Event `index` is no committed change of the key (or lies outside
    /// the window).
    Unexpected {
        /// Position in the stream.
        index: usize,
        /// Its resourceVersion.
        rv: u64,
        /// Its key.
        key: String,
    },
    /// Event `index` has the right change but says deleted when it was not,
    /// or the reverse.
    WrongKind {
        /// Position in the stream.
        index: usize,
        /// Its resourceVersion.
        rv: u64,
        /// Its key.
        key: String,
    },
    /// A committed change inside the window never arrived: a gap.
    Missing {
        /// Its resourceVersion.
        rv: u64,
        /// Its key.
        key: String,
    },
}

impl fmt::Display for WatchProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchProblem::OutOfOrder { index, rv, previous } => {
                write!(f, "event {index} at rv {rv} came after an event at rv {previous}")
            }
            WatchProblem::Duplicate { index, rv, key } => {
                write!(f, "event {index}: {key:?} at rv {rv} delivered twice")
            }
            WatchProblem::Unexpected { index, rv, key } => {
                write!(f, "event {index}: {key:?} at rv {rv} is no committed change in the window")
            }
            WatchProblem::WrongKind { index, rv, key } => {
                write!(f, "event {index}: {key:?} at rv {rv} has the wrong type (deleted or not)")
            }
            WatchProblem::Missing { rv, key } => write!(f, "{key:?} changed at rv {rv} but no event said so (a gap)"),
        }
    }
}

/// Checks `stream` against the committed changes of the watched keys (any
/// order; changes outside the stream's window are ignored). Empty when the
/// stream is complete, in order and without duplicates.
pub fn watch_stream_check(stream: &WatchStream, committed: &[Change]) -> Vec<WatchProblem> {
    let last = stream.events.iter().map(|e| e.rv).max().unwrap_or(stream.from);
    let end = stream.until.map_or(last, |until| until.max(last));
    let window: BTreeMap<(u64, &str), bool> = committed
        .iter()
        .filter(|c| c.rv > stream.from && c.rv <= end)
        .map(|c| ((c.rv, c.key.as_str()), c.deleted))
        .collect();
    let mut problems = Vec::new();
    let mut delivered: BTreeSet<(u64, &str)> = BTreeSet::new();
    let mut previous: Option<u64> = None;
    for (index, event) in stream.events.iter().enumerate() {
        let (rv, key) = (event.rv, event.key.clone());
        if let Some(previous) = previous.filter(|p| rv < *p) {
            problems.push(WatchProblem::OutOfOrder { index, rv, previous });
        }
        previous = Some(previous.map_or(rv, |p| p.max(rv)));
        if !delivered.insert((rv, event.key.as_str())) {
            problems.push(WatchProblem::Duplicate { index, rv, key });
            continue;
        }
        match window.get(&(rv, event.key.as_str())) {
            None => problems.push(WatchProblem::Unexpected { index, rv, key }),
            Some(deleted) if *deleted != (event.kind == EventKind::Deleted) => {
                problems.push(WatchProblem::WrongKind { index, rv, key })
            }
            Some(_) => {}
        }
    }
    for (rv, key) in window.keys() {
        if !delivered.contains(&(*rv, *key)) {
            problems.push(WatchProblem::Missing { rv: *rv, key: key.to_string() });
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(rv: u64, key: &str, deleted: bool) -> Change {
        Change { rv, key: key.into(), deleted }
    }

    fn event(rv: u64, key: &str, kind: EventKind) -> WatchEvent {
        WatchEvent { rv, key: key.into(), kind }
    }

    fn committed() -> Vec<Change> {
        vec![
            change(3, "a", false),
            change(5, "a", false),
            change(5, "b", false),
            change(8, "a", true),
            change(9, "b", false),
        ]
    }

    #[test]
    fn a_complete_stream_passes_and_the_window_starts_after_from() {
        let stream = WatchStream {
            from: 3,
            until: Some(9),
            events: vec![
                event(5, "b", EventKind::Added),
                event(5, "a", EventKind::Modified),
                event(8, "a", EventKind::Deleted),
                event(9, "b", EventKind::Modified),
            ],
        };
        assert_eq!(watch_stream_check(&stream, &committed()), vec![]);
    }

    #[test]
    fn gaps_duplicates_disorder_and_inventions_are_named() {
        let stream = WatchStream {
            from: 0,
            until: None,
            events: vec![
                event(3, "a", EventKind::Added),
                event(8, "a", EventKind::Deleted),
                event(5, "b", EventKind::Added),
                event(8, "a", EventKind::Deleted),
                event(7, "a", EventKind::Modified),
                event(9, "b", EventKind::Deleted),
            ],
        };
        let problems = watch_stream_check(&stream, &committed());
        assert_eq!(
            problems,
            vec![
                WatchProblem::OutOfOrder { index: 2, rv: 5, previous: 8 },
                WatchProblem::Duplicate { index: 3, rv: 8, key: "a".into() },
                WatchProblem::OutOfOrder { index: 4, rv: 7, previous: 8 },
                WatchProblem::Unexpected { index: 4, rv: 7, key: "a".into() },
                WatchProblem::WrongKind { index: 5, rv: 9, key: "b".into() },
                WatchProblem::Missing { rv: 5, key: "a".into() },
            ]
        );
    }

    #[test]
    fn a_stream_known_to_reach_until_misses_what_it_never_got() {
        let stream = WatchStream { from: 5, until: Some(9), events: vec![event(8, "a", EventKind::Deleted)] };
        assert_eq!(watch_stream_check(&stream, &committed()), vec![WatchProblem::Missing { rv: 9, key: "b".into() }]);
    }
}
