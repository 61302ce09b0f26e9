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
    /// For interchangeable unanswered operations (see [`super::window`]):
    /// the one (index into the same slice) that must be placed before this
    /// one may be, so that the search tries one order of twins, not all.
    pub after: Option<usize>,
    /// Whether it stands for a pending operation of an earlier window (a
    /// class of them, see [`super::window`]).
    pub standin: bool,
}

/// Whether pending command `a` can do no more than `b`: the same effect,
/// and it applies in no state `b` does not. With preconditions:
/// [`super::window::STALE`] (holds only while the version is unknown) is
/// weaker than any version, and any version weaker than none; a create or
/// an update weaker than a put of the same value.
fn no_stronger(a: &Command, b: &Command) -> bool {
    let weaker = |x: &Option<u64>, y: &Option<u64>| x == y || y.is_none() || *x == Some(super::window::STALE);
    match (a, b) {
        _ if a == b => true,
        (Command::Update { value: v, expected: x }, Command::Update { value: w, expected: y }) => {
            v == w && weaker(x, y)
        }
        (Command::Update { value: v, .. } | Command::Create { value: v }, Command::Put { value: w }) => v == w,
        (Command::Delete { expected: x }, Command::Delete { expected: y }) => weaker(x, y),
        _ => false,
    }
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

/// A configuration in which every answered operation is placed: the state,
/// and the order the operations were placed in (indexes into the ops;
/// the unanswered ones among them took effect, the others did not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct End {
    pub state: KeyState,
    pub order: Vec<usize>,
}

