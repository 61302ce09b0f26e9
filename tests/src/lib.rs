//! The integration-test harness: starts real `fleet-node` processes on
//! ephemeral loopback ports with certificates made by `fleetctl pki init`,
//! and talks to each node over mTLS. No fixed sleeps: everything polls with
//! a deadline.
//!
//! The binaries must be built first (`cargo build --bins`); the harness finds
//! them next to the test executable's directory (`target/<profile>/`).

pub mod fleet;
pub mod hub;
pub mod kube;
pub mod kubefleet_e2e;
pub mod members;
pub mod objects;
pub mod oracle;
pub mod poll;
pub mod ports;
pub mod realkube;

pub use hub::{Hub, HubOptions};
pub use poll::{eventually, eventually_equals};
