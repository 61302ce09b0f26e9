//! A watch that survives node failures: resumes on another endpoint from the
//! last resourceVersion seen, and relists when the server says the history
//! it needs has expired.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use fleet_api::Object;
use futures::StreamExt;

use crate::client::{Client, WatchStream};
use crate::error::Result;
use crate::types::{EventType, ListQuery, ObjectList, WatchEvent};

/// How many reconnections in a row may fail before [`Watcher::next`] gives up.
pub const DEFAULT_MAX_RETRIES: u32 = 10;

/// Identifies an object within one watch (kind and group are fixed).
type Key = (String, String);

fn key_of(object: &Object) -> Key {
    (object.metadata.namespace.clone().unwrap_or_default(), object.metadata.name.clone())
}

/// A resilient watch of one [`ListQuery`], optionally narrowed to one name.
pub struct Watcher {
    client: Client,
    query: ListQuery,
    name: Option<String>,
    resource_version: u64,
    known: BTreeMap<Key, Object>,
    stream: Option<WatchStream>,
    pending: VecDeque<WatchEvent>,
    failures: u32,
    max_retries: u32,
}

impl Watcher {
    /// Lists `query` (only objects named `name`, if given) and returns the
    /// objects with a watcher that continues from the list.
    pub async fn start(client: Client, query: ListQuery, name: Option<String>) -> Result<(Watcher, Vec<Object>)> {
        let list = client.list(&query).await?;
        let watcher = Watcher::from_list(client, query, name, &list);
        let items = list.items.into_iter().filter(|o| watcher.wanted(o)).collect();
        Ok((watcher, items))
    }

    /// A watcher continuing from a list already made with `query`.
    pub fn from_list(client: Client, query: ListQuery, name: Option<String>, list: &ObjectList) -> Watcher {
        let mut watcher = Watcher {
            client,
            query,
            name,
            resource_version: list.resource_version,
            known: BTreeMap::new(),
            stream: None,
            pending: VecDeque::new(),
            failures: 0,
            max_retries: DEFAULT_MAX_RETRIES,
        };
        watcher.known = list.items.iter().filter(|o| watcher.wanted(o)).map(|o| (key_of(o), o.clone())).collect();
        watcher
    }

    /// Sets how many reconnections in a row may fail before giving up.
    pub fn with_max_retries(mut self, max_retries: u32) -> Watcher {
        self.max_retries = max_retries;
        self
    }

