//! Watches of the kinds Fleet placed, so a change on the cluster (someone's
//! `kubectl edit`, a controller's status update, a deletion) brings its Work
//! back at once instead of waiting for a periodic check.
//!
//! - A kind is followed from the first time an object of it is applied, with
//!   one watch over all namespaces, for the life of the agent.
//! - A watch starts at the collection's current `resourceVersion` (a list of
//!   one object), so following a kind costs no full listing; it resumes from
//!   the last version seen (bookmarks keep that fresh) when the server ends
//!   it, and starts over when the server says that version is too old.
//! - Every event of an object carrying [`OWNER_ANNOTATION`] is a
//!   [`Change::Work`] naming that Work, except the agent's own writes: the
//!   version each apply produced is remembered, and its echo is skipped.
//! - Whenever events may have been missed (a watch that failed or expired),
//!   a [`Change::Resync`] asks for every Work to be checked.
//! - The objects the events show are kept ([`Changes::latest`]), so reading
//!   a placed object costs no request once its kind is watched — the
//!   informer pattern: any later change on the server arrives as an event,
//!   which both refreshes the copy and brings the Work back. A copy is
//!   dropped when the agent writes or deletes the object (until the echo of
//!   that write arrives the server is asked), when the object loses Fleet's
//!   owner annotation or goes, and when a watch has a gap. An event older
//!   than the agent's own last write is not kept; `resourceVersion`s are
//!   compared as the integers etcd-backed servers hand out, and an object
//!   whose version is not one is never kept.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fleet_api::Object;
use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use tokio::sync::mpsc;

use super::discovery::ApiResource;
use crate::target::{Change, ResourceId, OWNER_ANNOTATION};

/// How long the server keeps one watch open before the agent resumes it.
const WATCH_SECONDS: u32 = 290;
/// Pause before retrying a watch the server refused or could not serve,
/// doubled after each failure in a row up to [`RETRY_MAX`] (a role without
/// `list`/`watch` on a kind must not turn into a request every 2 seconds;
/// the periodic check still finds drift then).
const RETRY: Duration = Duration::from_secs(2);
const RETRY_MAX: Duration = Duration::from_secs(300);

/// The followed kinds, the agent's own last writes, and the channel of changes.
#[derive(Debug)]
pub(crate) struct Changes {
    sender: mpsc::UnboundedSender<Change>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
    /// `(group, version, plural)` of every followed kind.
    followed: Mutex<HashSet<(String, String, String)>>,
    /// The `resourceVersion` each object had after the agent last wrote it.
    written: Mutex<HashMap<ResourceId, String>>,
    /// Placed objects as the watches last showed them.
    seen: Mutex<HashMap<ResourceId, Object>>,
}

