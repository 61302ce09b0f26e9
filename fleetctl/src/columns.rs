//! The `get` columns live in `fleet_api::columns`, shared with the hub's
//! Kubernetes-compatible API (Table responses show the same columns).

pub use fleet_api::columns::*;
