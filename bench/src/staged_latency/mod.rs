//! `fleet-bench staged-latency`: how long a staged update run takes from
//! its `Apply` to `Succeeded`, and how much of that is the hub's
//! controllers rather than the agents ([`timeline`] says how time is split).
//!
//! The tool applies a Namespace with one ConfigMap, an External PickAll
//! ClusterResourcePlacement of it and a ClusterStagedUpdateStrategy with one
//! stage per `--stage-values` value (clusters labelled `--stage-label` with
//! it, in that order), `maxConcurrency` `--max-concurrency` and no waits or
//! approvals. Once the placement has a binding per cluster it runs
//! `--repeat` ClusterStagedUpdateRuns, each naming a new resource snapshot
//! (the ConfigMap changes between runs), timing each from the `Apply` reply
//! to the first watch event with `Succeeded` True. Three watches, opened
//! before the first run, stamp every event: the runs, the placement's
//! bindings (moved to the run's snapshot) and its Works (written for the
//! run's index, then reported Available). Everything is deleted at the end.

mod timeline;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use fleet_api::conditions::find;
use fleet_api::snapshot::{IS_LATEST_LABEL, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL};
use fleet_api::staged::run_status_of;
use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, ListRequest, ReadOptions, WatchRequest};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tonic::transport::Channel;

use crate::cli::StagedLatencyArgs;
use crate::connect::fleet_client;
use crate::error::Error;
use crate::watching::{delete, forward, hub, kind, ms};

pub use timeline::{covered, sample, ClusterTimes, RunSample};

/// How often the tool polls while preparing a run.
const POLL: Duration = Duration::from_millis(50);
/// Work label: the resource snapshot index the Work was rendered from.
const WORK_INDEX_LABEL: &str = "kubernetes-fleet.io/parent-resource-snapshot-index";
/// The namespace prefix of a member cluster's Works.
const MEMBER_NAMESPACE_PREFIX: &str = "fleet-member-";

/// Every run's sample.
#[derive(Debug, Clone, Default)]
pub struct StagedLatencies {
    /// The clusters each run updated.
    pub clusters: usize,
    /// The stages' `maxConcurrency`.
    pub max_concurrency: String,
    /// One sample per run, in order.
    pub runs: Vec<RunSample>,
}

impl StagedLatencies {
    /// A table of the runs and their medians.
    pub fn text(&self) -> String {
        let mut out = format!(
            "staged update runs over {} clusters, {} stages, maxConcurrency {}, no waits (ms after the run's Apply reply)\n",
            self.clusters,
            self.runs.first().map_or(0, |r| r.stages.len()),
            self.max_concurrency
        );
        out.push_str("run  TOTAL  init  agents  controller  stages (first bind → last available)  finish  raft\n");
        for (i, r) in self.runs.iter().enumerate() {
            let stages: Vec<String> = r.stages.iter().map(|(a, b)| format!("{a:.0}→{b:.0}")).collect();
            let _ = writeln!(
                out,
                "{i:>3}  {:>5.0}  {:>4.0}  {:>6.0}  {:>10.0}  {:<36}  {:>6.0}  {:>4}",
                r.total_ms,
                r.initialized_ms,
                r.agents_ms,
                r.controller_ms,
                stages.join(", "),
                r.finish_ms,
                r.raft_entries
            );
        }
        let median = |f: fn(&RunSample) -> f64| {
            let mut v: Vec<f64> = self.runs.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let _ = writeln!(
            out,
            "median: TOTAL {:.0} ms = agents {:.0} ms + controller {:.0} ms",
            median(|r| r.total_ms),
            median(|r| r.agents_ms),
            median(|r| r.controller_ms)
        );
        out
    }
}

/// Which watch an event came from, with the object and when it arrived.
struct Seen {
    source: &'static str,
    object: Object,
    resource_version: u64,
    at: Instant,
}

/// Runs the benchmark and cleans up (also after a failure).
pub async fn run(args: &StagedLatencyArgs) -> Result<StagedLatencies, Error> {
    if args.clusters == 0 || args.repeat == 0 || args.stage_values.is_empty() {
        let reason = "--clusters and --repeat must be at least 1, --stage-values not empty".to_string();
        return Err(Error::Invalid { flag: "--clusters", value: args.clusters.to_string(), reason });
    }
    let mut client = fleet_client(&args.connect).await?;
    let name = format!("staged-{}", std::process::id());
    let documents = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.namespace}}),
        config_map(&args.namespace, "0"),
        placement(&name, &args.namespace),
        strategy(&name, args),
    ];
    let since = apply(&mut client, &documents).await?.1;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut watchers = Vec::new();
    for (plural, all_namespaces) in
        [("clusterstagedupdateruns", false), ("clusterresourcebindings", false), ("works", true)]
    {
        let request = WatchRequest {
            kind: kind(plural),
            namespace: String::new(),
            all_namespaces,
            label_selector: String::new(),
            resource_version: since,
            min_resource_version: since,
        };
        let stream = client.watch(request).await.map_err(hub)?.into_inner();
        let placement = name.clone();
        let pick = move |object: Object, resource_version, at| {
            let mine = object.metadata.labels.get(PARENT_PLACEMENT_LABEL) == Some(&placement)
                || object.metadata.name.starts_with(&format!("{placement}-r"));
            mine.then_some(Seen { source: plural, object, resource_version, at })
        };
        watchers.push(tokio::spawn(forward(stream, plural.to_string(), pick, tx.clone())));
    }
    drop(tx);
    let mut session = Session { client, rx, name: name.clone(), deadline: Duration::from_secs(args.timeout_seconds) };
    let measured = session.measure(args).await;
    for w in &watchers {
        w.abort();
    }
    let mut cleaned = Ok(());
    for i in 0..args.repeat {
        cleaned =
            cleaned.and(delete(&mut session.client, "clusterstagedupdateruns", "", &format!("{name}-r{i}")).await);
    }
    for (plural, object) in [("clusterresourceplacements", &name), ("clusterstagedupdatestrategies", &name)] {
        cleaned = cleaned.and(delete(&mut session.client, plural, "", object).await);
    }
    cleaned = cleaned.and(delete(&mut session.client, "namespaces", "", &args.namespace).await);
    let runs = measured?;
    cleaned?;
    Ok(StagedLatencies { clusters: args.clusters, max_concurrency: args.max_concurrency.clone(), runs })
}

