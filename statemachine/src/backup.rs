//! Backups of the whole hub (`fleetctl snapshot save`) and restoring one
//! into a new node's state (`fleet-node restore`).
//!
//! A backup file is `FLEETSNAP\n`, the format version (u32, big-endian),
//! the applied state as a snapshot holds it (MessagePack, see
//! `snapshot.rs`), and the SHA-256 of everything before it (32 bytes). It is
//! read from one read transaction, so it is one applied state, consistent
//! across every object. Restoring keeps every object and the applied index
//! (so resourceVersions keep growing) and replaces the membership with the
//! new hub's; the index is given term 0, so the new hub's first leader
//! (term 1 and up) writes after it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use openraft::{BasicNode, CommittedLeaderId, Membership};
use redb::ReadableDatabase;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::raft_types::{LogId, StoredMembership};
use crate::snapshot::{read_content, SnapshotContent};
use crate::store::Store;

/// The first bytes of a backup file.
pub const BACKUP_MAGIC: &[u8] = b"FLEETSNAP\n";
/// The backup format this code writes and reads; a newer one is refused.
pub const BACKUP_VERSION: u32 = 1;
const HEADER: usize = BACKUP_MAGIC.len() + 4;
const CHECKSUM: usize = 32;

/// What a backup holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// The applied index it was taken at.
    pub index: u64,
    /// Objects in it.
    pub objects: usize,
    /// Size of the file.
    pub bytes: usize,
    /// `sha256:<hex>` of the file's content (its trailer).
    pub sha256: String,
}

fn invalid(detail: String) -> Error {
    Error::Snapshot(format!("not a usable backup: {detail}"))
}

impl Store {
    /// The whole applied state as a backup file, from one read transaction.
    pub fn export_backup(&self) -> Result<(Vec<u8>, BackupInfo), Error> {
        let txn = self.db.begin_read()?;
        let content = read_content(&txn)?;
        drop(txn);
        let body = rmp_serde::to_vec_named(&content).map_err(|e| Error::Snapshot(e.to_string()))?;
        let mut bytes = Vec::with_capacity(HEADER + body.len() + CHECKSUM);
        bytes.extend_from_slice(BACKUP_MAGIC);
        bytes.extend_from_slice(&BACKUP_VERSION.to_be_bytes());
        bytes.extend_from_slice(&body);
        let sum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&sum);
        let info = info_of(&content, bytes.len(), &sum);
        Ok((bytes, info))
    }
}

/// Checks a backup file (magic, version, checksum) and decodes it.
fn open_backup(bytes: &[u8]) -> Result<(SnapshotContent, BackupInfo), Error> {
    if bytes.len() < HEADER + CHECKSUM || !bytes.starts_with(BACKUP_MAGIC) {
        return Err(invalid("it does not start with FLEETSNAP (was it made by `fleetctl snapshot save`?)".into()));
    }
    let mut version = [0u8; 4];
    version.copy_from_slice(&bytes[BACKUP_MAGIC.len()..HEADER]);
    let version = u32::from_be_bytes(version);
    if version > BACKUP_VERSION {
        return Err(invalid(format!(
            "its format version {version} is newer than the version {BACKUP_VERSION} this fleet-node reads: restore \
             it with the fleet-node version that saved it"
        )));
    }
    let (content, trailer) = bytes.split_at(bytes.len() - CHECKSUM);
    let sum = Sha256::digest(content);
    if sum.as_slice() != trailer {
        return Err(invalid(format!(
            "its checksum does not match (the file is damaged or truncated): content sha256:{}, trailer sha256:{}",
            hex::encode(sum),
            hex::encode(trailer)
        )));
    }
    let state: SnapshotContent = rmp_serde::from_slice(&content[HEADER..])
        .map_err(|e| invalid(format!("its content cannot be decoded: {e}")))?;
    let info = info_of(&state, bytes.len(), &sum);
    Ok((state, info))
}

/// What a backup of `content`, `bytes` long with checksum `sum`, holds.
fn info_of(content: &SnapshotContent, bytes: usize, sum: &[u8]) -> BackupInfo {
    BackupInfo {
        index: content.last_applied.map(|l| l.index).unwrap_or(0),
        objects: content.objects.len(),
        bytes,
        sha256: format!("sha256:{}", hex::encode(sum)),
    }
}

/// Checks a backup file without restoring it.
pub fn verify_backup(bytes: &[u8]) -> Result<BackupInfo, Error> {
    open_backup(bytes).map(|(_, info)| info)
}

/// Writes the state of backup `bytes` into the empty state machine `store`,
/// with `members` (id → address) as the membership, all voters.
pub fn restore_backup(store: &Store, bytes: &[u8], members: &BTreeMap<u64, String>) -> Result<BackupInfo, Error> {
    let (mut content, info) = open_backup(bytes)?;
    if store.applied_index() != 0 {
        return Err(invalid(format!(
            "the target state already holds applied index {}: restore into an empty data dir",
            store.applied_index()
        )));
    }
    let nodes: BTreeMap<u64, BasicNode> = members.iter().map(|(id, a)| (*id, BasicNode::new(a.clone()))).collect();
    let voters: BTreeSet<u64> = members.keys().copied().collect();
    let last = LogId::new(CommittedLeaderId::new(0, 0), info.index);
    content.last_applied = Some(last);
    content.membership = StoredMembership::new(Some(last), Membership::new(vec![voters], nodes));
    content.retired = BTreeSet::new();
    store.replace_content(content, None)?;
    Ok(info)
}

/// Reads a backup file from `path`.
pub fn read_backup_file(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::Snapshot(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path) -> std::sync::Arc<Store> {
        Store::open(&dir.join("state.redb")).expect("store")
    }

    #[test]
    fn a_damaged_truncated_foreign_or_newer_backup_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (bytes, info) = store(dir.path()).export_backup().expect("export");
        assert_eq!(verify_backup(&bytes).expect("valid"), info);

        let mut damaged = bytes.clone();
        damaged[HEADER] ^= 1;
        assert!(verify_backup(&damaged).unwrap_err().to_string().contains("checksum does not match"));
        let truncated = &bytes[..bytes.len() - 1];
        assert!(verify_backup(truncated).unwrap_err().to_string().contains("checksum does not match"));
        assert!(verify_backup(b"apiVersion: v1\n").unwrap_err().to_string().contains("FLEETSNAP"));
        let mut newer = bytes[..bytes.len() - CHECKSUM].to_vec();
        newer[BACKUP_MAGIC.len()..HEADER].copy_from_slice(&(BACKUP_VERSION + 1).to_be_bytes());
        let sum = Sha256::digest(&newer);
        newer.extend_from_slice(&sum);
        let err = verify_backup(&newer).unwrap_err().to_string();
        assert!(err.contains("format version 2 is newer than the version 1"), "{err}");
    }

    #[test]
    fn a_restore_needs_an_empty_state() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (bytes, _) = store(dir.path()).export_backup().expect("export");
        let target = tempfile::tempdir().expect("temp dir");
        let members = BTreeMap::from([(1, "127.0.0.1:1".to_string())]);
        restore_backup(&store(target.path()), &bytes, &members).expect("restore into an empty state");
    }
}
