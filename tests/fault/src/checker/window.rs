//! Checking one key's history window by window, so that a soak-sized
//! history (tens of thousands of operations on a key) is decided in time
//! about linear in its length. The reasoning is in the module doc of
//! [`super`]; in short:
//!
//! - A *window* is a maximal group of the key's answered operations whose
//!   intervals overlap one another (transitively); between two windows lies
//!   a quiescent point, where every answered operation invoked before it has
//!   returned. Every linearization places all of one window before any of
//!   the next.
//! - An unanswered operation never returns: from its invocation on it may
//!   take effect at any point, or never. It belongs to the window during (or
//!   before) which it was invoked, and if it has not taken effect by the
//!   window's end it stays *pending* into the following ones.
//! - So what passes from one window to the next is a *configuration*
//!   (state, pending operations) the window can end in, and the newest
//!   resourceVersion revealed so far. The windows are searched depth first:
//!   the next window from the first end found, and the window's search
//!   resumed for another end only if the next one fails; a violation is
//!   a window that no configuration reaching it gets through.
//! - A configuration with the same state and *more* pending operations
//!   dominates one with fewer (a pending operation may always not happen):
//!   configurations a window failed from are kept, and one they dominate is
//!   not searched again.
//! - Pending operations are kept as equivalence classes with counts, which
//!   keeps configurations few: a value no read of the key ever reports is
//!   replaced by one stand-in ([`Canon::anon`]), since only reads compare
//!   values; and a precondition on a resourceVersion older than the newest
//!   revealed one can only hold while the version is unknown, so all such
//!   preconditions are alike ([`STALE`]).

use std::collections::{BTreeMap, BTreeSet};

use super::frontier::check_frontier;
use super::search::{revealed_rvs, Deepest, End, Found, KeyOp, Search, SearchOptions};
use super::Limits;
use crate::history::{Command, Observed, OpId, Outcome, Response};
use crate::model::KeyState;

/// The precondition every pending precondition older than the newest
/// revealed resourceVersion is replaced by. Known versions from there on
/// are all newer (they never go down), so such a precondition holds exactly
/// when the version is unknown, whatever its number was; and 0 is older
/// than any revealed version once one is revealed.
pub(super) const STALE: u64 = 0;

/// How many of one class of pending operations a window is offered, per
/// answered operation of the window (plus one). Between two answered
/// operations of a linearization, a run of unanswered ones can be cut down
/// to at most four with the same end state: the first (after it the
/// version is unknown, so any precondition holds), a delete, a write, and
/// the last; the rest can be left pending instead.
const PER_GAP: usize = 4;

/// One group of overlapping answered operations, and the unanswered
/// operations invoked before it ended (and after the previous one ended).
#[derive(Debug, Default)]
pub(super) struct Window {
    pub answered: Vec<usize>,
    pub unanswered: Vec<usize>,
}

/// Splits the key's operations into windows at quiescent points.
/// Unanswered operations invoked after the last answer are left out: they
/// can take effect after everything, which is the same as never.
fn windows(ops: &[KeyOp]) -> Vec<Window> {
    let mut answered: Vec<usize> = (0..ops.len()).filter(|i| ops[*i].complete.is_some()).collect();
    answered.sort_by_key(|i| (ops[*i].invoke, *i));
    let mut windows: Vec<Window> = Vec::new();
    let mut ends: Vec<u64> = Vec::new();
    for i in answered {
        let (invoke, complete) = (ops[i].invoke, ops[i].complete.unwrap_or(ops[i].invoke));
        match ends.last_mut() {
            // Calls before returns at the same instant: a tie overlaps.
            Some(end) if invoke <= *end => {
                *end = (*end).max(complete);
                if let Some(window) = windows.last_mut() {
                    window.answered.push(i);
                }
            }
            _ => {
                ends.push(complete);
                windows.push(Window { answered: vec![i], unanswered: Vec::new() });
            }
        }
    }
    for i in (0..ops.len()).filter(|i| ops[*i].complete.is_none()) {
        let at = ends.partition_point(|end| *end < ops[i].invoke);
        if let Some(window) = windows.get_mut(at) {
            window.unanswered.push(i);
        }
    }
    windows
}

