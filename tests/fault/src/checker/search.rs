//! The linearizability search for the operations of one key: Wing and
//! Gong's backtracking over call and return events, with Lowe's
//! improvements — events in a doubly linked list that operations are lifted
//! out of and put back in O(1) (undo by relinking), and a cache of the
//! (set of operations linearized, state) pairs already explored, so no
//! configuration is searched twice (see [`super::cache`] for how unanswered
//! operations are kept out of the way).
//!
//! An operation with a definite outcome has a call and a return event; one
//! with an unknown outcome has only a call (it may take effect at any point
//! after it, or never: never is the same as after everything else, so the
//! search succeeds as soon as every operation with a definite outcome is
//! linearized).

use std::collections::BTreeMap;

use super::cache::{Cache, Placed};
use super::events::{Events, Kind};

use crate::history::{Command, Failure, Observed, OpId, Outcome, Response};
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

/// Whether an operation can only observe (a read or a definite refusal):
/// if it fits the current state without changing it, placing it right away
/// loses no linearization, so the search does not branch on it.
fn observes_only(op: &KeyOp) -> bool {
    matches!(op.command, Command::Read { .. }) || matches!(op.outcome, Outcome::Fail(_))
}

/// The resourceVersions an operation's answer reveals: the version the
/// key was at when it took effect (a read's, a refusal's, or a successful
/// precondition's), and the version a write moved it to. Along a correct
/// history, revealed versions never go down.
fn revealed_rvs(op: &KeyOp) -> [Option<u64>; 2] {
    match (op.command, op.outcome) {
        (Command::Update { expected, .. }, Outcome::Ok(Response::Written { rv })) => [expected, Some(rv)],
        (_, Outcome::Ok(Response::Written { rv })) => [None, Some(rv)],
        (Command::Delete { expected }, Outcome::Ok(Response::Deleted)) => [expected, None],
        (_, Outcome::Ok(Response::Read { observed: Observed::Present { rv, .. }, .. })) => [Some(rv), None],
        (_, Outcome::Fail(Failure::Conflict { current })) => [current, None],
        _ => [None, None],
    }
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

/// Keeps placed operations in resourceVersion order: the answered versions
/// of writes not yet placed (a multiset: no write goes before an older one),
/// and the newest version revealed so far (no answer may reveal an older
/// one; this also bounds the unknown version of an unanswered write that
/// took effect, which a later read reveals). Both are functions of the set
/// of operations placed, so the cache needs neither.
struct Unplaced {
    rvs: Option<BTreeMap<u64, usize>>,
    floor: u64,
}

impl Unplaced {
    fn new(ops: &[KeyOp], rv_order: bool) -> Unplaced {
        let rvs = rv_order.then(|| {
            let mut rvs = BTreeMap::new();
            for rv in ops.iter().filter_map(answered_rv) {
                *rvs.entry(rv).or_default() += 1;
            }
            rvs
        });
        Unplaced { rvs, floor: 0 }
    }

    /// Whether `op` may be placed now: no write with an older answered
    /// version is still unplaced, and it reveals no version older than one
    /// already revealed.
    fn in_order(&self, op: &KeyOp) -> bool {
        let Some(rvs) = &self.rvs else { return true };
        let before_unplaced = match answered_rv(op) {
            Some(rv) => rvs.keys().next().is_none_or(|first| rv <= *first),
            None => true,
        };
        before_unplaced && revealed_rvs(op).iter().flatten().all(|rv| *rv >= self.floor)
    }

    /// Takes `op` as placed; returns the floor to restore when undoing it.
    fn placed(&mut self, op: &KeyOp) -> u64 {
        let floor = self.floor;
        if self.rvs.is_some() {
            self.floor = revealed_rvs(op).iter().flatten().fold(self.floor, |floor, rv| floor.max(*rv));
        }
        if let (Some(rvs), Some(rv)) = (&mut self.rvs, answered_rv(op)) {
            if let Some(count) = rvs.get_mut(&rv) {
                *count -= 1;
                if *count == 0 {
                    rvs.remove(&rv);
                }
            }
        }
        floor
    }

    /// Undoes [`placed`](Unplaced::placed).
    fn unplaced(&mut self, op: &KeyOp, floor: u64) {
        self.floor = floor;
        if let (Some(rvs), Some(rv)) = (&mut self.rvs, answered_rv(op)) {
            *rvs.entry(rv).or_default() += 1;
        }
    }
}

/// Where the search looks next: the answered operations' events from
/// `entry` on; or, stuck on the answer at `stuck` (time `until`), the
/// unanswered operations invoked by then, from the `next`-th on.
#[derive(Debug, Clone, Copy)]
enum Cursor {
    Answered { entry: usize },
    Unanswered { next: usize, until: u64, stuck: usize },
}

/// A choice made: operation `op` placed in state `before`; `resume` says
/// where to look for the next alternative once it is undone (`None`: right
/// after its call event). `forced` when it was placed without branching
/// (see [`observes_only`]).
struct Frame {
    op: usize,
    before: KeyState,
    floor: u64,
    resume: Option<Cursor>,
    forced: bool,
}

/// Searches for a linearization of `ops` starting from `initial`, giving up
/// after `options.max_steps` steps.
///
/// Answered operations are tried first, in event order; only when the scan
/// is stuck on an answer are the unanswered operations invoked before it
/// tried, so that configurations enter the cache with as few of those
/// placed as possible (see [`super::cache`]), and scans of the answered
/// events never walk past the unanswered ones piling up.
pub(crate) fn search(ops: &[KeyOp], initial: KeyState, options: SearchOptions) -> SearchResult {
    let mut events = Events::new(ops);
    let mut unanswered: Vec<usize> = (0..ops.len()).filter(|i| ops[*i].complete.is_none()).collect();
    unanswered.sort_by_key(|i| (ops[*i].invoke, *i));
    let mut placed = Placed::new(ops);
    let mut cache = Cache::default();
    let mut unplaced = Unplaced::new(ops, options.rv_order);
    let mut state = initial;
    let mut stack: Vec<Frame> = Vec::new();
    let mut remaining = ops.len() - unanswered.len();
    let mut deepest: Option<Deepest> = None;
    let mut steps = 0u64;
    let mut cursor = Cursor::Answered { entry: events.first() };
    loop {
        if remaining == 0 {
            return SearchResult { outcome: SearchOutcome::Linearizable, steps };
        }
        if steps >= options.max_steps {
            return SearchResult { outcome: SearchOutcome::Exhausted, steps };
        }
        steps += 1;
        // The operation to try now, and where to go on if it cannot be placed.
        let (i, skip) = match cursor {
            Cursor::Answered { entry } => match events.kind_at(entry) {
                Some(Kind::Call) => (events.op[entry], Cursor::Answered { entry: events.next[entry] }),
                Some(Kind::Return) => {
                    cursor = Cursor::Unanswered { next: 0, until: events.time[entry], stuck: entry };
                    continue;
                }
                // Only with every answered operation placed (checked above).
                None => (usize::MAX, cursor),
            },
            Cursor::Unanswered { next, until, stuck } => match unanswered.get(next) {
                Some(&i) if ops[i].invoke <= until => (i, Cursor::Unanswered { next: next + 1, until, stuck }),
                _ => {
                    // Nothing left to try before this answer: this order
                    // cannot go on. Remember the deepest such point.
                    if deepest.as_ref().is_none_or(|d| stack.len() > d.linearized.len()) {
                        let linearized = stack.iter().map(|f| f.op).collect();
                        deepest = Some(Deepest { blocked: events.op[stuck], state, linearized });
                    }
                    (usize::MAX, cursor)
                }
            },
        };
        let mut backtrack = i == usize::MAX;
        // An unanswered operation placed right before one that would leave
        // the same state without it changed nothing that matters: the same
        // order without it (it never happened) is explored anyway.
        let erases_unanswered = |op: &KeyOp| {
            stack.last().is_some_and(|f| {
                ops[f.op].complete.is_none()
                    && step(f.before, &op.command, &op.outcome) == step(state, &op.command, &op.outcome)
            })
        };
        if let Some(op) = ops.get(i).filter(|op| !placed.contains(i) && !erases_unanswered(op)) {
            let next_state = if unplaced.in_order(op) { step(state, &op.command, &op.outcome) } else { None };
            if let Some(next_state) = next_state {
                let forced = observes_only(op) && next_state == state;
                placed.set(i, true);
                if cache.insert(next_state, &placed) {
                    let resume = matches!(cursor, Cursor::Unanswered { .. }).then_some(skip);
                    let floor = unplaced.placed(op);
                    stack.push(Frame { op: i, before: state, floor, resume, forced });
                    state = next_state;
                    events.lift(i);
                    if op.complete.is_some() {
                        remaining -= 1;
                    }
                    cursor = Cursor::Answered { entry: events.first() };
                    continue;
                }
                placed.set(i, false);
                // Placing an observer was already explored from here and
                // failed: so does everything from here.
                backtrack = forced;
            }
        }
        if !backtrack {
            cursor = skip;
            continue;
        }
        // Undo choices back to the last one that had alternatives.
        loop {
            let Some(frame) = stack.pop() else {
                return match deepest.take() {
                    Some(deepest) => SearchResult { outcome: SearchOutcome::NotLinearizable(deepest), steps },
                    // Unreachable with an answered operation left (its return
                    // event stops the scan), but never claim success here.
                    None => SearchResult { outcome: SearchOutcome::Exhausted, steps },
                };
            };
            let i = frame.op;
            state = frame.before;
            placed.set(i, false);
            events.unlift(i);
            unplaced.unplaced(&ops[i], frame.floor);
            if ops[i].complete.is_some() {
                remaining += 1;
            }
            if !frame.forced {
                cursor = frame.resume.unwrap_or(Cursor::Answered { entry: events.next[events.call_at[i]] });
                break;
            }
        }
    }
}