    /// The last resourceVersion this watch has seen.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    fn wanted(&self, object: &Object) -> bool {
        self.name.as_deref().is_none_or(|n| object.metadata.name == n)
    }

    /// The next change. Bookmarks are not returned. Fails only when the
    /// server refuses the watch (not just a node being down), or when
    /// reconnecting failed too many times in a row.
    pub async fn next(&mut self) -> Result<WatchEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(event);
            }
            let stream = match self.stream.as_mut() {
                Some(stream) => stream,
                None => {
                    self.open().await?;
                    continue;
                }
            };
            match stream.next().await {
                Some(Ok(event)) => {
                    self.failures = 0;
                    if let Some(event) = self.accept(event) {
                        return Ok(event);
                    }
                }
                Some(Err(e)) if e.is_expired() => {
                    self.stream = None;
                    self.relist().await?;
                }
                Some(Err(e)) if e.is_retryable() => {
                    self.stream = None;
                    self.back_off(e).await?;
                }
                Some(Err(e)) => return Err(e),
                None => {
                    // The server ended the stream (e.g. shutting down): resume.
                    self.stream = None;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// Opens a stream from the last resourceVersion, relisting if expired.
    async fn open(&mut self) -> Result<()> {
        match self.client.watch(&self.query, self.resource_version).await {
            Ok(stream) => {
                self.stream = Some(stream);
                Ok(())
            }
            Err(e) if e.is_expired() => self.relist().await,
            Err(e) if e.is_retryable() => self.back_off(e).await,
            Err(e) => Err(e),
        }
    }

    /// Waits before the next reconnection; gives up with `error` after too
    /// many failures in a row.
    async fn back_off(&mut self, error: crate::Error) -> Result<()> {
        self.failures += 1;
        if self.failures > self.max_retries {
            return Err(error);
        }
        let exp = self.failures.saturating_sub(1).min(5);
        let delay = Duration::from_millis(200u64 << exp).min(Duration::from_secs(5));
        tokio::time::sleep(delay).await;
        Ok(())
    }

    /// Records an event; returns it unless it is a bookmark, for another
    /// name, or a version already seen.
    fn accept(&mut self, event: WatchEvent) -> Option<WatchEvent> {
        self.resource_version = self.resource_version.max(event.resource_version);
        if event.event_type == EventType::Bookmark {
            return None;
        }
        let object = event.object.as_ref()?;
        if !self.wanted(object) {
            return None;
        }
        let key = key_of(object);
        if event.event_type == EventType::Deleted {
            self.known.remove(&key);
            return Some(event);
        }
        let seen = self.known.get(&key).and_then(|o| o.metadata.resource_version_number());
        if let (Some(seen), Some(this)) = (seen, object.metadata.resource_version_number()) {
            if this <= seen {
                return None;
            }
        }
        self.known.insert(key, object.clone());
        Some(event)
    }

    /// Lists again and queues the differences from what was known as events.
    async fn relist(&mut self) -> Result<()> {
        let list = loop {
            match self.client.list(&self.query).await {
                Ok(list) => break list,
                Err(e) if e.is_retryable() => self.back_off(e).await?,
                Err(e) => return Err(e),
            }
        };
        let fresh: BTreeMap<Key, Object> =
            list.items.into_iter().filter(|o| self.wanted(o)).map(|o| (key_of(&o), o)).collect();
        let events = diff(&self.known, &fresh, list.resource_version);
        self.pending.extend(events);
        self.known = fresh;
        self.resource_version = list.resource_version;
        Ok(())
    }
}

/// The events that turn `old` into `new`: ADDED for new keys, MODIFIED for
/// changed resourceVersions, DELETED (with the last known state) for keys gone.
fn diff(old: &BTreeMap<Key, Object>, new: &BTreeMap<Key, Object>, resource_version: u64) -> Vec<WatchEvent> {
    let mut events = Vec::new();
    for (key, object) in new {
        let event_type = match old.get(key) {
            None => EventType::Added,
            Some(before) if before.metadata.resource_version != object.metadata.resource_version => EventType::Modified,
            Some(_) => continue,
        };
        let rv = object.metadata.resource_version_number().unwrap_or(resource_version);
        events.push(WatchEvent { event_type, object: Some(object.clone()), resource_version: rv });
    }
    for (key, object) in old {
        if !new.contains_key(key) {
            events.push(WatchEvent { event_type: EventType::Deleted, object: Some(object.clone()), resource_version });
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str, rv: u64) -> Object {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": rv.to_string()}
        }))
        .unwrap()
    }

    fn map(objects: &[Object]) -> BTreeMap<Key, Object> {
        objects.iter().map(|o| (key_of(o), o.clone())).collect()
    }

    #[test]
    fn relist_diff_reports_added_modified_and_deleted() {
        let old = map(&[cm("a", 1), cm("b", 2), cm("c", 3)]);
        let new = map(&[cm("a", 1), cm("b", 5), cm("d", 6)]);
        let events: Vec<(EventType, String)> =
            diff(&old, &new, 7).into_iter().map(|e| (e.event_type, e.object.unwrap().metadata.name)).collect();
        assert_eq!(
            events,
            vec![
                (EventType::Modified, "b".to_string()),
                (EventType::Added, "d".to_string()),
                (EventType::Deleted, "c".to_string()),
            ]
        );
    }
}
