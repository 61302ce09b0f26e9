//! Errors of the agent.

use std::path::PathBuf;

use crate::targets::TargetError;

/// Anything that stops the agent or one of its steps.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Bad flags.
    #[error("{0}")]
    Config(String),
    /// A file of the data dir could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Joining, renewing or proving identity failed.
    #[error("{0}")]
    Identity(String),
    /// The hub refused or could not be reached.
    #[error("hub: {0}")]
    Hub(String),
    /// The object written is no longer the one read (conflict) or is gone:
    /// a newer version is on its way through the watch.
    #[error("hub: {0}")]
    Stale(String),
    /// The MemberCluster was deleted: the cluster left the fleet.
    #[error("this cluster has left the fleet: {0}")]
    Left(String),
    /// The target failed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// An out-of-band edit of the embedded target could not be made: the
    /// store is held by another process, or the running agent did not answer.
    #[error("{0}")]
    Edit(String),
}

impl AgentError {
    /// An I/O error naming the file.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> AgentError {
        AgentError::Io { path: path.to_path_buf(), source }
    }

    /// Classifies a hub status: a revoked member is `Left`, a conflict or a
    /// vanished object `Stale`, anything else `Hub`.
    pub fn from_status(status: &tonic::Status) -> AgentError {
        let text = format!("{:?}: {}", status.code(), status.message());
        match status.code() {
            tonic::Code::PermissionDenied if status.message().contains("has left the fleet") => {
                AgentError::Left(status.message().to_string())
            }
            tonic::Code::Aborted | tonic::Code::NotFound => AgentError::Stale(text),
            _ => AgentError::Hub(text),
        }
    }
}
