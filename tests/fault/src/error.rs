//! The crate's one error type.

use std::net::SocketAddr;

/// Everything that can go wrong in the fault suite's own machinery (not a
/// finding about the system under test: those are checker verdicts).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A recorded operation is self-contradictory, e.g. a read answered with
    /// a write's response, or completed before it was invoked.
    #[error("operation {op}: {reason}")]
    InvalidOp {
        /// Index of the operation in the history.
        op: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A proxy could not bind its listener.
    #[error("proxy listener on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A client was set up wrongly.
    #[error("{0}")]
    Client(String),
    /// A watcher did not get where it was asked to.
    #[error("watch: {0}")]
    Watch(String),
    /// A network helper was given a node it does not know.
    #[error("no proxy for link {from} -> {to}: the network has nodes {nodes:?}")]
    UnknownLink {
        /// The dialing node.
        from: u64,
        /// The dialed node.
        to: u64,
        /// The nodes the network was built for.
        nodes: Vec<u64>,
    },
}
