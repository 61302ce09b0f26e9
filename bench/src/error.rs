//! The one error type of the `fleet-bench` library.

use std::path::PathBuf;

/// Everything that can stop a benchmark before or while it runs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag has a value the benchmark cannot use.
    #[error("{flag}: Invalid value: {value:?}: {reason}")]
    Invalid {
        /// The flag, e.g. `--endpoints`.
        flag: &'static str,
        /// What was given.
        value: String,
        /// What would be accepted.
        reason: String,
    },
    /// `--target fleet` (or `--etcd-tls`) without a PKI directory.
    #[error("--tls-dir: Required value: --target fleet and --etcd-tls need a PKI dir with ca.pem, admin.pem and admin-key.pem (or set FLEET_TLS_DIR)")]
    TlsDirMissing,
    /// A certificate or key file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An endpoint could not be dialled.
    #[error("cannot connect to {endpoint}: {detail}")]
    Connect {
        /// `host:port`.
        endpoint: String,
        /// The transport's explanation.
        detail: String,
    },
    /// A request document could not be encoded.
    #[error("cannot encode the request document: {0}")]
    Encode(#[from] serde_json::Error),
    /// An object the hub returned could not be decoded.
    #[error("cannot decode {what}: {source}")]
    Decode {
        /// What was being decoded.
        what: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Something the benchmark waits for did not happen in time.
    #[error("{what}: not seen within {after:?}")]
    Deadline {
        /// What was awaited.
        what: String,
        /// How long the benchmark waited.
        after: std::time::Duration,
    },
    /// Latency histograms could not be built or merged.
    #[error("latency histogram: {0}")]
    Histogram(String),
    /// A client task panicked or was cancelled.
    #[error("hub: {0}")]
    Hub(String),
    /// The client task failed.
    #[error("client task failed: {0}")]
    Task(String),
    /// A probe write was refused.
    #[error("{endpoint}: write refused: {status}")]
    Probe {
        /// `host:port`.
        endpoint: String,
        /// The gRPC status.
        status: String,
    },
    /// Not one write succeeded during the run.
    #[error("no write succeeded ({errors} errors); first error: {first_error}")]
    NothingWritten {
        /// Errors seen.
        errors: u64,
        /// The first of them.
        first_error: String,
    },
}
