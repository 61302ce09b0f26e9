//! `fleet-bench rollout-latency`: how long the hub takes to roll resources
//! out to every member cluster, end to end — placement controller, scheduler,
//! rollout controller, Work generator, each agent's apply and status write
//! back, and the status folding that reports the result on the placement.
//!
//! - Phase A (new placement): a PickAll ClusterResourcePlacement selecting a
//!   namespace with one ConfigMap is applied; the sample is the time from the
//!   `Apply` reply to the first watch event in which the placement is
//!   `ClusterResourcePlacementAvailable` True at its generation with
//!   `--clusters` entries in `status.placementStatuses`, all Available and
//!   all at the placement's `observedResourceIndex`. The placement is then
//!   deleted and the run waits until its Works are gone.
//! - Phase B (update): one placement stays Available everywhere; the
//!   ConfigMap's data changes, which makes a new resource snapshot without
//!   changing the placement's generation. The sample is the time from the
//!   `Apply` reply of the ConfigMap to the first event in which the
//!   placement's `observedResourceIndex` is a new index, every entry has that
//!   index and is Available, and the placement is Available at its generation.
//!
//! Besides the total, each sample records milestones seen on two watches (the
//! placement and every Work of the run): the placement's `Scheduled` and
//! `Applied` conditions, the first and last Work written for the index, the
//! first and last Work reported Available by its agent, how many writes the
//! placement got (watch events) and how many Raft entries the whole hub
//! committed meanwhile (`resourceVersion` delta).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleet_api::snapshot::{IS_LATEST_LABEL, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL};
use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, DeleteRequest, KindRef, ListRequest, ReadOptions, WatchRequest};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tonic::transport::Channel;

use crate::cli::RolloutLatencyArgs;
use crate::connect::{fleet_tls, open, parse_endpoints};
use crate::error::Error;
use crate::placement_latency::SCHEDULED_CONDITION;
use crate::work_latency::Latencies;

/// Placement-level condition: every chosen cluster applied the latest resources.
pub const APPLIED_CONDITION: &str = "ClusterResourcePlacementApplied";
/// Placement-level condition: every chosen cluster has the latest resources available.
pub const AVAILABLE_CONDITION: &str = "ClusterResourcePlacementAvailable";
/// Work label: the resource snapshot index the Work was generated from.
pub const WORK_INDEX_LABEL: &str = "kubernetes-fleet.io/parent-resource-snapshot-index";
/// The ConfigMap the run puts in its namespace (and changes in phase B).
pub const CONFIG_MAP: &str = "bench-config";

const PLACEMENTS: &str = "clusterresourceplacements";
const WORKS: &str = "works";
const SNAPSHOTS: &str = "clusterresourcesnapshots";
/// How often the run polls for a deleted placement's Works.
const POLL: Duration = Duration::from_millis(50);
/// How long the run samples the hub's idle write rate before phase A.
const IDLE_WINDOW: Duration = Duration::from_secs(5);

/// The PickAll placement of the benchmark: selects `namespace`, rolls out to
/// all clusters at once (`maxUnavailable: 100%`, `unavailablePeriodSeconds: 0`).
pub fn placement_document(name: &str, namespace: &str, run: &str) -> Value {
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1",
        "kind": "ClusterResourcePlacement",
        "metadata": {"name": name, "labels": {"fleet-bench/run": run}},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": namespace}],
            "policy": {"placementType": "PickAll"},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "100%", "unavailablePeriodSeconds": 0}
            }
        }
    })
}

/// The ConfigMap the placements carry, with `value` as its data.
pub fn config_map_document(namespace: &str, value: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": namespace},
        "data": {"value": value}
    })
}

/// Namespaces the hub never places (their contents would roll out nothing).
pub fn is_reserved_namespace(name: &str) -> bool {
    name == "default" || name.starts_with("kube-") || name.starts_with("fleet-")
}

/// What one version of a placement says about its rollout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RolloutState {
    /// `ClusterResourcePlacementScheduled` is True at the placement's generation.
    pub scheduled: bool,
    /// `ClusterResourcePlacementApplied` is True at the placement's generation.
    pub applied: bool,
    /// `ClusterResourcePlacementAvailable` is True at the placement's generation.
    pub available: bool,
    /// `status.observedResourceIndex`.
    pub index: Option<String>,
    /// Entries in `status.placementStatuses`.
    pub clusters: usize,
    /// Entries whose `observedResourceIndex` equals [`RolloutState::index`].
    pub clusters_at_index: usize,
    /// Entries whose `Available` condition is True at the placement's generation.
    pub clusters_available: usize,
}

