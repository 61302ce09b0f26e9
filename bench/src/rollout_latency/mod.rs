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

mod documents;
mod results;
mod session;
mod state;
mod table;
mod trace;

use std::time::{Duration, Instant};

use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::Object;
use fleet_proto::fleet::{ApplyRequest, WatchRequest};
use serde_json::json;
use tokio::sync::mpsc;

use crate::cli::RolloutLatencyArgs;
use crate::connect::fleet_client;
use crate::error::Error;
use crate::watching::{forward, hub, kind};

pub use documents::{config_map_document, is_reserved_namespace, placement_document};
pub use results::{RolloutLatencies, Sample};
pub use state::{work_available, RolloutState};

use session::Run;
use trace::{sample, Seen, Source};

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
    let mut client = fleet_client(&args.connect).await?;

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
        let pick = move |object: Object, resource_version, at| {
            keep(&object).then_some(Seen { source, object, resource_version, at })
        };
        watchers.push(tokio::spawn(forward(stream, format!("{source:?}"), pick, tx.clone())));
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
