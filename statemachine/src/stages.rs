//! Where the time of a write goes, stage by stage, on each node: the
//! handler, the group-commit queue, forwarding, the leader's commit, the
//! log's durable append, replication round trips, the follower's append,
//! applying, and waiting to see the write applied here. `/metrics` shows
//! them as `fleet_write_stage_seconds{stage}`, and `fleet-bench breakdown`
//! turns them into a per-write table.
//!
//! The stages overlap (a commit contains the log append, a replication
//! round trip contains the follower's append), so they do not add up; each
//! says how long one step took, measured where it happens.

use std::time::Instant;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// One step of a write.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Stage {
    /// A client's write request, from the handler's start to its answer.
    handler,
    /// Before proposing: authentication, admission, authorization.
    admit,
    /// Waiting in the node's group-commit queue for a batch.
    queue,
    /// A follower's batch sent to the leader and answered (round trip).
    forward,
    /// On the leader: a batch proposed until Raft answers (committed and applied).
    commit,
    /// A durable append to the Raft log: from the call to the fsync'd commit.
    log_append,
    /// On the leader: an AppendEntries carrying entries, sent and answered.
    replicate,
    /// On a follower: an AppendEntries carrying entries, received until answered.
    follower_append,
    /// Applying committed entries to the state machine.
    apply,
    /// On the leader: applying waited for the leader's own log to be durable.
    apply_wait_durable,
    /// After the answer: waiting until the write is applied on this node.
    wait_applied,
}

/// The label set of [`WriteStages`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabel {
    /// Which step.
    pub stage: Stage,
}

fn stage_histogram() -> Histogram {
    // 10 µs to ~5 s, doubling: the stages of one write are tens of µs to ms.
    Histogram::new(exponential_buckets(0.000_01, 2.0, 20))
}

/// The per-stage durations of writes on one node. Cheap to clone.
#[derive(Clone, Debug)]
pub struct WriteStages(Family<StageLabel, Histogram, fn() -> Histogram>);

impl Default for WriteStages {
    fn default() -> Self {
        WriteStages(Family::new_with_constructor(stage_histogram))
    }
}

impl WriteStages {
    /// Records that `stage` took from `started` until now.
    pub fn since(&self, stage: Stage, started: Instant) {
        self.0.get_or_create(&StageLabel { stage }).observe(started.elapsed().as_secs_f64());
    }

    /// The metric family, for registration.
    pub fn family(&self) -> Family<StageLabel, Histogram, fn() -> Histogram> {
        self.0.clone()
    }
}
