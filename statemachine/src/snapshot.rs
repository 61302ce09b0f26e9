//! Snapshot content (build from a read transaction, install by replacing the
//! tables) and the durable copy of the current snapshot in the data dir.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fleet_api::Object;
use redb::{Durability, ReadableDatabase, ReadableTable};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::raft_types::{LogId, SnapshotMeta, StoredMembership};
use crate::store::{
    decode_object, encode_meta, read_meta, Store, META, META_LAST_APPLIED, META_MEMBERSHIP, OBJECTS, OWNERS,
};

/// What a snapshot holds: the applied state and every object as JSON.
#[derive(Serialize, Deserialize)]
struct SnapshotContent {
    last_applied: Option<LogId>,
    membership: StoredMembership,
    objects: Vec<(String, String)>,
}

impl Store {
    /// Serializes the whole state. The state machine is made durable first,
    /// so the log may be purged up to what the snapshot covers.
    pub(crate) fn build_snapshot_content(&self) -> Result<(Option<LogId>, StoredMembership, Vec<u8>), Error> {
        let mut flush = self.db.begin_write()?;
        flush.set_durability(Durability::Immediate)?;
        flush.commit()?;

        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        let last_applied = read_meta::<LogId>(&meta, META_LAST_APPLIED)?;
        let membership = read_meta::<StoredMembership>(&meta, META_MEMBERSHIP)?.unwrap_or_default();
        let table = txn.open_table(OBJECTS)?;
        let mut objects = Vec::new();
        for row in table.iter()? {
            let (k, v) = row?;
            let json = String::from_utf8(v.value().to_vec())
                .map_err(|e| Error::Decode { what: format!("object {}", k.value()), detail: e.to_string() })?;
            objects.push((k.value().to_string(), json));
        }
        let content = SnapshotContent { last_applied, membership: membership.clone(), objects };
        let bytes = rmp_serde::to_vec_named(&content).map_err(|e| Error::Snapshot(e.to_string()))?;
        Ok((last_applied, membership, bytes))
    }

    /// Replaces the whole state with a snapshot's, durably, and tells
    /// watchers to relist.
    pub(crate) fn install_snapshot_content(&self, bytes: &[u8]) -> Result<(), Error> {
        let content: SnapshotContent = rmp_serde::from_slice(bytes).map_err(|e| Error::Snapshot(e.to_string()))?;
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        {
            txn.delete_table(OBJECTS)?;
            txn.delete_multimap_table(OWNERS)?;
            let mut objects = txn.open_table(OBJECTS)?;
            let mut owners = txn.open_multimap_table(OWNERS)?;
            for (key, json) in &content.objects {
                let object: Object = decode_object(key, json.as_bytes())?;
                objects.insert(key.as_str(), json.as_bytes())?;
                for r in &object.metadata.owner_references {
                    owners.insert(r.uid.as_str(), key.as_str())?;
                }
            }
            let mut meta = txn.open_table(META)?;
            match &content.last_applied {
                Some(last) => meta.insert(META_LAST_APPLIED, encode_meta(last)?.as_slice())?,
                None => meta.remove(META_LAST_APPLIED)?,
            };
            meta.insert(META_MEMBERSHIP, encode_meta(&content.membership)?.as_slice())?;
        }
        txn.commit()?;
        let index = content.last_applied.map(|l| l.index).unwrap_or(0);
        self.hub().reset(index);
        self.set_applied(index);
        Ok(())
    }
}

/// The current snapshot, kept as one file so a restarted node can still send
/// it to a lagging follower.
pub(crate) struct SnapshotFile {
    path: PathBuf,
    cached: Mutex<Option<CurrentSnapshot>>,
}

/// A snapshot's metadata and content, shared without copying.
pub(crate) type CurrentSnapshot = (SnapshotMeta, Arc<Vec<u8>>);

#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta,
    data: Vec<u8>,
}

impl SnapshotFile {
    /// The snapshot file in `dir`.
    pub(crate) fn new(dir: &Path) -> SnapshotFile {
        SnapshotFile { path: dir.join("snapshot.bin"), cached: Mutex::new(None) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<CurrentSnapshot>> {
        self.cached.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the snapshot atomically and durably (temp file, fsync, rename, fsync dir).
    pub(crate) fn save(&self, meta: &SnapshotMeta, data: Vec<u8>) -> Result<(), Error> {
        let stored = StoredSnapshot { meta: meta.clone(), data };
        let bytes = rmp_serde::to_vec_named(&stored).map_err(|e| Error::Snapshot(e.to_string()))?;
        let tmp = self.path.with_extension("tmp");
        {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            fs::File::open(dir)?.sync_all()?;
        }
        *self.lock() = Some((stored.meta, Arc::new(stored.data)));
        Ok(())
    }

    /// The current snapshot, if any.
    pub(crate) fn load(&self) -> Result<Option<CurrentSnapshot>, Error> {
        if let Some(c) = self.lock().as_ref() {
            return Ok(Some(c.clone()));
        }
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let stored: StoredSnapshot = rmp_serde::from_slice(&bytes).map_err(|e| Error::Snapshot(e.to_string()))?;
        let loaded = (stored.meta, Arc::new(stored.data));
        *self.lock() = Some(loaded.clone());
        Ok(Some(loaded))
    }
}