fn condition_true(conditions: Option<&Value>, type_: &str, generation: i64) -> bool {
    conditions.and_then(Value::as_array).is_some_and(|cs| {
        cs.iter().any(|c| {
            c["type"] == type_ && c["status"] == "True" && c["observedGeneration"].as_i64() == Some(generation)
        })
    })
}

impl RolloutState {
    /// Reads the state from a placement.
    pub fn of(placement: &Object) -> Self {
        let generation = placement.metadata.generation;
        let Some(status) = placement.status() else { return Self::default() };
        let conditions = status.get("conditions");
        let index = status.get("observedResourceIndex").and_then(Value::as_str).map(str::to_string);
        let entries = status.get("placementStatuses").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let at_index = entries
            .iter()
            .filter(|e| index.is_some() && e["observedResourceIndex"].as_str() == index.as_deref())
            .count();
        let available = entries.iter().filter(|e| condition_true(e.get("conditions"), "Available", generation)).count();
        Self {
            scheduled: condition_true(conditions, SCHEDULED_CONDITION, generation),
            applied: condition_true(conditions, APPLIED_CONDITION, generation),
            available: condition_true(conditions, AVAILABLE_CONDITION, generation),
            index,
            clusters: entries.len(),
            clusters_at_index: at_index,
            clusters_available: available,
        }
    }

    /// At least `clusters` entries, every one at the placement's index.
    fn everywhere(&self, clusters: usize) -> bool {
        self.index.is_some() && self.clusters >= clusters && self.clusters_at_index == self.clusters
    }

    /// Applied at the placement's generation, on every one of at least
    /// `clusters` entries at the placement's index.
    pub fn applied_on(&self, clusters: usize) -> bool {
        self.applied && self.everywhere(clusters)
    }

    /// Available at the placement's generation, on every one of at least
    /// `clusters` entries at the placement's index, each entry Available.
    pub fn done_on(&self, clusters: usize) -> bool {
        self.available && self.everywhere(clusters) && self.clusters_available == self.clusters
    }
}

/// The Available condition of a Work is True at its generation.
fn work_available(work: &Object) -> bool {
    condition_true(work.status().and_then(|s| s.get("conditions")), "Available", work.metadata.generation)
}

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
    /// Phase A's measured latencies (Apply reply → Available everywhere).
    pub fn new_placement_totals(&self) -> Latencies {
        Latencies { samples_ms: self.new_placements.iter().map(|s| s.total_ms).collect() }
    }

    /// Phase B's measured latencies (ConfigMap Apply reply → new index Available everywhere).
    pub fn update_totals(&self) -> Latencies {
        Latencies { samples_ms: self.updates.iter().map(|s| s.total_ms).collect() }
    }

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

fn hub(s: tonic::Status) -> Error {
    Error::Hub(format!("{:?}: {}", s.code(), s.message()))
}

fn kind(plural: &str) -> Option<KindRef> {
    Some(KindRef { kind: plural.into(), api_version: String::new() })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Which watch an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Placement,
    Work,
}

/// A watch event of this run, stamped when it arrived.
struct Seen {
    source: Source,
    object: Object,
    resource_version: u64,
    at: Instant,
}

/// Forwards the ADDED/MODIFIED events of `stream` whose object `keep` accepts.
async fn forward(
    mut stream: tonic::Streaming<fleet_proto::fleet::WatchEvent>,
    source: Source,
    keep: impl Fn(&Object) -> bool + Send + 'static,
    tx: mpsc::UnboundedSender<Result<Seen, Error>>,
) {
    while let Some(event) = stream.next().await {
        let at = Instant::now();
        let event = match event {
            Ok(event) => event,
            Err(status) => {
                let _ = tx.send(Err(hub(status)));
                return;
            }
        };
        if event.r#type == "DELETED" || event.r#type == "BOOKMARK" {
            continue;
        }
        let Ok(object) = Object::from_json(&event.object) else { continue };
        if !keep(&object) {
            continue;
        }
        let seen = Seen { source, object, resource_version: event.resource_version, at };
        if tx.send(Ok(seen)).is_err() {
            return;
        }
    }
    let _ = tx.send(Err(Error::Hub(format!("the {source:?} watch ended"))));
}

/// One Work event of a followed placement.
struct WorkSeen {
    key: String,
    resource_version: u64,
    index: Option<String>,
    available: bool,
    at: Instant,
}

/// What [`Run::follow`] saw of one rollout.
#[derive(Default)]
struct Trace {
    placement_writes: u64,
    scheduled: Option<Instant>,
    index: Option<Instant>,
    applied: Option<Instant>,
    works: Vec<WorkSeen>,
    done: Option<(Instant, u64, String)>,
}

