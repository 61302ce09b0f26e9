//! A watcher that follows every change of the ConfigMaps of a namespace
//! through a fault run, moving to another node when its stream breaks or
//! goes silent, until it has seen a given resourceVersion (a barrier written
//! after the last operation: then it has seen every change before). What it saw is
//! both a stream to check ([`crate::watch`]) and the record of committed
//! changes that settles unanswered writes ([`crate::resolve`]).
//!
//! A node that answers "expired" (it restarted, or installed a snapshot,
//! and keeps no history to resume from) is passed over for the next; only
//! when every node in a row says so is the record incomplete.
//!
//! It resumes from one version *before* the last it received and drops what
//! it already has: one Raft entry can change several objects under one
//! resourceVersion, and a stream broken between them would otherwise lose
//! the rest of that entry.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{KindRef, WatchEvent as WireEvent, WatchRequest};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use tonic::Code;

use crate::error::Error;
use crate::history::digest;
use crate::recorder::Recorder;
use crate::resolve::Committed;
use crate::watch::{EventKind, WatchEvent, WatchStream};

/// Everything a [`Watcher`] saw.
#[derive(Debug, Clone, Default)]
pub struct Watched {
    /// The events, without the re-deliveries of resuming.
    pub stream: WatchStream,
    /// The same changes with their values, for [`crate::resolve`].
    pub committed: Vec<Committed>,
    /// Streams opened after the first (breaks, silences).
    pub reconnects: u64,
    /// Events received again after resuming, and dropped.
    pub redelivered: u64,
    /// False if every node answered "expired" in a row: changes may be
    /// missing, and the record must not settle anything.
    pub complete: bool,
}

/// One event's key, value digest (`None`: deleted) and kind.
fn parse(event: &WireEvent) -> Option<(String, Option<u64>, EventKind)> {
    let object: Value = serde_json::from_slice(&event.object).ok()?;
    let key = object["metadata"]["name"].as_str()?.to_string();
    let kind = match event.r#type.as_str() {
        "ADDED" => EventKind::Added,
        "MODIFIED" => EventKind::Modified,
        "DELETED" => EventKind::Deleted,
        _ => return None,
    };
    let value = object["data"]["value"].as_str().map(|v| digest(v.as_bytes()));
    Some((key, if kind == EventKind::Deleted { None } else { value }, kind))
}

/// A watcher running in the background.
pub struct Watcher {
    progress: watch::Receiver<u64>,
    until: watch::Sender<u64>,
    task: JoinHandle<Watched>,
}

impl Watcher {
    /// Starts following the ConfigMaps of `namespace` from the beginning
    /// through any of `nodes`; a stream quiet for `silence` is abandoned for
    /// the next node. Start it before the first write to watch.
    pub fn spawn(
        nodes: Vec<FleetClient<Channel>>,
        namespace: &str,
        recorder: Arc<Recorder>,
        silence: Duration,
    ) -> Watcher {
        let (progress_tx, progress) = watch::channel(0);
        let (until, until_rx) = watch::channel(0);
        let task = tokio::spawn(follow(nodes, namespace.to_string(), recorder, until_rx, progress_tx, silence));
        Watcher { progress, until, task }
    }

    /// The newest resourceVersion seen so far (0 before the first stream).
    pub fn seen(&self) -> u64 {
        *self.progress.borrow()
    }

    /// Lets the watcher run until it has seen `rv`, then returns what it
    /// saw; an error if that takes longer than `timeout`.
    pub async fn finish(self, rv: u64, timeout: Duration) -> Result<Watched, Error> {
        let _ = self.until.send(rv.max(1));
        let mut progress = self.progress.clone();
        let abort = self.task.abort_handle();
        match tokio::time::timeout(timeout, self.task).await {
            Ok(Ok(watched)) => Ok(watched),
            Ok(Err(e)) => Err(Error::Watch(format!("the watcher task failed: {e}"))),
            Err(_) => {
                abort.abort();
                let last = *progress.borrow_and_update();
                Err(Error::Watch(format!("did not reach resourceVersion {rv} within {timeout:?} (last seen {last})")))
            }
        }
    }
}

