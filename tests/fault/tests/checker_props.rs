//! Properties of the linearizability checker over generated histories: a
//! history run one operation at a time on a simulated store stays
//! linearizable when its intervals are widened into overlap, answers are
//! lost, phantom unanswered writes are added and the operations shuffled;
//! and it stops being linearizable when one read sees a value never written.

mod common;

use common::{
    add_phantoms, add_stale_default_reads, corrupt_a_read, lose_answers, sequential, shuffle, widen, Rng, Spec,
};
use fleet_fault::{check_linearizable, History, Limits, Report};
use proptest::prelude::*;

/// Enough for the histories below; a verdict must come well within it.
const LIMITS: Limits = Limits::steps(2_000_000);

fn spec() -> impl Strategy<Value = Spec> {
    (0u8..3, 0u8..7, 0u8..4, any::<u8>()).prop_map(|(key, kind, process, choice)| Spec { key, kind, process, choice })
}

/// `specs` run one at a time, widened by `slots`, one write answer in
/// `one_in` lost; the generator is returned to go on from there.
fn perturbed(specs: &[Spec], seed: u64, slots: u64, one_in: u64) -> (History, Rng) {
    let mut rng = Rng::new(seed);
    let mut history = sequential(specs);
    widen(&mut history, &mut rng, slots);
    lose_answers(&mut history, &mut rng, one_in);
    (history, rng)
}

fn check(history: &History) -> Result<Report, TestCaseError> {
    check_linearizable(history, LIMITS).map_err(|e| TestCaseError::fail(e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn a_sequential_history_is_linearizable(specs in prop::collection::vec(spec(), 0..40)) {
        let report = check(&sequential(&specs))?;
        prop_assert!(report.is_linearizable(), "{}", report);
    }

    #[test]
    fn widening_losing_answers_and_phantom_writes_keep_it_linearizable(
        specs in prop::collection::vec(spec(), 1..40),
        seed in any::<u64>(),
        slots in 0u64..6,
        one_in in 2u64..8,
        phantoms in 0usize..4,
    ) {
        let (mut history, mut rng) = perturbed(&specs, seed, slots, one_in);
        add_phantoms(&mut history, &mut rng, phantoms, 3);
        add_stale_default_reads(&mut history, 2);
        shuffle(&mut history, &mut rng);
        let report = check(&history)?;
        prop_assert!(report.is_linearizable(), "{}", report);
    }

    #[test]
    fn a_read_of_a_value_never_written_is_caught(
        specs in prop::collection::vec(spec(), 1..40),
        seed in any::<u64>(),
        slots in 0u64..6,
        pick in any::<usize>(),
    ) {
        let (mut history, _) = perturbed(&specs, seed, slots, 4);
        let Some(read) = corrupt_a_read(&mut history, pick) else {
            // No answered read to corrupt: nothing to claim.
            return Ok(());
        };
        let key = history.ops[read].key.clone();
        let report = check(&history)?;
        prop_assert!(report.has_violation() && report.is_decided(), "{}", report);
        let violations: Vec<_> = report.violations().collect();
        prop_assert_eq!(violations.len(), 1, "{}", report);
        prop_assert_eq!(&violations[0].key, &key);
    }

    #[test]
    fn breadth_first_and_depth_first_reach_the_same_verdicts(
        specs in prop::collection::vec(spec(), 1..40),
        seed in any::<u64>(),
        slots in 0u64..6,
        one_in in 2u64..8,
        pick in any::<usize>(),
        corrupt in any::<bool>(),
    ) {
        let (mut history, _) = perturbed(&specs, seed, slots, one_in);
        if corrupt {
            corrupt_a_read(&mut history, pick);
        }
        let depth = check(&history)?;
        let breadth = check_linearizable(&history, Limits { breadth_first: true, ..LIMITS })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(depth.is_decided() && breadth.is_decided(), "{}\n{}", depth, breadth);
        let blamed = |r: &Report| r.violations().map(|v| v.key.clone()).collect::<Vec<_>>();
        prop_assert_eq!(blamed(&depth), blamed(&breadth), "{}\n{}", depth, breadth);
    }
}