/// The connection, the merged watch events and the run's settings.
struct Run {
    client: FleetClient<Channel>,
    rx: mpsc::UnboundedReceiver<Result<Seen, Error>>,
    clusters: usize,
    deadline: Duration,
    namespace: String,
    run_id: String,
}

impl Run {
    async fn apply(&mut self, document: &Value) -> Result<(f64, Instant, u64, Option<Object>), Error> {
        let bytes = serde_json::to_vec(document)?;
        let sent = Instant::now();
        let reply = self.client.apply(ApplyRequest { documents: vec![bytes], sources: vec![] }).await.map_err(hub)?;
        let replied = Instant::now();
        let reply = reply.into_inner();
        let stored = reply
            .results
            .first()
            .map(|r| Object::from_json(&r.object))
            .transpose()
            .map_err(|source| Error::Decode { what: "the applied object".into(), source })?;
        Ok((ms(replied.duration_since(sent)), replied, reply.resource_version, stored))
    }

    /// The applied index of the node the run talks to.
    async fn hub_index(&mut self) -> Result<u64, Error> {
        let request = ListRequest {
            kind: kind("namespaces"),
            namespace: String::new(),
            all_namespaces: false,
            label_selector: "fleet-bench/none=none".into(),
            read: None,
        };
        Ok(self.client.list(request).await.map_err(hub)?.into_inner().resource_version)
    }

