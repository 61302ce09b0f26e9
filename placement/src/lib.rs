//! The placement brain: pure functions over `fleet-api` types that the
//! leader's controllers call. No tokio, no redb, no clock: every input is
//! passed in, so each rule of `spec/placement.md` is a unit test here.
//!
//! - [`cluster`]: the scheduler's view of a MemberCluster (labels, taints,
//!   properties as exact quantities, eligibility);
//! - [`selection`]: which hub resources a placement selects, cleaned and ordered;
//! - [`snapshot`]: resource and policy snapshots — content, hashing, splitting,
//!   naming — and the changes that keep them current;
//! - [`scheduler`]: the framework (eligibility → filters → scores → sort →
//!   pick) and its plugins, producing decisions and binding changes.

pub mod cluster;
pub mod scheduler;
pub mod selection;
pub mod snapshot;
