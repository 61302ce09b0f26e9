//! The operation model: what a client asked of the object store, when, and
//! what it learned. The observable state of one key is
//! [`Observed::Absent`] or [`Observed::Present`] with the object's
//! `resourceVersion` (in Fleet, the Raft log index that last wrote it) and a
//! digest of the value written.

use std::fmt;

/// Index of an operation in [`History::ops`]; verdicts name operations by it.
pub type OpId = usize;

/// What a client asked for, on one key. Ordered only so that the checker
/// can keep classes of commands in sorted maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    /// Create the object; fails with [`Failure::AlreadyExists`] if it exists.
    Create {
        /// Digest of the value written.
        value: u64,
    },
    /// Create or replace, whatever the state (Fleet's `Apply` without a
    /// resourceVersion).
    Put {
        /// Digest of the value written.
        value: u64,
    },
    /// Replace an existing object ([`Failure::NotFound`] if absent); with
    /// `expected`, only if it is at that resourceVersion
    /// ([`Failure::Conflict`] otherwise): compare-and-set.
    Update {
        /// Digest of the value written.
        value: u64,
        /// The resourceVersion precondition, if any.
        expected: Option<u64>,
    },
    /// Delete the object ([`Failure::NotFound`] if absent); with `expected`,
    /// only if it is at that resourceVersion.
    Delete {
        /// The resourceVersion precondition, if any.
        expected: Option<u64>,
    },
    /// Read the object. Only `consistent` reads promise linearizability;
    /// default ones are checked by [`crate::monotonic`].
    Read {
        /// Whether the read was a `--consistent` (linearizable) one.
        consistent: bool,
    },
}

impl Command {
    /// Whether the command may change the state.
    pub fn is_write(&self) -> bool {
        !matches!(self, Command::Read { .. })
    }

    /// The digest a write stores, if it stores one.
    pub fn value(&self) -> Option<u64> {
        match self {
            Command::Create { value } | Command::Put { value } | Command::Update { value, .. } => Some(*value),
            Command::Delete { .. } | Command::Read { .. } => None,
        }
    }
}

/// What a read saw of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Observed {
    /// The object did not exist.
    Absent,
    /// The object existed with this resourceVersion and value.
    Present {
        /// Its resourceVersion.
        rv: u64,
        /// Digest of its value.
        digest: u64,
    },
}

/// A successful answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Response {
    /// A create, put or update took effect; the object is now at `rv`.
    Written {
        /// The resourceVersion the answer carried.
        rv: u64,
    },
    /// A delete took effect.
    Deleted,
    /// A read's result.
    Read {
        /// What the read saw.
        observed: Observed,
        /// The store revision the read was served at, when the answer says
        /// (Fleet's `GetResponse.resource_version`); used by
        /// [`crate::monotonic`].
        served_at: Option<u64>,
    },
}

/// A definite failure: the operation did not change anything, and what it
/// observed (for the first three) is part of the history to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The resourceVersion precondition did not hold; `current` is the
    /// version the store reported, when the answer says.
    Conflict {
        /// The object's resourceVersion as the refusal reported it.
        current: Option<u64>,
    },
    /// The object did not exist.
    NotFound,
    /// A create found the object already there.
    AlreadyExists,
    /// Refused before touching the store (e.g. invalid input, no leader
    /// reachable before proposing): no effect and nothing observed. Only
    /// for refusals known to precede any proposal; in doubt, record
    /// [`Outcome::Unknown`].
    Rejected,
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It succeeded with this answer.
    Ok(Response),
    /// It definitely failed.
    Fail(Failure),
    /// No answer (timeout, connection lost, process gone): it may have
    /// taken effect at any point after its invocation, or never.
    Unknown,
}

/// One operation by one client on one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// The client (process) that performed it; a client runs one
    /// operation at a time.
    pub process: u64,
    /// The object's key (any string naming it uniquely).
    pub key: String,
    /// What was asked.
    pub command: Command,
    /// When it was invoked, in nanoseconds since the run's start.
    pub invoke: u64,
    /// When its answer arrived (or the client gave up), in nanoseconds
    /// since the run's start; `None` if it never completed.
    pub complete: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
}

impl Op {
    /// A completed operation (tests and recorders build them this way).
    pub fn new(process: u64, key: &str, command: Command, invoke: u64, complete: u64, outcome: Outcome) -> Op {
        Op { process, key: key.to_string(), command, invoke, complete: Some(complete), outcome }
    }

