//! Is a recorded history linearizable? Pure and deterministic: the same
//! history gives the same verdict, explanation and step counts on every run.
//!
//! The register model is per key and keys are independent, so the history
//! is split by key and each key is searched on its own (linearizability is
//! compositional). Every search is bounded: past [`Limits::max_steps_per_key`]
//! the key's verdict is [`Verdict::Undecided`], never a hang.

mod cache;
mod events;
mod explain;
mod search;

use std::collections::BTreeMap;
use std::fmt;

use crate::error::Error;
use crate::history::{Command, Failure, History, Outcome};
use crate::model::KeyState;
use search::{search, KeyOp, SearchOptions, SearchOutcome};

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
}

impl Limits {
    /// The default limits with another step budget.
    pub const fn steps(max_steps_per_key: u64) -> Limits {
        Limits { max_steps_per_key, rv_order: true }
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
            "{} keys, {} operations checked in {} steps: {} violations, {} undecided",
            self.keys.len(),
            self.ops_checked(),
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
        });
    }
    let keys =
        by_key
            .into_iter()
            .map(|(key, ops)| {
                let start = initial.get(key).copied().unwrap_or(KeyState::Absent);
                let options = SearchOptions { max_steps: limits.max_steps_per_key, rv_order: limits.rv_order };
                let result = search(&ops, start, options);
                let verdict =
                    match result.outcome {
                        SearchOutcome::Linearizable => Verdict::Linearizable,
                        SearchOutcome::Exhausted => Verdict::Undecided { steps: result.steps },
                        SearchOutcome::NotLinearizable(deepest) => Verdict::NotLinearizable(Box::new(
                            explain::violation(history, key, &ops, &deepest, limits.rv_order),
                        )),
                    };
                KeyReport { key: key.to_string(), ops: ops.len(), steps: result.steps, verdict }
            })
            .collect();
    Ok(Report { keys })
}