/// Pending operations by class (a canonical command), with counts.
type Pending = BTreeMap<Command, usize>;

/// A way the key can stand between two windows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Config {
    pub state: KeyState,
    pub pending: Pending,
}

/// Whether `a` dominates `b`: the same state, and at least as many pending
/// operations of every class.
fn dominates(a: &Config, b: &Config) -> bool {
    a.state == b.state && b.pending.iter().all(|(class, n)| a.pending.get(class).is_some_and(|m| m >= n))
}

/// Adds `config` to `known` unless dominated there; drops what it
/// dominates.
fn admit(known: &mut Vec<Config>, config: Config) {
    admit_by(known, config, |c| c);
}

/// [`admit`] for anything holding a configuration.
pub(super) fn admit_by<T>(known: &mut Vec<T>, item: T, config: impl Fn(&T) -> &Config) {
    if known.iter().any(|k| dominates(config(k), config(&item))) {
        return;
    }
    known.retain(|k| !dominates(config(&item), config(k)));
    known.push(item);
}

/// The canonical forms of values, preconditions and states of one key.
pub(super) struct Canon {
    /// Values some read of the key reports.
    observed: BTreeSet<u64>,
    /// The stand-in for every other value: one no read reports.
    anon: u64,
    /// Every resourceVersion an answer of the key reveals: the only ones
    /// the key's state can be known to be at.
    revealed: BTreeSet<u64>,
}

impl Canon {
    fn new(ops: &[KeyOp], initial: KeyState) -> Canon {
        let observed: BTreeSet<u64> = ops
            .iter()
            .filter_map(|op| match op.outcome {
                Outcome::Ok(Response::Read { observed: Observed::Present { digest, .. }, .. }) => Some(digest),
                _ => None,
            })
            .collect();
        let anon = (0..=u64::MAX).rev().find(|v| !observed.contains(v)).unwrap_or(u64::MAX);
        let mut revealed: BTreeSet<u64> =
            ops.iter().filter(|op| op.complete.is_some()).flat_map(revealed_rvs).flatten().collect();
        if let KeyState::Present { rv: Some(rv), .. } = initial {
            revealed.insert(rv);
        }
        Canon { observed, anon, revealed }
    }

    fn value(&self, value: u64) -> u64 {
        if self.observed.contains(&value) {
            value
        } else {
            self.anon
        }
    }

    fn state(&self, state: KeyState) -> KeyState {
        match state {
            KeyState::Present { rv, digest } => KeyState::Present { rv, digest: self.value(digest) },
            KeyState::Absent => KeyState::Absent,
        }
    }

    /// The class of a pending command once versions up to `floor` were
    /// revealed.
    fn command(&self, command: Command, floor: u64) -> Command {
        let expected = |e: Option<u64>| e.map(|rv| if rv < floor || !self.revealed.contains(&rv) { STALE } else { rv });
        match command {
            Command::Create { value } => Command::Create { value: self.value(value) },
            Command::Put { value } => Command::Put { value: self.value(value) },
            Command::Update { value, expected: e } => {
                Command::Update { value: self.value(value), expected: expected(e) }
            }
            Command::Delete { expected: e } => Command::Delete { expected: expected(e) },
            Command::Read { .. } => command,
        }
    }
}

/// How a key's windowed check ended.
#[derive(Debug)]
pub(super) enum KeyOutcome {
    Linearizable,
    /// No configuration got through a window: the operations the window
    /// was searched with and the deepest point reached.
    NotLinearizable {
        ops: Vec<KeyOp>,
        deepest: Deepest,
    },
    /// The step budget ran out.
    Exhausted,
}

