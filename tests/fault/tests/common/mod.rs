//! Histories made from a simulated store, for the checker's property and
//! performance tests. The store here is written independently of
//! `fleet_fault::model`, so the checker is not tested against itself.

#![allow(dead_code)]

use std::collections::BTreeMap;

use fleet_fault::{Command, Failure, History, Observed, Op, Outcome, Response};

/// The answer of a write that took effect at `rv`.
pub fn written(rv: u64) -> Outcome {
    Outcome::Ok(Response::Written { rv })
}

/// The answer of a read that saw value `digest` at `rv`.
pub fn saw(rv: u64, digest: u64) -> Outcome {
    Outcome::Ok(Response::Read { observed: Observed::Present { rv, digest }, served_at: None })
}

/// The answer of a read that saw no object.
pub fn saw_absent() -> Outcome {
    Outcome::Ok(Response::Read { observed: Observed::Absent, served_at: None })
}

/// A digest no generated write ever stores.
pub const NEVER_WRITTEN: u64 = u64::MAX;

/// A small deterministic generator (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// What kind of operation to generate; parameters are chosen from the
/// store's state when it runs.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub key: u8,
    pub kind: u8,
    pub process: u8,
    /// Picks between a current and a stale precondition, and similar.
    pub choice: u8,
}

/// Fleet's object store, one key at a time, with a global log index.
#[derive(Default)]
pub struct Store {
    index: u64,
    values: u64,
    objects: BTreeMap<String, (u64, u64)>,
    /// Every version each key had, for stale preconditions.
    versions: BTreeMap<String, Vec<u64>>,
}

impl Store {
    fn write(&mut self, key: &str, value: u64) -> u64 {
        self.index += 1;
        self.objects.insert(key.to_string(), (self.index, value));
        self.versions.entry(key.to_string()).or_default().push(self.index);
        self.index
    }

    fn fresh_value(&mut self) -> u64 {
        self.values += 1;
        self.values
    }

    /// A precondition: the current version, or an older one, or one that
    /// never was.
    fn expected(&self, key: &str, choice: u8) -> u64 {
        let current = self.objects.get(key).map(|(rv, _)| *rv);
        let versions = self.versions.get(key).map(Vec::as_slice).unwrap_or(&[]);
        match (choice % 4, current) {
            (0..=1, Some(rv)) => rv,
            (2, _) if !versions.is_empty() => versions[usize::from(choice) % versions.len()],
            _ => 1_000_000 + u64::from(choice),
        }
    }

    /// Runs `spec`, returning the command and its true outcome.
    pub fn run(&mut self, spec: Spec) -> (String, Command, Outcome) {
        let key = format!("k{}", spec.key);
        let current = self.objects.get(&key).copied();
        let (command, outcome) = match spec.kind % 7 {
            0 => {
                let value = self.fresh_value();
                let outcome = match current {
                    None => Outcome::Ok(Response::Written { rv: self.write(&key, value) }),
                    Some(_) => Outcome::Fail(Failure::AlreadyExists),
                };
                (Command::Create { value }, outcome)
            }
            1 => {
                let value = self.fresh_value();
                (Command::Put { value }, Outcome::Ok(Response::Written { rv: self.write(&key, value) }))
            }
            2 | 3 => {
                let value = self.fresh_value();
                let expected = (spec.kind % 7 == 2).then(|| self.expected(&key, spec.choice));
                let outcome = match (current, expected) {
                    (None, _) => Outcome::Fail(Failure::NotFound),
                    (Some((rv, _)), Some(e)) if rv != e => {
                        let current = spec.choice.is_multiple_of(2).then_some(rv);
                        Outcome::Fail(Failure::Conflict { current })
                    }
                    (Some(_), _) => Outcome::Ok(Response::Written { rv: self.write(&key, value) }),
                };
                (Command::Update { value, expected }, outcome)
            }
            4 => {
                let expected = (!spec.choice.is_multiple_of(3)).then(|| self.expected(&key, spec.choice));
                let outcome = match (current, expected) {
                    (None, _) => Outcome::Fail(Failure::NotFound),
                    (Some((rv, _)), Some(e)) if rv != e => Outcome::Fail(Failure::Conflict { current: Some(rv) }),
                    (Some(_), _) => {
                        self.index += 1;
                        self.objects.remove(&key);
                        Outcome::Ok(Response::Deleted)
                    }
                };
                (Command::Delete { expected }, outcome)
            }
            _ => {
                let observed = match current {
                    None => Observed::Absent,
                    Some((rv, digest)) => Observed::Present { rv, digest },
                };
                let outcome = Outcome::Ok(Response::Read { observed, served_at: Some(self.index) });
                (Command::Read { consistent: true }, outcome)
            }
        };
        (key, command, outcome)
    }
}

