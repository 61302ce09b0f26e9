//! `fleet-bench placement-latency`: how long the hub's leader-only placement
//! controller takes to schedule a ClusterResourcePlacement — from the `Apply`
//! reply to the placement's `ClusterResourcePlacementScheduled` condition for
//! the applied generation, seen on a watch. That covers the controller
//! noticing the placement, the policy and resource snapshot writes, the
//! scheduling step (bindings, snapshot status, placement status), each one a
//! Raft commit, and the watch event that reports the result.
//!
//! Placements are applied one at a time, so each sample is an unloaded
//! controller's latency, not its throughput.

use std::time::{Duration, Instant};

use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, WatchRequest};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tonic::transport::Channel;

use crate::cli::PlacementLatencyArgs;
use crate::connect::fleet_client;
use crate::error::Error;
use crate::watching::{delete, forward, hub, kind, ms};
use crate::work_latency::Latencies;

/// The condition the placement controller sets once it has scheduled.
pub const SCHEDULED_CONDITION: &str = "ClusterResourcePlacementScheduled";

/// The property the placements sort clusters by (reported by every agent).
pub const AVAILABLE_CPU: &str = "resources.kubernetes-fleet.io/available-cpu";

/// The plural the hub knows ClusterResourcePlacements by.
const PLACEMENTS: &str = "clusterresourceplacements";

/// One timed placement.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The placement's name.
    pub name: String,
    /// Round trip of the `Apply` itself (not part of the measured latency).
    pub apply_ms: f64,
    /// From the `Apply` reply to the watch event with the `Scheduled`
    /// condition at the applied generation.
    pub scheduled_ms: f64,
    /// The condition's status: `True` (fulfilled) or `False`.
    pub status: String,
    /// Clusters listed in `status.placementStatuses` of that event.
    pub clusters: Vec<String>,
}

/// The samples of one run, in run order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlacementLatencies {
    /// One entry per placement.
    pub samples: Vec<Sample>,
}

impl PlacementLatencies {
    /// The measured latencies (Apply reply → Scheduled), in run order.
    pub fn scheduled(&self) -> Latencies {
        Latencies { samples_ms: self.samples.iter().map(|s| s.scheduled_ms).collect() }
    }

    /// The `Apply` round trips, in run order.
    pub fn applies(&self) -> Latencies {
        Latencies { samples_ms: self.samples.iter().map(|s| s.apply_ms).collect() }
    }

    /// One line per sample, then median, p90 and max.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (i, s) in self.samples.iter().enumerate() {
            out.push_str(&format!(
                "placement {i:>3}: {:8.1} ms  (apply {:6.1} ms)  Scheduled={} on {}\n",
                s.scheduled_ms,
                s.apply_ms,
                s.status,
                s.clusters.join(",")
            ));
        }
        let scheduled = self.scheduled();
        let unfulfilled = self.samples.iter().filter(|s| s.status != "True").count();
        out.push_str(&format!(
            "Apply reply -> Scheduled: median {:.1} ms, p90 {:.1} ms, max {:.1} ms over {} placements \
             ({unfulfilled} unfulfilled); Apply round trip median {:.1} ms\n",
            scheduled.median(),
            scheduled.percentile(0.9),
            scheduled.max(),
            self.samples.len(),
            self.applies().median(),
        ));
        out
    }
}

/// A ClusterResourcePlacement named `name`, labelled with run `run`,
/// selecting namespace `namespace` and placing it by `policy`.
pub fn placement_selecting(name: &str, namespace: &str, run: &str, policy: Value) -> Value {
    json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1",
        "kind": "ClusterResourcePlacement",
        "metadata": {"name": name, "labels": {"fleet-bench/run": run}},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": namespace}],
            "policy": policy
        }
    })
}

/// The placement document: PickN `clusters`, preferring more available CPU,
/// spread over `region` with a skew of at most 1, selecting `namespace`.
pub fn placement_document(name: &str, namespace: &str, clusters: u32, run: &str) -> Value {
    let policy = json!({
        "placementType": "PickN",
        "numberOfClusters": clusters,
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "region", "whenUnsatisfiable": "DoNotSchedule"}
        ],
        "affinity": {"clusterAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"propertySorter": {"name": AVAILABLE_CPU, "sortOrder": "Descending"}}}
        ]}}
    });
    placement_selecting(name, namespace, run, policy)
}