/// The result of checking one key, with the work done.
#[derive(Debug)]
pub(super) struct KeyResult {
    pub outcome: KeyOutcome,
    pub steps: u64,
    pub windows: usize,
    /// Searches of a window from a configuration after the first one, when
    /// a later window could not go on from where the first ended.
    pub retries: usize,
}

/// The operations window `window` is searched with from `config`: its own,
/// then up to `cap` stand-ins per pending class (invoked before the window,
/// each placeable only after the previous one of its class); and for each,
/// its class if it is a stand-in.
fn window_ops(
    ops: &[KeyOp],
    window: &Window,
    config: &Config,
    reps: &BTreeMap<Command, OpId>,
) -> (Vec<KeyOp>, Vec<Option<Command>>) {
    let cap = PER_GAP * (window.answered.len() + 1);
    let mut list: Vec<KeyOp> = window.answered.iter().chain(&window.unanswered).map(|i| ops[*i]).collect();
    let mut classes: Vec<Option<Command>> = vec![None; list.len()];
    let mut weakest_first: Vec<(&Command, &usize)> = config.pending.iter().collect();
    weakest_first.sort_by_key(|(class, _)| strength(class));
    for (class, count) in weakest_first {
        let mut previous = None;
        for _ in 0..(*count).min(cap) {
            let id = reps.get(class).copied().unwrap_or_default();
            list.push(KeyOp {
                id,
                command: *class,
                outcome: Outcome::Unknown,
                invoke: 0,
                complete: None,
                after: previous,
                standin: true,
            });
            classes.push(Some(*class));
            previous = Some(list.len() - 1);
        }
    }
    (list, classes)
}

/// A rank under which a pending class comes before those it is no stronger
/// than (see `no_stronger` in [`super::search`]), so that the weaker are
/// tried first.
fn strength(class: &Command) -> (u8, u8) {
    let precondition = |e: &Option<u64>| match e {
        Some(STALE) => 0,
        Some(_) => 1,
        None => 2,
    };
    match class {
        Command::Update { expected, .. } => (0, precondition(expected)),
        Command::Create { .. } => (1, 0),
        Command::Put { .. } => (2, 0),
        Command::Delete { expected } => (3, precondition(expected)),
        Command::Read { .. } => (4, 0),
    }
}

/// One window being searched from one configuration.
pub(super) struct Level {
    /// Length of the path (operations placed by earlier windows) when this
    /// window's search began.
    pub path_len: usize,
    pub window: usize,
    pub config: Config,
    pub search: Search,
    pub classes: Vec<Option<Command>>,
    /// The newest resourceVersion revealed once the window is placed.
    pub end_floor: u64,
}

impl Level {
    /// Starts searching window `w` of `windows` from `config`, the newest
    /// resourceVersion revealed before it being `floor`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        ops: &[KeyOp],
        windows: &[Window],
        w: usize,
        config: Config,
        reps: &BTreeMap<Command, OpId>,
        floor: u64,
        rv_order: bool,
        path_len: usize,
    ) -> Level {
        let window = &windows[w];
        let end_floor = if rv_order {
            window.answered.iter().flat_map(|i| revealed_rvs(&ops[*i])).flatten().fold(floor, u64::max)
        } else {
            floor
        };
        let (list, classes) = window_ops(ops, window, &config, reps);
        let search = Search::new(list, config.state, SearchOptions { rv_order, floor });
        Level { path_len, window: w, config, search, classes, end_floor }
    }

    /// The window's next end, within what `spent` leaves of `max_steps`
    /// (the steps taken are added to `spent`).
    pub(super) fn next_end(&mut self, max_steps: u64, spent: &mut u64) -> Found {
        let before = self.search.steps;
        let found = self.search.next_end(max_steps.saturating_sub(*spent));
        *spent += self.search.steps - before;
        found
    }
}

