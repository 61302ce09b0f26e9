//! The sequential specification of one key of Fleet's object store: a
//! register holding nothing or an object (its resourceVersion and value),
//! with create, put, compare-and-set update, conditional delete and read.
//! The checker asks it whether an operation, with the outcome it had, can
//! happen in a given state, and what state follows.

use crate::history::{Command, Failure, Observed, Outcome, Response};

/// The state of one key as the checker tracks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyState {
    /// No object.
    Absent,
    /// An object with this value. `rv` is `None` when the write that made
    /// it had no answer (its resourceVersion was never seen); the first
    /// operation that reveals the version fixes it.
    Present {
        /// The object's resourceVersion, if known.
        rv: Option<u64>,
        /// Digest of its value.
        digest: u64,
    },
}

impl KeyState {
    /// The state a read reporting `observed` saw.
    pub fn from_observed(observed: Observed) -> KeyState {
        match observed {
            Observed::Absent => KeyState::Absent,
            Observed::Present { rv, digest } => KeyState::Present { rv: Some(rv), digest },
        }
    }
}

/// Whether an object at `rv` (unknown: could be anything) passes the
/// precondition `expected`.
fn precondition_holds(rv: Option<u64>, expected: Option<u64>) -> bool {
    match (rv, expected) {
        (_, None) | (None, _) => true,
        (Some(rv), Some(expected)) => rv == expected,
    }
}

/// The state after a refused precondition, if the refusal fits `state`:
/// the object exists at a version other than `expected` (`current`, when
/// the refusal names it, fixes an unknown version).
fn after_conflict(state: KeyState, expected: Option<u64>, current: Option<u64>) -> Option<KeyState> {
    let KeyState::Present { rv, digest } = state else { return None };
    let expected = expected?;
    match (rv, current) {
        (Some(rv), current) => (rv != expected && current.is_none_or(|c| c == rv)).then_some(state),
        (None, Some(current)) => (current != expected).then_some(KeyState::Present { rv: Some(current), digest }),
        (None, None) => Some(state),
    }
}

