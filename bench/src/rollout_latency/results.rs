//! What a rollout-latency run measured: one [`Sample`] per rollout, gathered
//! in [`RolloutLatencies`].

use crate::work_latency::Latencies;

/// One timed rollout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// The placement's name.
    pub name: String,
    /// The resource snapshot index rolled out.
    pub index: String,
    /// Round trip of the `Apply` itself (not part of the measured latency).
    pub apply_ms: f64,
    /// From the `Apply` reply to the placement done (the measured latency).
    pub total_ms: f64,
    /// … to the placement's `Scheduled` condition True at its generation.
    pub scheduled_ms: Option<f64>,
    /// … to the placement's status first showing the rolled-out index.
    pub index_ms: Option<f64>,
    /// … to the first Work written for the index.
    pub first_work_ms: Option<f64>,
    /// … to the last Work written for the index (the `clusters`-th distinct one).
    pub last_work_ms: Option<f64>,
    /// … to the first Work reported Available at its generation by its agent.
    pub first_available_ms: Option<f64>,
    /// … to the last Work reported Available at its generation.
    pub last_available_ms: Option<f64>,
    /// … to the placement's `Applied` condition True with every entry at the index.
    pub applied_ms: Option<f64>,
    /// Distinct Works written for the index.
    pub works: usize,
    /// Writes of the placement (watch events) up to done.
    pub placement_writes: u64,
    /// Writes of the run's Works (watch events) up to done.
    pub work_writes: u64,
    /// Raft entries the hub committed from the `Apply` to done (`resourceVersion` delta).
    pub raft_entries: u64,
    /// Raft entries from the `Apply` to the first Work written for the index.
    pub raft_to_first_work: Option<u64>,
    /// Distinct Raft entries that wrote the Works for the index (first write of each).
    pub work_entries: usize,
    /// Phase A: from the `Delete` of the placement until its Works were gone.
    pub cleanup_ms: Option<f64>,
    /// Phase B: the index of the latest resource snapshot, read after done.
    pub latest_snapshot: Option<String>,
}

/// The result of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RolloutLatencies {
    /// How many clusters each rollout waited for.
    pub clusters: usize,
    /// Raft entries per second the hub committed with nothing placed (heartbeats, leases).
    pub idle_entries_per_second: f64,
    /// Phase A: new placements.
    pub new_placements: Vec<Sample>,
    /// The placement phase B updates, placed first (timed like phase A).
    pub initial: Option<Sample>,
    /// Phase B: ConfigMap changes.
    pub updates: Vec<Sample>,
}

impl RolloutLatencies {
    /// Phase A's measured latencies (Apply reply → Available everywhere).
    pub fn new_placement_totals(&self) -> Latencies {
        Latencies { samples_ms: self.new_placements.iter().map(|s| s.total_ms).collect() }
    }

    /// Phase B's measured latencies (ConfigMap Apply reply → new index Available everywhere).
    pub fn update_totals(&self) -> Latencies {
        Latencies { samples_ms: self.updates.iter().map(|s| s.total_ms).collect() }
    }
}
