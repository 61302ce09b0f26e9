//! `fleet-bench scale`: the scale scenarios, run against a hub
//! with `fleet-bench members` joined (`--clusters` of them), timed from
//! watches. Each scenario runs `--runs` times and reports, per figure, the
//! median and spread ([`figures`]).
//!
//! - `pick-n`: a new PickN(`--pick`) placement of a namespace with one
//!   ConfigMap → each chosen cluster's Work reported Available (p50/p90/max
//!   over the clusters, from the Apply reply), then removed.
//! - `pick-all`: the same with PickAll, on every cluster.
//! - `rollout`: a PickAll placement (`maxUnavailable: 25%`) Available
//!   everywhere, then its ConfigMap changes: the time until the first 25 %
//!   of the clusters (one wave) and all of them report the new resources.
//! - `placements`: `--placements` PickN(`--placement-clusters`) placements
//!   applied at once until all are Available (and the Raft entries that
//!   took); they stay (label `fleet-bench/scale=placements`) for the
//!   scenarios below; `cleanup` removes them.
//! - `idle`: over `--idle-seconds`, the Raft entries committed per second
//!   and (with `--pids`) the leader's CPU use.
//! - `rss`: the resident memory of every process in `--pids`.
//! - with `--pids`, `pick-n`, `pick-all`, `rollout` and `placements` also
//!   report the cores each of those processes used over the run
//!   (`cpu_cores_<name>`), to show which one the time went to.
//! - `disrupt`: runs `--disrupt-cmd` (`{leader}` is replaced by the leader's
//!   id; e.g. a restart of every node, or a SIGKILL of the leader) and then
//!   times, from its end, the first write served and the first new
//!   placement Available (the controllers' queue takes a new placement after
//!   every placement their resync queued), and counts the writes to
//!   placements, bindings, snapshots and Works in that time that were not
//!   the new placement's (spurious: a resync should write nothing).

pub mod figures;
pub mod hub;

use std::time::{Duration, Instant};

use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::WatchRequest;
use futures::StreamExt;
use serde_json::{json, Value};
use tonic::transport::Channel;

use crate::cli::{ScaleArgs, Scenario};
use crate::connect::{fleet_client, fleet_tls, open, parse_endpoints};
use crate::error::Error;
use crate::placement_latency::placement_selecting;
use crate::rollout_latency::config_map_document;
use crate::watching::{delete, hub as hub_error, kind, ms};
pub use figures::{RunFigures, ScenarioReport};
use hub::{apply, leader_index, list, WorkWatch};

/// Label on everything the driver creates: what it is for.
pub const SCALE_LABEL: &str = "fleet-bench/scale";

/// Runs the scenario `--runs` times.
pub async fn run(args: &ScaleArgs) -> Result<ScenarioReport, Error> {
    if args.runs == 0 {
        return Err(Error::Invalid { flag: "--runs", value: "0".into(), reason: "must be at least 1".into() });
    }
    let mut client = fleet_client(&args.connect).await?;
    let mut report =
        ScenarioReport { scenario: args.scenario.name().into(), clusters: args.clusters, runs: Vec::new() };
    // The timed scenarios also report the cores each process used.
    let timed = matches!(args.scenario, Scenario::PickN | Scenario::PickAll | Scenario::Rollout | Scenario::Placements);
    let processes = if timed { named_pids(args)? } else { Vec::new() };
    for i in 0..args.runs {
        let cpu = CpuWindow::start(&processes)?;
        let mut figures = match args.scenario {
            Scenario::PickN => new_placement(&mut client, args, i, Some(args.pick)).await?,
            Scenario::PickAll => new_placement(&mut client, args, i, None).await?,
            Scenario::Rollout => rollout(&mut client, args, i).await?,
            Scenario::Placements => placements(&mut client, args).await?,
            Scenario::Cleanup => cleanup(&mut client, args).await?,
            Scenario::Idle => idle(&mut client, args).await?,
            Scenario::Rss => rss(args)?,
            Scenario::Disrupt => disrupt(args, i).await?,
        };
        figures.extend(cpu.cores_used(&processes)?);
        eprintln!("{} run {}: {figures:?}", args.scenario.name(), i + 1);
        report.runs.push(figures);
    }
    Ok(report)
}

/// A placement document of the driver selecting `namespace`.
fn placement(name: &str, namespace: &str, purpose: &str, policy: Value, max_unavailable: &str) -> Value {
    let mut document = placement_selecting(name, namespace, purpose, policy);
    document["metadata"]["labels"][SCALE_LABEL] = json!(purpose);
    document["spec"]["strategy"] = json!({
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": max_unavailable, "unavailablePeriodSeconds": 0}
    });
    document
}

