//! Errors of the node: [`Error`] for starting and serving, and
//! [`RequestError`] for the request layer shared by the gRPC service and the
//! Kubernetes API. Two enums, as the state machine keeps storage failures
//! apart from refusals: an `Error` stops the node, a `RequestError` answers
//! one request. Each edge converts a `RequestError` on its own terms: a
//! gRPC status here ([`From<RequestError> for Status`]), a Kubernetes
//! `Status` in `kube::errors`.

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

/// Why a request was refused or failed, in the request layer's terms (not
/// a wire format's): the same refusal becomes a gRPC status or a
/// Kubernetes `Status` at the edge it leaves by. Each variant holds the
/// message a person acts on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The object (or what the request names) does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Creating an object that exists.
    #[error("{0}")]
    AlreadyExists(String),
    /// A stale `resourceVersion` or generation: read again and retry.
    #[error("{0}")]
    Conflict(String),
    /// The request or the object is not valid.
    #[error("{0}")]
    Invalid(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The caller is not known (no or a bad credential).
    #[error("{0}")]
    Unauthenticated(String),
    /// A watch's starting point has left the history: list again.
    #[error("{0}")]
    Expired(String),
    /// The hub is not in a state to do this (e.g. no CA key to sign with);
    /// retrying will not help until an operator acts.
    #[error("{0}")]
    Precondition(String),
    /// No leader, the node is stopping, or consensus is behind: retry.
    #[error("{0}")]
    Unavailable(String),
    /// The caller's share of the node is used up: retry later.
    #[error("{0}")]
    TooManyRequests(String),
    /// Something broke on the node (storage, a task).
    #[error("{0}")]
    Internal(String),
}

impl RequestError {
    /// [`RequestError::NotFound`].
    pub fn not_found(message: impl Into<String>) -> RequestError {
        RequestError::NotFound(message.into())
    }

    /// [`RequestError::AlreadyExists`].
    pub fn already_exists(message: impl Into<String>) -> RequestError {
        RequestError::AlreadyExists(message.into())
    }

    /// [`RequestError::Conflict`].
    pub fn conflict(message: impl Into<String>) -> RequestError {
        RequestError::Conflict(message.into())
    }

    /// [`RequestError::Invalid`].
    pub fn invalid(message: impl Into<String>) -> RequestError {
        RequestError::Invalid(message.into())
    }

    /// [`RequestError::Forbidden`].
    pub fn forbidden(message: impl Into<String>) -> RequestError {
        RequestError::Forbidden(message.into())
    }

    /// [`RequestError::Unauthenticated`].
    pub fn unauthenticated(message: impl Into<String>) -> RequestError {
        RequestError::Unauthenticated(message.into())
    }

    /// [`RequestError::Expired`].
    pub fn expired(message: impl Into<String>) -> RequestError {
        RequestError::Expired(message.into())
    }

    /// [`RequestError::Precondition`].
    pub fn precondition(message: impl Into<String>) -> RequestError {
        RequestError::Precondition(message.into())
    }

    /// [`RequestError::Unavailable`].
    pub fn unavailable(message: impl Into<String>) -> RequestError {
        RequestError::Unavailable(message.into())
    }

    /// [`RequestError::TooManyRequests`].
    pub fn too_many(message: impl Into<String>) -> RequestError {
        RequestError::TooManyRequests(message.into())
    }

    /// [`RequestError::Internal`].
    pub fn internal(message: impl Into<String>) -> RequestError {
        RequestError::Internal(message.into())
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        match self {
            RequestError::NotFound(m)
            | RequestError::AlreadyExists(m)
            | RequestError::Conflict(m)
            | RequestError::Invalid(m)
            | RequestError::Forbidden(m)
            | RequestError::Unauthenticated(m)
            | RequestError::Expired(m)
            | RequestError::Precondition(m)
            | RequestError::Unavailable(m)
            | RequestError::TooManyRequests(m)
            | RequestError::Internal(m) => m,
        }
    }

    /// The gRPC code of each kind (what [`Status`] carries; member calls
    /// forwarded between nodes carry it too).
    pub fn code(&self) -> tonic::Code {
        use tonic::Code;
        match self {
            RequestError::NotFound(_) => Code::NotFound,
            RequestError::AlreadyExists(_) => Code::AlreadyExists,
            RequestError::Conflict(_) => Code::Aborted,
            RequestError::Invalid(_) => Code::InvalidArgument,
            RequestError::Forbidden(_) => Code::PermissionDenied,
            RequestError::Unauthenticated(_) => Code::Unauthenticated,
            RequestError::Expired(_) | RequestError::Precondition(_) => Code::FailedPrecondition,
            RequestError::Unavailable(_) => Code::Unavailable,
            RequestError::TooManyRequests(_) => Code::ResourceExhausted,
            RequestError::Internal(_) => Code::Internal,
        }
    }

