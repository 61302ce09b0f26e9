//! Following one rollout on the run's watches: the events of the placement
//! and of its Works, read into a [`Trace`] until the placement is done, and
//! the [`Sample`] a trace makes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::Object;

use super::session::Run;
use super::state::{work_available, RolloutState};
use super::{Sample, WORK_INDEX_LABEL};
use crate::error::Error;
use crate::watching::ms;

/// Which watch an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// The ClusterResourcePlacement watch.
    Placement,
    /// The Work watch (all namespaces).
    Work,
}

/// A watch event of this run, stamped when it arrived.
pub(super) struct Seen {
    /// The watch it came from.
    pub(super) source: Source,
    /// The object as the event carried it.
    pub(super) object: Object,
    /// The event's `resourceVersion`.
    pub(super) resource_version: u64,
    /// When the event arrived.
    pub(super) at: Instant,
}

/// One Work event of a followed placement.
pub(super) struct WorkSeen {
    key: String,
    resource_version: u64,
    index: Option<String>,
    available: bool,
    at: Instant,
}

/// What [`Run::follow`] saw of one rollout.
#[derive(Default)]
pub(super) struct Trace {
    placement_writes: u64,
    scheduled: Option<Instant>,
    index: Option<Instant>,
    applied: Option<Instant>,
    works: Vec<WorkSeen>,
    done: Option<(Instant, u64, String)>,
}
impl Run {
    /// Reads events until placement `name` (at `generation`) is done on an
    /// index `accept` takes, ignoring events at or before `since`.
    pub(super) async fn follow(
        &mut self,
        name: &str,
        generation: i64,
        since: u64,
        accept: &dyn Fn(&str) -> bool,
    ) -> Result<Trace, Error> {
        let clusters = self.clusters;
        let rx = &mut self.rx;
        let mut last: Option<RolloutState> = None;
        let last_seen = &mut last;
        let wait = async {
            let mut trace = Trace::default();
            while let Some(seen) = rx.recv().await {
                let seen = seen?;
                if seen.resource_version <= since {
                    continue;
                }
                match seen.source {
                    Source::Placement => {
                        if seen.object.metadata.name != name || seen.object.metadata.generation != generation {
                            continue;
                        }
                        trace.placement_writes += 1;
                        let state = RolloutState::of(&seen.object);
                        *last_seen = Some(state.clone());
                        if state.scheduled {
                            trace.scheduled.get_or_insert(seen.at);
                        }
                        let Some(index) = state.index.as_deref().filter(|i| accept(i)) else { continue };
                        trace.index.get_or_insert(seen.at);
                        if state.applied_on(clusters) {
                            trace.applied.get_or_insert(seen.at);
                        }
                        if state.done_on(clusters) {
                            trace.done = Some((seen.at, seen.resource_version, index.to_string()));
                            return Ok(trace);
                        }
                    }
                    Source::Work => {
                        let labels = &seen.object.metadata.labels;
                        if labels.get(PARENT_PLACEMENT_LABEL).map(String::as_str) != Some(name) {
                            continue;
                        }
                        trace.works.push(WorkSeen {
                            key: format!(
                                "{}/{}",
                                seen.object.metadata.namespace.as_deref().unwrap_or_default(),
                                seen.object.metadata.name
                            ),
                            resource_version: seen.resource_version,
                            index: labels.get(WORK_INDEX_LABEL).cloned(),
                            available: work_available(&seen.object),
                            at: seen.at,
                        });
                    }
                }
            }
            Err(Error::Hub("the watches ended".into()))
        };
        let outcome = tokio::time::timeout(self.deadline, wait).await;
        outcome.map_err(|_| Error::Deadline {
            what: format!("placement {name} available on {clusters} clusters (last seen: {last:?})"),
            after: self.deadline,
        })?
    }
}

/// Turns a trace into a sample: milestones relative to `replied`, Work
/// milestones for the index the rollout finished on.
pub(super) fn sample(name: &str, apply_ms: f64, replied: Instant, since: u64, trace: Trace) -> Sample {
    let rel = |at: Instant| ms(at.saturating_duration_since(replied));
    let (done_at, done_rv, index) = trace.done.unwrap_or((replied, since, String::new()));
    let mut written: BTreeMap<&str, (Instant, u64)> = BTreeMap::new();
    let mut available: BTreeMap<&str, Instant> = BTreeMap::new();
    let mut work_writes = 0;
    for w in trace.works.iter().filter(|w| w.index.as_deref() == Some(index.as_str()) && w.at <= done_at) {
        work_writes += 1;
        written.entry(w.key.as_str()).or_insert((w.at, w.resource_version));
        if w.available {
            available.entry(w.key.as_str()).or_insert(w.at);
        }
    }
    Sample {
        name: name.to_string(),
        index,
        apply_ms,
        total_ms: rel(done_at),
        scheduled_ms: trace.scheduled.map(rel),
        index_ms: trace.index.map(rel),
        first_work_ms: written.values().map(|w| w.0).min().map(rel),
        last_work_ms: written.values().map(|w| w.0).max().map(rel),
        first_available_ms: available.values().min().copied().map(rel),
        last_available_ms: available.values().max().copied().map(rel),
        applied_ms: trace.applied.map(rel),
        works: written.len(),
        placement_writes: trace.placement_writes,
        work_writes,
        raft_entries: done_rv.saturating_sub(since),
        raft_to_first_work: written.values().map(|w| w.1).min().map(|rv| rv.saturating_sub(since)),
        work_entries: written.values().map(|w| w.1).collect::<BTreeSet<_>>().len(),
        cleanup_ms: None,
        latest_snapshot: None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rollout_latency::RolloutLatencies;

    #[test]
    fn work_milestones_count_only_the_finished_index() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let work = |key: &str, index: &str, available: bool, t: u64| WorkSeen {
            key: key.into(),
            resource_version: 100 + t,
            index: Some(index.into()),
            available,
            at: at(t),
        };
        let trace = Trace {
            placement_writes: 4,
            scheduled: None,
            index: Some(at(5)),
            applied: Some(at(40)),
            works: vec![
                work("a", "0", true, 1),
                work("a", "1", false, 10),
                work("b", "1", false, 12),
                work("a", "1", true, 20),
                work("b", "1", true, 30),
                work("b", "1", true, 99),
            ],
            done: Some((at(50), 120, "1".into())),
        };
        let s = sample("p", 1.0, t0, 100, trace);
        assert_eq!(s.index, "1");
        assert_eq!(s.works, 2);
        assert_eq!(s.work_writes, 4);
        assert_eq!(s.raft_entries, 20);
        assert_eq!((s.raft_to_first_work, s.work_entries), (Some(10), 2));
        assert_eq!((s.first_work_ms, s.last_work_ms), (Some(10.0), Some(12.0)));
        assert_eq!((s.first_available_ms, s.last_available_ms), (Some(20.0), Some(30.0)));
        assert_eq!(s.total_ms, 50.0);
        let text = RolloutLatencies { clusters: 2, updates: vec![s], ..Default::default() }.text();
        assert!(text.contains("update -> Available on 2 clusters: median 50.0 ms"), "{text}");
    }
}