fn policy(pick: Option<u32>) -> Value {
    match pick {
        Some(n) => json!({"placementType": "PickN", "numberOfClusters": n}),
        None => json!({"placementType": "PickAll"}),
    }
}

fn namespace_documents(namespace: &str, purpose: &str, value: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {SCALE_LABEL: purpose}}}),
        config_map_document(namespace, value),
    ]
}

fn deadline(args: &ScaleArgs) -> Duration {
    Duration::from_secs(args.timeout_seconds.max(1))
}

/// Per-cluster times as figures (`p50_ms`, `p90_ms`, `max_ms`, `clusters`).
fn latency_figures(times: &[f64]) -> RunFigures {
    [
        ("p50_ms", figures::quantile(times, 0.5)),
        ("p90_ms", figures::quantile(times, 0.9)),
        ("max_ms", figures::quantile(times, 1.0)),
        ("clusters", times.len() as f64),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Removes placement `name` (waiting for its Works to go) and its namespace;
/// each delete is retried through an election (deleting what is gone is
/// not an error).
async fn remove(client: &mut FleetClient<Channel>, args: &ScaleArgs, name: &str, namespace: &str) -> Result<(), Error> {
    let until = Instant::now() + deadline(args);
    delete_until(client, "clusterresourceplacements", name, until).await?;
    hub::wait_works_gone(client, name, deadline(args)).await?;
    delete_until(client, "namespaces", namespace, until).await
}

/// Deletes a cluster-scoped object, retrying until `until`.
async fn delete_until(client: &FleetClient<Channel>, plural: &str, name: &str, until: Instant) -> Result<(), Error> {
    retrying(&format!("the delete of {plural}/{name}"), until, || {
        let mut c = client.clone();
        async move { delete(&mut c, plural, "", name).await }
    })
    .await
}

/// `pick-n` (`pick` = Some) and `pick-all`.
async fn new_placement(
    client: &mut FleetClient<Channel>,
    args: &ScaleArgs,
    run: usize,
    pick: Option<u32>,
) -> Result<RunFigures, Error> {
    let tag = format!("{}-{}-{run}", args.scenario.name(), std::process::id());
    let (name, namespace) = (format!("scale-{tag}"), format!("scale-{tag}"));
    let since = apply(client, &namespace_documents(&namespace, "run", "v1")).await?;
    let mut watch = WorkWatch::start(client, &name, since).await?;
    let document = placement(&name, &namespace, "run", policy(pick), "100%");
    let sent = Instant::now();
    let applied_at = apply(client, &[document]).await?;
    let want = pick.map(|n| n as usize).unwrap_or(args.clusters).min(args.clusters);
    let outcome = watch.available(want, None, sent, deadline(args)).await;
    let (_, done_at) = leader_index(client).await?;
    drop(watch);
    let cleaned = remove(client, args, &name, &namespace).await;
    let (times, _) = outcome?;
    cleaned?;
    let mut figures = latency_figures(&times);
    figures.insert("raft_entries".into(), done_at.saturating_sub(applied_at) as f64);
    Ok(figures)
}

/// `rollout`: a resource change under `maxUnavailable: 25%`.
async fn rollout(client: &mut FleetClient<Channel>, args: &ScaleArgs, run: usize) -> Result<RunFigures, Error> {
    let tag = format!("rollout-{}-{run}", std::process::id());
    let (name, namespace) = (format!("scale-{tag}"), format!("scale-{tag}"));
    let since = apply(client, &namespace_documents(&namespace, "run", "v1")).await?;
    let mut watch = WorkWatch::start(client, &name, since).await?;
    apply(client, &[placement(&name, &namespace, "run", policy(None), "25%")]).await?;
    let measured = async {
        let (_, old_index) = watch.available(args.clusters, None, Instant::now(), deadline(args)).await?;
        let sent = Instant::now();
        apply(client, &[config_map_document(&namespace, "v2")]).await?;
        let wave = args.clusters.div_ceil(4);
        let (times, _) = watch.available(args.clusters, Some(&old_index), sent, deadline(args)).await?;
        let first_wave = figures::quantile(&times, wave as f64 / times.len().max(1) as f64);
        let total = figures::quantile(&times, 1.0);
        let mut figures = latency_figures(&times);
        figures.insert("first_wave_ms".into(), first_wave);
        figures.insert("total_over_wave".into(), total / first_wave.max(f64::MIN_POSITIVE));
        Ok::<RunFigures, Error>(figures)
    }
    .await;
    drop(watch);
    let cleaned = remove(client, args, &name, &namespace).await;
    let figures = measured?;
    cleaned?;
    Ok(figures)
}

/// `placements`: many placements at once, each selecting a namespace of
/// its own (two placements of one namespace would conflict on every
/// cluster they share), left in place.
async fn placements(client: &mut FleetClient<Channel>, args: &ScaleArgs) -> Result<RunFigures, Error> {
    let names: Vec<String> = (1..=args.placements).map(|i| format!("scale-placement-{i:04}")).collect();
    for chunk in names.chunks(50) {
        let documents: Vec<Value> =
            chunk.iter().flat_map(|name| namespace_documents(name, "placements", "v1")).collect();
        apply(client, &documents).await?;
    }
    let (_, applied_at) = leader_index(client).await?;
    let started = Instant::now();
    let documents: Vec<Value> = names
        .iter()
        .map(|name| placement(name, name, "placements", policy(Some(args.placement_clusters)), "100%"))
        .collect();
    for chunk in documents.chunks(100) {
        apply(client, chunk).await?;
    }
    let until = started + deadline(args);
    loop {
        let all = list(client, "clusterresourceplacements", &format!("{SCALE_LABEL}=placements")).await?;
        let available = all
            .iter()
            .filter(|p| crate::rollout_latency::RolloutState::of(p).done_on(args.placement_clusters as usize))
            .count();
        if available >= args.placements {
            let elapsed = started.elapsed();
            let (_, done_at) = leader_index(client).await?;
            let mut figures = RunFigures::new();
            figures.insert("all_available_ms".into(), elapsed.as_secs_f64() * 1000.0);
            figures.insert("placements".into(), available as f64);
            figures.insert("raft_entries".into(), done_at.saturating_sub(applied_at) as f64);
            return Ok(figures);
        }
        if Instant::now() >= until {
            return Err(Error::Deadline {
                what: format!("{} placements Available ({available} are)", args.placements),
                after: deadline(args),
            });
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `cleanup`: removes what `placements` left.
async fn cleanup(client: &mut FleetClient<Channel>, args: &ScaleArgs) -> Result<RunFigures, Error> {
    let started = Instant::now();
    let all = list(client, "clusterresourceplacements", &format!("{SCALE_LABEL}=placements")).await?;
    for p in &all {
        delete(client, "clusterresourceplacements", "", &p.metadata.name).await?;
    }
    for p in &all {
        hub::wait_works_gone(client, &p.metadata.name, deadline(args)).await?;
        delete(client, "namespaces", "", &p.metadata.name).await?;
    }
    let mut figures = RunFigures::new();
    figures.insert("removed".into(), all.len() as f64);
    figures.insert("cleanup_ms".into(), started.elapsed().as_secs_f64() * 1000.0);
    Ok(figures)
}

/// The pid `--pids` gives node `id`.
fn pid_of(args: &ScaleArgs, id: u64) -> Option<u32> {
    args.pids.iter().find_map(|p| {
        let (node, pid) = p.split_once('=')?;
        (node.trim() == id.to_string()).then(|| pid.trim().parse().ok()).flatten()
    })
}

/// `idle`: Raft entries per second and the leader's CPU.
async fn idle(client: &mut FleetClient<Channel>, args: &ScaleArgs) -> Result<RunFigures, Error> {
    let window = Duration::from_secs(args.idle_seconds.max(1));
    let (leader, start_index) = leader_index(client).await?;
    let pid = pid_of(args, leader);
    let cpu_before = pid.map(hub::cpu_time).transpose()?;
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let elapsed = started.elapsed().as_secs_f64();
    let (leader_after, end_index) = leader_index(client).await?;
    if leader_after != leader {
        return Err(Error::Hub(format!("the leader changed during the idle window ({leader} → {leader_after})")));
    }
    let mut figures = RunFigures::new();
    figures.insert("raft_entries_per_s".into(), end_index.saturating_sub(start_index) as f64 / elapsed);
    if let (Some(pid), Some(before)) = (pid, cpu_before) {
        let used = hub::cpu_time(pid)?.saturating_sub(before).as_secs_f64();
        figures.insert("leader_cpu_percent".into(), 100.0 * used / elapsed);
    }
    Ok(figures)
}

/// `rss`: resident memory of each given process.
fn rss(args: &ScaleArgs) -> Result<RunFigures, Error> {
    let mut figures = RunFigures::new();
    for (name, pid) in named_pids(args)? {
        figures.insert(format!("rss_mb_{name}"), hub::rss_mb(pid)?);
    }
    Ok(figures)
}

/// `--pids` as (name, pid) pairs.
fn named_pids(args: &ScaleArgs) -> Result<Vec<(String, u32)>, Error> {
    args.pids
        .iter()
        .map(|p| {
            let (name, pid) = p.split_once('=').ok_or_else(|| Error::Invalid {
                flag: "--pids",
                value: p.clone(),
                reason: "expected NAME=PID".into(),
            })?;
            let pid: u32 = pid.trim().parse().map_err(|_| Error::Invalid {
                flag: "--pids",
                value: p.clone(),
                reason: "the PID must be a number".into(),
            })?;
            Ok((name.trim().to_string(), pid))
        })
        .collect()
}

/// CPU time of the `--pids` processes at the start of a run: with it, the
/// cores each used over the run (`cpu_cores_<name>`), to tell which process
/// a timed scenario waited for.
struct CpuWindow {
    started: Instant,
    before: Vec<Duration>,
}

impl CpuWindow {
    fn start(processes: &[(String, u32)]) -> Result<CpuWindow, Error> {
        let before = processes.iter().map(|(_, pid)| hub::cpu_time(*pid)).collect::<Result<_, _>>()?;
        Ok(CpuWindow { started: Instant::now(), before })
    }

    /// Cores used per process since the start.
    fn cores_used(&self, processes: &[(String, u32)]) -> Result<RunFigures, Error> {
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-3);
        let mut figures = RunFigures::new();
        for ((name, pid), before) in processes.iter().zip(&self.before) {
            let used = hub::cpu_time(*pid)?.saturating_sub(*before).as_secs_f64();
            figures.insert(format!("cpu_cores_{name}"), used / elapsed);
        }
        Ok(figures)
    }
}

/// Runs `step` until it succeeds or `until` passes (then its last error),
/// saying on stderr what failed.
async fn retrying<T, F, Fut>(what: &str, until: Instant, mut step: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    loop {
        match step().await {
            Ok(value) => return Ok(value),
            Err(e) if Instant::now() < until => {
                eprintln!("{what}: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Kinds whose writes after a disruption count as controller writes.
const CONTROLLER_KINDS: [&str; 5] = [
    "clusterresourceplacements",
    "clusterresourcebindings",
    "clusterresourcesnapshots",
    "clusterschedulingpolicysnapshots",
    "works",
];

/// `disrupt`: a command that restarts or kills nodes, then the time to the
/// first write served and to a new placement Available, and the spurious
/// controller writes meanwhile.
async fn disrupt(args: &ScaleArgs, run: usize) -> Result<RunFigures, Error> {
    let command = args.disrupt_cmd.as_deref().ok_or_else(|| Error::Invalid {
        flag: "--disrupt-cmd",
        value: String::new(),
        reason: "the disrupt scenario needs the command that restarts or kills nodes".into(),
    })?;
    let endpoints = parse_endpoints(&args.connect.endpoints)?;
    let tls = fleet_tls(args.connect.tls_dir.as_deref().ok_or(Error::TlsDirMissing)?)?;
    let mut client = fleet_client(&args.connect).await?;
    let (leader, _) = leader_index(&mut client).await?;
    let disrupting = Instant::now();
    shell(&command.replace("{leader}", &leader.to_string())).await?;
    // Reported too: the figures below count from the command's return (for
    // a kill, once the process is gone).
    let disrupt_ms = ms(disrupting.elapsed());
    let started = Instant::now();
    let until = started + deadline(args);
    let tag = format!("disrupt-{}-{run}", std::process::id());
    let (name, namespace) = (format!("scale-{tag}"), format!("scale-{tag}"));
    // The first write served, through any node still up.
    let (mut client, since) = loop {
        let mut served = None;
        for endpoint in &endpoints {
            let attempt = Instant::now();
            let Ok(channel) = open(endpoint, Some(tls.clone()), Duration::from_secs(2)).await else { continue };
            let mut c = FleetClient::new(channel).max_decoding_message_size(crate::connect::MAX_MESSAGE);
            let outcome = tokio::time::timeout(
                Duration::from_secs(2),
                apply(&mut c, &namespace_documents(&namespace, "run", "v1")),
            )
            .await;
            // For reading against the nodes' logs: when each attempt ended, how.
            let how = match &outcome {
                Ok(Ok(_)) => "served".to_string(),
                Ok(Err(e)) => format!("failed: {e}"),
                Err(_) => "no answer within 2 s".to_string(),
            };
            eprintln!(
                "disrupt run {}: write through {endpoint} at +{:.0} ms (unix {:.3}) took {:.0} ms: {how}",
                run + 1,
                ms(started.elapsed()),
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
                ms(attempt.elapsed()),
            );
            if let Ok(Ok(index)) = outcome {
                served = Some((c, index));
                break;
            }
        }
        if let Some(s) = served {
            break s;
        }
        if Instant::now() >= until {
            return Err(Error::Deadline { what: "a write served after the disruption".into(), after: deadline(args) });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let write_ms = started.elapsed().as_secs_f64() * 1000.0;
    // The hub may elect again right after the first write (a starved
    // machine): each step retries until the deadline (apply is idempotent).
    let counter = retrying("the write counter's watches", until, || {
        let mut c = client.clone();
        let name = name.clone();
        async move { count_writes(&mut c, since, &name).await }
    })
    .await?;
    let mut watch = retrying("the Work watch", until, || {
        let mut c = client.clone();
        let name = name.clone();
        async move { WorkWatch::start(&mut c, &name, since).await }
    })
    .await?;
    let document = placement(&name, &namespace, "run", policy(Some(1)), "100%");
    retrying("the new placement's apply", until, || {
        let mut c = client.clone();
        let document = document.clone();
        async move { apply(&mut c, &[document]).await }
    })
    .await?;
    let available = watch.available(1, None, started, until.saturating_duration_since(Instant::now())).await;
    let others = counter.stop().await;
    drop(watch);
    let cleaned = remove(&mut client, args, &name, &namespace).await;
    let (times, _) = available?;
    cleaned?;
    if let Some(recover) = &args.recover_cmd {
        shell(recover).await?;
    }
    let mut figures = RunFigures::new();
    figures.insert("disrupt_cmd_ms".into(), disrupt_ms);
    figures.insert("first_write_ms".into(), write_ms);
    figures.insert("resynced_ms".into(), times.first().copied().unwrap_or(f64::NAN));
    figures.insert("spurious_writes".into(), others as f64);
    Ok(figures)
}

/// Runs `command` with `sh -c`; fails unless it succeeds.
async fn shell(command: &str) -> Result<(), Error> {
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .status()
        .await
        .map_err(|e| Error::Hub(format!("running {command:?}: {e}")))?;
    if !status.success() {
        return Err(Error::Hub(format!("{command:?} failed: {status}")));
    }
    Ok(())
}

/// Counts the writes to [`CONTROLLER_KINDS`] after `since` that are not
/// placement `probe`'s.
struct WriteCounter {
    tasks: Vec<tokio::task::JoinHandle<u64>>,
    stop: tokio::sync::watch::Sender<bool>,
}

async fn count_writes(client: &mut FleetClient<Channel>, since: u64, probe: &str) -> Result<WriteCounter, Error> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for plural in CONTROLLER_KINDS {
        let request = WatchRequest {
            kind: kind(plural),
            namespace: String::new(),
            all_namespaces: true,
            label_selector: String::new(),
            resource_version: since,
            min_resource_version: since,
        };
        let mut stream = client.watch(request).await.map_err(hub_error)?.into_inner();
        let mut stopped = stopped.clone();
        let probe = probe.to_string();
        tasks.push(tokio::spawn(async move {
            let mut others = 0;
            loop {
                tokio::select! {
                    _ = stopped.changed() => return others,
                    event = stream.next() => {
                        let Some(Ok(event)) = event else { return others };
                        if event.r#type == "BOOKMARK" {
                            continue;
                        }
                        let Ok(object) = fleet_api::Object::from_json(&event.object) else { continue };
                        let of_probe = object.metadata.name == probe
                            || object.metadata.labels.get(PARENT_PLACEMENT_LABEL) == Some(&probe);
                        if !of_probe {
                            others += 1;
                        }
                    }
                }
            }
        }));
    }
    Ok(WriteCounter { tasks, stop })
}

impl WriteCounter {
    /// Stops counting; the writes seen so far.
    async fn stop(self) -> u64 {
        let _ = self.stop.send(true);
        let mut total = 0;
        for task in self.tasks {
            total += task.await.unwrap_or(0);
        }
        total
    }
}
