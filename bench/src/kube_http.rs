//! A minimal HTTPS client for the hub's Kubernetes-compatible API, as
//! kubectl talks to it: mutual TLS with the admin certificate, HTTP/2, JSON.
//! One connection per client (kubectl and client-go open their own).

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::TlsConnector;

use crate::error::Error;

/// The TLS configuration: the fleet CA, the admin's certificate, ALPN h2.
pub fn tls_config(dir: &Path) -> Result<Arc<rustls::ClientConfig>, Error> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| Error::ReadFile { path, source })
    };
    let bad = |what: &str, e: String| Error::Connect { endpoint: what.to_string(), detail: e };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&read("ca.pem")?) {
        roots.add(cert.map_err(|e| bad("ca.pem", e.to_string()))?).map_err(|e| bad("ca.pem", e.to_string()))?;
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&read("admin.pem")?)
        .collect::<Result<_, _>>()
        .map_err(|e| bad("admin.pem", e.to_string()))?;
    let key =
        PrivateKeyDer::from_pem_slice(&read("admin-key.pem")?).map_err(|e| bad("admin-key.pem", e.to_string()))?;
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| bad("admin.pem", e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// One HTTP/2 connection to one node's API.
#[derive(Clone)]
pub struct KubeClient {
    sender: SendRequest<Empty<Bytes>>,
    address: String,
}

impl KubeClient {
    /// Connects to `address` (`host:port`).
    pub async fn connect(address: &str, tls: Arc<rustls::ClientConfig>) -> Result<KubeClient, Error> {
        let failed = |detail: String| Error::Connect { endpoint: address.to_string(), detail };
        let host = address.rsplit_once(':').map_or(address, |(h, _)| h).to_string();
        let name = ServerName::try_from(host).map_err(|e| failed(e.to_string()))?;
        let tcp = tokio::net::TcpStream::connect(address).await.map_err(|e| failed(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let stream = TlsConnector::from(tls).connect(name, tcp).await.map_err(|e| failed(e.to_string()))?;
        let (sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(|e| failed(e.to_string()))?;
        tokio::spawn(connection);
        Ok(KubeClient { sender, address: address.to_string() })
    }

    async fn send(&mut self, path: &str) -> Result<hyper::Response<hyper::body::Incoming>, Error> {
        let request = hyper::Request::get(format!("https://{}{path}", self.address))
            .header("accept", "application/json")
            .body(Empty::new())
            .map_err(|e| Error::Hub(format!("GET {path}: {e}")))?;
        self.sender.ready().await.map_err(|e| Error::Hub(format!("GET {path}: {e}")))?;
        let response = self.sender.send_request(request).await.map_err(|e| Error::Hub(format!("GET {path}: {e}")))?;
        if !response.status().is_success() {
            return Err(Error::Hub(format!("GET {path}: {}", response.status())));
        }
        Ok(response)
    }

    /// GET `path`; the whole body.
    pub async fn get(&mut self, path: &str) -> Result<Bytes, Error> {
        let response = self.send(path).await?;
        let body = response.into_body().collect().await.map_err(|e| Error::Hub(format!("GET {path}: {e}")))?;
        Ok(body.to_bytes())
    }

    /// GET `path` (a watch): the body, read as it arrives.
    pub async fn stream(&mut self, path: &str) -> Result<hyper::body::Incoming, Error> {
        Ok(self.send(path).await?.into_body())
    }
}