    /// Reads events until placement `name` (at `generation`) is done on an
    /// index `accept` takes, ignoring events at or before `since`.
    async fn follow(
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

    /// Applies placement `name` and times it until done.
    async fn place(&mut self, name: &str) -> Result<(Sample, i64), Error> {
        let document = placement_document(name, &self.namespace, &self.run_id);
        let (apply_ms, replied, since, stored) = self.apply(&document).await?;
        let generation = stored
            .map(|p| p.metadata.generation)
            .ok_or_else(|| Error::Hub(format!("the Apply of placement {name} returned no object")))?;
        let trace = self.follow(name, generation, since, &|_| true).await?;
        Ok((sample(name, apply_ms, replied, since, trace), generation))
    }

    /// Deletes placement `name`; returns when none of its Works is left.
    async fn remove(&mut self, name: &str) -> Result<f64, Error> {
        let started = Instant::now();
        let request =
            DeleteRequest { kind: kind(PLACEMENTS), namespace: String::new(), name: name.into(), resource_version: 0 };
        let since = match self.client.delete(request).await {
            Ok(reply) => reply.into_inner().resource_version,
            Err(status) if status.code() == tonic::Code::NotFound => 0,
            Err(status) => return Err(hub(status)),
        };
        let deadline = started + self.deadline;
        loop {
            let request = ListRequest {
                kind: kind(WORKS),
                namespace: String::new(),
                all_namespaces: true,
                label_selector: format!("{PARENT_PLACEMENT_LABEL}={name}"),
                read: Some(ReadOptions { min_resource_version: since, consistent: false }),
            };
            if self.client.list(request).await.map_err(hub)?.into_inner().items.is_empty() {
                return Ok(ms(started.elapsed()));
            }
            if Instant::now() >= deadline {
                return Err(Error::Deadline {
                    what: format!("the Works of deleted placement {name} gone"),
                    after: self.deadline,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The index of placement `name`'s latest resource snapshot.
    async fn latest_snapshot(&mut self, name: &str) -> Result<Option<String>, Error> {
        let request = ListRequest {
            kind: kind(SNAPSHOTS),
            namespace: String::new(),
            all_namespaces: false,
            label_selector: format!("{PARENT_PLACEMENT_LABEL}={name},{IS_LATEST_LABEL}=true"),
            read: Some(ReadOptions { min_resource_version: 0, consistent: true }),
        };
        let items = self.client.list(request).await.map_err(hub)?.into_inner().items;
        let mut indexes = Vec::new();
        for item in items {
            let snapshot = Object::from_json(&item)
                .map_err(|source| Error::Decode { what: format!("a resource snapshot of {name}"), source })?;
            indexes.extend(snapshot.metadata.labels.get(RESOURCE_INDEX_LABEL).cloned());
        }
        Ok(indexes.into_iter().max_by_key(|i| i.parse::<u64>().unwrap_or(0)))
    }

    async fn delete(&mut self, plural: &str, namespace: &str, name: &str) -> Result<(), Error> {
        let request =
            DeleteRequest { kind: kind(plural), namespace: namespace.into(), name: name.into(), resource_version: 0 };
        match self.client.delete(request).await {
            Ok(_) => Ok(()),
            Err(status) if status.code() == tonic::Code::NotFound => Ok(()),
            Err(status) => {
                Err(Error::Hub(format!("delete {plural}/{name}: {:?}: {}", status.code(), status.message())))
            }
        }
    }
}

/// Turns a trace into a sample: milestones relative to `replied`, Work
/// milestones for the index the rollout finished on.
fn sample(name: &str, apply_ms: f64, replied: Instant, since: u64, trace: Trace) -> Sample {
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
        work_entries: written.values().map(|w| w.1).collect::<std::collections::BTreeSet<_>>().len(),
        cleanup_ms: None,
        latest_snapshot: None,
    }
}

/// Runs both phases and cleans up (also after a failure).
pub async fn run(args: &RolloutLatencyArgs) -> Result<RolloutLatencies, Error> {
    if args.repeat == 0 {
        return Err(Error::Invalid { flag: "--repeat", value: "0".into(), reason: "must be at least 1".into() });
    }
    if args.clusters == 0 {
        return Err(Error::Invalid { flag: "--clusters", value: "0".into(), reason: "must be at least 1".into() });
    }
    if is_reserved_namespace(&args.namespace) {
        return Err(Error::Invalid {
            flag: "--namespace",
            value: args.namespace.clone(),
            reason: "placements never select `default`, `kube-*` or `fleet-*` namespaces".into(),
        });
    }
    let endpoints = parse_endpoints(&args.connect.endpoints)?;
    let tls = fleet_tls(args.connect.tls_dir.as_deref().ok_or(Error::TlsDirMissing)?)?;
    let channel =
        open(&endpoints[0], Some(tls), Duration::from_secs(args.connect.request_timeout_seconds.max(1))).await?;
    let mut client = FleetClient::new(channel);

    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.namespace}});
    let documents =
        vec![serde_json::to_vec(&namespace)?, serde_json::to_vec(&config_map_document(&args.namespace, "initial"))?];
    let reply = client.apply(ApplyRequest { documents, sources: vec![] }).await.map_err(hub)?.into_inner();
    let created_namespace = reply.results.first().is_some_and(|r| r.action == "created");
    let run_id = format!("{}-{}", std::process::id(), reply.resource_version);
    let prefix = format!("rollout-{run_id}-");

    // Two watches from the namespace write on, merged into one channel.
    let (tx, rx) = mpsc::unbounded_channel();
    let mut watchers = Vec::new();
    for (plural, source) in [(PLACEMENTS, Source::Placement), (WORKS, Source::Work)] {
        let request = WatchRequest {
            kind: kind(plural),
            namespace: String::new(),
            all_namespaces: source == Source::Work,
            label_selector: String::new(),
            resource_version: reply.resource_version,
            min_resource_version: reply.resource_version,
        };
        let stream = client.watch(request).await.map_err(hub)?.into_inner();
        let prefix = prefix.clone();
        let keep = move |o: &Object| match source {
            Source::Placement => o.metadata.name.starts_with(&prefix),
            Source::Work => o.metadata.labels.get(PARENT_PLACEMENT_LABEL).is_some_and(|p| p.starts_with(&prefix)),
        };
        watchers.push(tokio::spawn(forward(stream, source, keep, tx.clone())));
    }
    drop(tx);

    let mut run = Run {
        client,
        rx,
        clusters: args.clusters,
        deadline: Duration::from_secs(args.timeout_seconds.max(1)),
        namespace: args.namespace.clone(),
        run_id,
    };
    let mut result = RolloutLatencies { clusters: args.clusters, ..RolloutLatencies::default() };
    let update_name = format!("{prefix}update");
    let measured = measure(&mut run, args, &prefix, &update_name, &mut result).await;
    for w in &watchers {
        w.abort();
    }

    // Clean up whatever is left, even after a failure; report the first error.
    let mut cleaned = Ok(());
    for name in (0..args.repeat).map(|i| format!("{prefix}new-{i}")).chain([update_name]) {
        if let Err(e) = run.delete(PLACEMENTS, "", &name).await {
            cleaned = cleaned.and(Err(e));
        }
    }
    let last = if created_namespace {
        run.delete("namespaces", "", &args.namespace).await
    } else {
        run.delete("configmaps", &args.namespace, CONFIG_MAP).await
    };
    measured?;
    cleaned?;
    last?;
    Ok(result)
}

async fn measure(
    run: &mut Run,
    args: &RolloutLatencyArgs,
    prefix: &str,
    update_name: &str,
    result: &mut RolloutLatencies,
) -> Result<(), Error> {
    let before = run.hub_index().await?;
    let idle_started = Instant::now();
    tokio::time::sleep(IDLE_WINDOW).await;
    let after = run.hub_index().await?;
    result.idle_entries_per_second = after.saturating_sub(before) as f64 / idle_started.elapsed().as_secs_f64();

    // Phase A: new placements, each removed (Works gone) before the next.
    for i in 0..args.repeat {
        let name = format!("{prefix}new-{i}");
        let (mut sample, _) = run.place(&name).await?;
        sample.cleanup_ms = Some(run.remove(&name).await?);
        eprintln!("phase A run {i}: {:.0} ms", sample.total_ms);
        result.new_placements.push(sample);
    }

    // Phase B: one placement, its ConfigMap changed R times.
    let (initial, generation) = run.place(update_name).await?;
    let mut index = initial.index.clone();
    result.initial = Some(initial);
    for i in 0..args.repeat {
        let value = format!("update-{i}-{}", run.run_id);
        let (apply_ms, replied, since, _) = run.apply(&config_map_document(&args.namespace, &value)).await?;
        let previous = index.clone();
        let trace = run.follow(update_name, generation, since, &|i| i != previous).await?;
        let mut sample = sample(update_name, apply_ms, replied, since, trace);
        sample.latest_snapshot = run.latest_snapshot(update_name).await?;
        index = sample.index.clone();
        eprintln!("phase B run {i}: {:.0} ms (index {index})", sample.total_ms);
        result.updates.push(sample);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(generation: i64, status: Value) -> Object {
        let mut doc = placement_document("p", "ns", "r");
        doc["metadata"]["generation"] = json!(generation);
        doc["status"] = status;
        Object::from_json(&serde_json::to_vec(&doc).unwrap()).unwrap()
    }

    fn entry(index: &str, available: bool, generation: i64) -> Value {
        let status = if available { "True" } else { "False" };
        json!({"clusterName": "c", "observedResourceIndex": index,
               "conditions": [{"type": "Available", "status": status, "observedGeneration": generation}]})
    }

    fn status(index: &str, available_gen: i64, entries: Vec<Value>) -> Value {
        json!({
            "observedResourceIndex": index,
            "conditions": [
                {"type": SCHEDULED_CONDITION, "status": "True", "observedGeneration": available_gen},
                {"type": APPLIED_CONDITION, "status": "True", "observedGeneration": available_gen},
                {"type": AVAILABLE_CONDITION, "status": "True", "observedGeneration": available_gen},
            ],
            "placementStatuses": entries,
        })
    }

    #[test]
    fn done_needs_every_entry_at_the_index_and_available_at_the_generation() {
        let done = placement(2, status("1", 2, vec![entry("1", true, 2), entry("1", true, 2)]));
        let state = RolloutState::of(&done);
        assert!(state.scheduled && state.applied && state.available);
        assert!(state.done_on(2));
        assert!(!state.done_on(3), "too few entries");

        let old_generation = placement(3, status("1", 2, vec![entry("1", true, 3), entry("1", true, 3)]));
        assert!(!RolloutState::of(&old_generation).done_on(2));

        let lagging = placement(2, status("2", 2, vec![entry("2", true, 2), entry("1", true, 2)]));
        let state = RolloutState::of(&lagging);
        assert_eq!(state.clusters_at_index, 1);
        assert!(!state.done_on(2) && !state.applied_on(2));

        let unavailable = placement(2, status("1", 2, vec![entry("1", true, 2), entry("1", false, 2)]));
        assert!(!RolloutState::of(&unavailable).done_on(2));
        assert!(RolloutState::of(&unavailable).applied_on(2));

        assert_eq!(RolloutState::of(&placement(1, json!({}))), RolloutState::default());
    }

    #[test]
    fn the_document_picks_all_and_rolls_out_at_once() {
        let doc = placement_document("p", "ns", "r");
        assert_eq!(doc["spec"]["policy"]["placementType"], "PickAll");
        assert_eq!(doc["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], "100%");
        assert_eq!(doc["spec"]["strategy"]["rollingUpdate"]["unavailablePeriodSeconds"], 0);
        assert_eq!(doc["spec"]["resourceSelectors"][0]["name"], "ns");
        assert_eq!(config_map_document("ns", "v")["data"]["value"], "v");
        assert!(is_reserved_namespace("fleet-bench-rollout") && is_reserved_namespace("default"));
        assert!(!is_reserved_namespace("bench-rollout"));
    }

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