/// Runs `specs` one after the other: operation i takes [10i, 10i + 5].
pub fn sequential(specs: &[Spec]) -> History {
    let mut store = Store::default();
    let ops = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let (key, command, outcome) = store.run(*spec);
            let at = 10 * i as u64;
            Op::new(u64::from(spec.process), &key, command, at, at + 5, outcome)
        })
        .collect();
    History { ops }
}

/// Widens every interval by up to `slots` operations on each side (so
/// operations overlap), keeping each true position inside its interval.
pub fn widen(history: &mut History, rng: &mut Rng, slots: u64) {
    for op in &mut history.ops {
        op.invoke = op.invoke.saturating_sub(rng.below(slots * 10 + 1));
        op.complete = op.complete.map(|c| c + rng.below(slots * 10 + 1));
    }
}

/// Loses the answer of about one write in `one_in` (it still took effect).
pub fn lose_answers(history: &mut History, rng: &mut Rng, one_in: u64) {
    for op in &mut history.ops {
        if op.command.is_write() && rng.below(one_in) == 0 {
            op.outcome = Outcome::Unknown;
            op.complete = None;
        }
    }
}

/// Adds `count` unanswered writes that never took effect, with values
/// nobody reads.
pub fn add_phantoms(history: &mut History, rng: &mut Rng, count: usize, keys: u8) {
    let end = history.ops.iter().filter_map(|op| op.complete).max().unwrap_or(0);
    for i in 0..count {
        let key = format!("k{}", rng.below(u64::from(keys.max(1))));
        let value = 10_000_000 + i as u64;
        let command = match rng.below(3) {
            0 => Command::Put { value },
            1 => Command::Update { value, expected: Some(rng.below(50)) },
            _ => Command::Delete { expected: Some(5_000_000) },
        };
        let invoke = rng.below(end + 1);
        history.push(Op { process: 99, key, command, invoke, complete: None, outcome: Outcome::Unknown });
    }
}

/// Adds default (non-consistent) reads of values nobody wrote: the
/// linearizability checker must ignore them.
pub fn add_stale_default_reads(history: &mut History, count: usize) {
    for i in 0..count {
        let observed = Observed::Present { rv: 1, digest: NEVER_WRITTEN };
        let outcome = Outcome::Ok(Response::Read { observed, served_at: None });
        let at = 10 * i as u64;
        history.push(Op::new(98, "k0", Command::Read { consistent: false }, at, at + 1, outcome));
    }
}

/// Shuffles the operations' order in the history (the checker must go by
/// time, not by position).
pub fn shuffle(history: &mut History, rng: &mut Rng) {
    for i in (1..history.ops.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        history.ops.swap(i, j);
    }
}

/// Makes one answered consistent read (the `pick`-th, modulo their count)
/// see a value never written; returns its index, or `None` if there is no
/// such read.
pub fn corrupt_a_read(history: &mut History, pick: usize) -> Option<usize> {
    let reads: Vec<usize> = history
        .ops
        .iter()
        .enumerate()
        .filter(|(_, op)| op.command == Command::Read { consistent: true } && matches!(op.outcome, Outcome::Ok(_)))
        .map(|(i, _)| i)
        .collect();
    let target = *reads.get(pick % reads.len().max(1))?;
    let rv = match history.ops[target].outcome {
        Outcome::Ok(Response::Read { observed: Observed::Present { rv, .. }, .. }) => rv,
        _ => 1,
    };
    let observed = Observed::Present { rv, digest: NEVER_WRITTEN };
    history.ops[target].outcome = Outcome::Ok(Response::Read { observed, served_at: None });
    Some(target)
}

/// `count` operations over `keys` keys from a seeded generator.
pub fn specs(rng: &mut Rng, count: usize, keys: u8) -> Vec<Spec> {
    (0..count)
        .map(|_| Spec {
            key: rng.below(u64::from(keys.max(1))) as u8,
            kind: rng.below(7) as u8,
            process: rng.below(8) as u8,
            choice: rng.below(256) as u8,
        })
        .collect()
}

/// A seeded run of `count` operations over `keys` keys, run one at a time,
/// then widened by `slots` and with one write answer in `lose_one_in` lost;
/// the generator is returned to go on from there.
pub fn overlapping(seed: u64, count: usize, keys: u8, slots: u64, lose_one_in: u64) -> (History, Rng) {
    let mut rng = Rng::new(seed);
    let mut history = sequential(&specs(&mut rng, count, keys));
    widen(&mut history, &mut rng, slots);
    lose_answers(&mut history, &mut rng, lose_one_in);
    (history, rng)
}
