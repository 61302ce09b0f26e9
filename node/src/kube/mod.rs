//! The Kubernetes-compatible API (`fleet-node --kube-listen`): kubectl and
//! Kubernetes client libraries talk to any hub node over HTTPS (HTTP/2 and
//! HTTP/1.1, the fleet CA, admin/viewer client certificates) as if it were
//! a cluster. Requests become the same admission, store reads, Raft
//! proposals and watch streams the gRPC service uses ([`crate::objects`],
//! [`crate::watch`]); this module owns only the wire format: discovery,
//! OpenAPI, patch semantics, Table and Status shapes.

pub mod advertise;
mod apply;
mod context;
mod discovery;
mod errors;
mod fieldcheck;
mod fields;
mod fieldset;
mod handler;
mod openapi;
mod paging;
mod patch;
mod protobuf;
mod query;
mod read;
mod resources;
mod respond;
mod review;
mod route;
mod server;
mod smp;
mod table;
mod watch;
mod write;

pub use server::{serve, tls_config};

use crate::objects::Objects;

/// What every request handler shares.
pub struct KubeApi {
    /// The shared object operations (the gRPC service uses the same).
    pub objects: Objects,
    /// Becomes true when the node stops: watches end then.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// `host:port` clients reach this API at (discovery names it).
    pub advertise: String,
    /// Records writes and refusals (`--audit-log`).
    pub auditor: std::sync::Arc<crate::audit::Auditor>,
}
