//! The linearizability checker on small histories whose verdict is known by
//! hand: good ones (sequential, overlapping, unanswered writes that did and
//! did not take effect) and bad ones (stale reads, double compare-and-set,
//! invented values, lost acknowledged writes).

mod common;

use std::collections::BTreeMap;

use common::{saw, saw_absent, written};

use fleet_fault::checker::check_linearizable_from;
use fleet_fault::{
    check_linearizable, Command, Error, Failure, History, KeyState, Limits, Op, Outcome, Report, Response, Verdict,
};

const KEY: &str = "configmaps/team-a/x";

const READ: Command = Command::Read { consistent: true };

fn put(value: u64) -> Command {
    Command::Put { value }
}

fn cas(value: u64, expected: u64) -> Command {
    Command::Update { value, expected: Some(expected) }
}

/// An operation of client `p` on [`KEY`] over `[from, to]`.
fn op(p: u64, from: u64, to: u64, command: Command, outcome: Outcome) -> Op {
    Op::new(p, KEY, command, from, to, outcome)
}

/// An unanswered operation of client `p` invoked at `from`.
fn lost(p: u64, from: u64, command: Command) -> Op {
    Op { process: p, key: KEY.into(), command, invoke: from, complete: None, outcome: Outcome::Unknown }
}

fn check(ops: Vec<Op>) -> Report {
    check_linearizable(&History::from(ops), Limits::default()).expect("a valid history")
}

fn assert_linearizable(ops: Vec<Op>) {
    let report = check(ops);
    assert!(report.is_linearizable(), "expected linearizable:\n{report}");
}

/// Asserts a violation on [`KEY`] blamed on operation `blamed`; returns it.
fn assert_violation(ops: Vec<Op>, blamed: usize) -> fleet_fault::Violation {
    let report = check(ops);
    assert!(report.has_violation() && report.is_decided(), "expected a violation:\n{report}");
    let violation = report.violations().next().cloned().expect("one violation");
    assert_eq!(violation.key, KEY);
    assert_eq!(violation.op, blamed, "blamed the wrong operation:\n{violation}");
    violation
}

// ---- known good ----

#[test]
fn an_empty_history_is_linearizable() {
    let report = check(vec![]);
    assert!(report.is_linearizable());
    assert_eq!(report.ops_checked(), 0);
}

#[test]
fn a_sequential_history_of_every_kind_of_operation() {
    assert_linearizable(vec![
        op(1, 0, 10, READ, Outcome::Fail(Failure::NotFound)),
        op(1, 20, 30, Command::Create { value: 1 }, written(3)),
        op(2, 40, 50, Command::Create { value: 2 }, Outcome::Fail(Failure::AlreadyExists)),
        op(1, 60, 70, READ, saw(3, 1)),
        op(2, 80, 90, cas(5, 3), written(7)),
        op(1, 100, 110, cas(6, 3), Outcome::Fail(Failure::Conflict { current: Some(7) })),
        op(1, 120, 130, Command::Update { value: 8, expected: None }, written(9)),
        op(2, 140, 150, Command::Delete { expected: Some(7) }, Outcome::Fail(Failure::Conflict { current: None })),
        op(2, 160, 170, Command::Delete { expected: Some(9) }, Outcome::Ok(Response::Deleted)),
        op(1, 180, 190, READ, saw_absent()),
        op(1, 200, 210, cas(4, 9), Outcome::Fail(Failure::NotFound)),
        op(2, 220, 230, Command::Delete { expected: None }, Outcome::Fail(Failure::NotFound)),
        op(1, 240, 250, put(10), written(12)),
        op(2, 260, 270, READ, saw(12, 10)),
    ]);
}

#[test]
fn overlapping_writes_may_take_effect_in_either_order() {
    // Their versions tell the order: the one sent second may apply first.
    for (first, second) in [(4, 5), (5, 4)] {
        let last = if first > second { (first, 1) } else { (second, 2) };
        assert_linearizable(vec![
            op(1, 0, 50, put(1), written(first)),
            op(2, 10, 60, put(2), written(second)),
            op(3, 70, 80, READ, saw(last.0, last.1)),
        ]);
    }
}

#[test]
fn a_read_overlapping_a_write_may_see_either_side_of_it() {
    assert_linearizable(vec![
        op(1, 0, 10, put(1), written(2)),
        op(2, 20, 100, put(2), written(3)),
        op(3, 30, 40, READ, saw(2, 1)),
        op(4, 50, 60, READ, saw(3, 2)),
        op(3, 70, 80, READ, saw(3, 2)),
    ]);
}

#[test]
fn a_tie_between_an_answer_and_an_invocation_counts_as_overlap() {
    assert_linearizable(vec![op(1, 0, 10, put(1), written(2)), op(2, 10, 20, READ, saw_absent())]);
}

