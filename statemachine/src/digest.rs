//! A digest of the replicated state, to check that replicas agree.
//!
//! Computed from one read transaction: the applied index and membership it
//! covers, and SHA-256 over every stored object (key and encoded bytes, each
//! length-prefixed) in key order. Two replicas at the same applied index
//! must give the same digest; anything else means they diverged.

use redb::{ReadableDatabase, ReadableTable};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::raft_types::LogId;
use crate::store::{read_meta, Store, META, META_LAST_APPLIED, OBJECTS};

/// The digest of a store's objects at one applied index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDigest {
    /// The last applied log index the digest covers.
    pub index: u64,
    /// How many objects it covers.
    pub objects: u64,
    /// `sha256:<hex>` over the objects in key order.
    pub sha256: String,
}

impl Store {
    /// The digest of every object at the applied index, from one read
    /// transaction (blocking: call it off the async runtime threads).
    pub fn digest(&self) -> Result<StateDigest, Error> {
        let txn = self.db.begin_read()?;
        let objects = txn.open_table(OBJECTS)?;
        let meta = txn.open_table(META)?;
        let index = read_meta::<LogId>(&meta, META_LAST_APPLIED)?.map(|l| l.index).unwrap_or(0);
        let mut hasher = Sha256::new();
        let mut count = 0u64;
        for row in objects.iter()? {
            let (key, value) = row?;
            let (key, value) = (key.value().as_bytes(), value.value());
            hasher.update((key.len() as u64).to_be_bytes());
            hasher.update(key);
            hasher.update((value.len() as u64).to_be_bytes());
            hasher.update(value);
            count += 1;
        }
        Ok(StateDigest { index, objects: count, sha256: format!("sha256:{}", hex::encode(hasher.finalize())) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_store_has_the_digest_of_nothing_at_index_zero() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("sm.redb")).unwrap();
        let d = store.digest().unwrap();
        assert_eq!(d.index, 0);
        assert_eq!(d.objects, 0);
        assert_eq!(d.sha256, format!("sha256:{}", hex::encode(Sha256::digest(b""))));
    }
}