/// What [`Search::next_end`] found.
#[derive(Debug, Clone)]
pub(crate) enum Found {
    /// A linearization of every answered operation, ending here; the next
    /// call looks for another end.
    End(End),
    /// No (further) end: every configuration is explored. The deepest point
    /// a failed order reached, if no end was ever found.
    Done(Option<Deepest>),
    /// The steps allowed ran out.
    Exhausted,
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
pub(super) fn revealed_rvs(op: &KeyOp) -> [Option<u64>; 2] {
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
    /// Place successful writes only in the order of their answered
    /// resourceVersions.
    pub rv_order: bool,
    /// The newest resourceVersion revealed before these operations (by
    /// earlier windows); nothing here may reveal an older one.
    pub floor: u64,
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
    fn new(ops: &[KeyOp], rv_order: bool, floor: u64) -> Unplaced {
        let rvs = rv_order.then(|| {
            let mut rvs = BTreeMap::new();
            for rv in ops.iter().filter_map(answered_rv) {
                *rvs.entry(rv).or_default() += 1;
            }
            rvs
        });
        Unplaced { rvs, floor }
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

/// What the scan offers next.
enum Choice {
    /// The cursor moved (onto the unanswered operations); look again.
    Again,
    /// Nothing left to try here: undo the last choice.
    Stuck,
    /// Try to place operation `.0`; if it cannot be, go on from `.1`.
    Try(usize, Cursor),
}

/// The next operation the scan at `cursor` offers. Stuck on an answer with
/// no unanswered operation left to try, remembers the deepest such point.
fn next_choice(
    cursor: &mut Cursor,
    events: &Events,
    unanswered: &[usize],
    ops: &[KeyOp],
    stack: &[Frame],
    state: KeyState,
    deepest: &mut Option<Deepest>,
) -> Choice {
    match *cursor {
        Cursor::Answered { entry } => match events.kind_at(entry) {
            Some(Kind::Call) => Choice::Try(events.op[entry], Cursor::Answered { entry: events.next[entry] }),
            Some(Kind::Return) => {
                *cursor = Cursor::Unanswered { next: 0, until: events.time[entry], stuck: entry };
                Choice::Again
            }
            // Only with every answered operation placed (checked before).
            None => Choice::Stuck,
        },
        Cursor::Unanswered { next, until, stuck } => match unanswered.get(next) {
            Some(&i) if ops[i].invoke <= until => Choice::Try(i, Cursor::Unanswered { next: next + 1, until, stuck }),
            _ => {
                // Nothing left to try before this answer: this order cannot
                // go on. Remember the deepest such point.
                if deepest.as_ref().is_none_or(|d| stack.len() > d.linearized.len()) {
                    let linearized = stack.iter().map(|f| f.op).collect();
                    *deepest = Some(Deepest { blocked: events.op[stuck], state, linearized });
                }
                Choice::Stuck
            }
        },
    }
}

/// The search for linearizations of one window's operations, resumable:
/// each [`next_end`](Search::next_end) goes on from where the last one
/// stopped, so the next window is tried from the first end found before
/// any other end is looked for.
///
/// Answered operations are tried first, in event order; only when the scan
/// is stuck on an answer are the unanswered operations invoked before it
/// tried, so that configurations enter the cache with as few of those
/// placed as possible (see [`super::cache`]), and scans of the answered
/// events never walk past the unanswered ones piling up.
///
/// With the cache, the ends found are those not dominated by an end found
/// before (same state, a subset of the unanswered operations placed).
pub(crate) struct Search {
    pub ops: Vec<KeyOp>,
    events: Events,
    unanswered: Vec<usize>,
    placed: Placed,
    cache: Cache,
    unplaced: Unplaced,
    state: KeyState,
    stack: Vec<Frame>,
    remaining: usize,
    deepest: Option<Deepest>,
    cursor: Cursor,
    /// An end was returned: undo its last choice before going on.
    resume_from_end: bool,
    found_any: bool,
    /// Per depth of the stack, the stand-ins placed there in the current
    /// scan of unanswered operations, with the state each led to: a
    /// stand-in leading to the same state as one no stronger is not tried
    /// (placing the weaker one keeps the stronger pending, which is at
    /// least as good).
    tried: Vec<Vec<(KeyState, Command)>>,
    /// Steps taken over every call.
    pub steps: u64,
}

impl Search {
    /// A search of `ops` from `initial`.
    pub fn new(ops: Vec<KeyOp>, initial: KeyState, options: SearchOptions) -> Search {
        let events = Events::new(&ops);
        let mut unanswered: Vec<usize> = (0..ops.len()).filter(|i| ops[*i].complete.is_none()).collect();
        unanswered.sort_by_key(|i| (ops[*i].invoke, *i));
        let placed = Placed::new(&ops);
        let unplaced = Unplaced::new(&ops, options.rv_order, options.floor);
        let remaining = ops.len() - unanswered.len();
        let cursor = Cursor::Answered { entry: events.first() };
        Search {
            ops,
            events,
            unanswered,
            placed,
            cache: Cache::default(),
            unplaced,
            state: initial,
            stack: Vec::new(),
            remaining,
            deepest: None,
            cursor,
            resume_from_end: false,
            found_any: false,
            tried: Vec::new(),
            steps: 0,
        }
    }

    /// The next end configuration, taking at most `allowed` more steps.
    pub fn next_end(&mut self, allowed: u64) -> Found {
        let limit = self.steps.saturating_add(allowed);
        loop {
            let mut at_end = std::mem::take(&mut self.resume_from_end);
            if self.remaining == 0 && !at_end {
                let order = self.stack.iter().map(|f| f.op).collect();
                self.resume_from_end = true;
                self.found_any = true;
                return Found::End(End { state: self.state, order });
            }
            if self.steps >= limit {
                self.resume_from_end = at_end;
                return Found::Exhausted;
            }
            self.steps += 1;
            if !at_end {
                let choice = next_choice(
                    &mut self.cursor,
                    &self.events,
                    &self.unanswered,
                    &self.ops,
                    &self.stack,
                    self.state,
                    &mut self.deepest,
                );
                match choice {
                    Choice::Again => {
                        // A new scan of the unanswered operations at this depth.
                        let depth = self.stack.len();
                        if self.tried.len() <= depth {
                            self.tried.resize_with(depth + 1, Vec::new);
                        }
                        self.tried[depth].clear();
                        continue;
                    }
                    Choice::Stuck => at_end = true,
                    Choice::Try(i, skip) => {
                        if self.try_place(i, skip) {
                            continue;
                        }
                        at_end = true;
                    }
                }
            }
            debug_assert!(at_end);
            // Undo choices back to the last one that had alternatives.
            loop {
                let Some(frame) = self.stack.pop() else {
                    return match self.deepest.take() {
                        _ if self.found_any => Found::Done(None),
                        // `None` is unreachable with an answered operation
                        // left (its return event stops the scan).
                        deepest => Found::Done(deepest),
                    };
                };
                let i = frame.op;
                self.state = frame.before;
                self.placed.set(i, false);
                self.events.unlift(i);
                self.unplaced.unplaced(&self.ops[i], frame.floor);
                if self.ops[i].complete.is_some() {
                    self.remaining += 1;
                }
                if !frame.forced {
                    self.cursor =
                        frame.resume.unwrap_or(Cursor::Answered { entry: self.events.next[self.events.call_at[i]] });
                    break;
                }
            }
        }
    }

    /// Tries to place operation `i`; `skip` is where the scan goes on if it
    /// cannot be. Returns `false` when the scan should backtrack instead.
    fn try_place(&mut self, i: usize, skip: Cursor) -> bool {
        let ops = &self.ops;
        let state = self.state;
        // An unanswered operation placed right before one that would leave
        // the same state without it changed nothing that matters: the same
        // order without it (it never happened) is explored anyway. Of
        // twins, the earlier goes first.
        let erases_unanswered = |op: &KeyOp| {
            self.stack.last().is_some_and(|f| {
                ops[f.op].complete.is_none()
                    && step(f.before, &op.command, &op.outcome) == step(state, &op.command, &op.outcome)
            })
        };
        let candidate = ops.get(i).filter(|op| {
            !self.placed.contains(i) && op.after.is_none_or(|twin| self.placed.contains(twin)) && !erases_unanswered(op)
        });
        let Some(op) = candidate else {
            self.cursor = skip;
            return true;
        };
        let next_state = if self.unplaced.in_order(op) { step(state, &op.command, &op.outcome) } else { None };
        let Some(next_state) = next_state else {
            self.cursor = skip;
            return true;
        };
        if op.standin {
            let depth = self.stack.len();
            if self.tried.len() <= depth {
                self.tried.resize_with(depth + 1, Vec::new);
            }
            let tried = &mut self.tried[depth];
            if tried.iter().any(|(s, c)| *s == next_state && no_stronger(c, &op.command)) {
                self.cursor = skip;
                return true;
            }
            tried.push((next_state, op.command));
        }
        let forced = observes_only(op) && next_state == state;
        self.placed.set(i, true);
        if self.cache.insert(next_state, &self.placed) {
            let resume = matches!(self.cursor, Cursor::Unanswered { .. }).then_some(skip);
            let floor = self.unplaced.placed(op);
            self.stack.push(Frame { op: i, before: state, floor, resume, forced });
            self.state = next_state;
            self.events.lift(i);
            if op.complete.is_some() {
                self.remaining -= 1;
            }
            self.cursor = Cursor::Answered { entry: self.events.first() };
            return true;
        }
        self.placed.set(i, false);
        // Placing an observer was already explored from here: so was
        // everything from here.
        self.cursor = skip;
        !forced
    }
}
