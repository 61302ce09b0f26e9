//! The Fleet hub node: serves the `Fleet` API and Raft peer traffic on one
//! mTLS port, replicating every object through Raft into redb. Raft (its
//! core, its calls to peers and the peers' connections) runs on a runtime of
//! its own (see [`listener`]).

pub mod admission;
pub mod audit;
pub mod auth;
pub mod backup;
pub mod blocking;
pub mod config;
pub mod controllers;
pub mod crd_status;
pub mod error;
pub mod execute_as;
pub mod fairness;
pub mod http;
pub mod kube;
pub mod listener;
pub mod members;
pub mod metrics;
pub mod objects;
pub mod rbac;
pub mod reach;
pub mod restore;
pub mod service;
pub mod watch;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use fleet_proto::fleet::fleet_server::FleetServer;
use fleet_proto::peer::raft_peer_server::RaftPeerServer;
use fleet_proto::tls::{read_file, PkiDir};
use fleet_raft::{Consensus, PeerService, PeerTls, MAX_MESSAGE_BYTES};
use openraft::BasicNode;
use tokio::runtime::Handle;
use tokio_stream::StreamExt;
use tonic::transport::Server;

pub use config::NodeConfig;
pub use error::Error;

/// How long a stopping node waits for in-flight calls.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Streams a client may reset before the server accepted them, at once on
/// one connection, before h2 closes the connection as an attack (its
/// default is 20). On a starved machine, Raft calls whose openraft
/// time-to-live (the heartbeat interval) ran out are reset before the node
/// gets to them; at 20 the peer connection was closed with every other call
/// on it, and replication and votes failed with it (seen at 5,000 members).
/// Every client here is authenticated by mTLS, and this still bounds what a
/// connection can hold.
const MAX_PENDING_ACCEPT_RESETS: usize = 1024;

/// The address to advertise for the kube API: the bound one, with the
/// `--listen` host when bound to every interface.
fn kube_advertise(bound: std::net::SocketAddr, listen: std::net::SocketAddr) -> String {
    let host = if bound.ip().is_unspecified() { listen.ip() } else { bound.ip() };
    std::net::SocketAddr::new(host, bound.port()).to_string()
}

/// How one of the two gRPC servers ended, as the node's outcome.
fn served_ok(
    which: &str,
    served: Result<Result<(), tonic::transport::Error>, tokio::task::JoinError>,
) -> Result<(), Error> {
    let failed = |e: String| Error::Serve(format!("serving {which} connections: {e}"));
    served.map_err(|e| failed(e.to_string()))?.map_err(|e| failed(e.to_string()))
}