/// Follows until the version in `until` (0: not yet known) has been seen,
/// publishing the newest version seen on `progress`.
async fn follow(
    nodes: Vec<FleetClient<Channel>>,
    namespace: String,
    recorder: Arc<Recorder>,
    mut until: watch::Receiver<u64>,
    progress: watch::Sender<u64>,
    silence: Duration,
) -> Watched {
    let mut watched = Watched { complete: true, ..Watched::default() };
    let mut seen: HashSet<(u64, String)> = HashSet::new();
    let mut last = 0u64;
    // Nodes in a row that answered "expired": incomplete once all have.
    let mut expired_in_a_row = 0usize;
    let reached = |last: u64, until: &watch::Receiver<u64>| {
        let target = *until.borrow();
        target != 0 && last >= target
    };
    for attempt in 0u64.. {
        if reached(last, &until) || nodes.is_empty() {
            break;
        }
        if attempt > 0 {
            watched.reconnects += 1;
        }
        let mut client = nodes[(attempt % nodes.len() as u64) as usize].clone();
        let from = last.saturating_sub(1);
        let request = WatchRequest {
            kind: Some(KindRef { kind: "ConfigMap".into(), api_version: "v1".into() }),
            namespace: namespace.clone(),
            all_namespaces: false,
            label_selector: String::new(),
            resource_version: from,
            min_resource_version: from,
        };
        let mut stream = match tokio::time::timeout(silence, client.watch(request)).await {
            Ok(Ok(reply)) => reply.into_inner(),
            Ok(Err(status)) if status.code() == Code::FailedPrecondition => {
                // Expired on this node (restarted, or caught up by a
                // snapshot: no history to resume from); another may have it.
                expired_in_a_row += 1;
                if expired_in_a_row >= nodes.len() {
                    watched.complete = false;
                    break;
                }
                continue;
            }
            _ => continue,
        };
        loop {
            let message = tokio::select! {
                message = tokio::time::timeout(silence, stream.message()) => message,
                Ok(()) = until.changed() => {
                    if reached(last, &until) { break } else { continue }
                }
            };
            let event = match message {
                Ok(Ok(Some(event))) => event,
                Ok(Err(status)) if status.code() == Code::FailedPrecondition => {
                    expired_in_a_row += 1;
                    if expired_in_a_row >= nodes.len() {
                        watched.complete = false;
                        return watched;
                    }
                    break;
                }
                _ => break,
            };
            expired_in_a_row = 0;
            last = last.max(event.resource_version);
            progress.send_replace(last);
            if let Some((key, digest, kind)) = parse(&event) {
                if !seen.insert((event.resource_version, key.clone())) {
                    watched.redelivered += 1;
                } else {
                    let rv = event.resource_version;
                    watched.stream.events.push(WatchEvent { rv, key: key.clone(), kind });
                    watched.committed.push(Committed { key, rv, digest, seen_at: recorder.now() });
                }
            }
            if reached(last, &until) {
                break;
            }
        }
    }
    watched.stream.until = Some(last);
    watched
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_the_way_fleet_sends_them() {
        let object = br#"{"metadata":{"name":"k1","resourceVersion":"5"},"data":{"value":"p1-1"}}"#.to_vec();
        let event = |kind: &str| WireEvent { r#type: kind.into(), object: object.clone(), resource_version: 5 };
        assert_eq!(parse(&event("MODIFIED")), Some(("k1".into(), Some(digest(b"p1-1")), EventKind::Modified)));
        assert_eq!(parse(&event("DELETED")), Some(("k1".into(), None, EventKind::Deleted)));
        assert_eq!(parse(&event("BOOKMARK")), None);
    }
}
