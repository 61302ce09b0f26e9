//! The linearizability search for the operations of one key: Wing and
//! Gong's backtracking over call and return events, with Lowe's
//! improvements — events in a doubly linked list that operations are lifted
//! out of and put back in O(1) (undo by relinking), and a cache of the
//! (set of operations linearized, state) pairs already explored, so no
//! configuration is searched twice.
//!
//! An operation with a definite outcome has a call and a return event; one
//! with an unknown outcome has only a call (it may take effect at any point
//! after it, or never: never is the same as after everything else, so the
//! search succeeds as soon as every operation with a definite outcome is
//! linearized).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::history::{Command, OpId, Outcome, Response};
use crate::model::{step, KeyState};

/// One operation of the key, as the search needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyOp {
    /// Its id in the history.
    pub id: OpId,
    pub command: Command,
    pub outcome: Outcome,
    pub invoke: u64,
    /// `None` when the outcome is unknown: no deadline for taking effect.
    pub complete: Option<u64>,
}

/// The deepest point a failed search reached.
#[derive(Debug, Clone)]
pub(crate) struct Deepest {
    /// Index (into the key's ops) of the operation whose answer came before
    /// any order of the operations before it could explain it.
    pub blocked: usize,
    /// The state the key was in there.
    pub state: KeyState,
    /// The operations linearized, in order (indexes into the key's ops).
    pub linearized: Vec<usize>,
}

/// How a search ended.
#[derive(Debug, Clone)]
pub(crate) enum SearchOutcome {
    Linearizable,
    NotLinearizable(Deepest),
    Exhausted,
}

/// What a search found and how many steps it took.
#[derive(Debug, Clone)]
pub(crate) struct SearchResult {
    pub outcome: SearchOutcome,
    pub steps: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Call,
    Return,
}

/// Events in time order as a circular doubly linked list; `head` is the
/// sentinel.
struct Events {
    kind: Vec<Kind>,
    op: Vec<usize>,
    next: Vec<usize>,
    prev: Vec<usize>,
    call_at: Vec<usize>,
    return_at: Vec<Option<usize>>,
    head: usize,
}

impl Events {
    fn new(ops: &[KeyOp]) -> Events {
        // (time, calls before returns at the same instant: the permissive
        // reading of a tie, op) — a total order, so the search is
        // deterministic.
        let mut order: Vec<(u64, u8, usize)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            order.push((op.invoke, 0, i));
            if let Some(complete) = op.complete {
                order.push((complete, 1, i));
            }
        }
        order.sort_unstable();
        let count = order.len();
        let head = count;
        let mut events = Events {
            kind: Vec::with_capacity(count),
            op: Vec::with_capacity(count),
            next: (1..=count + 1).collect(),
            prev: Vec::with_capacity(count + 1),
            call_at: vec![0; ops.len()],
            return_at: vec![None; ops.len()],
            head,
        };
        events.prev.push(head);
        events.prev.extend(0..count);
        events.next[head] = if count == 0 { head } else { 0 };
        if count > 0 {
            events.next[count - 1] = head;
        }
        for (position, (_, kind, i)) in order.into_iter().enumerate() {
            if kind == 0 {
                events.kind.push(Kind::Call);
                events.call_at[i] = position;
            } else {
                events.kind.push(Kind::Return);
                events.return_at[i] = Some(position);
            }
            events.op.push(i);
        }
        events
    }

    fn unlink(&mut self, at: usize) {
        let (prev, next) = (self.prev[at], self.next[at]);
        self.next[prev] = next;
        self.prev[next] = prev;
    }

    fn relink(&mut self, at: usize) {
        let (prev, next) = (self.prev[at], self.next[at]);
        self.next[prev] = at;
        self.prev[next] = at;
    }

    /// Takes operation `i` out of the list (it is linearized).
    fn lift(&mut self, i: usize) {
        self.unlink(self.call_at[i]);
        if let Some(at) = self.return_at[i] {
            self.unlink(at);
        }
    }

    /// Puts operation `i` back, undoing the last [`lift`](Events::lift).
    fn unlift(&mut self, i: usize) {
        if let Some(at) = self.return_at[i] {
            self.relink(at);
        }
        self.relink(self.call_at[i]);
    }
}

/// A set of operation indexes.
#[derive(Debug, Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize) -> Bits {
        Bits(vec![0; len.div_ceil(64)])
    }

    fn set(&mut self, i: usize, on: bool) {
        if let Some(word) = self.0.get_mut(i / 64) {
            let mask = 1u64 << (i % 64);
            if on {
                *word |= mask;
            } else {
                *word &= !mask;
            }
        }
    }
}