/// Runs a node until `shutdown` resolves, then stops cleanly. Raft runs on
/// `raft`, a runtime that does nothing else (the caller owns it, so that it
/// is dropped outside any runtime).
pub async fn run(
    config: NodeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    raft: Handle,
) -> Result<(), Error> {
    let pki = PkiDir::new(&config.tls_dir);
    let pem = NodePem::read(&pki, config.id)?;
    let consensus = start_consensus(&config, &pem, &raft).await?;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let signer = members::signer::Signer::load(&pki, config.member_cert_validity)?;
    let fingerprint = fleet_proto::tls::fingerprint_pem(&pem.ca, "ca.pem")?;
    let member_service = Arc::new(members::MemberService::new(consensus.clone(), signer, fingerprint));
    tokio::spawn(members::health::run(consensus.clone(), member_service.arrivals.clone(), stop_rx.clone()));
    metrics::register_node(consensus.clone(), member_service.arrivals.clone(), config.data_dir.clone());
    tokio::spawn(controllers::run(consensus.clone(), stop_rx.clone()));
    let auditor = match &config.audit {
        Some(audit) => audit::Auditor::new(audit.level, config.id, audit::file::start(audit.file.clone())?),
        None => audit::Auditor::disabled(),
    };
    // One set of object operations (and one RBAC policy cache) for both APIs.
    let objects = objects::Objects::new(consensus.clone(), config.limits);
    let fleet = FleetServer::new(service::FleetService::new(objects.clone(), member_service.clone(), stop_rx.clone()))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let peer = RaftPeerServer::new(PeerService::new(consensus.clone(), Some(member_service), stop_rx.clone()))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);

    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });

    let grpc = Grpc { fleet, peer, auditor: auditor.clone() };
    let serving = serve_grpc(&config, &pem, &raft, grpc, &stop_rx).await?;

    if let Some(addr) = config.http_listen {
        let consensus = consensus.clone();
        let stop = stopped(stop_rx.clone());
        tokio::spawn(async move {
            if let Err(e) = http::serve(addr, consensus, stop).await {
                tracing::error!("http endpoint on {addr}: {e}");
            }
        });
    }
    if let Some(addr) = config.kube_listen {
        serve_kube(addr, &config, &pem, &consensus, &objects, &auditor, &stop_rx).await?;
    }

    if config.init {
        let members: BTreeMap<u64, BasicNode> =
            config.peers.iter().map(|(id, addr)| (*id, BasicNode::new(addr.clone()))).collect();
        consensus.initialize(members).await?;
    }
    tracing::info!(id = config.id, listen = %config.listen, "fleet-node serving");

    let served = drain(config.id, serving, &stop_rx).await;
    tracing::info!(id = config.id, "shutting down");
    auditor.sync().await;
    consensus.shutdown().await;
    match served {
        Ok(result) => result,
        Err(e) => Err(Error::Serve(e.to_string())),
    }
}

/// The node's certificate, key and the fleet CA, read once at start.
struct NodePem {
    ca: Vec<u8>,
    cert: Vec<u8>,
    key: Vec<u8>,
}

impl NodePem {
    fn read(pki: &PkiDir, id: u64) -> Result<NodePem, Error> {
        Ok(NodePem {
            ca: read_file(&pki.ca_cert())?,
            cert: read_file(&pki.node_cert(id))?,
            key: read_file(&pki.node_key(id))?,
        })
    }

    /// The certificate followed by the CA, as the node presents it: agents
    /// that pin the CA by fingerprint find it there.
    fn chain(&self) -> Vec<u8> {
        [self.cert.as_slice(), b"\n", self.ca.as_slice()].concat()
    }
}

/// Starts consensus on the Raft runtime: openraft's core, its replication
/// and the peer channels' connections are spawned where it starts.
async fn start_consensus(config: &NodeConfig, pem: &NodePem, raft: &Handle) -> Result<Arc<Consensus>, Error> {
    let peer_tls = PeerTls { ca_pem: pem.ca.clone(), cert_pem: pem.cert.clone(), key_pem: pem.key.clone() };
    let (id, data_dir, dial, tuning) =
        (config.id, config.data_dir.clone(), config.peer_dial.clone(), config.tuning.clone());
    let consensus = raft
        .spawn(async move { Consensus::start(id, &data_dir, peer_tls, dial, &tuning).await })
        .await
        .map_err(|e| Error::Serve(format!("starting Raft: {e}")))??;
    Ok(consensus)
}