/// The configuration after `level`'s window ended in `end`: its pending
/// operations less those placed, plus the window's own not placed, all in
/// canonical classes.
pub(super) fn after_window(level: &Level, end: End, canon: &Canon, reps: &mut BTreeMap<Command, OpId>) -> Config {
    let list = &level.search.ops;
    let mut pending = level.config.pending.clone();
    let mut placed = vec![false; list.len()];
    for &i in &end.order {
        placed[i] = true;
        if let Some(count) = level.classes[i].and_then(|class| pending.get_mut(&class)) {
            *count -= 1;
        }
    }
    for (i, op) in list.iter().enumerate() {
        if op.complete.is_none() && level.classes[i].is_none() && !placed[i] {
            reps.entry(op.command).or_insert(op.id);
            *pending.entry(op.command).or_default() += 1;
        }
    }
    let mut canonical = Pending::new();
    for (class, n) in pending.into_iter().filter(|(_, n)| *n > 0) {
        let now = canon.command(class, level.end_floor);
        if let Some(id) = reps.get(&class).copied() {
            reps.entry(now).or_insert(id);
        }
        *canonical.entry(now).or_default() += n;
    }
    Config { state: canon.state(end.state), pending: canonical }
}

/// A failed window's search as an explanation wants it: the operations
/// placed by earlier windows first (as linearized before the window), and
/// a stand-in value in the state replaced by the value of the write that
/// put it there.
pub(super) fn with_path(
    window: usize,
    path: &[KeyOp],
    ops: Vec<KeyOp>,
    deepest: Deepest,
    canon: &Canon,
) -> (usize, Vec<KeyOp>, Deepest) {
    let shift = path.len();
    let mut all: Vec<KeyOp> = path.to_vec();
    all.extend(ops);
    let linearized: Vec<usize> = (0..shift).chain(deepest.linearized.iter().map(|i| i + shift)).collect();
    let last_value = linearized.iter().rev().find_map(|i| all[*i].command.value());
    let state = match (deepest.state, last_value) {
        (KeyState::Present { rv, digest }, Some(value)) if digest == canon.anon => {
            KeyState::Present { rv, digest: value }
        }
        (state, _) => state,
    };
    (window, all, Deepest { blocked: deepest.blocked + shift, state, linearized })
}

/// An answered operation revealing a resourceVersion older than one an
/// operation of an earlier window revealed, if any: (the earlier, the
/// later). Every linearization places the earlier window first, so this is
/// a violation whatever else happened; found before any search, since the
/// search would otherwise come back through every window before it.
fn version_going_back(ops: &[KeyOp], windows: &[Window]) -> Option<(usize, usize)> {
    let mut newest: Option<(u64, usize)> = None;
    for window in windows {
        let revealed = |i: &usize| {
            let i = *i;
            revealed_rvs(&ops[i]).into_iter().flatten().map(move |rv| (rv, i))
        };
        if let Some((floor, by)) = newest {
            if let Some((_, older)) = window.answered.iter().flat_map(revealed).find(|(rv, _)| *rv < floor) {
                return Some((by, older));
            }
        }
        newest = window.answered.iter().flat_map(revealed).chain(newest).max();
    }
    None
}

/// Checks one key's operations from `initial`, window by window, within
/// `max_steps` in all: a depth-first search over windows, each window's
/// search resumed for its next end only when a later window cannot go on
/// from the previous one. Configurations from which a window was searched
/// to the end without success are remembered per window, and any
/// configuration they dominate is not searched again.
///
/// Should that run out of steps (a violation late in a long history makes
/// it come back through every window before), the key is checked again
/// breadth first ([`check_frontier`]) within another `max_steps`.
/// With [`Limits::breadth_first`], only breadth first.
pub(super) fn check_key(ops: &[KeyOp], initial: KeyState, limits: &Limits) -> KeyResult {
    let (max_steps, rv_order) = (limits.max_steps_per_key, limits.rv_order);
    let canon = Canon::new(ops, initial);
    let windows = windows(ops);
    let mut result = if limits.breadth_first {
        KeyResult { outcome: KeyOutcome::Exhausted, steps: 0, windows: windows.len(), retries: 0 }
    } else {
        depth_first(ops, &windows, &canon, initial, max_steps, rv_order)
    };
    if matches!(result.outcome, KeyOutcome::Exhausted) {
        let start = Config { state: canon.state(initial), pending: Pending::new() };
        let wide = check_frontier(ops, &windows, &canon, start, max_steps, rv_order);
        result.steps += wide.steps;
        result.outcome = wide.outcome;
    }
    result
}