/// The run's connection and watch events.
struct Session {
    client: FleetClient<Channel>,
    rx: mpsc::UnboundedReceiver<Result<Seen, Error>>,
    name: String,
    deadline: Duration,
}

impl Session {
    async fn measure(&mut self, args: &StagedLatencyArgs) -> Result<Vec<RunSample>, Error> {
        let name = self.name.clone();
        let selector = format!("{PARENT_PLACEMENT_LABEL}={name}");
        self.poll("a binding per cluster", |c| {
            let selector = selector.clone();
            async move { Ok(list(c, "clusterresourcebindings", &selector).await?.len() >= args.clusters) }
        })
        .await?;
        let mut samples = Vec::new();
        for i in 0..args.repeat {
            if i > 0 {
                apply(&mut self.client, &[config_map(&args.namespace, &i.to_string())]).await?;
            }
            let latest = format!("{PARENT_PLACEMENT_LABEL}={name},{IS_LATEST_LABEL}=true");
            let want = i.to_string();
            self.poll(&format!("resource snapshot {i}"), |c| {
                let (latest, want) = (latest.clone(), want.clone());
                async move {
                    let snapshots = list(c, "clusterresourcesnapshots", &latest).await?;
                    Ok(snapshots.iter().any(|s| s.metadata.labels.get(RESOURCE_INDEX_LABEL) == Some(&want)))
                }
            })
            .await?;
            let run = json!({
                "apiVersion": "placement.kubernetes-fleet.io/v1beta1",
                "kind": "ClusterStagedUpdateRun",
                "metadata": {"name": format!("{name}-r{i}")},
                "spec": {"placementName": name, "resourceSnapshotIndex": i.to_string(),
                         "stagedRolloutStrategyName": name, "state": "Run"}
            });
            let (replied, since) = apply(&mut self.client, &[run]).await?;
            let sample = self.follow(&format!("{name}-r{i}"), i, replied, since).await?;
            eprintln!(
                "run {i}: {:.0} ms (agents {:.0}, controller {:.0})",
                sample.total_ms, sample.agents_ms, sample.controller_ms
            );
            samples.push(sample);
        }
        Ok(samples)
    }