/// Resolves once the node is asked to stop.
async fn stopped(mut stop: tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// What both gRPC servers serve.
struct Grpc {
    fleet: FleetServer<service::FleetService>,
    peer: RaftPeerServer<PeerService>,
    auditor: Arc<audit::Auditor>,
}

/// The task serving gRPC (it ends when both servers have ended, with the
/// first one's failure), and handles that abort both servers.
type Serving = (tokio::task::JoinHandle<Result<(), Error>>, [tokio::task::AbortHandle; 2]);

/// Serves gRPC on `--listen`: connections of other nodes on the Raft
/// runtime, everyone else's on this one. The unauthenticated get a clear
/// gRPC error instead of a TLS alert (joining agents have no certificate
/// yet).
async fn serve_grpc(
    config: &NodeConfig,
    pem: &NodePem,
    raft: &Handle,
    grpc: Grpc,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
) -> Result<Serving, Error> {
    let tls = listener::server_tls(&pem.ca, &pem.chain(), &pem.key, &[b"h2"], "--listen")?;
    let bound = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| Error::Serve(format!("--listen {}: {e}", config.listen)))?;
    let split = listener::accept(bound, tls, raft.clone(), stopped(stop_rx.clone()));
    // tonic takes a stream of connections or errors; the handoff has no errors.
    let (nodes, clients) = (split.nodes.map(Ok::<_, std::io::Error>), split.clients.map(Ok::<_, std::io::Error>));
    // Both servers offer both services: another node may call the API, and
    // a client calling the peer service is refused by it.
    let router = || {
        Server::builder()
            .http2_max_pending_accept_reset_streams(Some(MAX_PENDING_ACCEPT_RESETS))
            .layer(metrics::grpc::GrpcMetricsLayer)
            .layer(audit::AuditLayer::new(grpc.auditor.clone()))
            .add_service(grpc.fleet.clone())
            .add_service(grpc.peer.clone())
    };
    let nodes = raft.spawn(router().serve_with_incoming_shutdown(nodes, stopped(stop_rx.clone())));
    let clients = tokio::spawn(router().serve_with_incoming_shutdown(clients, stopped(stop_rx.clone())));
    let aborts = [nodes.abort_handle(), clients.abort_handle()];
    // A server that fails ends the node, as the one server did before; on
    // a stop, both drain their calls.
    let server = tokio::spawn(async move {
        let (mut nodes, mut clients) = (nodes, clients);
        let nodes_first = tokio::select! {
            served = &mut nodes => { served_ok("node", served)?; true }
            served = &mut clients => { served_ok("client", served)?; false }
        };
        if nodes_first {
            served_ok("client", clients.await)
        } else {
            served_ok("node", nodes.await)
        }
    });
    Ok((server, aborts))
}

/// Serves the Kubernetes-compatible API on `addr` and keeps its address
/// advertised.
async fn serve_kube(
    addr: std::net::SocketAddr,
    config: &NodeConfig,
    pem: &NodePem,
    consensus: &Arc<Consensus>,
    objects: &objects::Objects,
    auditor: &Arc<audit::Auditor>,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
) -> Result<(), Error> {
    let listener =
        tokio::net::TcpListener::bind(addr).await.map_err(|e| Error::Serve(format!("--kube-listen {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| Error::Serve(format!("--kube-listen {addr}: {e}")))?;
    let advertise = kube_advertise(bound, config.listen);
    let tls = kube::tls_config(&pem.ca, &pem.chain(), &pem.key)?;
    let api = Arc::new(kube::KubeApi {
        objects: objects.clone(),
        stopping: stop_rx.clone(),
        advertise: advertise.clone(),
        auditor: auditor.clone(),
    });
    tokio::spawn(kube::advertise::run(consensus.clone(), config.id, advertise.clone(), stop_rx.clone()));
    let stop = stopped(stop_rx.clone());
    tokio::spawn(async move {
        if let Err(e) = kube::serve(listener, tls, api, stop).await {
            tracing::error!("kube API on {addr}: {e}");
        }
    });
    tracing::info!(id = config.id, kube = %advertise, "Kubernetes-compatible API serving");
    Ok(())
}

/// Waits for the gRPC servers to end. Graceful shutdown waits for in-flight
/// calls; once a stop is asked they get [`SHUTDOWN_GRACE`], then the
/// servers are aborted.
async fn drain(
    id: u64,
    (mut server, aborts): Serving,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
) -> Result<Result<(), Error>, tokio::task::JoinError> {
    tokio::select! {
        served = &mut server => served,
        _ = async {
            stopped(stop_rx.clone()).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!(id, "in-flight calls did not finish within {SHUTDOWN_GRACE:?}; stopping anyway");
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
            Ok(Ok(()))
        }
    }
}
