//! Member clusters on the hub side: bootstrap tokens, joining and certificate
//! renewal (signed by the leader), member authorization, and heartbeats that
//! the leader turns into MemberCluster status only when something changed.

pub mod authz;
pub mod health;
pub mod internal;
pub mod liveness;
pub mod service;
pub mod signer;
pub mod status;
pub mod tokens;

pub use service::MemberService;