impl Default for Changes {
    fn default() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Changes {
            sender,
            receiver: Mutex::new(Some(receiver)),
            followed: Mutex::default(),
            written: Mutex::default(),
            seen: Mutex::default(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Changes {
    /// The stream of changes; `None` after the first call.
    pub(crate) fn take(&self) -> Option<mpsc::UnboundedReceiver<Change>> {
        lock(&self.receiver).take()
    }

    /// Remembers the version an apply of `id` produced (its echo is
    /// skipped); the server is asked for the object until that echo arrives.
    pub(crate) fn wrote(&self, id: ResourceId, resource_version: &str) {
        lock(&self.seen).remove(&id);
        lock(&self.written).insert(id, resource_version.to_string());
    }

    /// Forgets the copy of an object the agent is deleting.
    pub(crate) fn deleting(&self, id: &ResourceId) {
        lock(&self.seen).remove(id);
    }

    /// The object as the watch of its kind last showed it, if that is
    /// current as far as the agent knows (`None`: ask the server).
    pub(crate) fn latest(&self, id: &ResourceId) -> Option<Object> {
        lock(&self.seen).get(id).cloned()
    }

    /// Takes in the object of one event (see the module docs).
    fn observe(&self, object: &Object, deleted: bool) {
        let id = ResourceId::of(object);
        let version = object.metadata.resource_version.parse::<u64>().ok();
        let ours = lock(&self.written).get(&id).and_then(|v| v.parse::<u64>().ok());
        let mut seen = lock(&self.seen);
        if deleted || !object.metadata.annotations.contains_key(OWNER_ANNOTATION) || version.is_none() {
            seen.remove(&id);
        } else if version >= ours {
            seen.insert(id, object.clone());
        }
    }

    /// Follows `resource`'s kind from now on (once; later calls do nothing).
    pub(crate) fn follow(self: &Arc<Self>, client: &kube::Client, resource: &ApiResource) {
        let key = (resource.group.clone(), resource.version.clone(), resource.plural.clone());
        if !lock(&self.followed).insert(key) {
            return;
        }
        let collection = ApiResource { namespaced: false, ..resource.clone() }.collection_path("");
        tokio::spawn(follow_collection(client.clone(), collection, Arc::downgrade(self)));
    }

    /// Whether an event of `object` is news to the agent, and if so the
    /// Work that placed it.
    fn owner_of_news(&self, object: &Object) -> Option<String> {
        let owner = object.metadata.annotations.get(OWNER_ANNOTATION)?;
        let id = ResourceId::of(object);
        let own_echo = lock(&self.written).get(&id).is_some_and(|v| *v == object.metadata.resource_version);
        (!own_echo).then(|| owner.clone())
    }

    /// Takes in one event's object: moves `version` on, keeps or drops the
    /// copy, and sends its Work if the change is news. `false` once nobody
    /// listens any more.
    fn take_in(&self, object: &Object, deleted: bool, version: &mut Option<String>) -> bool {
        *version = Some(object.metadata.resource_version.clone());
        self.observe(object, deleted);
        match self.owner_of_news(object) {
            Some(owner) => self.send(Change::Work(owner)),
            None => true,
        }
    }

    fn send(&self, change: Change) -> bool {
        self.sender.send(change).is_ok()
    }
}

/// Watches one collection for as long as the agent holds its [`Changes`].
async fn follow_collection(client: kube::Client, collection: String, changes: std::sync::Weak<Changes>) {
    // `None`: start over from the collection's current version.
    let mut version: Option<String> = None;
    let mut first = true;
    let mut retry = RETRY;
    loop {
        let Some(shared) = changes.upgrade() else { return };
        let start = match version.take() {
            Some(v) => v,
            None => match current_version(&client, &collection).await {
                Ok(v) => {
                    // Anything between the last event seen and now was missed.
                    if !first {
                        lock(&shared.seen).clear();
                        if !shared.send(Change::Resync) {
                            return;
                        }
                    }
                    first = false;
                    v
                }
                Err(e) => {
                    if retry == RETRY {
                        tracing::warn!(%collection, error = %e, "cannot watch placed objects (changes are found by the periodic check meanwhile); retrying");
                    }
                    drop(shared);
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(RETRY_MAX);
                    continue;
                }
            },
        };
        // Bookmarks are on by default: they keep `version` fresh on quiet kinds.
        let params = WatchParams::default().timeout(WATCH_SECONDS);
        let events = match kube::core::Request::new(&collection).watch(&params, &start) {
            Ok(request) => client.request_events::<Object>(request).await,
            Err(e) => {
                tracing::warn!(%collection, error = %e, "cannot build a watch request");
                return;
            }
        };
        let mut events = match events {
            Ok(events) => events.boxed(),
            Err(e) => {
                tracing::debug!(%collection, error = %e, "the watch failed; starting over");
                drop(shared);
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(RETRY_MAX);
                continue;
            }
        };
        retry = RETRY;
        version = Some(start);
        loop {
            match events.try_next().await {
                Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o))) => {
                    if !shared.take_in(&o, false, &mut version) {
                        return;
                    }
                }
                Ok(Some(WatchEvent::Deleted(o))) => {
                    if !shared.take_in(&o, true, &mut version) {
                        return;
                    }
                }
                Ok(Some(WatchEvent::Bookmark(b))) => version = Some(b.metadata.resource_version),
                Ok(Some(WatchEvent::Error(e))) => {
                    tracing::debug!(%collection, status = ?e, "the watch ended with an error");
                    version = None;
                    break;
                }
                // The server closed the watch (its timeout): resume.
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(%collection, error = %e, "the watch broke");
                    version = None;
                    break;
                }
            }
        }
    }
}

