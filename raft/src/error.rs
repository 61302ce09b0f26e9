//! Errors of the consensus layer.

use fleet_statemachine::StoreError;

/// Why a write, read or membership change did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// redb failed under the log store.
    #[error("raft log storage: {0}")]
    Storage(String),
    /// The log file was written by a newer version of Fleet.
    #[error(
        "{path} has on-disk format version {found}, newer than the version {supported} this fleet-node reads: \
         run the fleet-node version that wrote it (downgrading a data dir is not supported)"
    )]
    NewerFormat { path: String, found: u32, supported: u32 },
    /// A message or entry could not be encoded or decoded.
    #[error("encoding: {0}")]
    Codec(String),
    /// No leader could be reached before the deadline.
    #[error("no leader is available: {0}")]
    NoLeader(String),
    /// A peer could not be reached.
    #[error("peer {peer} unreachable: {detail}")]
    Unreachable { peer: u64, detail: String },
    /// The state machine refused the command (deterministic).
    #[error(transparent)]
    Refused(#[from] StoreError),
    /// openraft reported an error.
    #[error("raft: {0}")]
    Raft(String),
    /// The request is not valid (e.g. removing the last voter).
    #[error("{0}")]
    Invalid(String),
    /// A caller presented the wrong identity.
    #[error("{0}")]
    PermissionDenied(String),
    /// A command or entry encodes to more than the limit; nothing proposed.
    #[error(
        "{what} encodes to {bytes} bytes, over the limit of {limit} bytes for one write: split it into smaller writes"
    )]
    TooLarge { what: String, bytes: usize, limit: usize },
    /// The node is shutting down.
    #[error("node is shutting down")]
    ShuttingDown,
    /// The state machine failed.
    #[error(transparent)]
    StateMachine(#[from] fleet_statemachine::Error),
}

fleet_statemachine::redb_errors_as_storage!(Error);
