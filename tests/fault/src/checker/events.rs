//! The call and return events of one key's answered operations, in time
//! order, as a circular doubly linked list: an operation is lifted out when
//! it is linearized and put back when that choice is undone, both in O(1)
//! (Lowe's improvement to Wing and Gong; relinking works because undo
//! follows the reverse order of lifting). Unanswered operations have no
//! return event and are not listed (the search keeps them apart).

use super::search::KeyOp;

/// Whether an event is an operation's invocation or its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Call,
    Return,
}

/// Events in time order; `head` is the sentinel. `call_at[i]` and
/// `return_at[i]` are answered operation i's events.
pub(super) struct Events {
    pub kind: Vec<Kind>,
    pub time: Vec<u64>,
    pub op: Vec<usize>,
    pub next: Vec<usize>,
    pub prev: Vec<usize>,
    pub call_at: Vec<usize>,
    pub return_at: Vec<usize>,
    pub head: usize,
}

impl Events {
    /// The events of the answered operations of `ops`.
    pub fn new(ops: &[KeyOp]) -> Events {
        // (time, calls before returns at the same instant: the permissive
        // reading of a tie, op) — a total order, so the search is
        // deterministic.
        let mut order: Vec<(u64, u8, usize)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            if let Some(complete) = op.complete {
                order.push((op.invoke, 0, i));
                order.push((complete, 1, i));
            }
        }
        order.sort_unstable();
        let count = order.len();
        let head = count;
        let mut events = Events {
            kind: Vec::with_capacity(count),
            time: Vec::with_capacity(count),
            op: Vec::with_capacity(count),
            // Event p links to p + 1; the last and the sentinel close the circle.
            next: (1..=count + 1).collect(),
            prev: std::iter::once(head).chain(0..count).collect(),
            call_at: vec![head; ops.len()],
            return_at: vec![head; ops.len()],
            head,
        };
        events.next[head] = if count == 0 { head } else { 0 };
        if count > 0 {
            events.next[count - 1] = head;
        }
        for (position, (time, kind, i)) in order.into_iter().enumerate() {
            if kind == 0 {
                events.kind.push(Kind::Call);
                events.call_at[i] = position;
            } else {
                events.kind.push(Kind::Return);
                events.return_at[i] = position;
            }
            events.time.push(time);
            events.op.push(i);
        }
        events
    }

    /// The first event still in the list (`head` if none).
    pub fn first(&self) -> usize {
        self.next[self.head]
    }

    /// The kind of the event at `at`, `None` at the end of the list.
    pub fn kind_at(&self, at: usize) -> Option<Kind> {
        (at != self.head).then(|| self.kind[at])
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

    /// Takes answered operation `i` out of the list (it is linearized).
    pub fn lift(&mut self, i: usize) {
        if self.call_at[i] != self.head {
            self.unlink(self.call_at[i]);
            self.unlink(self.return_at[i]);
        }
    }

    /// Puts operation `i` back, undoing the last [`lift`](Events::lift).
    pub fn unlift(&mut self, i: usize) {
        if self.call_at[i] != self.head {
            self.relink(self.return_at[i]);
            self.relink(self.call_at[i]);
        }
    }
}