/// The collection's current `resourceVersion`, from a list of at most one object.
async fn current_version(client: &kube::Client, collection: &str) -> Result<String, kube::Error> {
    let request = kube::core::Request::new(collection)
        .list(&ListParams::default().limit(1))
        .map_err(kube::Error::BuildRequest)?;
    let list: kube::core::ObjectList<Object> = client.request(request).await?;
    Ok(list.metadata.resource_version.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(version: &str, owner: Option<&str>) -> Object {
        let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "c", "namespace": "app", "resourceVersion": version}});
        if let Some(owner) = owner {
            object["metadata"]["annotations"] = json!({OWNER_ANNOTATION: owner});
        }
        serde_json::from_value(object).unwrap()
    }

    #[test]
    fn only_others_changes_to_placed_objects_are_news() {
        let changes = Changes::default();
        assert_eq!(changes.owner_of_news(&config_map("5", None)), None, "not placed by Fleet");
        let placed = config_map("7", Some("fleet-member-a/w"));
        assert_eq!(changes.owner_of_news(&placed).as_deref(), Some("fleet-member-a/w"));
        // The echo of the agent's own write is skipped; a later change is not.
        changes.wrote(ResourceId::of(&placed), "7");
        assert_eq!(changes.owner_of_news(&placed), None);
        assert_eq!(
            changes.owner_of_news(&config_map("8", Some("fleet-member-a/w"))).as_deref(),
            Some("fleet-member-a/w")
        );
    }

    #[test]
    fn a_placed_object_is_served_from_the_watch_only_when_not_older_than_the_agents_write() {
        let changes = Changes::default();
        let id = ResourceId::of(&config_map("7", None));
        changes.observe(&config_map("7", None), false);
        assert_eq!(changes.latest(&id), None, "not placed by Fleet: always asked");
        changes.observe(&config_map("7", Some("ns/w")), false);
        assert_eq!(changes.latest(&id).map(|o| o.metadata.resource_version), Some("7".into()));

        // The agent writes version 9: asked again until an event at 9 or later.
        changes.wrote(id.clone(), "9");
        assert_eq!(changes.latest(&id), None);
        changes.observe(&config_map("8", Some("ns/w")), false);
        assert_eq!(changes.latest(&id), None, "an event from before the write is stale");
        changes.observe(&config_map("9", Some("ns/w")), false);
        assert_eq!(changes.latest(&id).map(|o| o.metadata.resource_version), Some("9".into()));

        // Fleet's annotation removed, or the object deleted: asked again.
        changes.observe(&config_map("10", None), false);
        assert_eq!(changes.latest(&id), None);
        changes.observe(&config_map("11", Some("ns/w")), false);
        changes.observe(&config_map("12", Some("ns/w")), true);
        assert_eq!(changes.latest(&id), None);
        // A version that is not an integer is never served from the copy.
        changes.observe(&config_map("a1", Some("ns/w")), false);
        assert_eq!(changes.latest(&id), None);
        // Nor one the agent is deleting.
        changes.observe(&config_map("13", Some("ns/w")), false);
        changes.deleting(&id);
        assert_eq!(changes.latest(&id), None);
    }

    #[test]
    fn the_stream_of_changes_is_taken_once() {
        let changes = Changes::default();
        let mut stream = changes.take().expect("first take");
        assert!(changes.take().is_none());
        assert!(changes.send(Change::Resync));
        assert_eq!(stream.try_recv().ok(), Some(Change::Resync));
    }
}
