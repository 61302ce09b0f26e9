//! Which operations are placed, and the configurations already explored.
//!
//! A configuration is (operations placed, state). Operations with a known
//! outcome and unanswered ones are kept apart: an unanswered operation has
//! no deadline and may never take effect, so having one still unplaced can
//! only help. A configuration is therefore dominated by an explored one
//! with the same answered operations and state and a *subset* of the
//! unanswered ones placed — if that one failed, this one fails too. Without
//! this, every unanswered write that was placed and then overwritten would
//! double the configurations to search.

use std::collections::HashMap;

use super::search::KeyOp;
use crate::model::KeyState;

/// A set of small integers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize) -> Bits {
        Bits(vec![0; len.div_ceil(64)])
    }

    fn set(&mut self, i: usize, on: bool) {
        if let Some(word) = self.0.get_mut(i / 64) {
            let mask = 1u64 << (i % 64);
            if on {
                *word |= mask;
            } else {
                *word &= !mask;
            }
        }
    }

    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|word| word & (1u64 << (i % 64)) != 0)
    }

    /// Whether every member of `self` is in `other` (same length).
    fn is_subset(&self, other: &[u64]) -> bool {
        self.0.iter().zip(other).all(|(a, b)| a & !b == 0)
    }
}

/// Where an operation's bit lives.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Answered(usize),
    Unanswered(usize),
}

/// The operations placed so far, answered and unanswered apart.
pub(super) struct Placed {
    answered: Bits,
    unanswered: Bits,
    slots: Vec<Slot>,
}

impl Placed {
    /// Nothing placed yet, for `ops`.
    pub fn new(ops: &[KeyOp]) -> Placed {
        let (mut answered, mut unanswered) = (0, 0);
        let slots = ops
            .iter()
            .map(|op| {
                if op.complete.is_some() {
                    answered += 1;
                    Slot::Answered(answered - 1)
                } else {
                    unanswered += 1;
                    Slot::Unanswered(unanswered - 1)
                }
            })
            .collect();
        Placed { answered: Bits::new(answered), unanswered: Bits::new(unanswered), slots }
    }

    /// Whether operation `i` is placed.
    pub fn contains(&self, i: usize) -> bool {
        match self.slots.get(i) {
            Some(Slot::Answered(bit)) => self.answered.contains(*bit),
            Some(Slot::Unanswered(bit)) => self.unanswered.contains(*bit),
            None => false,
        }
    }

    /// Marks operation `i` placed or not.
    pub fn set(&mut self, i: usize, on: bool) {
        match self.slots.get(i) {
            Some(Slot::Answered(bit)) => self.answered.set(*bit, on),
            Some(Slot::Unanswered(bit)) => self.unanswered.set(*bit, on),
            None => {}
        }
    }
}

/// Explored configurations: per state and set of answered operations
/// placed, the minimal sets of unanswered operations placed.
#[derive(Default)]
pub(super) struct Cache {
    seen: HashMap<KeyState, HashMap<Bits, Vec<Bits>>>,
}

impl Cache {
    /// Records the configuration (`placed`, `state`) unless an explored one
    /// dominates it; returns whether it is new (worth exploring).
    pub fn insert(&mut self, state: KeyState, placed: &Placed) -> bool {
        let minimal = self.seen.entry(state).or_default().entry(placed.answered.clone()).or_default();
        if minimal.iter().any(|explored| explored.is_subset(&placed.unanswered.0)) {
            return false;
        }
        // Whatever this one dominates need not be kept.
        minimal.retain(|explored| !placed.unanswered.is_subset(&explored.0));
        minimal.push(placed.unanswered.clone());
        true
    }
}
