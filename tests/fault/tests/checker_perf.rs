//! The checker decides histories the size of a short fault run — a few
//! thousand operations over ten keys, heavily overlapping, some answers
//! lost — within a fixed step budget. No clock: the budget is the claim.

mod common;

use common::{add_phantoms, corrupt_a_read, overlapping};
use fleet_fault::{check_linearizable, Limits};

const OPS: usize = 3_000;
const KEYS: u8 = 10;
/// Each operation's interval is widened by up to this many neighbours on
/// each side: each overlaps up to 200 others, about 20 of its own key.
const OVERLAP: u64 = 100;
/// Per key; a verdict must come within it.
const LIMITS: Limits = Limits::steps(1_000_000);

#[test]
fn thousands_of_overlapping_operations_are_decided_linearizable_within_the_budget() {
    for seed in [1, 2, 3] {
        let (mut history, mut rng) = overlapping(seed, OPS, KEYS, OVERLAP, 30);
        add_phantoms(&mut history, &mut rng, 20, KEYS);
        let report = check_linearizable(&history, LIMITS).expect("a valid history");
        assert!(report.is_linearizable(), "seed {seed}: {report}");
        assert_eq!(report.keys.len(), usize::from(KEYS));
        assert!(report.ops_checked() > OPS / 2, "seed {seed}: {report}");
    }
}

#[test]
fn a_violation_in_thousands_of_overlapping_operations_is_found_within_the_budget() {
    for seed in [4, 5, 6] {
        let (mut history, _) = overlapping(seed, OPS, KEYS, OVERLAP, 30);
        let read = corrupt_a_read(&mut history, OPS / 2).expect("some answered read");
        let report = check_linearizable(&history, LIMITS).expect("a valid history");
        assert!(report.is_decided(), "seed {seed}: {report}");
        let violations: Vec<_> = report.violations().collect();
        assert_eq!(violations.len(), 1, "seed {seed}: {report}");
        assert_eq!(violations[0].key, history.ops[read].key);
    }
}

#[test]
fn many_unanswered_writes_are_decided_within_the_budget() {
    // As under partitions: one write answer in ten lost (each such write
    // may take effect at any later point, or never), plus fifty writes
    // that never took effect.
    for seed in [7, 8] {
        let (mut history, mut rng) = overlapping(seed, OPS, KEYS, OVERLAP / 5, 10);
        add_phantoms(&mut history, &mut rng, 50, KEYS);
        let report = check_linearizable(&history, LIMITS).expect("a valid history");
        assert!(report.is_linearizable(), "seed {seed}: {report}");
        let read = corrupt_a_read(&mut history, OPS / 3).expect("some answered read");
        let report = check_linearizable(&history, LIMITS).expect("a valid history");
        assert!(report.has_violation() && report.is_decided(), "seed {seed}: {report}");
        let keys: Vec<String> = report.violations().map(|v| v.key.clone()).collect();
        assert_eq!(keys, vec![history.ops[read].key.clone()]);
    }
}