#[test]
fn an_unanswered_write_that_took_effect() {
    // Its version was never answered; the first read reveals it.
    assert_linearizable(vec![
        op(1, 0, 10, put(1), written(2)),
        lost(2, 20, put(2)),
        op(3, 100, 110, READ, saw(8, 2)),
        op(3, 120, 130, cas(3, 8), written(9)),
    ]);
}

#[test]
fn an_unanswered_write_that_never_took_effect() {
    assert_linearizable(vec![
        op(1, 0, 10, put(1), written(2)),
        lost(2, 20, put(2)),
        lost(2, 25, Command::Delete { expected: None }),
        op(3, 100, 110, READ, saw(2, 1)),
        op(3, 120, 130, READ, saw(2, 1)),
    ]);
}

#[test]
fn an_unanswered_write_may_take_effect_long_after_it_was_sent() {
    assert_linearizable(vec![
        lost(2, 0, put(2)),
        op(1, 10, 20, put(1), written(4)),
        op(3, 100, 110, READ, saw(4, 1)),
        op(3, 120, 130, READ, saw(9, 2)),
    ]);
}

#[test]
fn of_two_compare_and_sets_from_one_version_one_wins_and_one_conflicts() {
    assert_linearizable(vec![
        op(1, 0, 10, put(1), written(2)),
        op(2, 20, 60, cas(2, 2), written(5)),
        op(3, 25, 65, cas(3, 2), Outcome::Fail(Failure::Conflict { current: Some(5) })),
        op(1, 70, 80, READ, saw(5, 2)),
    ]);
}

#[test]
fn default_reads_refusals_and_unanswered_reads_constrain_nothing() {
    let default_read = Command::Read { consistent: false };
    let report = check(vec![
        op(1, 0, 10, put(1), written(2)),
        op(2, 20, 30, default_read, saw(1, 999)),
        op(3, 20, 30, put(5), Outcome::Fail(Failure::Rejected)),
        lost(4, 20, READ),
        op(1, 40, 50, READ, saw(2, 1)),
    ]);
    assert!(report.is_linearizable(), "{report}");
    assert_eq!(report.ops_checked(), 2);
}

#[test]
fn keys_may_start_present() {
    let initial = BTreeMap::from([(KEY.to_string(), KeyState::Present { rv: Some(4), digest: 7 })]);
    let history = History::from(vec![op(1, 0, 10, READ, saw(4, 7)), op(1, 20, 30, cas(8, 4), written(9))]);
    let report = check_linearizable_from(&history, &initial, Limits::default()).expect("valid");
    assert!(report.is_linearizable(), "{report}");
    assert!(!check(history.ops).is_linearizable(), "absent by default");
}

// ---- known bad ----

#[test]
fn a_stale_read_after_a_completed_write() {
    let violation = assert_violation(
        vec![op(1, 0, 10, put(1), written(2)), op(2, 20, 30, put(2), written(3)), op(3, 40, 50, READ, saw(2, 1))],
        2,
    );
    assert_eq!(violation.last_write, Some(1));
    assert_eq!(violation.state, KeyState::Present { rv: Some(3), digest: 2 });
    assert!(violation.text.contains("#2 client 3"), "{violation}");
    assert!(violation.text.contains("last write placed before it: #1"), "{violation}");
}

#[test]
fn two_successful_compare_and_sets_from_the_same_version() {
    let violation = assert_violation(
        vec![
            op(1, 0, 10, put(1), written(2)),
            op(2, 20, 60, cas(2, 2), written(5)),
            op(3, 25, 65, cas(3, 2), written(6)),
        ],
        2,
    );
    assert_eq!(violation.concurrent, vec![1], "{violation}");
}

#[test]
fn a_read_of_a_value_never_written() {
    let violation = assert_violation(
        vec![op(1, 0, 10, put(1), written(2)), lost(2, 5, put(3)), op(3, 20, 30, READ, saw(2, 77))],
        2,
    );
    assert!(violation.text.contains("no write of this key wrote"), "{violation}");
}

#[test]
fn a_lost_acknowledged_write() {
    assert_violation(vec![op(1, 0, 10, put(1), written(2)), op(2, 20, 30, READ, saw_absent())], 1);
    assert_violation(
        vec![
            op(1, 0, 10, put(1), written(2)),
            op(1, 20, 30, put(2), written(3)),
            op(2, 40, 50, READ, saw(3, 2)),
            op(2, 60, 70, READ, saw(2, 1)),
        ],
        3,
    );
}

