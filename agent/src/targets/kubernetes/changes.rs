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
//!   An object without the annotation that a Work looked at (a difference
//!   reported, a take-over refused) names that Work: the last one to look
//!   at it, one entry per object.
//! - Whenever events may have been missed (a watch that failed or expired),
//!   a [`Change::Resync`] asks for every Work to be checked.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fleet_api::Object;
use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use tokio::sync::mpsc;

use super::discovery::ApiResource;
use crate::targets::{Change, ResourceId, OWNER_ANNOTATION};

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
    /// The Work that last looked at each object it does not hold.
    looked_at: Mutex<HashMap<ResourceId, String>>,
}

impl Default for Changes {
    fn default() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Changes {
            sender,
            receiver: Mutex::new(Some(receiver)),
            followed: Mutex::default(),
            written: Mutex::default(),
            looked_at: Mutex::default(),
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

    /// Remembers the version an apply of `id` produced (its echo is skipped).
    pub(crate) fn wrote(&self, id: ResourceId, resource_version: &str) {
        lock(&self.written).insert(id, resource_version.to_string());
    }

    /// Remembers that Work `work` looked at `id`, which it may not hold.
    pub(crate) fn look_after(&self, id: ResourceId, work: &str) {
        let mut looked_at = lock(&self.looked_at);
        if looked_at.get(&id).map(String::as_str) != Some(work) {
            looked_at.insert(id, work.to_string());
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
        let id = ResourceId::of(object);
        let Some(owner) = object.metadata.annotations.get(OWNER_ANNOTATION) else {
            return lock(&self.looked_at).get(&id).cloned();
        };
        let own_echo = lock(&self.written).get(&id).is_some_and(|v| *v == object.metadata.resource_version);
        (!own_echo).then(|| owner.clone())
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
                    if !first && !shared.send(Change::Resync) {
                        return;
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
                Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o))) => {
                    version = Some(o.metadata.resource_version.clone());
                    if let Some(owner) = shared.owner_of_news(&o) {
                        if !shared.send(Change::Work(owner)) {
                            return;
                        }
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
    fn a_change_to_an_object_a_work_only_looked_at_brings_that_work_back() {
        let changes = Changes::default();
        let theirs = config_map("5", None);
        changes.look_after(ResourceId::of(&theirs), "fleet-member-a/diff");
        assert_eq!(changes.owner_of_news(&theirs).as_deref(), Some("fleet-member-a/diff"));
        changes.look_after(ResourceId::of(&theirs), "fleet-member-a/other");
        assert_eq!(changes.owner_of_news(&theirs).as_deref(), Some("fleet-member-a/other"), "the last to look");
        // Once placed, the annotation speaks.
        let placed = config_map("6", Some("fleet-member-a/w"));
        assert_eq!(changes.owner_of_news(&placed).as_deref(), Some("fleet-member-a/w"));
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