    /// Checks that the outcome fits the command and the times are ordered.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(complete) = self.complete {
            if complete < self.invoke {
                return Err(format!("completed at {complete} ns before its invocation at {} ns", self.invoke));
            }
        }
        let fits = match (&self.command, &self.outcome) {
            (_, Outcome::Unknown) | (_, Outcome::Fail(Failure::Rejected)) => true,
            (Command::Read { .. }, Outcome::Ok(Response::Read { .. })) => true,
            (Command::Read { .. }, Outcome::Fail(Failure::NotFound)) => true,
            (
                Command::Create { .. } | Command::Put { .. } | Command::Update { .. },
                Outcome::Ok(Response::Written { .. }),
            ) => true,
            (Command::Create { .. }, Outcome::Fail(Failure::AlreadyExists)) => true,
            (
                Command::Update { expected, .. } | Command::Delete { expected },
                Outcome::Fail(Failure::Conflict { .. }),
            ) => expected.is_some(),
            (Command::Update { .. } | Command::Delete { .. }, Outcome::Fail(Failure::NotFound)) => true,
            (Command::Delete { .. }, Outcome::Ok(Response::Deleted)) => true,
            _ => false,
        };
        if fits {
            Ok(())
        } else {
            Err(format!("{:?} cannot end with {:?}", self.command, self.outcome))
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let precondition = |e: &Option<u64>| e.map(|rv| format!(" if rv {rv}")).unwrap_or_default();
        match self {
            Command::Create { value } => write!(f, "create {value:#x}"),
            Command::Put { value } => write!(f, "put {value:#x}"),
            Command::Update { value, expected } => write!(f, "update to {value:#x}{}", precondition(expected)),
            Command::Delete { expected } => write!(f, "delete{}", precondition(expected)),
            Command::Read { consistent: true } => f.write_str("consistent read"),
            Command::Read { consistent: false } => f.write_str("default read"),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok(Response::Written { rv }) => write!(f, "written at rv {rv}"),
            Outcome::Ok(Response::Deleted) => f.write_str("deleted"),
            Outcome::Ok(Response::Read { observed: Observed::Absent, .. }) => f.write_str("read absent"),
            Outcome::Ok(Response::Read { observed: Observed::Present { rv, digest }, .. }) => {
                write!(f, "read {digest:#x} at rv {rv}")
            }
            Outcome::Fail(Failure::Conflict { current: Some(rv) }) => write!(f, "conflict (object at rv {rv})"),
            Outcome::Fail(failure) => write!(f, "{failure:?}"),
            Outcome::Unknown => f.write_str("no answer"),
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        write!(
            f,
            "client {} on {:?}: {} -> {} [{:.3} ms .. ",
            self.process,
            self.key,
            self.command,
            self.outcome,
            ms(self.invoke)
        )?;
        match self.complete {
            Some(c) => write!(f, "{:.3} ms]", ms(c)),
            None => f.write_str("never]"),
        }
    }
}

/// Every operation of a run, in any order (the checker orders them by time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The operations; an [`OpId`] indexes this.
    pub ops: Vec<Op>,
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// Adds an operation; returns its id.
    pub fn push(&mut self, op: Op) -> OpId {
        self.ops.push(op);
        self.ops.len() - 1
    }
}

impl From<Vec<Op>> for History {
    fn from(ops: Vec<Op>) -> History {
        History { ops }
    }
}

/// A stable 64-bit digest (FNV-1a) of a value, so histories hold numbers and
/// not documents; the same bytes give the same digest on every run.
pub fn digest(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_stable_and_tell_values_apart() {
        assert_eq!(digest(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(digest(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(digest(b"value-1"), digest(b"value-2"));
    }

    #[test]
    fn validation_names_answers_that_do_not_fit_the_question() {
        let read = Command::Read { consistent: true };
        let bad = Op::new(1, "k", read, 0, 5, Outcome::Ok(Response::Deleted));
        assert!(bad.validate().unwrap_err().contains("cannot end with"));
        let backwards = Op::new(1, "k", read, 9, 5, Outcome::Unknown);
        assert!(backwards.validate().unwrap_err().contains("before its invocation"));
        let unconditional_conflict = Op::new(
            1,
            "k",
            Command::Delete { expected: None },
            0,
            5,
            Outcome::Fail(Failure::Conflict { current: None }),
        );
        assert!(unconditional_conflict.validate().is_err());
        let ok = Op::new(1, "k", Command::Put { value: 1 }, 0, 5, Outcome::Ok(Response::Written { rv: 3 }));
        assert!(ok.validate().is_ok());
    }
}