/// The depth-first check of [`check_key`].
fn depth_first(
    ops: &[KeyOp],
    windows: &[Window],
    canon: &Canon,
    initial: KeyState,
    max_steps: u64,
    rv_order: bool,
) -> KeyResult {
    let mut result = KeyResult { outcome: KeyOutcome::Linearizable, steps: 0, windows: windows.len(), retries: 0 };
    if rv_order {
        if let Some((newest, older)) = version_going_back(ops, windows) {
            let state = match (ops[newest].command, ops[newest].outcome) {
                (command, Outcome::Ok(Response::Written { rv })) => {
                    KeyState::Present { rv: Some(rv), digest: command.value().unwrap_or_default() }
                }
                (_, Outcome::Ok(Response::Read { observed, .. })) => KeyState::from_observed(observed),
                _ => KeyState::Absent,
            };
            let deepest = Deepest { blocked: older, state, linearized: vec![newest] };
            result.outcome = KeyOutcome::NotLinearizable { ops: ops.to_vec(), deepest };
            return result;
        }
    }
    // A real operation standing for each class, to name in explanations.
    let mut reps: BTreeMap<Command, OpId> = BTreeMap::new();
    let mut failed: Vec<Vec<Config>> = vec![Vec::new(); windows.len()];
    let mut searched = vec![false; windows.len()];
    let mut failure: Option<(usize, Vec<KeyOp>, Deepest)> = None;
    let mut stack: Vec<Level> = Vec::new();
    // The operations placed by the windows on the stack, in order: what a
    // violation's explanation shows before the window that failed.
    let mut path: Vec<KeyOp> = Vec::new();
    let mut pending_start = Some((0usize, Config { state: canon.state(initial), pending: Pending::new() }, 0u64));
    loop {
        if let Some((w, config, floor)) = pending_start.take() {
            if w >= windows.len() {
                return result;
            }
            if searched[w] {
                result.retries += 1;
            }
            searched[w] = true;
            stack.push(Level::start(ops, windows, w, config, &reps, floor, rv_order, path.len()));
        }
        let Some(level) = stack.last_mut() else {
            result.outcome = match failure {
                Some((_, ops, deepest)) => KeyOutcome::NotLinearizable { ops, deepest },
                None => KeyOutcome::Exhausted,
            };
            return result;
        };
        match level.next_end(max_steps, &mut result.steps) {
            Found::Exhausted => {
                result.outcome = KeyOutcome::Exhausted;
                return result;
            }
            Found::End(end) => {
                path.truncate(level.path_len);
                path.extend(end.order.iter().map(|i| level.search.ops[*i]));
                let next = after_window(level, end, canon, &mut reps);
                let w = level.window + 1;
                let dominated = failed.get(w).is_some_and(|f| f.iter().any(|known| dominates(known, &next)));
                if !dominated {
                    pending_start = Some((w, next, level.end_floor));
                }
            }
            Found::Done(deepest) => {
                let Some(level) = stack.pop() else { continue };
                if let Some(deepest) = deepest {
                    if failure.as_ref().is_none_or(|(w, _, _)| level.window > *w) {
                        path.truncate(level.path_len);
                        failure = Some(with_path(level.window, &path, level.search.ops, deepest, canon));
                    }
                }
                if let Some(f) = failed.get_mut(level.window) {
                    admit(f, level.config);
                }
            }
        }
    }
}
