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

/// OpenMetrics text (Prometheus parses it; older scrapers read it as the
/// classic text format, which it extends).
const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

async fn metrics() -> ([(axum::http::header::HeaderName, &'static str); 1], String) {
    ([(axum::http::header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], crate::metrics::encode().await)
}
