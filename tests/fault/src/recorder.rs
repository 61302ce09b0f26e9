//! Recording a history while clients run: one shared clock and one list,
//! safe to use from many tasks or threads at once.

use std::sync::Mutex;
use std::time::Instant;

use crate::history::{Command, History, Op, OpId, Outcome};

/// Records every invocation when it is made and fills in its answer when it
/// arrives, so an operation whose client never returns (a task aborted, a
/// process killed) stays in the history as [`Outcome::Unknown`].
#[derive(Debug)]
pub struct Recorder {
    start: Instant,
    ops: Mutex<Vec<Op>>,
}

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder::new()
    }
}

impl Recorder {
    /// A recorder whose clock starts now.
    pub fn new() -> Recorder {
        Recorder { start: Instant::now(), ops: Mutex::new(Vec::new()) }
    }

    /// Nanoseconds since the recorder was made (monotonic).
    pub fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Records that `process` invokes `command` on `key` now; returns the id
    /// to [`complete`](Recorder::complete) it with.
    pub fn invoke(&self, process: u64, key: &str, command: Command) -> OpId {
        let mut ops = self.ops.lock().unwrap_or_else(|p| p.into_inner());
        // Take the time under the lock so ids follow invocation times.
        let invoke = self.now();
        ops.push(Op { process, key: key.to_string(), command, invoke, complete: None, outcome: Outcome::Unknown });
        ops.len() - 1
    }

    /// Records the answer to operation `id` now. Unknown ids are ignored.
    pub fn complete(&self, id: OpId, outcome: Outcome) {
        let complete = self.now();
        let mut ops = self.ops.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(op) = ops.get_mut(id) {
            op.complete = Some(complete.max(op.invoke));
            op.outcome = outcome;
        }
    }

    /// A copy of everything recorded so far (operations still running are
    /// [`Outcome::Unknown`]).
    pub fn history(&self) -> History {
        History { ops: self.ops.lock().unwrap_or_else(|p| p.into_inner()).clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Response;

    #[test]
    fn an_operation_never_completed_stays_unknown() {
        let recorder = Recorder::new();
        let done = recorder.invoke(1, "a", Command::Put { value: 7 });
        let lost = recorder.invoke(2, "a", Command::Read { consistent: true });
        recorder.complete(done, Outcome::Ok(Response::Written { rv: 4 }));
        let history = recorder.history();
        assert_eq!(history.ops.len(), 2);
        assert_eq!(history.ops[done].outcome, Outcome::Ok(Response::Written { rv: 4 }));
        assert!(history.ops[done].complete.is_some_and(|c| c >= history.ops[done].invoke));
        assert_eq!(history.ops[lost].outcome, Outcome::Unknown);
        assert_eq!(history.ops[lost].complete, None);
        assert!(history.ops[lost].invoke >= history.ops[done].invoke);
    }
}
