//! Watch streams: optionally the current objects first (as ADDED), then
//! every matching change after a resourceVersion, from this node's hub. A
//! watcher that falls too far behind, or whose version has left the history,
//! gets FAILED_PRECONDITION "... expired, relist" and resumes or relists.

use std::pin::Pin;
use std::sync::Arc;

use fleet_proto::fleet::WatchEvent as WireEvent;
use fleet_statemachine::watch::{HubMessage, LIVE_CAPACITY};
use fleet_statemachine::{Ended, Interest, ListQuery, LiveEvents, Store};
use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::blocking::blocking;
use crate::error::{storage_error, RequestError};

const STREAM_BUFFER: usize = 1024;

/// A watch's sending end, counting the events it sends (and, while it
/// lives, the watch as open).
struct Counted {
    tx: mpsc::Sender<Result<WireEvent, RequestError>>,
    watch: crate::metrics::WatchGuard,
}

impl Counted {
    async fn send(
        &self,
        item: Result<WireEvent, RequestError>,
    ) -> Result<(), mpsc::error::SendError<Result<WireEvent, RequestError>>> {
        let is_event = item.is_ok();
        self.tx.send(item).await?;
        if is_event {
            self.watch.event_sent();
        }
        Ok(())
    }

    async fn closed(&self) {
        self.tx.closed().await
    }
}

type Out = Counted;

fn expired(message: String) -> RequestError {
    RequestError::expired(message)
}

/// A watch's events.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WireEvent, RequestError>> + Send>>;

