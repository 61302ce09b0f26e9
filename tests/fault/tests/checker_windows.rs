//! The checker's windows (see `fleet_fault::checker`): a key's history is
//! searched window by window between quiescent points, with unanswered
//! operations carried as pending from one window to the next. Histories
//! known by hand where the verdict depends on more than one window, a
//! window that must be searched again, and soak-sized generated histories.

mod common;

use common::{corrupt_a_read, overlapping, saw, saw_absent, written};
use fleet_fault::{check_linearizable, Command, History, Limits, Op, Outcome, Report, Response};

const KEY: &str = "configmaps/team-a/w";
const READ: Command = Command::Read { consistent: true };

fn put(value: u64) -> Command {
    Command::Put { value }
}

/// An operation of client `p` on [`KEY`] over `[from, to]`.
fn op(p: u64, from: u64, to: u64, command: Command, outcome: Outcome) -> Op {
    Op::new(p, KEY, command, from, to, outcome)
}

/// An unanswered operation of client `p` invoked at `from`.
fn lost(p: u64, from: u64, command: Command) -> Op {
    Op { process: p, key: KEY.into(), command, invoke: from, complete: None, outcome: Outcome::Unknown }
}

fn check_with(ops: Vec<Op>, limits: Limits) -> Report {
    check_linearizable(&History::from(ops), limits).expect("a valid history")
}

fn check(ops: Vec<Op>) -> Report {
    check_with(ops, Limits::default())
}

/// Asserts a decided violation blamed on operation `blamed`, and that the
/// key's history had at least `windows` windows.
fn assert_violation_across(ops: Vec<Op>, blamed: usize, windows: usize) {
    let report = check(ops);
    assert!(report.has_violation() && report.is_decided(), "expected a violation:\n{report}");
    assert!(report.keys[0].windows >= windows, "{} windows:\n{report}", report.keys[0].windows);
    let violation = report.violations().next().expect("one violation");
    assert_eq!(violation.op, blamed, "blamed the wrong operation:\n{violation}");
}

#[test]
fn operations_that_do_not_overlap_are_windows_of_their_own() {
    let ops = vec![
        op(1, 0, 10, put(1), written(2)),
        op(2, 5, 15, READ, saw(2, 1)),
        op(1, 20, 30, put(2), written(3)),
        op(2, 40, 50, READ, saw(3, 2)),
        // Touching at an instant counts as overlapping.
        op(3, 50, 60, Command::Delete { expected: Some(3) }, Outcome::Ok(Response::Deleted)),
    ];
    let report = check(ops);
    assert!(report.is_linearizable(), "{report}");
    assert_eq!(report.keys[0].windows, 3);
    assert_eq!(report.keys[0].retries, 0);
}

#[test]
fn an_unanswered_write_may_take_effect_windows_later_but_only_once() {
    let good = vec![
        op(1, 0, 10, put(1), written(5)),
        lost(2, 2, put(2)),
        op(3, 20, 30, READ, saw(5, 1)),
        op(3, 40, 50, READ, saw(5, 1)),
        op(3, 60, 70, READ, saw(7, 2)),
        op(1, 80, 90, put(3), written(9)),
    ];
    assert!(check(good.clone()).is_linearizable());
    // The value going back to what the lost write replaced: a violation
    // spanning three windows (the write, the read of the lost value, the
    // stale read).
    let mut back = good.clone();
    back.push(op(3, 100, 110, READ, saw(5, 1)));
    assert_violation_across(back, 6, 4);
    // The lost write seen again after it was overwritten: it cannot take
    // effect twice.
    let mut twice = good;
    twice.push(op(3, 100, 110, READ, saw(7, 2)));
    assert_violation_across(twice, 6, 4);
}

#[test]
fn a_compare_and_set_cannot_succeed_twice_on_one_version_in_two_windows() {
    let cas = |value, expected| Command::Update { value, expected: Some(expected) };
    let ops = vec![
        op(1, 0, 10, Command::Create { value: 1 }, written(3)),
        op(2, 20, 30, cas(2, 3), written(5)),
        op(3, 40, 50, cas(3, 3), written(6)),
    ];
    assert_violation_across(ops, 2, 3);
}

#[test]
fn a_pending_delete_stays_pending_across_windows() {
    let mut ops = vec![op(1, 0, 10, put(1), written(2)), lost(2, 15, Command::Delete { expected: None })];
    // Fifty windows still seeing the value: the delete has not happened...
    for i in 0..50 {
        ops.push(op(3, 100 + 20 * i, 110 + 20 * i, READ, saw(2, 1)));
    }
    // ...then it has, and a create can succeed.
    ops.push(op(3, 2_000, 2_010, READ, saw_absent()));
    ops.push(op(1, 2_020, 2_030, Command::Create { value: 4 }, written(8)));
    let report = check(ops.clone());
    assert!(report.is_linearizable(), "{report}");
    assert!(report.keys[0].windows > 50);
    // The old value back after the delete took effect: a violation.
    let blamed = ops.len();
    ops.push(op(3, 2_040, 2_050, READ, saw(2, 1)));
    assert_violation_across(ops, blamed, 50);
}

