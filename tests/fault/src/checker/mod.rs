//! Is a recorded history linearizable? Pure and deterministic: the same
//! history gives the same verdict, explanation and step counts on every run.
//!
//! # How the work is cut down
//!
//! 1. **By key** (P-compositionality): the register model is per key and
//!    keys are independent, so the history is split by key and each key is
//!    decided on its own: a history is linearizable exactly when every key's
//!    is.
//! 2. **By window** ([`window`]): a key's answered operations fall into
//!    *windows*, maximal groups whose intervals overlap; between two windows
//!    lies a quiescent point, where everything invoked before it has
//!    returned, so every linearization places all of one window before any
//!    of the next. Windows are searched one after the other, each from a
//!    configuration the previous one ended in; a window's search is resumed
//!    for another end only when the next window cannot go on from the one
//!    found (depth first over windows), and configurations a window failed
//!    from are remembered so that none they dominate is searched again.
//! 3. **Within a window** ([`search`]): Wing and Gong's backtracking with
//!    Lowe's O(1) lifting of operations and memoisation of (operations
//!    placed, state) as in Porcupine ([`cache`]); reads and refusals placed
//!    without branching; successful writes only in the order of their
//!    answered resourceVersions ([`Limits::rv_order`]).
//!
//! # Unanswered operations across windows
//!
//! An operation without an answer (Jepsen's *indeterminate*, [`Outcome::Unknown`])
//! never returns, so in the strict sense no point after its invocation is
//! quiescent: it may take effect at any later point, or never. Windows stay
//! sound by carrying it: an unanswered operation belongs to the window
//! during (or just before) which it was invoked, where the search may place
//! it; every end configuration in which it was not placed keeps it
//! *pending*, and every later window's search may place it at any point (it
//! was invoked before all of that window). A configuration between windows is
//! therefore a state *and* a multiset of pending operations, and the
//! windows are independent only as far as the configuration pins things down:
//!
//! - *Never* is always allowed, so a configuration with the same state and a
//!   superset of pending operations dominates (whatever the smaller one can
//!   do, the larger can): a window that failed from one fails from every
//!   configuration it dominates ([`cache`] applies the same rule inside a
//!   window). For the same reason, of two pending operations that would
//!   lead to the same state, only the weaker is placed (a create or an
//!   update rather than a put of the same value, a stale precondition
//!   rather than a live one).
//! - A pending write whose value no read of the key ever reports behaves
//!   exactly like any other such write of the same kind: only reads compare
//!   values. Such values are replaced by one stand-in, and so are the values
//!   in states. A pending precondition on a resourceVersion older than the
//!   newest one revealed can never again meet a *known* version (revealed
//!   versions never go down, and a known version of the state is the newest
//!   revealed), nor can one on a version no answer of the key reveals (a
//!   state's version is only ever known from an answer), so such a
//!   precondition holds exactly when the version is unknown: all of them
//!   are alike. Pending operations are kept as counts of these classes,
//!   which keeps the configurations between windows few while staying
//!   exact.
//! - The later state pins a pending write when a read reports its value: in
//!   every configuration that explains the read, the write was placed, and
//!   it is no longer pending in any of them.
//! - A window is offered at most four pending operations of a class per
//!   answered operation (plus one): between two answered operations, a run
//!   of unanswered ones can be cut to four with the same end state (the
//!   first, after which the version is unknown; a delete; a write; the
//!   last), the rest left pending.
//!
//! A violation whose operations lie in different windows is still caught:
//! configurations carry exactly the states (and pending operations) the
//! earlier windows allow, so a later window that needs another one finds no
//! configuration to start from.
//!
//! What this costs: a linearizable history is decided in about one search
//! per window (tens of steps per operation). A violation makes the search
//! come back through the windows before it, each searched to its end, so a
//! violation late in a long history can use up the budget. The key is then
//! checked again breadth first ([`frontier`]): every configuration each
//! window can end in, each window searched once per configuration, which
//! decides such a key when the configurations stay few. Should that run
//! out too, the key is undecided, never passed.
//!
//! Every search is bounded: past [`Limits::max_steps_per_key`] steps (over
//! all of a key's windows) the key's verdict is [`Verdict::Undecided`],
//! never a hang.

mod cache;
mod events;
mod explain;
mod frontier;
mod search;
mod window;

use std::collections::BTreeMap;
use std::fmt;

use crate::error::Error;
use crate::history::{Command, Failure, History, Outcome};
use crate::model::KeyState;
use search::KeyOp;
use window::{check_key, KeyOutcome};

pub use explain::Violation;

/// How much work the checker may do, and what it may assume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Steps (events examined) allowed for one key before giving up.
    pub max_steps_per_key: u64,
    /// Successful writes of a key take effect in the order of the
    /// resourceVersions they answered. True in Fleet, where the version is
    /// the index of the log entry that applied the write (equal versions:
    /// one entry); lets the search try only that order, which turns heavy
    /// overlap from exponential to near linear. An answer that breaks the
    /// order is then a violation in itself.
    pub rv_order: bool,
    /// Check every key breadth first from the start, instead of depth first
    /// with breadth first only for a key the depth-first search could not
    /// decide: slower on linearizable histories; for cross-checking the two.
    pub breadth_first: bool,
}

impl Limits {
    /// The default limits with another step budget.
    pub const fn steps(max_steps_per_key: u64) -> Limits {
        Limits { max_steps_per_key, rv_order: true, breadth_first: false }
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::steps(20_000_000)
    }
}

