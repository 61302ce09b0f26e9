//! The driver's calls to the hub and the host: apply documents, the
//! leader and its applied index, deleting a run's objects, following a
//! placement's Works on a watch, and a process's CPU time and RSS.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, ClusterStatusRequest, ListRequest, ReadOptions, WatchEvent, WatchRequest};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic::Streaming;

use crate::error::Error;
use crate::rollout_latency::{work_available, WORK_INDEX_LABEL};
use crate::watching::{hub, kind};

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

/// A watch of one placement's Works, from `since`, that outlives the
/// hub's expiring it: a watch that ends, fails over or falls behind (a
/// saturated hub expires a watcher that lags) is resumed from the last
/// index received, or relisted when that index has left the history.
pub struct WorkWatch {
    rx: mpsc::UnboundedReceiver<Result<(Object, Instant), Error>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WorkWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long the driver waits before reopening a Work watch that ended;
/// doubled after each reopening that brought no event, up to
/// [`REOPEN_PAUSE_MAX`], so that a hub too busy to answer is not asked
/// over and over.
const REOPEN_PAUSE: Duration = Duration::from_millis(200);
const REOPEN_PAUSE_MAX: Duration = Duration::from_secs(5);

/// Where a reopened Work watch starts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Resume {
    /// After this index: the events since are still in the hub's history.
    After(u64),
    /// From the current objects (sent as ADDED), read at this index or newer.
    Relist(u64),
}

impl Resume {
    /// Where to reopen after the watch failed with `code` (the last index
    /// received is `last`), `at_open` when the hub refused to open it. A
    /// watch expired while streaming (it fell behind) resumes after the
    /// last index, as the hub asks, and relists only when the hub then
    /// answers that the index has left its history; anything else resumes.
    fn after_failure(code: tonic::Code, last: u64, at_open: bool) -> Resume {
        match code {
            tonic::Code::FailedPrecondition if at_open => Resume::Relist(last),
            _ => Resume::After(last),
        }
    }

    fn request(self, name: &str) -> WatchRequest {
        let (resource_version, min_resource_version) = match self {
            Resume::After(index) => (index, index),
            Resume::Relist(index) => (0, index),
        };
        WatchRequest {
            kind: kind("works"),
            namespace: String::new(),
            all_namespaces: true,
            label_selector: format!("{PARENT_PLACEMENT_LABEL}={name}"),
            resource_version,
            min_resource_version,
        }
    }
}

/// How far a Work watch got: where it was opened from, and the index up
/// to which every event has been received.
#[derive(Debug)]
struct Position {
    from: Resume,
    last: u64,
    /// A relist sends the current objects, each at its own version, then a
    /// BOOKMARK at the list's: only that one says everything up to it was
    /// sent, so `last` waits for it.
    listing: bool,
}

impl Position {
    fn new(since: u64) -> Position {
        Position { from: Resume::After(since), last: since, listing: false }
    }

    /// An event of `event_type` at `index` arrived.
    fn saw(&mut self, event_type: &str, index: u64) {
        if !self.listing || event_type == "BOOKMARK" {
            self.listing = false;
            self.last = self.last.max(index);
        }
    }

    /// The watch failed with `code` (`at_open`: the hub refused to open
    /// it): where to reopen. A relist cut short is relisted again.
    fn failed(&mut self, code: tonic::Code, at_open: bool) {
        self.from =
            if self.listing { Resume::Relist(self.last) } else { Resume::after_failure(code, self.last, at_open) };
        self.listing = matches!(self.from, Resume::Relist(_));
    }
}

/// Whether a watch that failed with `code` can be reopened: the hub
/// refused this watcher (bad selector, no permission) when not.
fn reopenable(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::FailedPrecondition
            | tonic::Code::Unavailable
            | tonic::Code::Unknown
            | tonic::Code::Internal
            | tonic::Code::Cancelled
            | tonic::Code::DeadlineExceeded
            | tonic::Code::Aborted
    )
}