    /// The error a gRPC code and message stand for: the inverse of
    /// [`RequestError::code`] for what crosses between nodes. A
    /// `FailedPrecondition` read back is a [`RequestError::Precondition`]
    /// (no watch crosses between nodes).
    pub fn from_code(code: tonic::Code, message: String) -> RequestError {
        use tonic::Code;
        match code {
            Code::NotFound => RequestError::NotFound(message),
            Code::AlreadyExists => RequestError::AlreadyExists(message),
            Code::Aborted => RequestError::Conflict(message),
            Code::InvalidArgument => RequestError::Invalid(message),
            Code::PermissionDenied => RequestError::Forbidden(message),
            Code::Unauthenticated => RequestError::Unauthenticated(message),
            Code::FailedPrecondition => RequestError::Precondition(message),
            Code::Unavailable => RequestError::Unavailable(message),
            Code::ResourceExhausted => RequestError::TooManyRequests(message),
            _ => RequestError::Internal(message),
        }
    }
}

/// The gRPC edge: a status of the error's code and message; a refusal for
/// too many requests says when to retry (`retry-after`, as HTTP's 429).
impl From<RequestError> for Status {
    fn from(e: RequestError) -> Status {
        let too_many = matches!(e, RequestError::TooManyRequests(_));
        let mut status = Status::new(e.code(), e.message());
        if too_many {
            if let Ok(value) = crate::fairness::RETRY_AFTER_SECONDS.to_string().parse() {
                status.metadata_mut().insert("retry-after", value);
            }
        }
        status
    }
}

/// Converts a consensus error to the request layer's.
pub fn raft_error(e: fleet_raft::Error) -> RequestError {
    use fleet_raft::Error as E;
    match e {
        E::Refused(store) => store_error(store),
        E::NoLeader(m) => RequestError::unavailable(format!("no leader is available: {m}")),
        E::Unreachable { .. } | E::ShuttingDown => RequestError::unavailable(e.to_string()),
        E::Invalid(m) => RequestError::invalid(m),
        E::TooLarge { .. } => RequestError::invalid(e.to_string()),
        E::PermissionDenied(m) => RequestError::forbidden(m),
        other => RequestError::internal(other.to_string()),
    }
}

/// Converts a state-machine refusal to the request layer's.
pub fn store_error(e: StoreError) -> RequestError {
    match &e {
        StoreError::NotFound { .. } => RequestError::not_found(e.to_string()),
        StoreError::AlreadyExists { .. } => RequestError::already_exists(e.to_string()),
        StoreError::Conflict { .. } | StoreError::GenerationConflict { .. } => RequestError::conflict(e.to_string()),
        StoreError::Invalid(_) => RequestError::invalid(e.to_string()),
    }
}

/// Converts a storage failure to the request layer's.
pub fn storage_error(e: fleet_statemachine::Error) -> RequestError {
    RequestError::internal(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_error_leaves_by_grpc_with_its_code_and_message() {
        let every = [
            RequestError::not_found("a"),
            RequestError::already_exists("b"),
            RequestError::conflict("c"),
            RequestError::invalid("d"),
            RequestError::forbidden("e"),
            RequestError::unauthenticated("f"),
            RequestError::precondition("g"),
            RequestError::unavailable("h"),
            RequestError::too_many("i"),
            RequestError::internal("j"),
        ];
        for error in every {
            let status = Status::from(error.clone());
            assert_eq!((status.code(), status.message()), (error.code(), error.message()));
            // What a forwarded member call carries comes back as it left.
            assert_eq!(RequestError::from_code(status.code(), status.message().to_string()), error);
            assert_eq!(status.metadata().get("retry-after").is_some(), error.code() == tonic::Code::ResourceExhausted);
        }
        let expired = Status::from(RequestError::expired("gone"));
        assert_eq!(expired.code(), tonic::Code::FailedPrecondition);
    }

    #[test]
    fn consensus_and_store_refusals_keep_their_meaning() {
        assert!(
            matches!(raft_error(fleet_raft::Error::NoLeader("x".into())), RequestError::Unavailable(m) if m.contains("no leader"))
        );
        assert!(matches!(raft_error(fleet_raft::Error::ShuttingDown), RequestError::Unavailable(_)));
        assert!(matches!(raft_error(fleet_raft::Error::PermissionDenied("no".into())), RequestError::Forbidden(_)));
        assert!(matches!(store_error(StoreError::Invalid("bad".into())), RequestError::Invalid(_)));
    }
}
