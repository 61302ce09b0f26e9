//! One staged update run's timeline, as the benchmark's watches saw it, and
//! how its time splits between the hub's controllers and the agents.
//!
//! Times are milliseconds after the run's `Apply` reply. A cluster is
//! *with its agent* from the moment its Work for the run's index is written
//! until the agent's status write reports it Available at its generation
//! (that span holds the watch delivery to the agent, its apply and its
//! status write through Raft). The run is *agent-bound* while at least one
//! cluster is with its agent; the rest of the run — initialization, moving
//! bindings, rendering Works, noticing availability, the stage transitions
//! and the final status — is the hub's controllers (and the Raft commits of
//! their writes), during which no agent has anything to do.

use std::collections::BTreeMap;

/// What the watches saw of one cluster during one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClusterTimes {
    /// Its binding was first seen Bound to the run's snapshot.
    pub bound: Option<f64>,
    /// Its Work for the run's index was first seen written.
    pub work: Option<f64>,
    /// That Work was first seen Available at its generation.
    pub available: Option<f64>,
}

/// One run's numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSample {
    /// `Apply` of the run → `Succeeded` True.
    pub total_ms: f64,
    /// → `Initialized` True.
    pub initialized_ms: f64,
    /// Time during which at least one cluster was with its agent.
    pub agents_ms: f64,
    /// The rest: only the hub's controllers had something to do.
    pub controller_ms: f64,
    /// Per stage: first binding moved → last cluster Available.
    pub stages: Vec<(f64, f64)>,
    /// Last cluster Available → `Succeeded` True.
    pub finish_ms: f64,
    /// Raft entries the hub committed from the `Apply` to `Succeeded`.
    pub raft_entries: u64,
}

/// The length of the union of `intervals` (each `(start, end)`, in ms).
pub fn covered(intervals: &[(f64, f64)]) -> f64 {
    let mut sorted: Vec<(f64, f64)> = intervals.iter().copied().filter(|(s, e)| e > s).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (start, end) in sorted {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    total + current.map_or(0.0, |(s, e)| e - s)
}

/// The sample of a run that succeeded at `succeeded` ms (initialized at
/// `initialized`), from its clusters' times grouped by stage (in stage order).
pub fn sample(
    initialized: f64,
    succeeded: f64,
    stages: &[Vec<&str>],
    clusters: &BTreeMap<String, ClusterTimes>,
    raft_entries: u64,
) -> RunSample {
    let busy: Vec<(f64, f64)> = clusters.values().filter_map(|c| Some((c.work?, c.available?))).collect();
    let agents_ms = covered(&busy).min(succeeded);
    let stage_spans = stages
        .iter()
        .map(|members| {
            let times: Vec<&ClusterTimes> = members.iter().filter_map(|m| clusters.get(*m)).collect();
            let first = times.iter().filter_map(|c| c.bound).fold(f64::INFINITY, f64::min);
            let last = times.iter().filter_map(|c| c.available).fold(0.0, f64::max);
            (if first.is_finite() { first } else { 0.0 }, last)
        })
        .collect();
    let last_available = clusters.values().filter_map(|c| c.available).fold(0.0, f64::max);
    RunSample {
        total_ms: succeeded,
        initialized_ms: initialized,
        agents_ms,
        controller_ms: succeeded - agents_ms,
        stages: stage_spans,
        finish_ms: (succeeded - last_available).max(0.0),
        raft_entries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covered_merges_overlapping_spans() {
        assert_eq!(covered(&[]), 0.0);
        assert_eq!(covered(&[(0.0, 10.0), (5.0, 20.0), (30.0, 35.0)]), 25.0);
        assert_eq!(covered(&[(30.0, 35.0), (0.0, 10.0), (10.0, 12.0)]), 17.0);
        assert_eq!(covered(&[(5.0, 5.0), (8.0, 2.0)]), 0.0, "empty and inverted spans count nothing");
    }

    #[test]
    fn the_run_splits_into_agent_and_controller_time() {
        let times = |b: f64, w: f64, a: f64| ClusterTimes { bound: Some(b), work: Some(w), available: Some(a) };
        let clusters: BTreeMap<String, ClusterTimes> = [
            ("a".to_string(), times(10.0, 15.0, 40.0)),
            ("b".to_string(), times(50.0, 55.0, 70.0)),
            ("c".to_string(), times(52.0, 60.0, 90.0)),
        ]
        .into_iter()
        .collect();
        let s = sample(5.0, 100.0, &[vec!["a"], vec!["b", "c"]], &clusters, 42);
        assert_eq!(s.agents_ms, 25.0 + 35.0);
        assert_eq!(s.controller_ms, 40.0);
        assert_eq!(s.stages, [(10.0, 40.0), (50.0, 90.0)]);
        assert_eq!(s.finish_ms, 10.0);
        assert_eq!((s.initialized_ms, s.raft_entries), (5.0, 42));
    }
}
