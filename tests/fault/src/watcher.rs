//! A watcher that follows every change of the ConfigMaps of a namespace
//! through a fault run, moving to another node when its stream breaks or
//! goes silent, until it has seen a given resourceVersion (a barrier written
//! after the last operation: then it has seen every change before). What it saw is
//! both a stream to check ([`crate::watch`]) and the record of committed
//! changes that settles unanswered writes ([`crate::resolve`]).
//!
//! A node that answers "expired" (it restarted, or installed a snapshot,
//! and keeps no history to resume from) is passed over for the next; only
//! when every node in a row says so is the record incomplete. A roaming
//! watcher ([`Moves::OnAnyBreak`]) also moves on when its stream breaks or
//! goes silent; a pinned one ([`Moves::OnlyWhenExpired`]) waits for its node
//! through breaks, and leaves it only when the node cannot resume (so a
//! pinned node that is killed and restarted does not end the record).
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
    /// Times a node answered "expired" and the watcher went to the next.
    pub moved_on_expiry: u64,
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

/// When a [`Watcher`] goes to the next node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moves {
    /// After any break or silence: a client that roams the trio.
    OnAnyBreak,
    /// Only when its node answers "expired": a client that stays on one
    /// node through every fault that node survives.
    OnlyWhenExpired,
}

/// A watcher running in the background.
pub struct Watcher {
    progress: watch::Receiver<u64>,
    until: watch::Sender<u64>,
    task: JoinHandle<Watched>,
}

impl Watcher {
    /// Starts following the ConfigMaps of `namespace` from the beginning
    /// through `nodes`, first the first; a stream quiet for `silence` is
    /// opened again, on the next node if `moves` says so. Start it before the
    /// first write to watch.
    pub fn spawn(
        nodes: Vec<FleetClient<Channel>>,
        namespace: &str,
        recorder: Arc<Recorder>,
        silence: Duration,
        moves: Moves,
    ) -> Watcher {
        let (progress_tx, progress) = watch::channel(0);
        let (until, until_rx) = watch::channel(0);
        let follow = Follow {
            nodes,
            namespace: namespace.to_string(),
            recorder,
            silence,
            moves,
            until: until_rx,
            progress: progress_tx,
        };
        let task = tokio::spawn(follow.run());
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

/// What one watcher follows, and how.
struct Follow {
    nodes: Vec<FleetClient<Channel>>,
    namespace: String,
    recorder: Arc<Recorder>,
    silence: Duration,
    moves: Moves,
    /// The version to reach (0: not yet known).
    until: watch::Receiver<u64>,
    /// The newest version seen so far.
    progress: watch::Sender<u64>,
}

/// What the watcher has gathered so far.
struct Gathered {
    watched: Watched,
    seen: HashSet<(u64, String)>,
    last: u64,
    /// Nodes in a row that answered "expired": incomplete once all have.
    expired_in_a_row: usize,
}

/// How a stream ended.
enum Ended {
    /// Broken, silent or refused for a reason other than expiry.
    Broke,
    /// The node cannot resume from where the watcher is.
    Expired,
    /// The target version was seen.
    Reached,
}

/// How long a pinned watcher waits before opening a broken stream again.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

impl Follow {
    /// Follows until the version in `until` has been seen, publishing the
    /// newest version seen on `progress`.
    async fn run(mut self) -> Watched {
        let mut got = Gathered {
            watched: Watched { complete: true, ..Watched::default() },
            seen: HashSet::new(),
            last: 0,
            expired_in_a_row: 0,
        };
        let mut at = 0usize;
        for attempt in 0u64.. {
            if self.reached(got.last) || self.nodes.is_empty() {
                break;
            }
            if attempt > 0 {
                got.watched.reconnects += 1;
            }
            let mut client = self.nodes[at % self.nodes.len()].clone();
            let ended = match tokio::time::timeout(self.silence, client.watch(self.request(got.last))).await {
                Ok(Ok(reply)) => self.read(reply.into_inner(), &mut got).await,
                // Expired on this node (restarted, or caught up by a
                // snapshot: no history to resume from); another may have it.
                Ok(Err(status)) if status.code() == Code::FailedPrecondition => Ended::Expired,
                _ => Ended::Broke,
            };
            match ended {
                Ended::Reached => break,
                Ended::Expired => {
                    got.expired_in_a_row += 1;
                    if got.expired_in_a_row >= self.nodes.len() {
                        got.watched.complete = false;
                        break;
                    }
                    got.watched.moved_on_expiry += 1;
                    at += 1;
                }
                Ended::Broke if self.moves == Moves::OnAnyBreak => at += 1,
                // Waiting for a node that is down, not in a busy loop.
                Ended::Broke => tokio::time::sleep(RETRY_PAUSE).await,
            }
        }
        got.watched.stream.until = Some(got.last);
        got.watched
    }

    /// Whether the watcher has seen the version it was asked to reach.
    fn reached(&self, last: u64) -> bool {
        let target = *self.until.borrow();
        target != 0 && last >= target
    }

    /// A watch resuming one version before `last` (see the module doc).
    fn request(&self, last: u64) -> WatchRequest {
        let from = last.saturating_sub(1);
        WatchRequest {
            kind: Some(KindRef { kind: "ConfigMap".into(), api_version: "v1".into() }),
            namespace: self.namespace.clone(),
            all_namespaces: false,
            label_selector: String::new(),
            resource_version: from,
            min_resource_version: from,
        }
    }

    /// Reads one stream until it ends, dropping re-deliveries.
    async fn read(&mut self, mut stream: tonic::Streaming<WireEvent>, got: &mut Gathered) -> Ended {
        loop {
            let message = tokio::select! {
                message = tokio::time::timeout(self.silence, stream.message()) => message,
                Ok(()) = self.until.changed() => {
                    if self.reached(got.last) { return Ended::Reached } else { continue }
                }
            };
            let event = match message {
                Ok(Ok(Some(event))) => event,
                Ok(Err(status)) if status.code() == Code::FailedPrecondition => return Ended::Expired,
                _ => return Ended::Broke,
            };
            got.expired_in_a_row = 0;
            got.last = got.last.max(event.resource_version);
            self.progress.send_replace(got.last);
            if let Some((key, digest, kind)) = parse(&event) {
                if !got.seen.insert((event.resource_version, key.clone())) {
                    got.watched.redelivered += 1;
                } else {
                    let rv = event.resource_version;
                    got.watched.stream.events.push(WatchEvent { rv, key: key.clone(), kind });
                    got.watched.committed.push(Committed { key, rv, digest, seen_at: self.recorder.now() });
                }
            }
            if self.reached(got.last) {
                return Ended::Reached;
            }
        }
    }
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