#[test]
fn a_pending_precondition_on_a_replaced_version_cannot_take_effect_later() {
    let update = Command::Update { value: 9, expected: Some(2) };
    // The update could take effect only while the object was at rv 2,
    // i.e. before the put that moved it to rv 5 (second window).
    let late = vec![
        op(1, 0, 10, put(1), written(2)),
        lost(2, 20, update),
        op(1, 30, 40, put(3), written(5)),
        op(3, 50, 60, READ, saw(6, 9)),
    ];
    assert_violation_across(late, 3, 3);
    // Right after it was invoked, it could.
    let early = vec![
        op(1, 0, 10, put(1), written(2)),
        lost(2, 20, update),
        op(3, 25, 28, READ, saw(4, 9)),
        op(1, 30, 40, put(3), written(5)),
    ];
    assert!(check(early).is_linearizable());
}

#[test]
fn a_window_is_searched_again_when_the_next_cannot_go_on_from_its_first_end() {
    // As a plain register (no resourceVersion order), the two concurrent
    // puts can end in either order; only the put of 1 last explains the
    // read in the next window, which the search finds by coming back.
    let ops = vec![
        op(1, 0, 100, put(1), written(2)),
        op(2, 0, 100, put(2), written(3)),
        op(3, 200, 210, READ, saw(2, 1)),
        op(3, 220, 230, READ, saw(2, 1)),
    ];
    let register = Limits { rv_order: false, ..Limits::default() };
    let report = check_with(ops.clone(), register);
    assert!(report.is_linearizable(), "{report}");
    assert_eq!(report.keys[0].windows, 3);
    assert!(report.keys[0].retries >= 1, "{report:?}");
    // In Fleet (versions in order) the put of 2 is last: a violation.
    assert_violation_across(ops, 2, 3);
}

/// The shape of a soak: tens of thousands of operations on three keys, a
/// few clients overlapping, one write answer in ten lost.
const SOAK_OPS: usize = 60_000;
const SOAK_LIMITS: Limits = Limits::steps(5_000_000);

#[test]
fn a_soak_sized_history_is_decided() {
    for seed in [11, 12] {
        let (history, _) = overlapping(seed, SOAK_OPS, 3, 2, 10);
        let report = check_linearizable(&history, SOAK_LIMITS).expect("a valid history");
        assert!(report.is_linearizable(), "seed {seed}: {report}");
        assert!(report.ops_checked() > SOAK_OPS / 2, "seed {seed}: {report}");
        assert!(report.keys.iter().all(|k| k.windows > 1_000), "seed {seed}: {report}");
    }
}

/// A violation late in a history makes the search come back through every
/// window before it (each searched to its end): histories a tenth of a
/// soak's.
const VIOLATION_OPS: usize = 1_500;

#[test]
fn a_violation_late_in_a_long_history_is_found() {
    for seed in [13, 14] {
        let (mut history, _) = overlapping(seed, VIOLATION_OPS, 3, 2, 10);
        let read = corrupt_a_read(&mut history, VIOLATION_OPS * 3 / 4).expect("some answered read");
        let report = check_linearizable(&history, SOAK_LIMITS).expect("a valid history");
        assert!(report.is_decided(), "seed {seed}: {report}");
        let keys: Vec<&str> = report.violations().map(|v| v.key.as_str()).collect();
        assert_eq!(keys, vec![history.ops[read].key.as_str()], "seed {seed}: {report}");
    }
}

/// A violation late in a history ten times longer, which the depth-first
/// search cannot afford to come back for within the budget: the key is
/// then checked breadth first, and the violation found.
#[test]
fn a_late_violation_beyond_the_depth_first_budget_is_found_breadth_first() {
    let (count, seed) = (VIOLATION_OPS * 10, 13);
    let (mut history, _) = overlapping(seed, count, 3, 2, 10);
    let read = corrupt_a_read(&mut history, count * 3 / 28).expect("some answered read");
    let key = history.ops[read].key.as_str();
    let depth_only = SOAK_LIMITS.max_steps_per_key;
    let report = check_linearizable(&history, SOAK_LIMITS).expect("a valid history");
    assert!(report.is_decided(), "{report}");
    let keys: Vec<&str> = report.violations().map(|v| v.key.as_str()).collect();
    assert_eq!(keys, vec![key], "{report}");
    let checked = report.keys.iter().find(|k| k.key == key).expect("the key");
    assert!(checked.steps > depth_only, "decided by the depth-first search alone:\n{report}");
}
