//! The replicated object store.
//!
//! Every hub node applies the same committed [`Command`]s in log order to its
//! own redb-backed [`Store`]. Applying is deterministic: times, uids and names
//! are decided by the proposer and carried in the command; the only input
//! besides the command is the log index, which becomes the `resourceVersion`.

mod apply;
pub mod backup;
pub mod command;
pub mod digest;
pub mod error;
pub mod fanout;
mod finalizers;
pub mod lane;
pub mod proposal;
pub mod raft_types;
mod snapshot;
pub mod stages;
pub mod state_machine;
pub mod store;
pub mod watch;

pub use command::{Action, Command, Op, OpOutcome, Response, StoreError};
pub use digest::StateDigest;
pub use error::Error;
pub use fanout::{Ended, Interest, LiveEvents};
pub use lane::{Lane, LaneError};
pub use proposal::{EncodedCommand, Part, Proposal};
pub use raft_types::TypeConfig;
pub use stages::{Stage, WriteStages};
pub use state_machine::StateMachine;
pub use store::{ListQuery, Store, StoreMetrics};
pub use watch::{EventType, HubMessage, WatchEvent, WatchHub};
