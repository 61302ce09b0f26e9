//! The driver's calls to the hub and the host: apply documents, the
//! leader and its applied index, deleting a run's objects, following a
//! placement's Works on a watch, and a process's CPU time and RSS.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, ClusterStatusRequest, ListRequest, ReadOptions, WatchRequest};
use serde_json::Value;
use tokio::sync::mpsc;
use tonic::transport::Channel;

use crate::error::Error;
use crate::rollout_latency::{work_available, WORK_INDEX_LABEL};
use crate::watching::{forward, hub, kind};

/// Applies `documents` in one request; returns the hub's index after it.
pub async fn apply(client: &mut FleetClient<Channel>, documents: &[Value]) -> Result<u64, Error> {
    let documents = documents.iter().map(serde_json::to_vec).collect::<Result<Vec<_>, _>>()?;
    Ok(client.apply(ApplyRequest { documents, sources: vec![] }).await.map_err(hub)?.into_inner().resource_version)
}

/// The leader's id and applied index (as the asked node reports them).
pub async fn leader_index(client: &mut FleetClient<Channel>) -> Result<(u64, u64), Error> {
    let status = client.cluster_status(ClusterStatusRequest { digest: false }).await.map_err(hub)?.into_inner();
    let leader = status.members.iter().find(|m| m.role == "Leader");
    leader.map(|m| (m.id, m.last_applied)).ok_or_else(|| Error::Hub("no leader in the cluster status".into()))
}

/// Objects of `plural` (all namespaces) matching `selector`.
pub async fn list(client: &mut FleetClient<Channel>, plural: &str, selector: &str) -> Result<Vec<Object>, Error> {
    let request = ListRequest {
        kind: kind(plural),
        namespace: String::new(),
        all_namespaces: true,
        label_selector: selector.into(),
        read: Some(ReadOptions { min_resource_version: 0, consistent: false }),
    };
    let items = client.list(request).await.map_err(hub)?.into_inner().items;
    items
        .iter()
        .map(|i| Object::from_json(i).map_err(|source| Error::Decode { what: format!("a listed {plural}"), source }))
        .collect()
}

/// Polls until no Work of placement `name` is left.
pub async fn wait_works_gone(client: &mut FleetClient<Channel>, name: &str, deadline: Duration) -> Result<(), Error> {
    let until = Instant::now() + deadline;
    loop {
        // A failed list (an election) is polled again like a non-empty one.
        let listed = list(client, "works", &format!("{PARENT_PLACEMENT_LABEL}={name}")).await;
        if listed.as_ref().is_ok_and(Vec::is_empty) {
            return Ok(());
        }
        if Instant::now() >= until {
            listed?;
            return Err(Error::Deadline {
                what: format!("the Works of deleted placement {name} gone"),
                after: deadline,
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A watch of one placement's Works, from `since`.
pub struct WorkWatch {
    rx: mpsc::UnboundedReceiver<Result<(Object, Instant), Error>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WorkWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WorkWatch {
    /// Watches the Works of placement `name` after index `since`.
    pub async fn start(client: &mut FleetClient<Channel>, name: &str, since: u64) -> Result<WorkWatch, Error> {
        let request = WatchRequest {
            kind: kind("works"),
            namespace: String::new(),
            all_namespaces: true,
            label_selector: format!("{PARENT_PLACEMENT_LABEL}={name}"),
            resource_version: since,
            min_resource_version: since,
        };
        let stream = client.watch(request).await.map_err(hub)?.into_inner();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(forward(stream, format!("Works of {name}"), |o, _, at| Some((o, at)), tx));
        Ok(WorkWatch { rx, task })
    }

    /// Waits until `want` clusters report their Work Available on a
    /// resource index other than `old_index`; returns, per cluster, the
    /// time from `from` to that report (sorted, ms) and the index.
    pub async fn available(
        &mut self,
        want: usize,
        old_index: Option<&str>,
        from: Instant,
        deadline: Duration,
    ) -> Result<(Vec<f64>, String), Error> {
        let mut seen: BTreeMap<String, f64> = BTreeMap::new();
        let mut index = String::new();
        let wait = async {
            while seen.len() < want {
                let Some(event) = self.rx.recv().await else { break };
                let (work, at) = event?;
                let work_index = work.metadata.labels.get(WORK_INDEX_LABEL).cloned().unwrap_or_default();
                if old_index == Some(work_index.as_str()) || !work_available(&work) {
                    continue;
                }
                let cluster = work.metadata.namespace.clone().unwrap_or_default();
                seen.entry(cluster).or_insert_with(|| at.saturating_duration_since(from).as_secs_f64() * 1000.0);
                index = work_index;
            }
            Ok::<(), Error>(())
        };
        match tokio::time::timeout(deadline, wait).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(Error::Deadline {
                    what: format!("{want} clusters Available (saw {})", seen.len()),
                    after: deadline,
                })
            }
        }
        if seen.len() < want {
            return Err(Error::Hub(format!("the Work watch ended after {} of {want} clusters", seen.len())));
        }
        let mut times: Vec<f64> = seen.into_values().collect();
        times.sort_by(f64::total_cmp);
        Ok((times, index))
    }
}

/// User + system CPU time of process `pid` so far.
pub fn cpu_time(pid: u32) -> Result<Duration, Error> {
    let path = format!("/proc/{pid}/stat");
    let text =
        std::fs::read_to_string(&path).map_err(|source| Error::ReadFile { path: path.clone().into(), source })?;
    // Fields after the command (which may hold spaces) start after the last ')'.
    let rest = text.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command.
    Ok(Duration::from_secs_f64((ticks(11) + ticks(12)) as f64 / 100.0))
}

/// Resident set size of process `pid`, in MB.
pub fn rss_mb(pid: u32) -> Result<f64, Error> {
    let path = format!("/proc/{pid}/status");
    let text =
        std::fs::read_to_string(&path).map_err(|source| Error::ReadFile { path: path.clone().into(), source })?;
    let kb = text
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| Error::Hub(format!("{path}: no VmRSS line")))?;
    Ok(kb / 1024.0)
}
