//! The breadth-first check of one key's windows: every configuration the
//! key can stand in after each window, not just one. The depth-first
//! search of [`super::window`] decides a linearizable history in about one
//! search per window, but a violation late in a long history makes it come
//! back through the windows before it, trying other ends in combination,
//! which can use up the budget. Going forward with the whole frontier
//! searches each window once from each configuration that reaches it
//! (dominated ones dropped): a violation is a window that no configuration
//! of the frontier gets through, found in time about linear in the length
//! of the history while the frontier stays small, as it does when answers
//! pin the state down. It is what a key whose depth-first check ran out of
//! steps is decided with. The frontier does grow with the variety of
//! unanswered operations still pending (configurations with the same state
//! whose pending counts neither dominates): on the generated 60,000-operation
//! histories with one answer in ten lost it reaches tens of configurations,
//! and a late violation there stays undecided within the default budget.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::search::{Deepest, Found, KeyOp};
use super::window::{admit_by, after_window, with_path, Canon, Config, KeyOutcome, Level, Window};
use crate::history::{Command, OpId};

/// The operations one window placed on the way to a configuration, after
/// those of the windows before (shared between the configurations that
/// came the same way).
struct Placed {
    ops: Vec<KeyOp>,
    before: Option<Rc<Placed>>,
}

/// A configuration of the frontier and one way to it.
struct Reached {
    config: Config,
    way: Option<Rc<Placed>>,
}

/// Every operation placed on `way`, oldest first.
fn unwind(way: &Option<Rc<Placed>>) -> Vec<KeyOp> {
    let mut parts = Vec::new();
    let mut at = way.clone();
    while let Some(node) = at {
        parts.push(node.clone());
        at = node.before.clone();
    }
    parts.iter().rev().flat_map(|p| p.ops.iter().copied()).collect()
}

/// What a breadth-first check used, with its outcome.
pub(super) struct FrontierResult {
    pub outcome: KeyOutcome,
    pub steps: u64,
}

/// Checks `ops` (split into `windows`) from `initial`, window by window
/// over the whole frontier, within `max_steps`.
pub(super) fn check_frontier(
    ops: &[KeyOp],
    windows: &[Window],
    canon: &Canon,
    initial: Config,
    max_steps: u64,
    rv_order: bool,
) -> FrontierResult {
    let mut result = FrontierResult { outcome: KeyOutcome::Linearizable, steps: 0 };
    let mut reps: BTreeMap<Command, OpId> = BTreeMap::new();
    let mut frontier = vec![Reached { config: initial, way: None }];
    let mut floor = 0u64;
    for w in 0..windows.len() {
        let mut next: Vec<Reached> = Vec::new();
        let mut failure: Option<(Reached, Vec<KeyOp>, Deepest)> = None;
        let mut end_floor = floor;
        for reached in frontier {
            let mut level = Level::start(ops, windows, w, reached.config.clone(), &reps, floor, rv_order, 0);
            end_floor = level.end_floor;
            loop {
                match level.next_end(max_steps, &mut result.steps) {
                    Found::Exhausted => {
                        result.outcome = KeyOutcome::Exhausted;
                        return result;
                    }
                    Found::End(end) => {
                        let placed: Vec<KeyOp> = end.order.iter().map(|i| level.search.ops[*i]).collect();
                        let config = after_window(&level, end, canon, &mut reps);
                        let way = Some(Rc::new(Placed { ops: placed, before: reached.way.clone() }));
                        admit_by(&mut next, Reached { config, way }, |r| &r.config);
                    }
                    Found::Done(deepest) => {
                        if let (None, Some(deepest)) = (&failure, deepest) {
                            let ops = level.search.ops.clone();
                            failure = Some((
                                Reached { config: reached.config.clone(), way: reached.way.clone() },
                                ops,
                                deepest,
                            ));
                        }
                        break;
                    }
                }
            }
        }
        if next.is_empty() {
            result.outcome = match failure {
                Some((reached, window_ops, deepest)) => {
                    let (_, ops, deepest) = with_path(w, &unwind(&reached.way), window_ops, deepest, canon);
                    KeyOutcome::NotLinearizable { ops, deepest }
                }
                // No configuration reached the window and none failed in it:
                // cannot be, since the frontier is never empty on entry.
                None => KeyOutcome::Exhausted,
            };
            return result;
        }
        frontier = next;
        floor = end_floor;
    }
    result
}
