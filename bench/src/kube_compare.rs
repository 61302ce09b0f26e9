//! `fleet-bench kube-compare`: the Kubernetes-compatible API next to gRPC,
//! in one invocation against one hub node, so the result is a ratio.
//!
//! 1. List: `--list-clients` clients list ClusterResourcePlacements for
//!    `--seconds`, each with one request in flight, the way kubectl does
//!    (`GET .../clusterresourceplacements`, no resourceVersion: a
//!    linearizable read) and through gRPC `List` with `consistent: true`
//!    (the same guarantee).
//! 2. Watch fan-out: `--watchers` watches of the placements (each on its own
//!    connection, as separate kubectl/client-go processes would be) while one
//!    placement's label changes `--changes` times; every change must reach
//!    every watcher. Reported: events delivered per second and the latency
//!    from the write's start to each watcher's receipt.

use std::time::{Duration, Instant};

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, ListRequest, ReadOptions, WatchRequest};
use futures::StreamExt;
use hdrhistogram::Histogram;
use http_body_util::BodyExt;
use serde_json::Value;
use tonic::transport::Channel;

use crate::cli::KubeCompareArgs;
use crate::connect::{fleet_tls, open, parse_endpoints};
use crate::error::Error;
use crate::kube_http::{tls_config, KubeClient};
use crate::load::new_histogram as histogram;
use crate::placement_latency::placement_selecting;
use crate::watching::{delete, hub, kind};

const PLACEMENTS: &str = "clusterresourceplacements";
const PATH: &str = "/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourceplacements";
const ROUND_LABEL: &str = "fleet-bench/round";

/// Throughput and latency of one measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// Requests (lists) or events (watches) per second.
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Both transports, both measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub list_grpc: Measure,
    pub list_kube: Measure,
    pub watch_grpc: Measure,
    pub watch_kube: Measure,
    pub watchers: usize,
    pub changes: usize,
    pub list_clients: usize,
    pub placements: usize,
}

impl Comparison {
    /// The report, with kube/gRPC ratios.
    pub fn text(&self) -> String {
        let row = |what: &str, m: &Measure, unit: &str| {
            format!("{what:<12} {:>10.0} {unit}/s  p50 {:>8.2} ms  p99 {:>8.2} ms\n", m.per_second, m.p50_ms, m.p99_ms)
        };
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let mut out = format!("list of {} placements, {} clients:\n", self.placements, self.list_clients);
        out += &row("  grpc", &self.list_grpc, "req");
        out += &row("  kube", &self.list_kube, "req");
        out += &format!(
            "  kube/grpc    throughput x{:.2}  p99 x{:.2}\n",
            ratio(self.list_kube.per_second, self.list_grpc.per_second),
            ratio(self.list_kube.p99_ms, self.list_grpc.p99_ms)
        );
        out += &format!("watch fan-out, {} watchers x {} changes:\n", self.watchers, self.changes);
        out += &row("  grpc", &self.watch_grpc, "events");
        out += &row("  kube", &self.watch_kube, "events");
        out += &format!(
            "  kube/grpc    throughput x{:.2}  p99 x{:.2}\n",
            ratio(self.watch_kube.per_second, self.watch_grpc.per_second),
            ratio(self.watch_kube.p99_ms, self.watch_grpc.p99_ms)
        );
        out
    }
}

fn measure(h: &Histogram<u64>, count: u64, elapsed: Duration) -> Measure {
    Measure {
        per_second: count as f64 / elapsed.as_secs_f64().max(1e-9),
        p50_ms: h.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

async fn apply(client: &mut FleetClient<Channel>, document: &Value) -> Result<u64, Error> {
    let request = ApplyRequest { documents: vec![serde_json::to_vec(document)?], sources: vec![] };
    Ok(client.apply(request).await.map_err(hub)?.into_inner().resource_version)
}

/// Runs the comparison.
pub async fn run(args: &KubeCompareArgs) -> Result<Comparison, Error> {
    let endpoint = parse_endpoints(&args.endpoints)?.remove(0);
    let dir = args.tls_dir.as_deref().ok_or(Error::TlsDirMissing)?;
    let grpc_tls = fleet_tls(dir)?;
    let kube_tls = tls_config(dir)?;
    let long = Duration::from_secs(600);
    let mut writer = FleetClient::new(open(&endpoint, Some(grpc_tls.clone()), long).await?);
    let names: Vec<String> = (0..args.placements.max(1)).map(|i| format!("bench-kube-{i}")).collect();
    let policy = serde_json::json!({"placementType": "PickN", "numberOfClusters": 0});
    for name in &names {
        apply(&mut writer, &placement_selecting(name, "bench-kube", "kube-compare", policy.clone())).await?;
    }
    let seconds = Duration::from_secs(args.seconds.max(1));

    // Lists.
    let mut grpc_clients = Vec::new();
    let mut kube_clients = Vec::new();
    for _ in 0..args.list_clients.max(1) {
        grpc_clients.push(FleetClient::new(open(&endpoint, Some(grpc_tls.clone()), long).await?));
        kube_clients.push(KubeClient::connect(&args.kube, kube_tls.clone()).await?);
    }
    let list_grpc = timed_loop(grpc_clients, seconds, |mut c: FleetClient<Channel>| async move {
        let request = ListRequest {
            kind: kind(PLACEMENTS),
            read: Some(ReadOptions { consistent: true, min_resource_version: 0 }),
            ..ListRequest::default()
        };
        let result = c.list(request).await.map(|_| ()).map_err(hub);
        (c, result)
    })
    .await?;
    let list_kube = timed_loop(kube_clients, seconds, |mut c: KubeClient| async move {
        let result = c.get(PATH).await.map(|_| ());
        (c, result)
    })
    .await?;

    // Watch fan-out.
    let target = placement_selecting(&names[0], "bench-kube", "kube-compare", policy.clone());
    let mut grpc_watchers = Vec::new();
    let from = apply(&mut writer, &target).await?;
    for _ in 0..args.watchers {
        let mut client = FleetClient::new(open(&endpoint, Some(grpc_tls.clone()), long).await?);
        let request = WatchRequest { kind: kind(PLACEMENTS), resource_version: from, ..WatchRequest::default() };
        let stream = client.watch(request).await.map_err(hub)?.into_inner();
        grpc_watchers.push(
            stream
                .filter_map(|e| async move { e.ok().and_then(|e| serde_json::from_slice::<Value>(&e.object).ok()) })
                .boxed(),
        );
    }
    let watch_grpc = fan_out(&mut writer, &target, grpc_watchers, args.changes, "grpc").await?;
    let from = apply(&mut writer, &target).await?;
    let mut kube_watchers = Vec::new();
    for _ in 0..args.watchers {
        let mut client = KubeClient::connect(&args.kube, kube_tls.clone()).await?;
        let body = client.stream(&format!("{PATH}?watch=true&resourceVersion={from}")).await?;
        kube_watchers.push(watch_lines(body, client));
    }
    let watch_kube = fan_out(&mut writer, &target, kube_watchers, args.changes, "kube").await?;
    for name in &names {
        delete(&mut writer, PLACEMENTS, "", name).await?;
    }
    Ok(Comparison {
        list_grpc,
        list_kube,
        watch_grpc,
        watch_kube,
        watchers: args.watchers,
        changes: args.changes,
        list_clients: args.list_clients.max(1),
        placements: names.len(),
    })
}

/// The objects of a kube watch body, one per event line.
fn watch_lines(body: hyper::body::Incoming, client: KubeClient) -> futures::stream::BoxStream<'static, Value> {
    let frames =
        futures::stream::unfold((body, Vec::<u8>::new(), client), |(mut body, mut buffer, client)| async move {
            loop {
                if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    let event: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
                    return Some((event.get("object").cloned().unwrap_or(Value::Null), (body, buffer, client)));
                }
                match body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            buffer.extend_from_slice(&data);
                        }
                    }
                    _ => return None,
                }
            }
        });
    frames.boxed()
}

