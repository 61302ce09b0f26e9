//! The text report of a rollout-latency run: one table per phase, a row per
//! sample and a median row, then the medians of the totals.

use super::{RolloutLatencies, Sample};
use crate::work_latency::Latencies;

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.0}"))
}

fn median_of(samples: &[Sample], f: impl Fn(&Sample) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = samples.iter().filter_map(f).collect();
    (!values.is_empty()).then(|| Latencies { samples_ms: values }.median())
}

fn table(title: &str, samples: &[Sample], first_column: &str) -> String {
    let mut out = format!("{title}\n");
    out.push_str(&format!(
        "  {:>6} {:>5} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}\n",
        "run",
        "index",
        "TOTAL",
        "apply",
        first_column,
        "work1",
        "workN",
        "avail1",
        "availN",
        "applied",
        "works",
        "crpW",
        "workW",
        "raft",
        "raftW1",
        "workE",
        "cleanup"
    ));
    let first = |s: &Sample| if first_column == "sched" { s.scheduled_ms } else { s.index_ms };
    let row = |label: String, s: &Sample| {
        format!(
            "  {label:>6} {:>5} {:>8.0} {:>7.1} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>5} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}\n",
            s.index,
            s.total_ms,
            s.apply_ms,
            fmt_opt(first(s)),
            fmt_opt(s.first_work_ms),
            fmt_opt(s.last_work_ms),
            fmt_opt(s.first_available_ms),
            fmt_opt(s.last_available_ms),
            fmt_opt(s.applied_ms),
            s.works,
            s.placement_writes,
            s.work_writes,
            s.raft_entries,
            s.raft_to_first_work.map_or_else(|| "-".to_string(), |n| n.to_string()),
            s.work_entries,
            fmt_opt(s.cleanup_ms),
        )
    };
    for (i, s) in samples.iter().enumerate() {
        out.push_str(&row(i.to_string(), s));
    }
    if samples.len() > 1 {
        let m = |f: &dyn Fn(&Sample) -> Option<f64>| median_of(samples, f);
        let median = Sample {
            index: "-".into(),
            total_ms: m(&|s| Some(s.total_ms)).unwrap_or(0.0),
            apply_ms: m(&|s| Some(s.apply_ms)).unwrap_or(0.0),
            scheduled_ms: m(&|s| s.scheduled_ms),
            index_ms: m(&|s| s.index_ms),
            first_work_ms: m(&|s| s.first_work_ms),
            last_work_ms: m(&|s| s.last_work_ms),
            first_available_ms: m(&|s| s.first_available_ms),
            last_available_ms: m(&|s| s.last_available_ms),
            applied_ms: m(&|s| s.applied_ms),
            works: m(&|s| Some(s.works as f64)).unwrap_or(0.0) as usize,
            placement_writes: m(&|s| Some(s.placement_writes as f64)).unwrap_or(0.0) as u64,
            work_writes: m(&|s| Some(s.work_writes as f64)).unwrap_or(0.0) as u64,
            raft_entries: m(&|s| Some(s.raft_entries as f64)).unwrap_or(0.0) as u64,
            raft_to_first_work: m(&|s| s.raft_to_first_work.map(|n| n as f64)).map(|n| n as u64),
            work_entries: m(&|s| Some(s.work_entries as f64)).unwrap_or(0.0) as usize,
            cleanup_ms: m(&|s| s.cleanup_ms),
            ..Sample::default()
        };
        out.push_str(&row("median".into(), &median));
    }
    out
}

impl RolloutLatencies {
    /// Both tables (milliseconds from the `Apply` reply), then the medians.
    pub fn text(&self) -> String {
        let mut out = format!(
            "columns: ms from the Apply reply to: TOTAL done; sched/index = placement Scheduled / new index in its status; \
             work1/workN = first/last Work written; avail1/availN = first/last Work Available (agent); \
             applied = placement Applied everywhere; works = Works written; crpW/workW = placement/Work writes; \
             raft = Raft entries committed meanwhile; raftW1 = of those, before the first Work; \
             workE = Raft entries that created/updated the Works; cleanup = Delete -> Works gone\n\
             hub idle: {:.1} Raft entries/s\n",
            self.idle_entries_per_second
        );
        let a = format!("phase A: new PickAll placement, Apply reply -> Available on {} clusters", self.clusters);
        out.push_str(&table(&a, &self.new_placements, "sched"));
        if let Some(initial) = &self.initial {
            out.push_str(&table(
                "phase B: the placement updated below, placed first",
                std::slice::from_ref(initial),
                "sched",
            ));
        }
        let b = format!("phase B: ConfigMap change, Apply reply -> new index Available on {} clusters", self.clusters);
        out.push_str(&table(&b, &self.updates, "index"));
        for s in &self.updates {
            if s.latest_snapshot.as_deref().is_some_and(|latest| latest != s.index) {
                out.push_str(&format!(
                    "warning: update to index {} finished but the latest snapshot is {:?}\n",
                    s.index, s.latest_snapshot
                ));
            }
        }
        let (a, b) = (self.new_placement_totals(), self.update_totals());
        out.push_str(&format!(
            "new placement -> Available on {} clusters: median {:.1} ms (max {:.1} ms, {} runs); \
             update -> Available on {} clusters: median {:.1} ms (max {:.1} ms, {} runs)\n",
            self.clusters,
            a.median(),
            a.max(),
            a.samples_ms.len(),
            self.clusters,
            b.median(),
            b.max(),
            b.samples_ms.len(),
        ));
        out
    }
}
