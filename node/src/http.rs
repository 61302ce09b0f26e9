//! Plain-HTTP operational endpoints (`--http-listen`): `/healthz` (the
//! process serves), `/readyz` (a leader is known), `/metrics` (Prometheus text).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use fleet_raft::Consensus;

/// Serves the endpoints until `stop` resolves.
pub async fn serve(
    addr: SocketAddr,
    consensus: Arc<Consensus>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(consensus);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, app).with_graceful_shutdown(stop).await
}

async fn readyz(State(consensus): State<Arc<Consensus>>) -> (StatusCode, String) {
    match consensus.leader() {
        Some((leader, _)) => (StatusCode::OK, format!("ok: leader is node {leader}\n")),
        None => (StatusCode::SERVICE_UNAVAILABLE, "no leader known\n".to_string()),
    }
}

async fn metrics(State(consensus): State<Arc<Consensus>>) -> String {
    let status = consensus.local_status();
    let id = consensus.id();
    format!(
        "# HELP fleet_raft_term Current Raft term.\n# TYPE fleet_raft_term gauge\nfleet_raft_term{{node=\"{id}\"}} {}\n\
         # HELP fleet_raft_is_leader 1 if this node leads.\n# TYPE fleet_raft_is_leader gauge\nfleet_raft_is_leader{{node=\"{id}\"}} {}\n\
         # HELP fleet_raft_last_applied Index of the last applied entry.\n# TYPE fleet_raft_last_applied gauge\nfleet_raft_last_applied{{node=\"{id}\"}} {}\n\
         # HELP fleet_watch_oldest_resumable Oldest resourceVersion a watch can resume from.\n# TYPE fleet_watch_oldest_resumable gauge\nfleet_watch_oldest_resumable{{node=\"{id}\"}} {}\n",
        status.term,
        u8::from(status.role == "Leader"),
        status.last_applied,
        consensus.store().hub().oldest_resumable(),
    )
}