/// The `Scheduled` condition's status if it was written for the placement's
/// current generation.
pub fn scheduled_at_generation(placement: &Object) -> Option<String> {
    let conditions = placement.status()?.get("conditions")?.as_array()?;
    conditions
        .iter()
        .find(|c| {
            c["type"] == SCHEDULED_CONDITION
                && (c["status"] == "True" || c["status"] == "False")
                && c["observedGeneration"].as_i64() == Some(placement.metadata.generation)
        })
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

/// The clusters in `status.placementStatuses`.
fn chosen_clusters(placement: &Object) -> Vec<String> {
    let entries = placement.status().and_then(|s| s.get("placementStatuses")).and_then(|p| p.as_array());
    entries
        .map(|es| es.iter().filter_map(|e| e["clusterName"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// What the watch task reports: a placement scheduled at a generation, seen at an instant.
struct Seen {
    name: String,
    generation: i64,
    status: String,
    clusters: Vec<String>,
    at: Instant,
}

fn encode(document: &Value) -> Result<Vec<u8>, Error> {
    Ok(serde_json::to_vec(document)?)
}

/// What [`forward`] makes of a placement event: the scheduled-at-generation
/// events of this run's placements (names starting with `prefix`).
fn scheduled_seen(prefix: String) -> impl FnMut(Object, u64, Instant) -> Option<Seen> {
    move |placement, _, at| {
        if !placement.metadata.name.starts_with(&prefix) {
            return None;
        }
        let status = scheduled_at_generation(&placement)?;
        Some(Seen {
            clusters: chosen_clusters(&placement),
            name: placement.metadata.name,
            generation: placement.metadata.generation,
            status,
            at,
        })
    }
}

/// Applies, times, and (unless `--keep`) deletes `args.count` placements.
pub async fn run(args: &PlacementLatencyArgs) -> Result<PlacementLatencies, Error> {
    if args.count == 0 {
        return Err(Error::Invalid { flag: "--count", value: "0".into(), reason: "must be at least 1".into() });
    }
    if args.clusters == 0 {
        return Err(Error::Invalid { flag: "--clusters", value: "0".into(), reason: "must be at least 1".into() });
    }
    let mut client = fleet_client(&args.connect).await?;

    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.namespace}});
    let reply =
        client.apply(ApplyRequest { documents: vec![encode(&namespace)?], sources: vec![] }).await.map_err(hub)?;
    let reply = reply.into_inner();
    let created_namespace = reply.results.first().is_some_and(|r| r.action == "created");

    // One watch for the whole run, from the namespace write on: nothing a
    // placement of this run does can come before it.
    let run_id = format!("{}-{}", std::process::id(), reply.resource_version);
    let prefix = format!("bench-{run_id}-");
    let request = WatchRequest {
        kind: kind(PLACEMENTS),
        namespace: String::new(),
        all_namespaces: false,
        label_selector: String::new(),
        resource_version: reply.resource_version,
        min_resource_version: reply.resource_version,
    };
    let stream = client.watch(request).await.map_err(hub)?.into_inner();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let watcher = tokio::spawn(forward(stream, "placement".into(), scheduled_seen(prefix.clone()), tx));

    let mut names = Vec::with_capacity(args.count);
    let measured = measure(&mut client, args, &prefix, &run_id, &mut rx, &mut names).await;
    watcher.abort();

    let cleaned = if args.keep { Ok(()) } else { clean_up(&mut client, &names, args, created_namespace).await };
    let samples = measured?;
    cleaned?;
    Ok(PlacementLatencies { samples })
}

async fn measure(
    client: &mut FleetClient<Channel>,
    args: &PlacementLatencyArgs,
    prefix: &str,
    run_id: &str,
    rx: &mut mpsc::UnboundedReceiver<Result<Seen, Error>>,
    names: &mut Vec<String>,
) -> Result<Vec<Sample>, Error> {
    let deadline = Duration::from_secs(args.timeout_seconds.max(1));
    let mut samples = Vec::with_capacity(args.count);
    for i in 0..args.count {
        let name = format!("{prefix}{i}");
        let document = encode(&placement_document(&name, &args.namespace, args.clusters, run_id))?;
        let sent = Instant::now();
        let reply = client.apply(ApplyRequest { documents: vec![document], sources: vec![] }).await.map_err(hub)?;
        let replied = Instant::now();
        names.push(name.clone());
        let stored = reply
            .into_inner()
            .results
            .first()
            .map(|r| Object::from_json(&r.object))
            .transpose()
            .map_err(|source| Error::Decode { what: format!("the stored placement {name}"), source })?;
        let generation = stored
            .map(|p| p.metadata.generation)
            .ok_or_else(|| Error::Hub(format!("the Apply of placement {name} returned no object")))?;
        let wait = async {
            while let Some(seen) = rx.recv().await {
                let seen = seen?;
                if seen.name == name && seen.generation == generation {
                    return Ok(seen);
                }
            }
            Err(Error::Hub("the placement watch ended".into()))
        };
        let seen = tokio::time::timeout(deadline, wait).await.map_err(|_| Error::Deadline {
            what: format!("placement {name} (generation {generation}) scheduled"),
            after: deadline,
        })??;
        samples.push(Sample {
            name,
            apply_ms: ms(replied.duration_since(sent)),
            scheduled_ms: ms(seen.at.saturating_duration_since(replied)),
            status: seen.status,
            clusters: seen.clusters,
        });
    }
    Ok(samples)
}

/// Deletes the run's placements (and the namespace if this run created it);
/// tries every one and reports the first failure.
async fn clean_up(
    client: &mut FleetClient<Channel>,
    names: &[String],
    args: &PlacementLatencyArgs,
    created_namespace: bool,
) -> Result<(), Error> {
    let mut first_error = None;
    let mut targets: Vec<(&str, &str)> = names.iter().map(|n| (PLACEMENTS, n.as_str())).collect();
    if created_namespace {
        targets.push(("namespaces", args.namespace.as_str()));
    }
    for (plural, name) in targets {
        if let Err(e) = delete(client, plural, "", name).await {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(generation: i64, conditions: Value) -> Object {
        let mut doc = placement_document("p", "ns", 3, "r");
        doc["metadata"]["generation"] = json!(generation);
        doc["status"] =
            json!({"conditions": conditions, "placementStatuses": [{"clusterName": "a"}, {"clusterName": "b"}]});
        Object::from_json(&serde_json::to_vec(&doc).unwrap()).unwrap()
    }

    #[test]
    fn only_a_decided_condition_for_the_current_generation_counts() {
        let at = |g: i64, s: &str| json!([{"type": SCHEDULED_CONDITION, "status": s, "observedGeneration": g}]);
        assert_eq!(scheduled_at_generation(&placement(2, at(2, "True"))), Some("True".into()));
        assert_eq!(scheduled_at_generation(&placement(2, at(2, "False"))), Some("False".into()));
        assert_eq!(scheduled_at_generation(&placement(2, at(1, "True"))), None);
        assert_eq!(scheduled_at_generation(&placement(2, at(2, "Unknown"))), None);
        assert_eq!(scheduled_at_generation(&placement(1, json!([]))), None);
        assert_eq!(chosen_clusters(&placement(1, json!([]))), vec!["a".to_string(), "b".to_string()]);
    }

    #[test]
    fn the_document_asks_for_pick_n_sorted_and_spread() {
        let doc = placement_document("p", "ns", 4, "r");
        assert_eq!(doc["spec"]["policy"]["numberOfClusters"], 4);
        assert_eq!(doc["spec"]["policy"]["topologySpreadConstraints"][0]["topologyKey"], "region");
        let sorter = &doc["spec"]["policy"]["affinity"]["clusterAffinity"]
            ["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"]["propertySorter"];
        assert_eq!(sorter["name"], AVAILABLE_CPU);
        assert_eq!(sorter["sortOrder"], "Descending");
        assert_eq!(doc["spec"]["resourceSelectors"][0]["name"], "ns");
    }

    #[test]
    fn the_summary_has_median_p90_and_max() {
        let samples = (1..=10)
            .map(|i| Sample {
                name: format!("p{i}"),
                apply_ms: 1.0,
                scheduled_ms: f64::from(i),
                status: "True".into(),
                clusters: vec!["a".into()],
            })
            .collect();
        let text = PlacementLatencies { samples }.text();
        assert!(text.contains("median 5.5 ms, p90 9.0 ms, max 10.0 ms over 10 placements (0 unfulfilled)"), "{text}");
    }
}
