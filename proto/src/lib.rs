//! Fleet's gRPC protocol and the TLS identity rules shared by every binary.

pub mod tls;

/// The user-facing API (`fleet.v1`).
pub mod fleet {
    tonic::include_proto!("fleet.v1");
}

/// Node-to-node traffic (`fleet.peer.v1`).
pub mod peer {
    tonic::include_proto!("fleet.peer.v1");
}
