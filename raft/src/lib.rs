//! openraft glue: the durable redb [`log_store`], the gRPC peer [`network`]
//! and [`peer_service`] (mTLS, node identity checked on every call), and the
//! [`consensus`] handle the node uses to write, read linearizably and change
//! membership from whichever node it runs on.

mod append_stream;
pub mod batcher;
pub mod codec;
pub mod consensus;
mod durable;
pub mod error;
mod forward;
mod gate;
mod log_cache;
pub mod log_store;
pub mod metrics;
pub mod network;
pub mod peer_service;
pub mod restore;
pub mod snapshot_chunk;
mod wal;

pub use consensus::{Consensus, RaftTuning};
pub use error::Error;
pub use log_store::LogStore;
pub use metrics::RaftMetrics;
pub use network::{PeerMethod, PeerNetwork, PeerTls};
pub use peer_service::{MemberHandler, PeerService};

/// The Raft instance of a node.
pub type Raft = openraft::Raft<fleet_statemachine::TypeConfig>;

/// gRPC messages between nodes may carry large batches and snapshot chunks.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The largest encoded command (and forwarded proposal) a node proposes:
/// a quarter of the peer message limit, so that any Raft entry (one
/// command alone, or a batch of smaller ones under 8 MiB) fits in an
/// AppendEntries message with room to spare. Refused before proposing.
pub const MAX_COMMAND_BYTES: usize = MAX_MESSAGE_BYTES / 4;