/// Follows the Works of placement `name` on `client` from the `opened`
/// watch (after `since`), reopening it as [`WorkWatch`] says, and sends each ADDED or
/// MODIFIED Work with the instant it arrived. An object first seen in a
/// relist is stamped with the relist's arrival, an upper bound of when it
/// changed. Stops when the receiver is gone or the hub refuses the watch.
async fn follow_works(
    mut client: FleetClient<Channel>,
    name: String,
    since: u64,
    opened: Streaming<WatchEvent>,
    tx: mpsc::UnboundedSender<Result<(Object, Instant), Error>>,
) {
    let mut opened = Some(opened);
    let mut position = Position::new(since);
    let mut pause = REOPEN_PAUSE;
    loop {
        let stream = match opened.take() {
            Some(stream) => Ok(stream),
            None => client.watch(position.from.request(&name)).await.map(tonic::Response::into_inner),
        };
        let at_open = stream.is_err();
        let failure = match stream {
            Ok(mut stream) => loop {
                match stream.next().await {
                    Some(Ok(event)) => {
                        let at = Instant::now();
                        pause = REOPEN_PAUSE;
                        position.saw(&event.r#type, event.resource_version);
                        if event.r#type == "DELETED" || event.r#type == "BOOKMARK" {
                            continue;
                        }
                        let Ok(object) = Object::from_json(&event.object) else { continue };
                        if tx.send(Ok((object, at))).is_err() {
                            return;
                        }
                    }
                    Some(Err(status)) => break status,
                    None => break tonic::Status::unavailable("the stream ended"),
                }
            },
            Err(status) => status,
        };
        if !reopenable(failure.code()) {
            let _ = tx.send(Err(hub(failure)));
            return;
        }
        position.failed(failure.code(), at_open);
        eprintln!("Works of {name}: watch {:?}: {}; reopening {:?}", failure.code(), failure.message(), position.from);
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(REOPEN_PAUSE_MAX);
    }
}

impl WorkWatch {
    /// Watches the Works of placement `name` after index `since`; fails
    /// only when the first watch cannot be opened.
    pub async fn start(client: &mut FleetClient<Channel>, name: &str, since: u64) -> Result<WorkWatch, Error> {
        // The first call's failure is the caller's to retry (an election).
        let opened = client.watch(Resume::After(since).request(name)).await.map_err(hub)?.into_inner();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(follow_works(client.clone(), name.to_string(), since, opened, tx));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_resumes_and_relists_only_when_the_hub_refuses_the_resumption() {
        let fell_behind = Resume::after_failure(tonic::Code::FailedPrecondition, 42, false);
        assert_eq!(fell_behind, Resume::After(42), "expired while streaming: resume from the history");
        let expired = Resume::after_failure(tonic::Code::FailedPrecondition, 42, true);
        assert_eq!(expired, Resume::Relist(42), "the index left the history");
        let relist = expired.request("web");
        assert_eq!(
            (relist.resource_version, relist.min_resource_version),
            (0, 42),
            "current objects, not older than 42"
        );
        assert_eq!(relist.label_selector, format!("{PARENT_PLACEMENT_LABEL}=web"));

        let failed_over = Resume::after_failure(tonic::Code::Unavailable, 42, true);
        assert_eq!(failed_over, Resume::After(42));
        let resume = failed_over.request("web");
        assert_eq!((resume.resource_version, resume.min_resource_version), (42, 42));
    }

    #[test]
    fn a_relist_cut_short_before_its_bookmark_is_relisted_from_where_it_started() {
        let mut position = Position::new(10);
        position.saw("ADDED", 12);
        position.failed(tonic::Code::FailedPrecondition, false);
        assert_eq!(position.from, Resume::After(12), "fell behind while streaming");
        position.failed(tonic::Code::FailedPrecondition, true);
        assert_eq!(position.from, Resume::Relist(12), "index 12 left the history");
        // The relist's objects carry their own, higher versions.
        position.saw("ADDED", 40);
        position.failed(tonic::Code::Unavailable, false);
        assert_eq!(position.from, Resume::Relist(12), "objects up to 40 may not all have been sent");
        position.saw("ADDED", 40);
        position.saw("BOOKMARK", 45);
        position.saw("MODIFIED", 46);
        position.failed(tonic::Code::Unavailable, false);
        assert_eq!(position.from, Resume::After(46), "the bookmark closed the list");
    }

    #[test]
    fn a_refused_watch_is_not_reopened() {
        assert!(reopenable(tonic::Code::FailedPrecondition));
        assert!(reopenable(tonic::Code::Unavailable));
        assert!(!reopenable(tonic::Code::PermissionDenied));
        assert!(!reopenable(tonic::Code::InvalidArgument));
    }
}
