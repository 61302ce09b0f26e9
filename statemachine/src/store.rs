//! The object store on redb: tables, reads, and the applied-index signal.
//!
//! Layout of the state-machine file (separate from the Raft log file so apply
//! never queues behind append):
//! - `objects`: storage key (`group/Kind/namespace/name`) → object JSON;
//! - `owners`: owner uid → storage keys of its dependents (for cascading deletes);
//! - `namespaces`: namespace → storage keys of the objects in it, so that a
//!   placement selecting a namespace reads its contents without scanning
//!   every key of the store (built on first open of a store without it);
//! - `meta`: `last_applied` and `membership`, written in the same transaction
//!   as the data they describe, `snapshot`, the metadata of the last
//!   snapshot built or installed, `retired_nodes`, the ids removed from the
//!   membership (see [`Store::is_retired`]), and `format`, the version of
//!   this layout ([`FORMAT_VERSION`]): a node refuses a file written by a
//!   newer version rather than misread it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};

use fleet_api::{LabelSelector, Object, ObjectKey};
use redb::{Database, MultimapTableDefinition, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::watch;

use crate::error::Error;
use crate::raft_types::{LogId, StoredMembership};
use crate::watch::{EventType, WatchEvent, WatchHub, DEFAULT_HISTORY};

pub(crate) const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
pub(crate) const OWNERS: MultimapTableDefinition<&str, &str> = MultimapTableDefinition::new("owners");
pub(crate) const NAMESPACES: MultimapTableDefinition<&str, &str> = MultimapTableDefinition::new("namespaces");
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Present once `namespaces` holds every namespaced object of `objects`.
pub(crate) const META_NAMESPACE_INDEX: &str = "namespace_index";
pub(crate) const META_LAST_APPLIED: &str = "last_applied";
pub(crate) const META_MEMBERSHIP: &str = "membership";
/// The metadata of the last snapshot built or installed (see `snapshot.rs`).
pub(crate) const META_SNAPSHOT: &str = "snapshot";
/// Node ids removed from the membership and not added back.
pub(crate) const META_RETIRED: &str = "retired_nodes";
/// The layout version of the file.
pub(crate) const META_FORMAT: &str = "format";
/// The layout version this code writes and reads. A file without one was
/// written before versions were recorded, in this same layout (version 1).
pub const FORMAT_VERSION: u32 = 1;
/// redb's page cache for the state file. redb's default is 1 GiB, and it
/// keeps every page it reads or writes until that is full, so a node grew by
/// the size of its state file. 64 MiB holds the pages the
/// controllers and watches read at 1,000 clusters and 1,000 placements
/// (a 67 MB file); pages beyond it are read from the OS page cache.
const PAGE_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// Which objects a list or watch is about.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub group: String,
    pub kind: String,
    /// `None`: every namespace (or a cluster-scoped kind).
    pub namespace: Option<String>,
    /// `None`: every object.
    pub selector: Option<LabelSelector>,
}

impl ListQuery {
    /// Whether an object at `key` is of the query's kind and namespace
    /// (labels aside).
    pub fn in_scope(&self, key: &ObjectKey) -> bool {
        key.group == self.group
            && key.kind == self.kind
            && self.namespace.as_deref().is_none_or(|ns| key.namespace == ns)
    }

    /// Whether labels satisfy the query's selector (any labels do without one).
    fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.as_ref().is_none_or(|s| s.matches(labels))
    }

    /// How a change looks to a watch of this query, as Kubernetes shows it:
    /// under a label selector, an object whose labels change so that it
    /// starts matching is ADDED, and one that stops matching is DELETED
    /// carrying its state before the change (the last state the watch
    /// matched). `None`: the watch does not see the change.
    pub fn view_of<'e>(&self, event: &'e WatchEvent) -> Option<(EventType, &'e Arc<Object>)> {
        if !self.in_scope(&event.key) {
            return None;
        }
        let current = &event.object;
        let now = self.selects(&current.metadata.labels);
        if event.event_type != EventType::Modified {
            return now.then_some((event.event_type, current));
        }
        let before = event.previous.as_ref().map_or(now, |old| self.selects(&old.metadata.labels));
        match (before, now, &event.previous) {
            (true, true, _) => Some((EventType::Modified, current)),
            (false, true, _) => Some((EventType::Added, current)),
            (true, false, Some(old)) => Some((EventType::Deleted, old)),
            (true, false, None) | (false, false, _) => None,
        }
    }
}