/// The verdict for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// An order of the key's operations explains every answer.
    Linearizable,
    /// No order does; the explanation names the operation that could not be
    /// placed.
    NotLinearizable(Box<Violation>),
    /// The search used up its step budget without deciding.
    Undecided {
        /// Steps used (the budget).
        steps: u64,
    },
}

/// The verdict and the work done for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyReport {
    /// The key.
    pub key: String,
    /// Operations of the key that constrain the order (answered writes,
    /// unanswered writes, answered consistent reads).
    pub ops: usize,
    /// Steps the search took.
    pub steps: u64,
    /// Windows the key's history was split into (see the module doc).
    pub windows: usize,
    /// Windows searched again from another configuration, because a later
    /// window could not go on from the first one found.
    pub retries: usize,
    /// What it found.
    pub verdict: Verdict,
}

/// The verdicts of every key of a history, in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One entry per key.
    pub keys: Vec<KeyReport>,
}

impl Report {
    /// Whether every key was decided linearizable.
    pub fn is_linearizable(&self) -> bool {
        self.keys.iter().all(|k| k.verdict == Verdict::Linearizable)
    }

    /// Whether some key was decided not linearizable.
    pub fn has_violation(&self) -> bool {
        self.violations().next().is_some()
    }

    /// Whether every key was decided, one way or the other.
    pub fn is_decided(&self) -> bool {
        self.undecided().is_empty()
    }

    /// The violations found, in key order.
    pub fn violations(&self) -> impl Iterator<Item = &Violation> {
        self.keys.iter().filter_map(|k| match &k.verdict {
            Verdict::NotLinearizable(v) => Some(v.as_ref()),
            _ => None,
        })
    }

    /// Keys whose search ran out of steps.
    pub fn undecided(&self) -> Vec<&str> {
        self.keys.iter().filter(|k| matches!(k.verdict, Verdict::Undecided { .. })).map(|k| k.key.as_str()).collect()
    }

    /// Operations that took part in the search, over all keys.
    pub fn ops_checked(&self) -> usize {
        self.keys.iter().map(|k| k.ops).sum()
    }

    /// Steps taken, over all keys.
    pub fn steps(&self) -> u64 {
        self.keys.iter().map(|k| k.steps).sum()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let violations = self.violations().count();
        writeln!(
            f,
            "{} keys, {} operations checked in {} windows and {} steps: {} violations, {} undecided",
            self.keys.len(),
            self.ops_checked(),
            self.keys.iter().map(|k| k.windows).sum::<usize>(),
            self.steps(),
            violations,
            self.undecided().len()
        )?;
        for key in &self.keys {
            match &key.verdict {
                Verdict::Linearizable => {}
                Verdict::NotLinearizable(v) => writeln!(f, "{v}")?,
                Verdict::Undecided { steps } => {
                    writeln!(f, "key {:?}: undecided after {steps} steps ({} operations)", key.key, key.ops)?
                }
            }
        }
        Ok(())
    }
}

/// Whether an operation takes part in the search. Unanswered reads and
/// default (non-consistent) reads promise nothing linearizable; refusals
/// before proposing did and saw nothing.
fn constrains(command: &Command, outcome: &Outcome) -> bool {
    match (command, outcome) {
        (_, Outcome::Fail(Failure::Rejected)) => false,
        (Command::Read { consistent }, outcome) => *consistent && *outcome != Outcome::Unknown,
        _ => true,
    }
}

/// Checks `history` with every key initially absent.
pub fn check_linearizable(history: &History, limits: Limits) -> Result<Report, Error> {
    check_linearizable_from(history, &BTreeMap::new(), limits)
}

/// Checks `history` with the keys of `initial` in the given states before
/// the first operation (others absent).
pub fn check_linearizable_from(
    history: &History,
    initial: &BTreeMap<String, KeyState>,
    limits: Limits,
) -> Result<Report, Error> {
    let mut by_key: BTreeMap<&str, Vec<KeyOp>> = BTreeMap::new();
    for (id, op) in history.ops.iter().enumerate() {
        op.validate().map_err(|reason| Error::InvalidOp { op: id, reason })?;
        if !constrains(&op.command, &op.outcome) {
            continue;
        }
        let complete =
            match op.outcome {
                Outcome::Unknown => None,
                _ => Some(op.complete.ok_or_else(|| Error::InvalidOp {
                    op: id,
                    reason: "has an answer but no completion time".into(),
                })?),
            };
        by_key.entry(op.key.as_str()).or_default().push(KeyOp {
            id,
            command: op.command,
            outcome: op.outcome,
            invoke: op.invoke,
            complete,
            after: None,
            standin: false,
        });
    }
    let keys = by_key
        .into_iter()
        .map(|(key, ops)| {
            let start = initial.get(key).copied().unwrap_or(KeyState::Absent);
            let result = check_key(&ops, start, &limits);
            let verdict = match result.outcome {
                KeyOutcome::Linearizable => Verdict::Linearizable,
                KeyOutcome::Exhausted => Verdict::Undecided { steps: result.steps },
                KeyOutcome::NotLinearizable { ops: window, deepest } => Verdict::NotLinearizable(Box::new(
                    explain::violation(history, key, &window, &deepest, limits.rv_order),
                )),
            };
            KeyReport {
                key: key.to_string(),
                ops: ops.len(),
                steps: result.steps,
                windows: result.windows,
                retries: result.retries,
                verdict,
            }
        })
        .collect();
    Ok(Report { keys })
}
