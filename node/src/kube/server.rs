//! The HTTPS listener: TLS with the node's certificate, client
//! certificates verified against the fleet CA (optional at the handshake,
//! so that an unauthenticated client gets a 401 Status rather than a TLS
//! alert), ALPN `h2` and `http/1.1`, one task per connection.

use std::future::Future;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{handler, KubeApi};
use crate::auth::caller_of_certificate;
use crate::error::Error;
use crate::listener::handshake;

/// The TLS configuration: `chain_pem` (node certificate, then CA) and its key,
/// client certificates checked against `ca_pem`.
pub fn tls_config(ca_pem: &[u8], chain_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>, Error> {
    crate::listener::server_tls(ca_pem, chain_pem, key_pem, &[b"h2", b"http/1.1"], "--kube-listen")
}

/// Serves the API on `listener` until `stop` resolves.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    api: Arc<KubeApi>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let acceptor = TlsAcceptor::from(tls);
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut stop => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("kube API accept: {e}");
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, api) = (acceptor.clone(), api.clone());
        tokio::spawn(async move {
            let Some(stream) = handshake(&acceptor, tcp, peer).await else { return };
            let caller = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .map(|cert| caller_of_certificate(cert.as_ref()).map_err(|s| s.message().to_string()));
            let router = axum::Router::new().fallback(move |request: axum::extract::Request| {
                let (api, caller) = (api.clone(), caller.clone());
                async move { handler::handle(api, caller, peer, request).await }
            });
            let served = Builder::new(TokioExecutor::new())
                .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(router))
                .await;
            if let Err(e) = served {
                tracing::debug!(%peer, "kube API connection: {e}");
            }
        });
    }
}