#[test]
fn a_new_value_then_the_old_one_during_a_write() {
    // Both reads overlap the write, but once one saw the new value a later
    // one may not see the old.
    assert_violation(
        vec![op(1, 0, 100, put(1), written(2)), op(2, 10, 20, READ, saw(2, 1)), op(3, 30, 40, READ, saw_absent())],
        2,
    );
}

#[test]
fn an_unanswered_write_has_one_version() {
    assert_violation(vec![lost(1, 0, put(1)), op(2, 10, 20, READ, saw(5, 1)), op(2, 30, 40, READ, saw(6, 1))], 2);
}

#[test]
fn a_conflict_naming_the_wrong_version() {
    assert_violation(
        vec![
            op(1, 0, 10, put(1), written(2)),
            op(2, 20, 30, cas(2, 1), Outcome::Fail(Failure::Conflict { current: Some(3) })),
        ],
        1,
    );
}

#[test]
fn a_delete_that_did_not_delete() {
    assert_violation(
        vec![
            op(1, 0, 10, Command::Create { value: 1 }, written(2)),
            op(1, 20, 30, Command::Delete { expected: Some(2) }, Outcome::Ok(Response::Deleted)),
            op(2, 40, 50, READ, saw(2, 1)),
        ],
        2,
    );
}

#[test]
fn only_the_broken_key_is_reported() {
    let mut ops = vec![op(1, 0, 10, put(1), written(2)), op(2, 20, 30, READ, saw_absent())];
    ops.push(Op::new(3, "other", put(5), 0, 10, written(3)));
    ops.push(Op::new(3, "other", READ, 20, 30, saw(3, 5)));
    let report = check(ops);
    assert_eq!(report.keys.len(), 2);
    assert_eq!(report.keys[1].key, "other");
    assert_eq!(report.keys[1].verdict, Verdict::Linearizable);
    assert!(matches!(report.keys[0].verdict, Verdict::NotLinearizable(_)), "{report}");
    assert!(report.to_string().contains("1 violations"), "{report}");
}

// ---- bounds and input ----

#[test]
fn a_search_out_of_steps_is_undecided_not_a_verdict() {
    // Eight blind writes at once; the read needs the first one last. Without
    // the resourceVersion order, the search has many orders to try.
    let mut ops = Vec::new();
    for i in 0..8 {
        ops.push(op(i, 0, 100, put(i + 1), written(i + 2)));
    }
    ops.push(op(99, 200, 210, READ, saw(2, 1)));
    let history = History::from(ops);
    let register = |max_steps_per_key| Limits { max_steps_per_key, rv_order: false, breadth_first: false };
    let report = check_linearizable(&history, register(5)).expect("valid");
    assert!(!report.is_decided() && !report.has_violation() && !report.is_linearizable(), "{report}");
    assert_eq!(report.undecided(), vec![KEY]);
    // Five steps depth first, then five breadth first.
    assert_eq!(report.keys[0].verdict, Verdict::Undecided { steps: 10 });
    let decided = check_linearizable(&history, register(1_000_000)).expect("valid");
    assert!(decided.is_linearizable(), "{decided}");
}

#[test]
fn in_fleet_writes_take_effect_in_resource_version_order() {
    // Fine for a plain register; in Fleet, rv 2 answered last means it
    // was the last write applied, so the read of rv 9 is stale.
    let ops =
        vec![op(1, 0, 100, put(1), written(2)), op(2, 0, 100, put(2), written(9)), op(3, 200, 210, READ, saw(2, 1))];
    let register = Limits { rv_order: false, ..Limits::default() };
    assert!(check_linearizable(&History::from(ops.clone()), register).expect("valid").is_linearizable());
    assert_violation(ops, 2);
    // Versions going back between two writes in real time (in two
    // windows: the second is blamed, for the version the first revealed).
    let violation = assert_violation(vec![op(1, 0, 10, put(1), written(5)), op(1, 20, 30, put(2), written(3))], 1);
    assert!(violation.text.contains("#0 placed before it revealed rv 5"), "{violation}");
    // An unanswered write cannot turn up at a version older than one seen.
    let late = vec![op(1, 0, 10, put(1), written(5)), lost(2, 20, put(2)), op(3, 30, 40, READ, saw(3, 2))];
    assert!(check_linearizable(&History::from(late.clone()), register).expect("valid").is_linearizable());
    assert_violation(late, 2);
}

#[test]
fn a_self_contradictory_operation_is_an_error() {
    let history = History::from(vec![op(1, 0, 10, put(1), Outcome::Ok(Response::Deleted))]);
    match check_linearizable(&history, Limits::default()) {
        Err(Error::InvalidOp { op: 0, reason }) => assert!(reason.contains("cannot end with"), "{reason}"),
        other => panic!("expected an invalid operation, got {other:?}"),
    }
}
