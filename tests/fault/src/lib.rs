//! Fleet's fault suite: fault injection between hub nodes, recorded client
//! histories, and the checks run on them.
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
//!
//! # How a fault test drives it
//!
//! 1. `Hub::prepare` (the harness in `tests/src`), a [`Network`] on the
//!    nodes' addresses, `--peer-dial <network.peers_for(id)>` for each node,
//!    `Hub::launch`: every peer link now runs through its own proxy.
//! 2. One [`Recorder`]; [`watcher::Watcher`]s (one pinned to a node, which
//!    it leaves only if the node restarts without history, one roaming); a
//!    barrier write they must see before the clients start.
//! 3. [`Client`]s in tasks calling [`Client::random_op`] until told to stop;
//!    faults in between ([`Network::isolate`], [`Network::partition`],
//!    [`Network::one_way`], [`Network::heal`], and the harness's kill and
//!    signals), each phase ending on operations completed or leadership
//!    observed, never on a sleep.
//! 4. A consistent read of every key, a final barrier write, and
//!    [`watcher::Watcher::finish`] at its version.
//! 5. Checks: [`check_linearizable`] on [`Recorder::history`] (then again
//!    after [`resolve::resolve`] with what a watcher saw),
//!    [`monotonic::monotonic_reads`], [`monotonic::read_your_writes`], and
//!    [`watch::watch_stream_check`] of each watcher against the other.

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
