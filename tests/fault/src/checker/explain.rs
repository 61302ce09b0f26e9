//! Turning a failed search into an explanation a person can act on: which
//! operation could not be placed, what the key held in the deepest order
//! found, the write that put it there, and the operations that overlapped.

use std::fmt;

use super::search::{revealed_rvs, Deepest, KeyOp};
use crate::history::{History, Observed, OpId, Outcome, Response};
use crate::model::KeyState;

/// How many overlapping operations an explanation prints.
const SHOWN_CONCURRENT: usize = 8;

/// Why one key's history is not linearizable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The key.
    pub key: String,
    /// The operation whose answer no order of the operations before it can
    /// explain (in the deepest order the search found).
    pub op: OpId,
    /// The key's state in that order when the operation had to take effect.
    pub state: KeyState,
    /// That order: the operations linearized before it.
    pub linearized: Vec<OpId>,
    /// The last write in that order (what the state came from), if any.
    pub last_write: Option<OpId>,
    /// Operations of the key whose intervals overlap the operation's: the
    /// candidates for another order.
    pub concurrent: Vec<OpId>,
    /// The explanation, with the operations written out.
    pub text: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for KeyState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyState::Absent => f.write_str("absent"),
            KeyState::Present { rv: Some(rv), digest } => write!(f, "present at rv {rv} with value {digest:#x}"),
            KeyState::Present { rv: None, digest } => write!(f, "present at an unknown rv with value {digest:#x}"),
        }
    }
}

/// Whether two intervals overlap (`None` ends never).
fn overlaps(a: &KeyOp, b: &KeyOp) -> bool {
    a.complete.is_none_or(|end| b.invoke <= end) && b.complete.is_none_or(|end| a.invoke <= end)
}

/// Whether some write of the key may have stored `digest`.
fn ever_written(ops: &[KeyOp], digest: u64) -> bool {
    ops.iter().any(|op| op.command.value() == Some(digest) && matches!(op.outcome, Outcome::Ok(_) | Outcome::Unknown))
}

/// A write not placed in `deepest` that answered an older resourceVersion
/// than `rv` (so, in resourceVersion order, must come first).
fn older_unplaced(ops: &[KeyOp], deepest: &Deepest, rv: u64) -> Option<(OpId, u64)> {
    ops.iter()
        .enumerate()
        .filter(|(i, _)| !deepest.linearized.contains(i))
        .filter_map(|(_, op)| match op.outcome {
            Outcome::Ok(Response::Written { rv: older }) if older < rv => Some((op.id, older)),
            _ => None,
        })
        .min_by_key(|(_, older)| *older)
}

/// The sentence saying why the operation cannot be placed.
fn reason(ops: &[KeyOp], blocked: &KeyOp, deepest: &Deepest, rv_order: bool) -> String {
    if let Outcome::Ok(Response::Read { observed: Observed::Present { rv, digest }, .. }) = blocked.outcome {
        if !ever_written(ops, digest) {
            return format!("it read value {digest:#x} at rv {rv}, which no write of this key wrote");
        }
    }
    if rv_order {
        let newest = deepest
            .linearized
            .iter()
            .filter_map(|i| ops.get(*i))
            .flat_map(|op| revealed_rvs(op).into_iter().flatten().map(move |rv| (rv, op.id)))
            .max();
        let oldest_here = revealed_rvs(blocked).into_iter().flatten().min();
        if let (Some((newest, by)), Some(here)) = (newest, oldest_here) {
            if here < newest {
                return format!(
                    "it reveals rv {here}, but #{by} placed before it revealed rv {newest}: \
                     resourceVersions never go back"
                );
            }
        }
    }
    if let (true, Outcome::Ok(Response::Written { rv })) = (rv_order, blocked.outcome) {
        if let Some((older, older_rv)) = older_unplaced(ops, deepest, rv) {
            return format!(
                "it answered rv {rv}, but #{older} answered rv {older_rv} and had not taken effect yet: \
                 writes take effect in resourceVersion order"
            );
        }
    }
    let (state, linearized) = (deepest.state, deepest.linearized.len());
    format!(
        "its answer fits no order of the operations before it; in the deepest order found \
         ({linearized} operations placed) the key was {state} when it had to take effect"
    )
}

/// One line per operation: `#id <op>`.
fn line(history: &History, id: OpId) -> String {
    match history.ops.get(id) {
        Some(op) => format!("#{id} {op}"),
        None => format!("#{id}"),
    }
}

/// Builds the violation for `key` from the deepest point of its search.
pub(super) fn violation(history: &History, key: &str, ops: &[KeyOp], deepest: &Deepest, rv_order: bool) -> Violation {
    let blocked = ops.get(deepest.blocked).copied();
    let op = blocked.map_or(0, |b| b.id);
    let linearized: Vec<OpId> = deepest.linearized.iter().filter_map(|i| ops.get(*i)).map(|o| o.id).collect();
    let last_write = deepest
        .linearized
        .iter()
        .rev()
        .filter_map(|i| ops.get(*i))
        .find(|o| o.command.is_write() && matches!(o.outcome, Outcome::Ok(_) | Outcome::Unknown))
        .map(|o| o.id);
    let concurrent: Vec<OpId> = match blocked {
        Some(b) => ops.iter().filter(|o| o.id != b.id && overlaps(o, &b)).map(|o| o.id).collect(),
        None => Vec::new(),
    };
    let mut text = format!("key {key:?}: operation #{op} cannot be linearized\n  {}\n", line(history, op));
    if let Some(b) = blocked {
        text.push_str(&format!("  why: {}\n", reason(ops, &b, deepest, rv_order)));
    }
    match last_write {
        Some(w) => text.push_str(&format!("  last write placed before it: {}\n", line(history, w))),
        None => text.push_str("  no write placed before it\n"),
    }
    if concurrent.is_empty() {
        text.push_str("  no operation overlaps it");
    } else {
        text.push_str("  overlapping it:");
        for id in concurrent.iter().take(SHOWN_CONCURRENT) {
            text.push_str(&format!("\n    {}", line(history, *id)));
        }
        if concurrent.len() > SHOWN_CONCURRENT {
            text.push_str(&format!("\n    ... and {} more", concurrent.len() - SHOWN_CONCURRENT));
        }
    }
    Violation { key: key.to_string(), op, state: deepest.state, linearized, last_write, concurrent, text }
}
