//! The one error type of the fleetctl library.

use std::fmt;
use std::path::PathBuf;

use tonic::Code;

/// Everything that can go wrong in fleetctl.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with an error; `message` is its human-readable text.
    #[error("{}", server_error_text(*code, message))]
    Server {
        /// The gRPC status code.
        code: Code,
        /// The server's message, unchanged.
        message: String,
    },
    /// Every endpoint was tried and none answered.
    #[error("cannot reach the fleet: every endpoint failed:{}", failure_lines(failures))]
    Unreachable {
        /// Each endpoint tried, with why it failed.
        failures: Vec<EndpointFailure>,
    },
    /// No endpoints were given.
    #[error("no endpoints: pass --endpoints host:port[,host:port...] or set FLEET_ENDPOINTS")]
    NoEndpoints,
    /// An endpoint could not be understood.
    #[error("invalid endpoint {endpoint:?}: {reason}")]
    InvalidEndpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No TLS directory was given.
    #[error("no TLS directory: pass --tls-dir PKI or set FLEET_TLS_DIR")]
    NoTlsDir,
    /// A certificate or key file could not be read or used.
    #[error(transparent)]
    Tls(#[from] fleet_proto::tls::TlsError),
    /// The TLS client configuration was refused.
    #[error("TLS configuration for {endpoint}: {message}")]
    TlsConfig {
        /// The endpoint being configured.
        endpoint: String,
        /// Why it was refused.
        message: String,
    },
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path involved (`-` for stdin/stdout).
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Writing to the terminal failed.
    #[error("cannot write output: {0}")]
    Output(#[source] std::io::Error),
    /// A manifest did not parse; the message names file, document and line.
    #[error(transparent)]
    Parse(#[from] fleet_api::parse::ParseError),
    /// The server sent an object that is not valid JSON.
    #[error("the server sent an unreadable {what}: {source}")]
    Decode {
        /// What was being decoded.
        what: &'static str,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The server's answer does not follow the protocol.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
    /// An object could not be rendered as JSON or YAML.
    #[error("cannot render output: {0}")]
    Render(String),
    /// A label selector is not valid.
    #[error("invalid label selector {selector:?}: {message}")]
    Selector {
        /// The selector as given.
        selector: String,
        /// What is wrong with it.
        message: String,
    },
    /// The command line is inconsistent (beyond what the argument parser checks).
    #[error("{0}")]
    Usage(String),
    /// An object given to a local command (`plan`) is not valid, as the hub
    /// would say; the message names the object and field.
    #[error("{0}")]
    Invalid(String),
    /// Making a certificate failed.
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// A certificate could not be re-encoded (a subject with several groups).
    #[error("certificate: {0}")]
    CertificateEncoding(String),
    /// A PKI file exists and `--force` was not given.
    #[error("{} already exists; pass --force to overwrite", path.display())]
    Exists {
        /// The existing file.
        path: PathBuf,
    },
    /// `rollout status`: the rollout failed; the message names the cluster and object.
    #[error("{0}")]
    RolloutFailed(String),
    /// `rollout status`: the rollout is not complete (without `-w`, or when
    /// `--timeout` passed); the message says what is pending.
    #[error("{0}")]
    RolloutIncomplete(String),
    /// `drain`: some placements could not be evicted (each was already
    /// printed with why); the message counts and names them.
    #[error("{0}")]
    DrainIncomplete(String),
    /// `origin`: no Work on the hub holds the object; the message names it.
    #[error("{0}")]
    NoOrigin(String),
    /// Some objects of a multi-object command failed; each failure was already printed.
    #[error("{failed} of {total} objects failed")]
    Partial {
        /// How many failed.
        failed: usize,
        /// How many were attempted.
        total: usize,
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One endpoint that failed during a call, for [`Error::Unreachable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointFailure {
    /// The endpoint (`host:port`).
    pub endpoint: String,
    /// Why it failed.
    pub reason: String,
}

impl fmt::Display for EndpointFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.endpoint, self.reason)
    }
}

fn failure_lines(failures: &[EndpointFailure]) -> String {
    failures.iter().map(|x| format!("\n  {x}")).collect()
}

/// The Kubernetes-style reason kubectl prints for a gRPC code.
pub fn reason_for(code: Code, message: &str) -> &'static str {
    match code {
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::InvalidArgument => "Invalid",
        Code::FailedPrecondition if message.contains("expired") => "Expired",
        Code::FailedPrecondition | Code::Aborted => "Conflict",
        Code::PermissionDenied => "Forbidden",
        Code::Unauthenticated => "Unauthorized",
        Code::Unavailable => "ServiceUnavailable",
        Code::DeadlineExceeded => "Timeout",
        Code::ResourceExhausted => "TooManyRequests",
        Code::Internal => "InternalError",
        Code::Unimplemented => "NotImplemented",
        Code::Cancelled => "Cancelled",
        Code::OutOfRange => "OutOfRange",
        Code::DataLoss => "DataLoss",
        Code::Ok | Code::Unknown => "Unknown",
    }
}

/// `Error from server (Reason): message`, like kubectl; a message that already
/// reads that way is printed unchanged.
pub fn server_error_text(code: Code, message: &str) -> String {
    if message.starts_with("Error from server") {
        message.to_string()
    } else {
        format!("Error from server ({}): {message}", reason_for(code, message))
    }
}

impl Error {
    /// The error the server's status stands for, keeping its message.
    pub fn from_status(status: &tonic::Status) -> Error {
        Error::Server { code: status.code(), message: status.message().to_string() }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    /// Whether this is an answer from a server (printed without an `error:` prefix).
    pub fn is_server(&self) -> bool {
        matches!(self, Error::Server { .. })
    }

    /// The gRPC code of a server error.
    pub fn code(&self) -> Option<Code> {
        match self {
            Error::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the server said the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(Code::NotFound)
    }

    /// Whether a watch was refused because its resourceVersion is too old:
    /// the caller must relist.
    pub fn is_expired(&self) -> bool {
        matches!(self, Error::Server { code: Code::FailedPrecondition, message } if message.contains("expired"))
    }

    /// Whether trying again (possibly on another endpoint) may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unreachable { .. } | Error::Server { code: Code::Unavailable, .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_like_kubectl() {
        let e = Error::from_status(&tonic::Status::not_found("configmaps \"x\" not found"));
        assert_eq!(e.to_string(), "Error from server (NotFound): configmaps \"x\" not found");
        assert!(e.is_not_found());
    }

    #[test]
    fn a_full_message_is_kept_as_is() {
        let msg = "Error from server (NotFound): configmaps \"x\" not found";
        let e = Error::from_status(&tonic::Status::not_found(msg));
        assert_eq!(e.to_string(), msg);
    }

    #[test]
    fn expired_is_recognised() {
        let e = Error::from_status(&tonic::Status::failed_precondition("resourceVersion 3 expired, relist"));
        assert!(e.is_expired());
        assert!(!Error::from_status(&tonic::Status::failed_precondition("conflict")).is_expired());
    }

    #[test]
    fn unreachable_lists_every_endpoint() {
        let e = Error::Unreachable {
            failures: vec![
                EndpointFailure { endpoint: "a:1".into(), reason: "connection refused".into() },
                EndpointFailure { endpoint: "b:2".into(), reason: "timed out".into() },
            ],
        };
        let text = e.to_string();
        assert!(text.contains("\n  a:1: connection refused"), "{text}");
        assert!(text.contains("\n  b:2: timed out"), "{text}");
    }
}
