//! The node's gRPC port, split by caller. Every connection is accepted and
//! its TLS handshake done here, on the main runtime; a connection that
//! presents a node certificate (another hub node: Raft replication, votes,
//! forwarded writes and reads, whose decoding then runs on the Raft thread
//! too) is then moved to the Raft runtime and served there, every other one
//! (agents, fleetctl, the bench) on the main runtime. On a saturated node
//! (thousands of agent connections on two cores) a heartbeat that waited
//! behind the agents' work in one runtime's queue ran past openraft's
//! time-to-live and followers stood for election; served apart, it waits
//! only for the operating system to run the Raft thread. (A node that
//! reconnects still waits for its handshake on the main runtime: peer
//! connections are long-lived, so that wait is rare.)

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use fleet_proto::tls::{presented, Identity};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::error::Error;

/// How long a client has to finish the TLS handshake.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections handed to a server but not yet taken by it.
const HANDOFF_QUEUE: usize = 1024;

/// A TLS server configuration: `chain_pem` (node certificate, then CA) and
/// its key, client certificates checked against `ca_pem` but optional at the
/// handshake (an unauthenticated caller gets a clear error from the API, not
/// a TLS alert), offering `alpn`. `flag` names the listener in errors.
pub fn server_tls(
    ca_pem: &[u8],
    chain_pem: &[u8],
    key_pem: &[u8],
    alpn: &[&[u8]],
    flag: &str,
) -> Result<Arc<ServerConfig>, Error> {
    let bad = |what: &str, e: String| Error::Serve(format!("{flag} TLS: {what}: {e}"));
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.map_err(|e| bad("ca.pem", e.to_string()))?).map_err(|e| bad("ca.pem", e.to_string()))?;
    }
    let verifier = WebPkiClientVerifier::builder(Arc::new(roots))
        .allow_unauthenticated()
        .build()
        .map_err(|e| bad("client verifier", e.to_string()))?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| bad("node certificate", e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad("node key", e.to_string()))?;
    let mut config = ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| bad("node certificate", e.to_string()))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// A TCP connection that can move to another runtime's I/O driver after
/// its TLS handshake (see [`Socket::move_to`]).
pub struct Socket {
    tcp: TcpStream,
}

impl Socket {
    /// Re-registers the connection with `runtime`'s I/O driver, so that its
    /// readiness is noticed by that runtime's threads. Nothing is lost: what
    /// TLS already read stays in the stream's buffers, no read or write is
    /// in progress during the move, and registering the duplicate reports
    /// whatever readiness it already has (the client's first HTTP/2 frames
    /// often arrive with its last handshake message).
    #[cfg(unix)]
    fn move_to(&mut self, runtime: &Handle) -> io::Result<()> {
        use std::os::fd::AsFd;
        let duplicate = std::net::TcpStream::from(self.tcp.as_fd().try_clone_to_owned()?);
        let _entered = runtime.enter();
        let moved = TcpStream::from_std(duplicate)?;
        // Dropping the old handle deregisters it and closes its descriptor;
        // the duplicate keeps the connection open.
        self.tcp = moved;
        Ok(())
    }

    /// Elsewhere the connection stays with the runtime that accepted it.
    #[cfg(not(unix))]
    fn move_to(&mut self, _runtime: &Handle) -> io::Result<()> {
        Ok(())
    }
}

impl Connected for Socket {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.tcp.connect_info()
    }
}

impl AsyncRead for Socket {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Socket {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// A connection ready for a gRPC server: TLS done, caller known.
pub type Accepted = TlsStream<Socket>;

/// The connections one server is to serve.
pub type Incoming = ReceiverStream<Accepted>;

/// The TLS handshake of the client at `peer`, within [`HANDSHAKE_TIMEOUT`];
/// `None` (logged at debug) when it fails or takes longer.
pub(crate) async fn handshake<IO>(acceptor: &TlsAcceptor, io: IO, peer: SocketAddr) -> Option<TlsStream<IO>>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(io)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!(%peer, "TLS handshake: {e}");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake not finished within {HANDSHAKE_TIMEOUT:?}");
            None
        }
    }
}

/// Whether the connection's client certificate names a hub node.
fn from_node(stream: &Accepted) -> bool {
    let first = stream.get_ref().1.peer_certificates().and_then(|certs| certs.first());
    first.is_some_and(|cert| matches!(presented(cert.as_ref()).map(|p| p.identity), Ok(Identity::Node(_))))
}

/// The two streams of connections [`accept`] hands out.
pub struct Split {
    /// Connections from other hub nodes, already on the Raft runtime's driver.
    pub nodes: Incoming,
    /// Every other connection.
    pub clients: Incoming,
}

/// Accepts connections on `listener` until `stop` resolves, does each TLS
/// handshake on its own task, and hands the connection to the node or the
/// client stream (moving a node's connection to `raft` first). The streams
/// end when this does.
pub fn accept(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    raft: Handle,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Split {
    let (node_tx, nodes) = mpsc::channel(HANDOFF_QUEUE);
    let (client_tx, clients) = mpsc::channel(HANDOFF_QUEUE);
    let acceptor = TlsAcceptor::from(tls);
    tokio::spawn(async move {
        tokio::pin!(stop);
        loop {
            let (tcp, peer) = tokio::select! {
                _ = &mut stop => return,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of descriptors or a connection reset before it was taken.
                        tracing::warn!("accepting a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            let _ = tcp.set_nodelay(true);
            let (acceptor, raft, node_tx, client_tx) =
                (acceptor.clone(), raft.clone(), node_tx.clone(), client_tx.clone());
            tokio::spawn(async move {
                let Some(mut stream) = handshake(&acceptor, Socket { tcp }, peer).await else { return };
                let handoff = if from_node(&stream) {
                    if let Err(e) = stream.get_mut().0.move_to(&raft) {
                        tracing::warn!(%peer, "moving a node's connection to the Raft runtime: {e}");
                        return;
                    }
                    node_tx
                } else {
                    client_tx
                };
                // A closed queue means the node is stopping.
                let _ = handoff.send(stream).await;
            });
        }
    });
    Split { nodes: ReceiverStream::new(nodes), clients: ReceiverStream::new(clients) }
}

#[cfg(test)]
mod tests;