/// Runs `call` in a loop on every client for `seconds`; latency of each call.
async fn timed_loop<C, F, Fut>(clients: Vec<C>, seconds: Duration, call: F) -> Result<Measure, Error>
where
    C: Send + 'static,
    F: Fn(C) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = (C, Result<(), Error>)> + Send,
{
    let start = Instant::now();
    let deadline = start + seconds;
    let mut tasks = Vec::new();
    for client in clients {
        let call = call.clone();
        tasks.push(tokio::spawn(async move {
            let mut h = histogram()?;
            let mut client = client;
            while Instant::now() < deadline {
                let began = Instant::now();
                let (back, result) = call(client).await;
                client = back;
                result?;
                h.record(micros(began.elapsed())).ok();
            }
            Ok::<_, Error>(h)
        }));
    }
    let mut all = histogram()?;
    for task in tasks {
        let h = task.await.map_err(|e| Error::Hub(format!("list client: {e}")))??;
        all.add(&h).ok();
    }
    Ok(measure(&all, all.len(), start.elapsed()))
}

/// Changes the target's label `changes` times, one after another, while
/// every watcher waits for each round; latency from each write's start.
async fn fan_out(
    writer: &mut FleetClient<Channel>,
    target: &Value,
    watchers: Vec<futures::stream::BoxStream<'static, Value>>,
    changes: usize,
    what: &str,
) -> Result<Measure, Error> {
    let started: std::sync::Arc<std::sync::Mutex<Vec<Instant>>> = Default::default();
    let name = target.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut tasks = Vec::new();
    for mut events in watchers {
        let (started, name) = (started.clone(), name.clone());
        tasks.push(tokio::spawn(async move {
            let mut h = histogram().map_err(|e| e.to_string())?;
            let mut seen = 0;
            while seen < changes {
                let Some(object) = events.next().await else { return Err(format!("watch ended after {seen} rounds")) };
                if object.pointer("/metadata/name").and_then(Value::as_str) != Some(name.as_str()) {
                    continue;
                }
                let round = object.pointer(&format!("/metadata/labels/{}", ROUND_LABEL.replace('/', "~1")));
                let Some(round) = round.and_then(Value::as_str).and_then(|r| r.parse::<usize>().ok()) else { continue };
                let at = started.lock().map(|s| s.get(round).copied()).unwrap_or(None);
                if let Some(at) = at {
                    h.record(micros(at.elapsed())).ok();
                    seen = seen.max(round + 1);
                }
            }
            Ok(h)
        }));
    }
    let begin = Instant::now();
    for round in 0..changes {
        let mut document = target.clone();
        document["metadata"]["labels"][ROUND_LABEL] = Value::String(round.to_string());
        if let Ok(mut s) = started.lock() {
            s.push(Instant::now());
        }
        apply(writer, &document).await?;
    }
    let mut all = histogram()?;
    for task in tasks {
        let waited = tokio::time::timeout(Duration::from_secs(60), task).await;
        let h = waited
            .map_err(|_| Error::Hub(format!("{what} watchers did not see every change within 60 s")))?
            .map_err(|e| Error::Hub(format!("{what} watcher: {e}")))?
            .map_err(|e| Error::Hub(format!("{what} watcher: {e}")))?;
        all.add(&h).ok();
    }
    Ok(measure(&all, all.len(), begin.elapsed()))
}