/// Starts a watch of `query` after `from` (0 = list the current objects
/// first). `member` is the member agent's cluster and certificate serial
/// when one watches: its stream ends once its MemberCluster is deleted or
/// its credential no longer lists that certificate (replaced by a new join,
/// or dropped after two renewals). With `bookmarks`, it also sends a
/// BOOKMARK that often when the hub has applied more since the last one.
/// Its resourceVersion is an applied index whose events (published before
/// the index moved) this watch has all sent or filtered out, so resuming
/// from it loses nothing, and a quiet selector's watcher keeps a version
/// that stays in the history.
pub async fn start_with_bookmarks(
    store: Arc<Store>,
    query: ListQuery,
    from: u64,
    stopping: tokio::sync::watch::Receiver<bool>,
    member: Option<(String, String)>,
    view: Option<crate::objects::View>,
    bookmarks: Option<std::time::Duration>,
) -> Result<WatchStream, RequestError> {
    let listed = from == 0;
    // Off the async workers: resuming far behind decodes the history's
    // events of this kind (thousands, when many agents reconnect at once).
    // A list and its subscription share one trip, so the history cannot
    // move past the list's index between the two.
    let (initial, from, subscription) = {
        let (store, query) = (store.clone(), query.clone());
        let member_of = member.as_ref().map(|(name, _)| name.clone());
        blocking(move || {
            let (initial, from) = if listed { store.list(&query).map_err(storage_error)? } else { (Vec::new(), from) };
            let interest = interest_of(&query, member_of.as_deref());
            let subscription = store.hub().subscribe_to(from, interest).map_err(|e| expired(e.to_string()))?;
            Ok((initial, from, subscription))
        })
        .await?
    };
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let watch = crate::metrics::watch_opened(&query.kind);
    tokio::spawn(async move {
        let tx = Counted { tx, watch };
        for object in initial {
            let rv = object.metadata.resource_version_number().unwrap_or(0);
            let object = view.map_or(object.clone(), |v| v(&object));
            let event = WireEvent { r#type: "ADDED".into(), object: object.to_json(), resource_version: rv };
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
        if listed {
            // Where the list was read: resume from here, not from the newest object.
            let bookmark = WireEvent { r#type: "BOOKMARK".into(), object: Vec::new(), resource_version: from };
            if tx.send(Ok(bookmark)).await.is_err() {
                return;
            }
        }
        for event in subscription.backlog {
            if !send_if_matching(&tx, &query, &event, view).await {
                return;
            }
        }
        let live = Live { query, member, view, bookmarks: bookmarks.map(|every| (every, store)), bookmarked: from };
        forward_live(tx, subscription.receiver, stopping, live).await;
    });
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// The live events a watch of `query` needs: its kind in its namespace (or
/// in any), and for a member's watch the two objects whose change can end
/// it (its MemberCluster and its credential, see [`revoked`]).
fn interest_of(query: &ListQuery, member: Option<&str>) -> Interest {
    let scope = query.clone();
    let wanted = move |key: &fleet_api::ObjectKey| scope.in_scope(key);
    let interest = match &query.namespace {
        Some(namespace) => Interest::in_namespace(namespace, wanted),
        None => Interest::anywhere(wanted),
    };
    match member {
        Some(member) => interest
            .and_object(fleet_api::ObjectKey::new(fleet_api::kinds::FLEET_CLUSTER_GROUP, "MemberCluster", "", member))
            .and_object(crate::members::internal::credential_key(member)),
        None => interest,
    }
}

async fn send_if_matching(
    tx: &Out,
    query: &ListQuery,
    event: &fleet_statemachine::WatchEvent,
    view: Option<crate::objects::View>,
) -> bool {
    let Some((event_type, object)) = query.view_of(event) else {
        return true;
    };
    let wire = WireEvent {
        r#type: event_type.as_str().to_string(),
        object: view.map_or_else(|| object.to_json(), |v| v(object).to_json()),
        resource_version: event.resource_version,
    };
    tx.send(Ok(wire)).await.is_ok()
}

/// What the live part of a watch forwards.
struct Live {
    query: ListQuery,
    member: Option<(String, String)>,
    view: Option<crate::objects::View>,
    /// How often to send a BOOKMARK, and the store whose applied index it names.
    bookmarks: Option<(std::time::Duration, Arc<Store>)>,
    /// The version of the last BOOKMARK (or where the watch started).
    bookmarked: u64,
}

/// Resolves at the next bookmark time (never when bookmarks are off).
async fn next_bookmark(interval: &mut Option<tokio::time::Interval>) {
    match interval {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Handles one message of the hub: `false` once the stream has ended.
async fn forward(tx: &Out, live: &Live, message: Result<HubMessage, Ended>) -> bool {
    match message {
        Ok(HubMessage::Event(event)) => {
            if let Some(ended) = live.member.as_ref().and_then(|(m, serial)| revoked(&event, m, serial)) {
                let _ = tx.send(Err(ended)).await;
                return false;
            }
            send_if_matching(tx, &live.query, &event, live.view).await
        }
        Ok(HubMessage::Reset { resource_version }) => {
            let _ = tx
                .send(Err(expired(format!(
                    "this node installed a snapshot at resourceVersion {resource_version}: expired, relist"
                ))))
                .await;
            false
        }
        Err(Ended::Lagged) => {
            let _ = tx
                .send(Err(expired(format!(
                    "watch fell more than {LIVE_CAPACITY} events behind: expired, resume from the last resourceVersion \
                     received or relist"
                ))))
                .await;
            false
        }
        Err(Ended::Closed) => false,
    }
}

/// Sends a BOOKMARK at the applied index once every event published
/// before it has been forwarded: `false` once the stream has ended.
async fn bookmark(tx: &Out, live: &mut Live, receiver: &mut LiveEvents) -> bool {
    let Some((_, store)) = &live.bookmarks else { return true };
    // Events are published before the applied index moves past them.
    let applied = store.applied_index();
    loop {
        let message = match receiver.try_recv() {
            Ok(Some(message)) => Ok(message),
            Ok(None) => break,
            Err(ended) => Err(ended),
        };
        if !forward(tx, live, message).await {
            return false;
        }
    }
    if applied <= live.bookmarked {
        return true;
    }
    live.bookmarked = applied;
    let event = WireEvent { r#type: "BOOKMARK".into(), object: Vec::new(), resource_version: applied };
    tx.send(Ok(event)).await.is_ok()
}

async fn forward_live(
    tx: Out,
    mut receiver: LiveEvents,
    mut stopping: tokio::sync::watch::Receiver<bool>,
    mut live: Live,
) {
    let mut interval = live.bookmarks.as_ref().map(|(every, _)| {
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + *every, *every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval
    });
    loop {
        tokio::select! {
            _ = tx.closed() => return,
            _ = stopped(&mut stopping) => {
                let _ = tx.send(Err(RequestError::unavailable("node is shutting down: resume the watch on another node"))).await;
                return;
            }
            _ = next_bookmark(&mut interval) => {
                if !bookmark(&tx, &mut live, &mut receiver).await {
                    return;
                }
            }
            message = receiver.recv() => {
                if !forward(&tx, &live, message).await {
                    return;
                }
            }
        }
    }
}

/// Resolves once the node is stopping (the guard `wait_for` returns is not
/// `Send`, so it is dropped here rather than held by the caller's future).
async fn stopped(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await.is_ok();
}

/// Why a member's watch ends with `event`, if it does: its MemberCluster
/// deleted, or its certificate (`serial`) no longer a current credential.
fn revoked(event: &fleet_statemachine::WatchEvent, member: &str, serial: &str) -> Option<RequestError> {
    if left_the_fleet(event, member) {
        return Some(RequestError::forbidden(format!(
            "member cluster {member:?} has left the fleet (its MemberCluster was deleted): credentials revoked"
        )));
    }
    if event.key != crate::members::internal::credential_key(member) {
        return None;
    }
    let current = event.event_type != fleet_statemachine::EventType::Deleted
        && crate::members::internal::spec::<crate::members::internal::CredentialSpec>(&event.object)
            .is_some_and(|c| c.serials.iter().any(|s| s == serial));
    (!current).then(|| {
        RequestError::forbidden(format!(
            "this certificate (serial {serial}) is no longer a credential of member cluster {member:?} (replaced or \
             revoked): watch again with the current certificate"
        ))
    })
}

/// Whether `event` deletes the MemberCluster of `member`: its watches end then.
fn left_the_fleet(event: &fleet_statemachine::WatchEvent, member: &str) -> bool {
    event.event_type == fleet_statemachine::EventType::Deleted
        && event.key.kind == "MemberCluster"
        && event.key.group == fleet_api::kinds::FLEET_CLUSTER_GROUP
        && event.key.name == member
}
