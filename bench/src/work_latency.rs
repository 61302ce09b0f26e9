//! `fleet-bench work-latency`: how long a Work takes from `Apply` on the hub
//! to its `Available` condition written back by the member's agent — the
//! whole path: Raft commit, the agent's watch, apply on the target, the status
//! write through Raft, and the watch event that reports it.

use std::time::{Duration, Instant};

use fleet_api::Object;
use fleet_proto::fleet::{ApplyRequest, DeleteRequest, WatchRequest};
use futures::StreamExt;
use serde_json::json;

use crate::cli::WorkLatencyArgs;
use crate::connect::fleet_client;
use crate::error::Error;
use crate::watching::{hub, kind, ms};

/// How long one Work may take before the run fails.
const PER_WORK_DEADLINE: Duration = Duration::from_secs(60);

/// The measured latencies, in milliseconds, in run order.
#[derive(Debug, Clone)]
pub struct Latencies {
    /// One latency per sample, in milliseconds.
    pub samples_ms: Vec<f64>,
}

impl Latencies {
    fn sorted(&self) -> Vec<f64> {
        let mut s = self.samples_ms.clone();
        s.sort_by(f64::total_cmp);
        s
    }

    /// The median.
    pub fn median(&self) -> f64 {
        let s = self.sorted();
        match s.len() {
            0 => 0.0,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        }
    }

    /// The nearest-rank `q`-quantile (`0.9` = p90): the smallest sample with
    /// at least `q` of all samples at or below it.
    pub fn percentile(&self, q: f64) -> f64 {
        let s = self.sorted();
        if s.is_empty() {
            return 0.0;
        }
        let rank = (q.clamp(0.0, 1.0) * s.len() as f64).ceil() as usize;
        s[rank.clamp(1, s.len()) - 1]
    }

    /// The slowest sample.
    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(0.0)
    }

    /// One line per sample, then median and max.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (i, ms) in self.samples_ms.iter().enumerate() {
            out.push_str(&format!("work {i:>3}: {ms:8.1} ms\n"));
        }
        out.push_str(&format!(
            "median {:.1} ms, max {:.1} ms over {} Works\n",
            self.median(),
            self.max(),
            self.samples_ms.len()
        ));
        out
    }
}

fn work_document(cluster: &str, name: &str, deployment: bool) -> Vec<u8> {
    let mut manifests = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"}, "data": {"at": name}})];
    if deployment {
        manifests.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}));
    }
    serde_json::to_vec(&json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
        "metadata": {"name": name, "namespace": format!("fleet-member-{cluster}")},
        "spec": {"workload": {"manifests": manifests}},
    }))
    .unwrap_or_default()
}

fn available_at_generation(work: &Object) -> bool {
    let conditions = work.status().and_then(|s| s.get("conditions")).and_then(|c| c.as_array());
    conditions.is_some_and(|cs| {
        cs.iter().any(|c| {
            c["type"] == "Available"
                && c["status"] == "True"
                && c["observedGeneration"].as_i64() == Some(work.metadata.generation)
        })
    })
}

/// Times `args.count` Works, one at a time, deleting each afterwards.
pub async fn run(args: &WorkLatencyArgs) -> Result<Latencies, Error> {
    let mut client = fleet_client(&args.connect).await?;
    let namespace = format!("fleet-member-{}", args.cluster);
    let mut samples = Vec::with_capacity(args.count);
    for i in 0..args.count {
        let name = format!("latency-{}-{i}", std::process::id());
        let started = Instant::now();
        let applied = client
            .apply(ApplyRequest {
                documents: vec![work_document(&args.cluster, &name, args.deployment)],
                sources: vec![],
            })
            .await
            .map_err(hub)?
            .into_inner();
        // Resume from the write itself: nothing after it can be missed.
        let request = WatchRequest {
            kind: kind("works"),
            namespace: namespace.clone(),
            all_namespaces: false,
            label_selector: String::new(),
            resource_version: applied.resource_version,
            min_resource_version: applied.resource_version,
        };
        let mut stream = client.watch(request).await.map_err(hub)?.into_inner();
        let wait = async {
            while let Some(event) = stream.next().await {
                let event = event.map_err(hub)?;
                if let Ok(work) = Object::from_json(&event.object) {
                    if work.metadata.name == name && available_at_generation(&work) {
                        return Ok(started.elapsed());
                    }
                }
            }
            Err(Error::Hub("the watch ended before the Work became available".into()))
        };
        let elapsed = tokio::time::timeout(PER_WORK_DEADLINE, wait)
            .await
            .map_err(|_| Error::Hub(format!("Work {name} not available within {PER_WORK_DEADLINE:?}")))??;
        samples.push(ms(elapsed));
        let delete = DeleteRequest { kind: kind("works"), namespace: namespace.clone(), name, resource_version: 0 };
        client.delete(delete).await.map_err(hub)?;
    }
    Ok(Latencies { samples_ms: samples })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_runs() {
        assert_eq!(Latencies { samples_ms: vec![3.0, 1.0, 2.0] }.median(), 2.0);
        assert_eq!(Latencies { samples_ms: vec![4.0, 1.0, 2.0, 3.0] }.median(), 2.5);
        assert_eq!(Latencies { samples_ms: vec![4.0, 1.0] }.max(), 4.0);
        let ten = Latencies { samples_ms: (1..=10).rev().map(f64::from).collect() };
        assert_eq!(ten.percentile(0.9), 9.0);
        assert_eq!(ten.percentile(0.5), 5.0);
        assert_eq!(ten.percentile(1.0), 10.0);
        assert_eq!(ten.percentile(0.0), 1.0);
    }
}
