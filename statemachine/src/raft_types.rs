//! The openraft type configuration: our commands and responses, `u64` node
//! ids, nodes addressed by `host:port`, snapshots as in-memory buffers.

use std::io::Cursor;

use crate::command::Response;
use crate::proposal::Proposal;

openraft::declare_raft_types!(
    /// Fleet's Raft type configuration.
    pub TypeConfig:
        D = Proposal,
        R = Vec<Response>,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A log id of our configuration.
pub type LogId = openraft::LogId<u64>;
/// Membership as stored with the data it describes.
pub type StoredMembership = openraft::StoredMembership<u64, openraft::BasicNode>;
/// Snapshot metadata of our configuration.
pub type SnapshotMeta = openraft::SnapshotMeta<u64, openraft::BasicNode>;
/// A storage error as openraft wants it.
pub type StorageError = openraft::StorageError<u64>;