/// The state after `command` ended with `outcome` in `state`, or `None` if
/// that cannot happen in `state`. For [`Outcome::Unknown`], this is the
/// operation *taking effect*; not taking effect is always possible and the
/// checker handles it (an unanswered write that never happened is the same
/// as one linearized after everything else).
pub fn step(state: KeyState, command: &Command, outcome: &Outcome) -> Option<KeyState> {
    use KeyState::{Absent, Present};
    let present = matches!(state, Present { .. });
    let rv = match state {
        Present { rv, .. } => rv,
        Absent => None,
    };
    match (*command, *outcome) {
        (_, Outcome::Fail(Failure::Rejected)) => Some(state),

        (Command::Create { value }, Outcome::Ok(Response::Written { rv })) => {
            (!present).then_some(Present { rv: Some(rv), digest: value })
        }
        (Command::Create { value }, Outcome::Unknown) => (!present).then_some(Present { rv: None, digest: value }),
        (Command::Create { .. }, Outcome::Fail(Failure::AlreadyExists)) => present.then_some(state),

        (Command::Put { value }, Outcome::Ok(Response::Written { rv })) => {
            Some(Present { rv: Some(rv), digest: value })
        }
        (Command::Put { value }, Outcome::Unknown) => Some(Present { rv: None, digest: value }),

        (Command::Update { value, expected }, Outcome::Ok(Response::Written { rv: new })) => {
            (present && precondition_holds(rv, expected)).then_some(Present { rv: Some(new), digest: value })
        }
        (Command::Update { value, expected }, Outcome::Unknown) => {
            (present && precondition_holds(rv, expected)).then_some(Present { rv: None, digest: value })
        }
        (Command::Delete { expected }, Outcome::Ok(Response::Deleted) | Outcome::Unknown) => {
            (present && precondition_holds(rv, expected)).then_some(Absent)
        }
        (
            Command::Update { expected, .. } | Command::Delete { expected },
            Outcome::Fail(Failure::Conflict { current }),
        ) => after_conflict(state, expected, current),
        (Command::Update { .. } | Command::Delete { .. }, Outcome::Fail(Failure::NotFound)) => {
            (!present).then_some(state)
        }

        (Command::Read { .. }, Outcome::Fail(Failure::NotFound)) => (!present).then_some(state),
        (Command::Read { .. }, Outcome::Ok(Response::Read { observed, .. })) => match (state, observed) {
            (Absent, Observed::Absent) => Some(Absent),
            (Present { rv, digest }, Observed::Present { rv: seen, digest: seen_digest }) => {
                (digest == seen_digest && rv.is_none_or(|rv| rv == seen)).then_some(Present { rv: Some(seen), digest })
            }
            _ => None,
        },
        // A read nobody heard back from constrains nothing; the checker
        // leaves it out. Any other pairing is refused by `Op::validate`.
        (Command::Read { .. }, Outcome::Unknown) => Some(state),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use KeyState::{Absent, Present};

    const fn at(rv: u64, digest: u64) -> KeyState {
        Present { rv: Some(rv), digest }
    }

    fn written(rv: u64) -> Outcome {
        Outcome::Ok(Response::Written { rv })
    }

    fn read(observed: Observed) -> Outcome {
        Outcome::Ok(Response::Read { observed, served_at: None })
    }

    #[test]
    fn create_needs_absence_and_already_exists_needs_presence() {
        let create = Command::Create { value: 1 };
        assert_eq!(step(Absent, &create, &written(5)), Some(at(5, 1)));
        assert_eq!(step(at(3, 9), &create, &written(5)), None);
        assert_eq!(step(at(3, 9), &create, &Outcome::Fail(Failure::AlreadyExists)), Some(at(3, 9)));
        assert_eq!(step(Absent, &create, &Outcome::Fail(Failure::AlreadyExists)), None);
        assert_eq!(step(Absent, &create, &Outcome::Unknown), Some(Present { rv: None, digest: 1 }));
    }

    #[test]
    fn compare_and_set_checks_the_version() {
        let cas = Command::Update { value: 2, expected: Some(3) };
        assert_eq!(step(at(3, 1), &cas, &written(7)), Some(at(7, 2)));
        assert_eq!(step(at(4, 1), &cas, &written(7)), None);
        assert_eq!(step(Absent, &cas, &written(7)), None);
        let conflict = |current| Outcome::Fail(Failure::Conflict { current });
        assert_eq!(step(at(4, 1), &cas, &conflict(Some(4))), Some(at(4, 1)));
        assert_eq!(step(at(4, 1), &cas, &conflict(Some(5))), None, "the refusal named another version");
        assert_eq!(step(at(3, 1), &cas, &conflict(None)), None, "the precondition held");
        let unknown_rv = Present { rv: None, digest: 1 };
        assert_eq!(step(unknown_rv, &cas, &conflict(Some(8))), Some(at(8, 1)), "the refusal reveals the version");
        assert_eq!(step(unknown_rv, &cas, &conflict(Some(3))), None);
        assert_eq!(step(Absent, &cas, &Outcome::Fail(Failure::NotFound)), Some(Absent));
        assert_eq!(step(at(3, 1), &cas, &Outcome::Fail(Failure::NotFound)), None);
    }

    #[test]
    fn a_read_must_see_the_state_and_fixes_an_unknown_version() {
        let get = Command::Read { consistent: true };
        let seen = Observed::Present { rv: 6, digest: 4 };
        assert_eq!(step(Present { rv: None, digest: 4 }, &get, &read(seen)), Some(at(6, 4)));
        assert_eq!(step(at(6, 4), &get, &read(seen)), Some(at(6, 4)));
        assert_eq!(step(at(5, 4), &get, &read(seen)), None);
        assert_eq!(step(at(6, 3), &get, &read(seen)), None);
        assert_eq!(step(Absent, &get, &read(Observed::Absent)), Some(Absent));
        assert_eq!(step(Absent, &get, &Outcome::Fail(Failure::NotFound)), Some(Absent));
        assert_eq!(step(at(6, 4), &get, &read(Observed::Absent)), None);
    }

    #[test]
    fn deletes_and_puts() {
        let delete = Command::Delete { expected: Some(2) };
        assert_eq!(step(at(2, 1), &delete, &Outcome::Ok(Response::Deleted)), Some(Absent));
        assert_eq!(step(at(3, 1), &delete, &Outcome::Ok(Response::Deleted)), None);
        assert_eq!(step(at(3, 1), &delete, &Outcome::Unknown), None, "an unanswered delete that took effect");
        assert_eq!(step(Absent, &Command::Delete { expected: None }, &Outcome::Fail(Failure::NotFound)), Some(Absent));
        assert_eq!(step(Absent, &Command::Put { value: 5 }, &written(9)), Some(at(9, 5)));
        assert_eq!(step(at(1, 1), &Command::Put { value: 5 }, &Outcome::Fail(Failure::Rejected)), Some(at(1, 1)));
    }
}
