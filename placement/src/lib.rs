//! The placement brain: pure functions over `fleet-api` types that the
//! leader's controllers call. No tokio, no redb, no clock: every input is
//! passed in, so each rule of `docs/spec/placement.md` is a unit test here.
//!
//! - [`cluster`]: the scheduler's view of a MemberCluster (labels, taints,
//!   properties as exact quantities, eligibility);
//! - [`selection`]: which hub resources a placement selects, cleaned and ordered;
//! - [`snapshot`]: resource and policy snapshots — content, hashing, splitting,
//!   naming — and the changes that keep them current;
//! - [`scheduler`]: the framework (eligibility → filters → scores → sort →
//!   pick) and its plugins, producing decisions and binding changes;
//! - [`rollout`]: the rolling update planner (readiness of a binding from its
//!   Works; which bindings to bind, update or delete in a pass);
//! - [`overrides`]: override snapshots, which apply to a binding, and
//!   rendering a resource for one cluster through them;
//! - [`works`]: the Works a Bound binding needs (overrides applied,
//!   envelopes unwrapped into Works of their own) and the changes to the
//!   stored ones;
//! - [`status`]: folding bindings and Works into per-cluster placement
//!   statuses and the placement's conditions;
//! - [`ocm`]: the Open Cluster Management scheduler (cluster sets,
//!   predicates, taints, prioritizers, decision groups and pages) on the
//!   same framework.

pub mod cluster;
pub mod eviction;
pub mod ocm;
pub mod overrides;
pub mod rollout;
pub mod scheduler;
pub mod selection;
pub mod snapshot;
pub mod staged;
pub mod status;
pub mod time;
pub mod works;
