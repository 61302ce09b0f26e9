//! Fleet's fault suite, the parts that do not need a running hub:
//!
//! - [`history`] and [`recorder`]: the operations clients perform on a small
//!   key set and what they observed, with timestamps; a lost answer is an
//!   indeterminate ([`history::Outcome::Unknown`]) operation, as in Jepsen.
//! - [`model`]: the per-key register with compare-and-set on
//!   `resourceVersion` that Fleet's object store is, as a step function.
//! - [`checker`]: a pure, deterministic linearizability checker for such
//!   histories (Wing–Gong search with Lowe's memoization), bounded in work.
//! - [`monotonic`] and [`watch`]: the weaker guarantees of default reads and
//!   watch streams.
//! - [`resolve`]: settling unanswered writes from the changes a watcher saw
//!   committed.
//! - [`client`] and [`watcher`]: a client process that performs those
//!   operations on a real hub over gRPC and records them, and a watcher
//!   that records every committed change across faults.
//! - [`proxy`]: a fault-injecting TCP proxy per directed link between nodes
//!   and a [`proxy::Network`] of them for partitions, isolation and healing.
//!
//! Everything but [`client`], [`watcher`] and [`proxy`] is free of tokio and
//! I/O.

#![warn(missing_docs)]

pub mod checker;
pub mod client;
pub mod error;
pub mod history;
pub mod model;
pub mod monotonic;
pub mod proxy;
pub mod recorder;
pub mod resolve;
pub mod watch;
pub mod watcher;

pub use checker::{check_linearizable, Limits, Report, Verdict, Violation};
pub use client::Client;
pub use error::Error;
pub use history::{digest, Command, Failure, History, Observed, Op, OpId, Outcome, Response};
pub use model::KeyState;
pub use proxy::{Faults, Network, Proxy, ProxyHandle};
pub use recorder::Recorder;