/// Whether an operation can only observe (a read or a definite refusal):
/// if it fits the current state without changing it, placing it right away
/// loses no linearization, so the search does not branch on it.
fn observes_only(op: &KeyOp) -> bool {
    matches!(op.command, Command::Read { .. }) || matches!(op.outcome, Outcome::Fail(_))
}

/// The resourceVersion a successful write answered, if any.
fn answered_rv(op: &KeyOp) -> Option<u64> {
    match op.outcome {
        Outcome::Ok(Response::Written { rv }) => Some(rv),
        _ => None,
    }
}

/// How the search may work.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchOptions {
    pub max_steps: u64,
    /// Place successful writes only in the order of their answered
    /// resourceVersions.
    pub rv_order: bool,
}

/// A choice made: operation `op` placed next, in state `before`; `forced`
/// when it was placed without branching (see [`observes_only`]).
struct Frame {
    op: usize,
    before: KeyState,
    forced: bool,
}

/// Searches for a linearization of `ops` starting from `initial`, giving up
/// after `options.max_steps` steps (one step = one event looked at).
pub(crate) fn search(ops: &[KeyOp], initial: KeyState, options: SearchOptions) -> SearchResult {
    let mut events = Events::new(ops);
    let head = events.head;
    let mut state = initial;
    let mut linearized = Bits::new(ops.len());
    let mut cache: HashMap<KeyState, HashSet<Vec<u64>>> = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut remaining = ops.iter().filter(|op| op.complete.is_some()).count();
    // Answered resourceVersions of writes not yet placed (a multiset).
    let mut unplaced_rvs: BTreeMap<u64, usize> = BTreeMap::new();
    if options.rv_order {
        for rv in ops.iter().filter_map(answered_rv) {
            *unplaced_rvs.entry(rv).or_default() += 1;
        }
    }
    let mut deepest: Option<Deepest> = None;
    let mut steps = 0u64;
    let mut entry = events.next[head];
    loop {
        if remaining == 0 {
            return SearchResult { outcome: SearchOutcome::Linearizable, steps };
        }
        if steps >= options.max_steps {
            return SearchResult { outcome: SearchOutcome::Exhausted, steps };
        }
        steps += 1;
        let kind = if entry == head { None } else { Some(events.kind[entry]) };
        if kind == Some(Kind::Call) {
            let i = events.op[entry];
            let op = &ops[i];
            let in_order = match (options.rv_order, answered_rv(op)) {
                (true, Some(rv)) => unplaced_rvs.keys().next().is_none_or(|first| rv <= *first),
                _ => true,
            };
            let next_state = if in_order { step(state, &op.command, &op.outcome) } else { None };
            let Some(next_state) = next_state else {
                entry = events.next[entry];
                continue;
            };
            let forced = observes_only(op) && next_state == state;
            linearized.set(i, true);
            let seen = cache.entry(next_state).or_default();
            if !seen.contains(linearized.0.as_slice()) {
                seen.insert(linearized.0.clone());
                stack.push(Frame { op: i, before: state, forced });
                state = next_state;
                events.lift(i);
                if op.complete.is_some() {
                    remaining -= 1;
                }
                if let Some(rv) = answered_rv(op).filter(|_| options.rv_order) {
                    if let Some(count) = unplaced_rvs.get_mut(&rv) {
                        *count -= 1;
                        if *count == 0 {
                            unplaced_rvs.remove(&rv);
                        }
                    }
                }
                entry = events.next[head];
                continue;
            }
            linearized.set(i, false);
            if !forced {
                entry = events.next[entry];
                continue;
            }
            // Placing it was already tried from here and failed: so does
            // everything from here.
        } else if kind == Some(Kind::Return) && deepest.as_ref().is_none_or(|d| stack.len() > d.linearized.len()) {
            // The answer of an operation not yet placed: this order cannot
            // go on. Remember the deepest such point for the explanation.
            deepest =
                Some(Deepest { blocked: events.op[entry], state, linearized: stack.iter().map(|f| f.op).collect() });
        }
        // Undo choices back to the last one that had alternatives.
        loop {
            let Some(frame) = stack.pop() else {
                return match deepest.take() {
                    Some(deepest) => SearchResult { outcome: SearchOutcome::NotLinearizable(deepest), steps },
                    // Unreachable with a definite operation left (its return
                    // event stops the scan), but never claim success here.
                    None => SearchResult { outcome: SearchOutcome::Exhausted, steps },
                };
            };
            let i = frame.op;
            state = frame.before;
            linearized.set(i, false);
            events.unlift(i);
            if ops[i].complete.is_some() {
                remaining += 1;
            }
            if let Some(rv) = answered_rv(&ops[i]).filter(|_| options.rv_order) {
                *unplaced_rvs.entry(rv).or_default() += 1;
            }
            if !frame.forced {
                entry = events.next[events.call_at[i]];
                break;
            }
        }
    }
}
