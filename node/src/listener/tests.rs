//! The listener hands a node's connection to the Raft runtime, still
//! working after the move, and every other connection to the main one.

use std::sync::Arc;

use fleet_proto::tls::{ADMIN_CN, NODE_CN_PREFIX};
use futures::StreamExt;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;

use super::*;

/// A CA, and a certificate it signed for `cn` (PEM certificate, PEM key).
struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "test CA");
        Pki { ca: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    fn issue(&self, cn: &str) -> (String, String) {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A second runtime, shut down without waiting when the test ends (a
/// runtime may not be dropped inside the test's own, even when an
/// assertion fails).
struct RaftRuntime(Option<tokio::runtime::Runtime>);

impl RaftRuntime {
    fn handle(&self) -> Handle {
        self.0.as_ref().map(|r| r.handle().clone()).unwrap()
    }
}

impl Drop for RaftRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Connects to `addr` as `client` (a certificate and key, or none), then
/// waits for the connection on `expected` and checks that bytes cross it
/// both ways.
async fn connect_and_echo(pki: &Pki, addr: SocketAddr, client: Option<(String, String)>, expected: &mut Incoming) {
    let mut roots = RootCertStore::empty();
    roots.add(pki.ca.der().clone()).unwrap();
    let builder = ClientConfig::builder().with_root_certificates(roots);
    let mut config = match client {
        Some((cert, key)) => {
            let chain = vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()];
            builder.with_client_auth_cert(chain, PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap()).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut client = TlsConnector::from(Arc::new(config)).connect(name, tcp).await.unwrap();

    let next = tokio::time::timeout(Duration::from_secs(10), expected.next()).await;
    let mut server = next.expect("the connection reaches the expected server").unwrap();
    client.write_all(b"ping").await.unwrap();
    let mut ping = [0u8; 4];
    server.read_exact(&mut ping).await.unwrap();
    assert_eq!(&ping, b"ping");
    server.write_all(b"pong").await.unwrap();
    server.flush().await.unwrap();
    let mut pong = [0u8; 4];
    client.read_exact(&mut pong).await.unwrap();
    assert_eq!(&pong, b"pong");
}

#[tokio::test]
async fn a_node_connection_goes_to_the_raft_runtime_and_every_other_one_to_the_main_one() {
    let pki = Pki::new();
    let (server_cert, server_key) = pki.issue(&format!("{NODE_CN_PREFIX}1"));
    let chain = format!("{server_cert}{}", pki.ca.pem());
    let tls =
        server_tls(pki.ca.pem().as_bytes(), chain.as_bytes(), server_key.as_bytes(), &[b"h2"], "--listen").unwrap();
    let raft =
        RaftRuntime(Some(tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let mut split = accept(listener, tls, raft.handle(), async move {
        let _ = stop_rx.await;
    });

    connect_and_echo(&pki, addr, Some(pki.issue(&format!("{NODE_CN_PREFIX}2"))), &mut split.nodes).await;
    connect_and_echo(&pki, addr, Some(pki.issue(ADMIN_CN)), &mut split.clients).await;
    connect_and_echo(&pki, addr, None, &mut split.clients).await;

    // Stopped, the listener ends both streams once no handshake is left.
    let _ = stop_tx.send(());
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        assert!(split.nodes.next().await.is_none());
        assert!(split.clients.next().await.is_none());
    });
    ended.await.expect("both streams end after the stop");
}
