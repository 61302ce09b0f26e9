//! What consensus measures about itself, for the node's `/metrics`: the
//! handles live here (the node registers them) because the events happen
//! here — a proposal answered, a log fsync'd.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// Buckets for disk and commit latencies: 0.5 ms to ~8 s, doubling (etcd's
/// fsync buckets, one more at the low end for fast disks).
pub fn latency_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.0005, 2.0, 15)
}

/// Consensus metrics of one node. Cheap to clone (shared counters).
#[derive(Clone, Debug)]
pub struct RaftMetrics {
    /// Commands proposed through this node that were committed (and applied
    /// here); a command the state machine refused still counts: it committed.
    pub proposals_committed: Counter,
    /// Commands proposed through this node that got no commit answer (no
    /// leader, leader unreachable, timeout, shutdown, or the caller stopped
    /// waiting: such a command may still commit).
    pub proposals_failed: Counter,
    /// Commands proposed through this node and not yet answered.
    pub proposals_pending: Gauge,
    /// From a command's submission here to its commit and apply here.
    pub commit_seconds: Histogram,
    /// Durable commits of the Raft log file (append, truncate, vote).
    pub log_fsync_seconds: Histogram,
}

impl Default for RaftMetrics {
    fn default() -> Self {
        RaftMetrics {
            proposals_committed: Counter::default(),
            proposals_failed: Counter::default(),
            proposals_pending: Gauge::default(),
            commit_seconds: Histogram::new(latency_buckets()),
            log_fsync_seconds: Histogram::new(latency_buckets()),
        }
    }
}

/// Counts one proposal from its submission to its answer: pending while it
/// lives, then committed or failed (a drop without an answer counts as failed).
pub(crate) struct InFlight<'a> {
    metrics: &'a RaftMetrics,
    started: std::time::Instant,
    settled: bool,
}

impl<'a> InFlight<'a> {
    pub(crate) fn start(metrics: &'a RaftMetrics) -> InFlight<'a> {
        metrics.proposals_pending.inc();
        InFlight { metrics, started: std::time::Instant::now(), settled: false }
    }

    /// The proposal committed (whatever the state machine answered).
    pub(crate) fn committed(mut self) {
        self.settled = true;
        self.metrics.proposals_committed.inc();
        self.metrics.commit_seconds.observe(self.started.elapsed().as_secs_f64());
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.metrics.proposals_pending.dec();
        if !self.settled {
            self.metrics.proposals_failed.inc();
        }
    }
}
