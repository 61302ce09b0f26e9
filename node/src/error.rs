//! Errors of the node, and their one conversion to gRPC statuses.

use fleet_statemachine::StoreError;
use tonic::Status;

/// Anything that can go wrong in the node.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags.
    #[error("{0}")]
    Config(String),
    /// A TLS file is missing or bad.
    #[error(transparent)]
    Tls(#[from] fleet_proto::tls::TlsError),
    /// Consensus failed.
    #[error(transparent)]
    Raft(#[from] fleet_raft::Error),
    /// The state machine failed.
    #[error(transparent)]
    Store(#[from] fleet_statemachine::Error),
    /// The gRPC server failed.
    #[error("server: {0}")]
    Serve(String),
}

/// Converts a consensus error to the status a client sees.
pub fn raft_status(e: fleet_raft::Error) -> Status {
    use fleet_raft::Error as E;
    match e {
        E::Refused(store) => store_status(store),
        E::NoLeader(m) => Status::unavailable(format!("no leader is available: {m}")),
        E::Unreachable { .. } | E::ShuttingDown => Status::unavailable(e.to_string()),
        E::Invalid(m) => Status::invalid_argument(m),
        E::TooLarge { .. } => Status::invalid_argument(e.to_string()),
        E::PermissionDenied(m) => Status::permission_denied(m),
        other => Status::internal(other.to_string()),
    }
}

/// Converts a state-machine refusal to a status.
pub fn store_status(e: StoreError) -> Status {
    match &e {
        StoreError::NotFound { .. } => Status::not_found(e.to_string()),
        StoreError::AlreadyExists { .. } => Status::already_exists(e.to_string()),
        StoreError::Conflict { .. } | StoreError::GenerationConflict { .. } => Status::aborted(e.to_string()),
        StoreError::Invalid(_) => Status::invalid_argument(e.to_string()),
    }
}

/// Converts a storage failure to a status.
pub fn storage_status(e: fleet_statemachine::Error) -> Status {
    Status::internal(e.to_string())
}
