//! Fleet's gRPC protocol, and what every binary shares with it: the TLS
//! identity rules and the shutdown signal.

pub mod signal;
pub mod tls;

/// The user-facing API (`fleet.v1`).
pub mod fleet {
    tonic::include_proto!("fleet.v1");
}

/// Node-to-node traffic (`fleet.peer.v1`).
pub mod peer {
    tonic::include_proto!("fleet.peer.v1");
}