/// One node's replicated object store.
pub struct Store {
    pub(crate) db: Database,
    hub: WatchHub,
    applied_tx: watch::Sender<u64>,
    metrics: StoreMetrics,
    /// A copy of `retired_nodes`, read on every peer call.
    retired: RwLock<BTreeSet<u64>>,
}

/// What the store measures about its own disk work, for the node's
/// `/metrics`. Never read by `apply`: it only counts and times the commits
/// around it. Cheap to clone (shared handles).
#[derive(Clone, Debug)]
pub struct StoreMetrics {
    /// Durations of the durable (fsync'd) commits of the state machine file.
    pub commit_seconds: prometheus_client::metrics::histogram::Histogram,
    /// Commands applied by this node since it started.
    pub applied_commands: prometheus_client::metrics::counter::Counter,
    /// Where the time of writes goes on this node, stage by stage.
    pub stages: crate::stages::WriteStages,
}

impl Default for StoreMetrics {
    fn default() -> Self {
        StoreMetrics {
            commit_seconds: prometheus_client::metrics::histogram::Histogram::new(
                prometheus_client::metrics::histogram::exponential_buckets(0.0005, 2.0, 15),
            ),
            applied_commands: Default::default(),
            stages: Default::default(),
        }
    }
}

impl Store {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: &Path) -> Result<Arc<Store>, Error> {
        let db = Database::builder().set_cache_size(PAGE_CACHE_BYTES).create(path)?;
        {
            let txn = db.begin_write()?;
            txn.open_table(OBJECTS)?;
            txn.open_multimap_table(OWNERS)?;
            txn.open_multimap_table(NAMESPACES)?;
            let mut meta = txn.open_table(META)?;
            let format = read_meta::<u32>(&meta, META_FORMAT)?.unwrap_or(FORMAT_VERSION);
            check_format(path, format)?;
            meta.insert(META_FORMAT, encode_meta(&FORMAT_VERSION)?.as_slice())?;
            if meta.get(META_NAMESPACE_INDEX)?.is_none() {
                let objects = txn.open_table(OBJECTS)?;
                let mut namespaces = txn.open_multimap_table(NAMESPACES)?;
                for row in objects.iter()? {
                    let (key, _) = row?;
                    index_namespace(&mut namespaces, key.value())?;
                }
                meta.insert(META_NAMESPACE_INDEX, encode_meta(&true)?.as_slice())?;
            }
            drop(meta);
            txn.commit()?;
        }
        let (applied, retired) = {
            let txn = db.begin_read()?;
            let meta = txn.open_table(META)?;
            let applied = read_meta::<LogId>(&meta, META_LAST_APPLIED)?.map(|l| l.index).unwrap_or(0);
            (applied, read_meta::<BTreeSet<u64>>(&meta, META_RETIRED)?.unwrap_or_default())
        };
        let (applied_tx, _) = watch::channel(applied);
        let hub = WatchHub::new(applied, DEFAULT_HISTORY);
        Ok(Arc::new(Store { db, hub, applied_tx, metrics: StoreMetrics::default(), retired: RwLock::new(retired) }))
    }

    /// Whether node `id` was removed from the membership (by a change this
    /// node has applied) and not added back: its certificate is refused for
    /// every peer call. Kept in the replicated state, so a node that
    /// restarts or installs a snapshot still knows.
    pub fn is_retired(&self, id: u64) -> bool {
        self.retired.read().unwrap_or_else(|p| p.into_inner()).contains(&id)
    }

    pub(crate) fn set_retired(&self, retired: BTreeSet<u64>) {
        *self.retired.write().unwrap_or_else(|p| p.into_inner()) = retired;
    }

    /// The watch hub of this store.
    pub fn hub(&self) -> &WatchHub {
        &self.hub
    }

    /// What this store measured (commit latency, commands applied).
    pub fn metrics(&self) -> &StoreMetrics {
        &self.metrics
    }

    /// Commits `txn`, timing it if it is durable (an fsync). Storage work
    /// after the deterministic part of apply: the clock never reaches state.
    pub(crate) fn commit_timed(&self, txn: redb::WriteTransaction, durable: bool) -> Result<(), Error> {
        let started = std::time::Instant::now();
        txn.commit()?;
        if durable {
            self.metrics.commit_seconds.observe(started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// The index of the last applied log entry.
    pub fn applied_index(&self) -> u64 {
        *self.applied_tx.borrow()
    }

    /// A receiver that changes whenever an entry is applied.
    pub fn subscribe_applied(&self) -> watch::Receiver<u64> {
        self.applied_tx.subscribe()
    }

    pub(crate) fn set_applied(&self, index: u64) {
        self.applied_tx.send_replace(index);
    }

    /// Reads one object, with the applied index it was read at.
    pub fn get(&self, key: &ObjectKey) -> Result<(Option<Object>, u64), Error> {
        let txn = self.db.begin_read()?;
        let objects = txn.open_table(OBJECTS)?;
        let meta = txn.open_table(META)?;
        let index = read_meta::<LogId>(&meta, META_LAST_APPLIED)?.map(|l| l.index).unwrap_or(0);
        let object = match objects.get(key.storage_key().as_str())? {
            Some(v) => Some(decode_object(&key.storage_key(), v.value())?),
            None => None,
        };
        Ok((object, index))
    }

    /// Lists objects, in storage-key order, with the applied index they were read at.
    pub fn list(&self, query: &ListQuery) -> Result<(Vec<Object>, u64), Error> {
        self.list_map(query, Some)
    }

    /// [`Store::list`], each object passed through `map` as it is read
    /// (`None` drops it): a list answered as JSON holds one decoded object
    /// at a time, not the decoded list (several times its JSON) as well.
    pub fn list_map<T>(
        &self,
        query: &ListQuery,
        mut map: impl FnMut(Object) -> Option<T>,
    ) -> Result<(Vec<T>, u64), Error> {
        let prefix = ObjectKey::prefix(&query.group, &query.kind, query.namespace.as_deref());
        self.scan(&prefix, |object| if query.selects(&object.metadata.labels) { map(object) } else { None })
    }

    /// Objects of one kind in one namespace (`""` for cluster-scoped kinds)
    /// whose names start with `name_prefix`: a range read, so a controller
    /// finds one placement's snapshots and bindings (named after it) without
    /// reading every placement's.
    pub fn list_named_prefix(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name_prefix: &str,
    ) -> Result<(Vec<Object>, u64), Error> {
        let prefix = format!("{}{name_prefix}", ObjectKey::prefix(group, kind, Some(namespace)));
        self.scan(&prefix, Some)
    }

    /// Every object stored in `namespace`, of any kind, in storage-key
    /// order (read through the namespace index).
    pub fn namespace_contents(&self, namespace: &str) -> Result<(Vec<Object>, u64), Error> {
        let txn = self.db.begin_read()?;
        let objects = txn.open_table(OBJECTS)?;
        let namespaces = txn.open_multimap_table(NAMESPACES)?;
        let meta = txn.open_table(META)?;
        let index = read_meta::<LogId>(&meta, META_LAST_APPLIED)?.map(|l| l.index).unwrap_or(0);
        let mut out = Vec::new();
        if namespace.is_empty() {
            return Ok((out, index));
        }
        for key in namespaces.get(namespace)? {
            let key = key?;
            let key = key.value();
            if let Some(v) = objects.get(key)? {
                out.push(decode_object(key, v.value())?);
            }
        }
        Ok((out, index))
    }

    /// Reads, in key order, the objects whose key starts with `prefix`,
    /// keeping what `keep` makes of them.
    fn scan<T>(&self, prefix: &str, mut keep: impl FnMut(Object) -> Option<T>) -> Result<(Vec<T>, u64), Error> {
        let txn = self.db.begin_read()?;
        let objects = txn.open_table(OBJECTS)?;
        let meta = txn.open_table(META)?;
        let index = read_meta::<LogId>(&meta, META_LAST_APPLIED)?.map(|l| l.index).unwrap_or(0);
        let mut out = Vec::new();
        for row in objects.range(prefix..)? {
            let (k, v) = row?;
            let k = k.value();
            if !k.starts_with(prefix) {
                break;
            }
            if let Some(kept) = keep(decode_object(k, v.value())?) {
                out.push(kept);
            }
        }
        Ok((out, index))
    }

    /// The last applied log id and membership, as stored together.
    pub fn applied_state(&self) -> Result<(Option<LogId>, StoredMembership), Error> {
        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        let last = read_meta::<LogId>(&meta, META_LAST_APPLIED)?;
        let membership = read_meta::<StoredMembership>(&meta, META_MEMBERSHIP)?.unwrap_or_default();
        Ok((last, membership))
    }
}

/// The namespace part of a storage key (`group/Kind/namespace/name`);
/// empty for cluster-scoped objects.
pub(crate) fn namespace_of_key(key: &str) -> &str {
    key.split('/').nth(2).unwrap_or("")
}

/// Records a new object's key in the namespace index.
pub(crate) fn index_namespace(namespaces: &mut redb::MultimapTable<&str, &str>, key: &str) -> Result<(), Error> {
    let namespace = namespace_of_key(key);
    if !namespace.is_empty() {
        namespaces.insert(namespace, key)?;
    }
    Ok(())
}

/// Forgets a deleted object's key in the namespace index.
pub(crate) fn unindex_namespace(namespaces: &mut redb::MultimapTable<&str, &str>, key: &str) -> Result<(), Error> {
    let namespace = namespace_of_key(key);
    if !namespace.is_empty() {
        namespaces.remove(namespace, key)?;
    }
    Ok(())
}

/// Refuses a file of a newer layout than this code's.
fn check_format(path: &Path, format: u32) -> Result<(), Error> {
    if format > FORMAT_VERSION {
        return Err(Error::NewerFormat { path: path.display().to_string(), found: format, supported: FORMAT_VERSION });
    }
    Ok(())
}

/// Decodes a stored object.
pub(crate) fn decode_object(key: &str, bytes: &[u8]) -> Result<Object, Error> {
    Object::from_json(bytes).map_err(|e| Error::Decode { what: format!("object {key}"), detail: e.to_string() })
}

/// Reads and decodes a `meta` record.
pub(crate) fn read_meta<T: serde::de::DeserializeOwned>(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
    name: &str,
) -> Result<Option<T>, Error> {
    match meta.get(name)? {
        Some(v) => rmp_serde::from_slice(v.value())
            .map(Some)
            .map_err(|e| Error::Decode { what: format!("meta {name}"), detail: e.to_string() }),
        None => Ok(None),
    }
}

/// Encodes a `meta` record.
pub(crate) fn encode_meta<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, Error> {
    rmp_serde::to_vec_named(value).map_err(|e| Error::Decode { what: "meta".into(), detail: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_file_of_a_newer_format_is_refused_with_a_clear_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("state.redb");
        drop(Store::open(&path).expect("a new store"));
        drop(Store::open(&path).expect("reopened at the same version"));
        {
            let db = Database::create(&path).expect("db");
            let txn = db.begin_write().expect("txn");
            {
                let mut meta = txn.open_table(META).expect("meta");
                let newer = encode_meta(&(FORMAT_VERSION + 1)).expect("encode");
                meta.insert(META_FORMAT, newer.as_slice()).expect("insert");
            }
            txn.commit().expect("commit");
        }
        let err = Store::open(&path).err().expect("a newer format refused");
        let message = err.to_string();
        assert!(matches!(err, Error::NewerFormat { found, .. } if found == FORMAT_VERSION + 1), "{message}");
        assert!(message.contains("state.redb") && message.contains("newer than the version 1"), "{message}");
    }
}