    /// Reads events until run `run` (rolling out `index`) succeeded.
    async fn follow(&mut self, run: &str, index: usize, replied: Instant, since: u64) -> Result<RunSample, Error> {
        let rel = |at: Instant| ms(at.saturating_duration_since(replied));
        let snapshot = format!("{}-{index}-snapshot", self.name);
        let index = index.to_string();
        let mut clusters: BTreeMap<String, ClusterTimes> = BTreeMap::new();
        let mut initialized = None;
        let rx = &mut self.rx;
        let wait = async {
            while let Some(seen) = rx.recv().await {
                let seen = seen?;
                if seen.resource_version <= since {
                    continue;
                }
                let at = rel(seen.at);
                match seen.source {
                    "clusterstagedupdateruns" if seen.object.metadata.name == run => {
                        let status = run_status_of(&seen.object);
                        if find(&status.conditions, "Initialized").is_some_and(|c| c.is_true()) {
                            initialized.get_or_insert(at);
                        }
                        match find(&status.conditions, "Succeeded") {
                            Some(c) if c.is_true() => return Ok((status, at, seen.resource_version)),
                            Some(c) => return Err(Error::Hub(format!("run {run} failed: {}", c.message))),
                            None => {}
                        }
                    }
                    "clusterresourcebindings" => {
                        let spec = fleet_api::binding::spec_of(&seen.object);
                        if spec.state == fleet_api::binding::STATE_BOUND && spec.resource_snapshot_name == snapshot {
                            clusters.entry(spec.target_cluster).or_default().bound.get_or_insert(at);
                        }
                    }
                    "works" if seen.object.metadata.labels.get(WORK_INDEX_LABEL) == Some(&index) => {
                        let namespace = seen.object.metadata.namespace.clone().unwrap_or_default();
                        let cluster = namespace.trim_start_matches(MEMBER_NAMESPACE_PREFIX).to_string();
                        let times = clusters.entry(cluster).or_default();
                        times.work.get_or_insert(at);
                        if work_available(&seen.object) {
                            times.available.get_or_insert(at);
                        }
                    }
                    _ => {}
                }
            }
            Err(Error::Hub("the watches ended".into()))
        };
        let (status, succeeded, done_rv) = tokio::time::timeout(self.deadline, wait)
            .await
            .map_err(|_| Error::Deadline { what: format!("run {run} Succeeded"), after: self.deadline })??;
        let stages: Vec<Vec<&str>> =
            status.stages_status.iter().map(|s| s.clusters.iter().map(|c| c.cluster_name.as_str()).collect()).collect();
        Ok(sample(initialized.unwrap_or(0.0), succeeded, &stages, &clusters, done_rv.saturating_sub(since)))
    }

    /// Polls `probe` every 50 ms until it says yes, or fails after the deadline.
    async fn poll<F, Fut>(&mut self, what: &str, mut probe: F) -> Result<(), Error>
    where
        F: FnMut(FleetClient<Channel>) -> Fut,
        Fut: std::future::Future<Output = Result<bool, Error>>,
    {
        let deadline = Instant::now() + self.deadline;
        while !probe(self.client.clone()).await? {
            if Instant::now() >= deadline {
                return Err(Error::Deadline { what: what.to_string(), after: self.deadline });
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }
}

/// The Available condition of a Work is True at its generation.
fn work_available(work: &Object) -> bool {
    let conditions = work.status().and_then(|s| s.get("conditions")).and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| {
        c["type"] == "Available"
            && c["status"] == "True"
            && c["observedGeneration"].as_i64() == Some(work.metadata.generation)
    })
}

async fn apply(client: &mut FleetClient<Channel>, documents: &[Value]) -> Result<(Instant, u64), Error> {
    let documents = documents.iter().map(serde_json::to_vec).collect::<Result<Vec<_>, _>>()?;
    let reply = client.apply(ApplyRequest { documents, sources: vec![] }).await.map_err(hub)?;
    Ok((Instant::now(), reply.into_inner().resource_version))
}

async fn list(mut client: FleetClient<Channel>, plural: &str, selector: &str) -> Result<Vec<Object>, Error> {
    let request = ListRequest {
        kind: kind(plural),
        namespace: String::new(),
        all_namespaces: true,
        label_selector: selector.to_string(),
        read: Some(ReadOptions { min_resource_version: 0, consistent: true }),
    };
    let items = client.list(request).await.map_err(hub)?.into_inner().items;
    items
        .iter()
        .map(|b| Object::from_json(b).map_err(|source| Error::Decode { what: format!("a {plural} item"), source }))
        .collect()
}

fn config_map(namespace: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-config", "namespace": namespace},
           "data": {"value": value}})
}

fn placement(name: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1",
        "kind": "ClusterResourcePlacement",
        "metadata": {"name": name},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": namespace}],
            "policy": {"placementType": "PickAll"},
            "strategy": {"type": "External"}
        }
    })
}

fn strategy(name: &str, args: &StagedLatencyArgs) -> Value {
    let concurrency: Value = match args.max_concurrency.parse::<u64>() {
        Ok(n) => json!(n),
        Err(_) => json!(args.max_concurrency),
    };
    let stages: Vec<Value> = args
        .stage_values
        .iter()
        .map(|v| {
            json!({"name": v.to_ascii_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), ""),
                   "labelSelector": {"matchLabels": {args.stage_label.clone(): v}},
                   "maxConcurrency": concurrency})
        })
        .collect();
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1",
        "kind": "ClusterStagedUpdateStrategy",
        "metadata": {"name": name},
        "spec": {"stages": stages}
    })
}
