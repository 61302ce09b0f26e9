//! Snapshots without a second copy of the state: the state machine's own
//! redb file is the snapshot.
//!
//! Building one (openraft's policy, every `--snapshot-logs` entries) makes the
//! state machine durable and records which applied state it covers, in one
//! fsync'd transaction: the log may then be purged behind it. Nothing is
//! serialized then. Only when a lagging follower needs the state is it
//! serialized, from one read transaction, so the content and its metadata
//! describe the same applied index. That state is at least as new as the
//! last one recorded (the state machine only moves forward), so a follower
//! that installs it finds in the leader's log every entry after it.
//!
//! The serialized form (MessagePack of [`SnapshotContent`]) is unchanged from
//! when snapshots were built eagerly into `snapshot.bin`, so nodes of either
//! version can install each other's.

use std::collections::BTreeSet;
use std::time::Instant;

use fleet_api::Object;
use redb::{Durability, ReadableDatabase, ReadableTable};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::raft_types::{LogId, SnapshotMeta, StoredMembership};
use crate::store::{
    decode_object, encode_meta, index_namespace, read_meta, Store, META, META_LAST_APPLIED, META_MEMBERSHIP,
    META_NAMESPACE_INDEX, META_RETIRED, META_SNAPSHOT, NAMESPACES, OBJECTS, OWNERS,
};

/// What a snapshot holds: the applied state and every object as JSON.
#[derive(Serialize, Deserialize)]
pub(crate) struct SnapshotContent {
    pub(crate) last_applied: Option<LogId>,
    pub(crate) membership: StoredMembership,
    pub(crate) objects: Vec<(String, String)>,
    /// Node ids removed from the membership (absent from snapshots of
    /// earlier versions; a named field, so either version reads the other's).
    #[serde(default)]
    pub(crate) retired: BTreeSet<u64>,
}

/// The metadata of a snapshot of the state at `last_applied`. Its id is a
/// function of the applied log id, so two serializations of one state
/// carry the same id.
fn meta_of(last_applied: Option<LogId>, membership: StoredMembership) -> SnapshotMeta {
    let snapshot_id = match &last_applied {
        Some(l) => format!("{}-{}-{}", l.leader_id.term, l.leader_id.node_id, l.index),
        None => "empty".to_string(),
    };
    SnapshotMeta { last_log_id: last_applied, last_membership: membership, snapshot_id }
}

impl Store {
    /// Records a snapshot of the current applied state: makes the state
    /// machine durable and stores the snapshot's metadata in the same fsync'd
    /// transaction, so the log may be purged up to what it covers.
    pub(crate) fn record_snapshot(&self) -> Result<SnapshotMeta, Error> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        let meta = {
            let mut table = txn.open_table(META)?;
            let last_applied = read_meta::<LogId>(&table, META_LAST_APPLIED)?;
            let membership = read_meta::<StoredMembership>(&table, META_MEMBERSHIP)?.unwrap_or_default();
            let meta = meta_of(last_applied, membership);
            table.insert(META_SNAPSHOT, encode_meta(&meta)?.as_slice())?;
            meta
        };
        self.commit_timed(txn, true)?;
        Ok(meta)
    }

    /// The current snapshot: `None` until one has been built or installed
    /// here; then the current applied state, serialized from one read
    /// transaction. It is at least as new as the recorded snapshot, and the
    /// log is purged only behind that one. Nothing is kept: a follower needs
    /// a snapshot rarely, and the content is as large as the whole state.
    pub(crate) fn current_snapshot(&self) -> Result<Option<(SnapshotMeta, Vec<u8>)>, Error> {
        let started = Instant::now();
        let txn = self.db.begin_read()?;
        if read_meta::<SnapshotMeta>(&txn.open_table(META)?, META_SNAPSHOT)?.is_none() {
            return Ok(None);
        }
        let content = read_content(&txn)?;
        let (last_applied, membership, count) =
            (content.last_applied, content.membership.clone(), content.objects.len());
        let bytes = rmp_serde::to_vec_named(&content).map_err(|e| Error::Snapshot(e.to_string()))?;
        let meta = meta_of(last_applied, membership);
        tracing::info!(
            snapshot = %meta.snapshot_id,
            objects = count,
            bytes = bytes.len(),
            millis = started.elapsed().as_millis() as u64,
            "serialized the state for a snapshot"
        );
        Ok(Some((meta, bytes)))
    }

    /// Replaces the whole state with a snapshot's, durably, records the
    /// snapshot, and tells watchers to relist.
    pub(crate) fn install_snapshot_content(&self, snapshot: &SnapshotMeta, bytes: &[u8]) -> Result<(), Error> {
        let content: SnapshotContent = rmp_serde::from_slice(bytes).map_err(|e| Error::Snapshot(e.to_string()))?;
        if content.last_applied != snapshot.last_log_id {
            return Err(Error::Snapshot(format!(
                "snapshot {}: its content is at {:?} but its metadata says {:?}",
                snapshot.snapshot_id, content.last_applied, snapshot.last_log_id
            )));
        }
        self.replace_content(content, Some(snapshot))
    }

    /// Replaces the whole state with `content`, durably, recording
    /// `snapshot` as the last snapshot if given, and tells watchers to relist.
    pub(crate) fn replace_content(
        &self,
        content: SnapshotContent,
        snapshot: Option<&SnapshotMeta>,
    ) -> Result<(), Error> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        {
            txn.delete_table(OBJECTS)?;
            txn.delete_multimap_table(OWNERS)?;
            txn.delete_multimap_table(NAMESPACES)?;
            let mut objects = txn.open_table(OBJECTS)?;
            let mut owners = txn.open_multimap_table(OWNERS)?;
            let mut namespaces = txn.open_multimap_table(NAMESPACES)?;
            for (key, json) in &content.objects {
                let object: Object = decode_object(key, json.as_bytes())?;
                objects.insert(key.as_str(), json.as_bytes())?;
                index_namespace(&mut namespaces, key)?;
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
            meta.insert(META_NAMESPACE_INDEX, encode_meta(&true)?.as_slice())?;
            meta.insert(META_RETIRED, encode_meta(&content.retired)?.as_slice())?;
            if let Some(snapshot) = snapshot {
                meta.insert(META_SNAPSHOT, encode_meta(snapshot)?.as_slice())?;
            }
        }
        txn.commit()?;
        self.set_retired(content.retired);
        let index = content.last_applied.map(|l| l.index).unwrap_or(0);
        self.hub().reset(index);
        self.set_applied(index);
        Ok(())
    }
}

/// The applied state as one read transaction `txn` sees it.
pub(crate) fn read_content(txn: &redb::ReadTransaction) -> Result<SnapshotContent, Error> {
    let meta = txn.open_table(META)?;
    let last_applied = read_meta::<LogId>(&meta, META_LAST_APPLIED)?;
    let membership = read_meta::<StoredMembership>(&meta, META_MEMBERSHIP)?.unwrap_or_default();
    let retired = read_meta::<BTreeSet<u64>>(&meta, META_RETIRED)?.unwrap_or_default();
    let table = txn.open_table(OBJECTS)?;
    let mut objects = Vec::new();
    for row in table.iter()? {
        let (k, v) = row?;
        let json = String::from_utf8(v.value().to_vec())
            .map_err(|e| Error::Decode { what: format!("object {}", k.value()), detail: e.to_string() })?;
        objects.push((k.value().to_string(), json));
    }
    Ok(SnapshotContent { last_applied, membership, objects, retired })
}
