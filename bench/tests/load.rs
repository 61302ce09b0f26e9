//! The load loop against an in-process stand-in for etcd's KV service on
//! loopback: counts, retries and the report, in about two seconds.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fleet_bench::cli::{ConnectArgs, OutputFormat, PutArgs, Target};
use fleet_bench::etcdpb::kv_server::{Kv, KvServer};
use fleet_bench::etcdpb::{PutRequest, PutResponse, ResponseHeader};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

/// Acknowledges every put except each `fail_every`-th, which is `Unavailable`.
struct FakeKv {
    calls: Arc<AtomicU64>,
    fail_every: u64,
}

#[tonic::async_trait]
impl Kv for FakeKv {
    async fn put(&self, request: Request<PutRequest>) -> Result<Response<PutResponse>, Status> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(self.fail_every) {
            return Err(Status::unavailable("no leader"));
        }
        let req = request.into_inner();
        assert!(req.key.starts_with(b"bench/"));
        assert!(req.value.len() == 256 || req.value.len() == 16, "value size {}", req.value.len());
        Ok(Response::new(PutResponse {
            header: Some(ResponseHeader { cluster_id: 1, member_id: 1, revision: n as i64, raft_term: 1 }),
        }))
    }
}

async fn serve(fail_every: u64) -> (SocketAddr, Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let calls = Arc::new(AtomicU64::new(0));
    let kv = FakeKv { calls: calls.clone(), fail_every };
    let server = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .add_service(KvServer::new(kv))
            .serve_with_incoming(TcpListenerStream::new(listener))
            .await;
    });
    (addr, calls, server)
}

fn args(addr: SocketAddr, clients: usize) -> PutArgs {
    PutArgs {
        connect: ConnectArgs {
            target: Target::Etcd,
            endpoints: vec![addr.to_string(), addr.to_string()],
            tls_dir: None,
            etcd_tls: false,
            connections: 0,
            request_timeout_seconds: 2,
        },
        clients,
        seconds: 1,
        warmup_seconds: 1,
        value_size: 256,
        keys_per_client: 10,
        output: OutputFormat::Json,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measures_writes_and_counts_retried_errors() {
    let (addr, calls, server) = serve(50).await;
    let report = fleet_bench::put(&args(addr, 8)).await.unwrap();
    server.abort();
    assert_eq!(report.target, "etcd");
    assert_eq!(report.connections, 2);
    assert!(report.ops > 100, "{report:?}");
    assert!(report.errors > 0, "every 50th call fails: {report:?}");
    assert!(report.ops + report.errors <= calls.load(Ordering::Relaxed));
    assert!(report.p50_ms > 0.0 && report.p50_ms <= report.p99_ms && report.p99_ms <= report.max_ms, "{report:?}");
    assert_eq!(report.first_error.as_deref(), Some("Unavailable: no leader"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_that_refuses_everything_fails_the_run() {
    let (addr, _, server) = serve(1).await;
    let err = fleet_bench::put(&args(addr, 2)).await.unwrap_err().to_string();
    server.abort();
    assert!(err.contains("no write succeeded") && err.contains("no leader"), "{err}");
}

#[tokio::test]
async fn probe_writes_through_every_endpoint() {
    let (addr, calls, server) = serve(u64::MAX).await;
    let endpoints = fleet_bench::probe(&args(addr, 1).connect).await.unwrap();
    server.abort();
    assert_eq!(endpoints.len(), 2);
    assert_eq!(calls.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn fleet_needs_a_pki_dir() {
    let mut a = args("127.0.0.1:1".parse().unwrap(), 1);
    a.connect.target = Target::Fleet;
    let err = fleet_bench::put(&a).await.unwrap_err().to_string();
    assert!(err.contains("--tls-dir"), "{err}");
}
