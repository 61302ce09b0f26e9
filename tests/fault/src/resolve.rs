//! Settling unanswered writes from what the hub committed. A write whose
//! answer was lost may have taken effect at any later point, or never; each
//! one left open multiplies the orders the checker must try. In Fleet every
//! committed change reaches a watcher with its resourceVersion and object,
//! and clients write unique values: a write whose value a watcher saw took
//! effect at that version, before the watcher saw it.
//!
//! A value never seen settles nothing: one Raft entry can write a key twice
//! (batched proposals), and the watch shows only the entry's last value, so
//! an unseen write may still have taken effect, invisibly.

use std::collections::HashMap;

use crate::history::{History, Outcome, Response};

/// One committed change of a key, as a watcher received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The object's key (as operations name it).
    pub key: String,
    /// The change's resourceVersion.
    pub rv: u64,
    /// Digest of the value written, or `None` for a deletion.
    pub digest: Option<u64>,
    /// When the watcher received it, on the recorder's clock.
    pub seen_at: u64,
}

/// What [`resolve`] settled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Unanswered writes found committed: now answered with their version,
    /// completing when the watcher saw them.
    pub took_effect: usize,
    /// Unanswered writes left open: values never seen, and deletes (which
    /// carry no value to match).
    pub open: usize,
}

/// Settles every unanswered write of `history` whose value `committed`
/// shows.
pub fn resolve(history: &mut History, committed: &[Committed]) -> Resolution {
    let mut by_value: HashMap<(&str, u64), &Committed> = HashMap::new();
    for change in committed {
        if let Some(digest) = change.digest {
            // The first commit of a value is the write that made it.
            by_value.entry((change.key.as_str(), digest)).or_insert(change);
        }
    }
    let mut resolution = Resolution::default();
    for op in &mut history.ops {
        if op.outcome != Outcome::Unknown {
            continue;
        }
        let change = op.command.value().and_then(|value| by_value.get(&(op.key.as_str(), value)));
        match change {
            Some(change) => {
                op.outcome = Outcome::Ok(Response::Written { rv: change.rv });
                op.complete = Some(change.seen_at.max(op.invoke));
                resolution.took_effect += 1;
            }
            None if op.command.is_write() => resolution.open += 1,
            None => {}
        }
    }
    resolution
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::{check_linearizable, Limits};
    use crate::history::{Command, Observed, Op};

    fn lost(key: &str, invoke: u64, command: Command) -> Op {
        Op { process: 9, key: key.into(), command, invoke, complete: None, outcome: Outcome::Unknown }
    }

    #[test]
    fn unanswered_writes_are_settled_by_what_was_committed() {
        let read = Outcome::Ok(Response::Read { observed: Observed::Present { rv: 7, digest: 2 }, served_at: None });
        let mut history = History::from(vec![
            lost("a", 0, Command::Put { value: 2 }),
            lost("a", 5, Command::Update { value: 3, expected: Some(1) }),
            lost("a", 6, Command::Delete { expected: None }),
            lost("b", 0, Command::Put { value: 2 }),
            Op::new(1, "a", Command::Read { consistent: true }, 40, 50, read),
        ]);
        let committed = vec![
            Committed { key: "a".into(), rv: 7, digest: Some(2), seen_at: 30 },
            Committed { key: "a".into(), rv: 9, digest: None, seen_at: 60 },
        ];
        let resolution = resolve(&mut history, &committed);
        assert_eq!(resolution, Resolution { took_effect: 1, open: 3 });
        assert_eq!(history.ops[0].outcome, Outcome::Ok(Response::Written { rv: 7 }));
        assert_eq!(history.ops[0].complete, Some(30));
        assert_eq!(history.ops[1].outcome, Outcome::Unknown);
        assert_eq!(history.ops[2].outcome, Outcome::Unknown);
        assert_eq!(history.ops[3].outcome, Outcome::Unknown, "same value, other key");
        assert!(check_linearizable(&history, Limits::default()).expect("valid").is_linearizable());
    }

    #[test]
    fn a_write_seen_committed_after_a_read_missed_it_is_a_violation_once_settled() {
        // The read at [40, 50] sees nothing; the write was committed and seen
        // at 30, so it took effect before the read began.
        let absent = Outcome::Ok(Response::Read { observed: Observed::Absent, served_at: None });
        let mut history = History::from(vec![
            lost("a", 0, Command::Put { value: 2 }),
            Op::new(1, "a", Command::Read { consistent: true }, 40, 50, absent),
        ]);
        assert!(check_linearizable(&history, Limits::default()).expect("valid").is_linearizable());
        resolve(&mut history, &[Committed { key: "a".into(), rv: 7, digest: Some(2), seen_at: 30 }]);
        assert!(check_linearizable(&history, Limits::default()).expect("valid").has_violation());
    }
}
