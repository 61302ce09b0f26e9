//! The gRPC client of the Fleet API: mutual TLS, failover across the hub's
//! nodes, and reads that never go back in time for this client.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use fleet_api::Object;
use fleet_proto::fleet as pb;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::tls::{read_file, PkiDir};
use futures::Stream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Status};

use crate::endpoints::endpoint_uri;
use crate::error::{server_error_text, EndpointFailure, Error, Result};
use crate::kind::KindArg;
use crate::types::{decode_object, ApplyAction, ApplyOutcome, ClusterStatus, ListQuery, ObjectList, WatchEvent};

/// The largest message accepted from a server (lists of many large objects).
const MAX_MESSAGE_BYTES: usize = 512 * 1024 * 1024;

/// Tunables of a [`Client`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// How long to wait for a TCP+TLS connection to one endpoint.
    pub connect_timeout: Duration,
    /// How long one unary call (or the start of a watch) may take on one
    /// endpoint before the next is tried; `None`: no limit.
    pub request_timeout: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions { connect_timeout: Duration::from_secs(2), request_timeout: Some(Duration::from_secs(30)) }
    }
}

/// A client of the Fleet API. Cheap to clone; clones share the endpoint
/// rotation and the highest resourceVersion seen.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    nodes: Vec<Node>,
    current: AtomicUsize,
    max_seen: AtomicU64,
    options: ClientOptions,
}

struct Node {
    endpoint: String,
    channel: Channel,
}

/// Installs rustls' `ring` crypto provider for the process (once; later calls
/// are harmless).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Client {
    /// Connects (lazily) to `endpoints` (`host:port`) as `user`, with `ca.pem`,
    /// `<user>.pem` and `<user>-key.pem` from `tls_dir`, default options.
    pub async fn connect(endpoints: Vec<String>, tls_dir: &Path, user: &str) -> Result<Client> {
        Client::connect_with(endpoints, tls_dir, user, ClientOptions::default()).await
    }

    /// Like [`Client::connect`] with explicit options. No connection is made
    /// until the first call; certificate files are read and checked now.
    pub async fn connect_with(
        endpoints: Vec<String>,
        tls_dir: &Path,
        user: &str,
        options: ClientOptions,
    ) -> Result<Client> {
        install_crypto_provider();
        if endpoints.is_empty() {
            return Err(Error::NoEndpoints);
        }
        let pki = PkiDir::new(tls_dir);
        let ca = read_file(&pki.ca_cert())?;
        let cert = read_file(&pki.client_cert(user))?;
        let key = read_file(&pki.client_key(user))?;
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(ca))
            .identity(Identity::from_pem(cert, key))
            .timeout(options.connect_timeout);
        let mut nodes = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let channel = Endpoint::from_shared(endpoint_uri(&endpoint))
                .map_err(|e| Error::InvalidEndpoint { endpoint: endpoint.clone(), reason: e.to_string() })?
                .tls_config(tls.clone())
                .map_err(|e| Error::TlsConfig { endpoint: endpoint.clone(), message: error_chain(&e) })?
                .connect_timeout(options.connect_timeout)
                .tcp_nodelay(true)
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(5))
                .connect_lazy();
            nodes.push(Node { endpoint, channel });
        }
        let inner = Inner { nodes, current: AtomicUsize::new(0), max_seen: AtomicU64::new(0), options };
        Ok(Client { inner: Arc::new(inner) })
    }

    /// The endpoints, in the order given.
    pub fn endpoints(&self) -> Vec<String> {
        self.inner.nodes.iter().map(|n| n.endpoint.clone()).collect()
    }

    /// The endpoint the next call tries first.
    pub fn current_endpoint(&self) -> &str {
        let i = self.inner.current.load(Ordering::Relaxed) % self.inner.nodes.len();
        &self.inner.nodes[i].endpoint
    }

    /// The highest resourceVersion seen in any response so far.
    pub fn resource_version(&self) -> u64 {
        self.inner.max_seen.load(Ordering::Relaxed)
    }

    /// Records a resourceVersion seen elsewhere, so later reads are at least
    /// that fresh.
    pub fn observe(&self, resource_version: u64) {
        self.inner.max_seen.fetch_max(resource_version, Ordering::Relaxed);
    }

    fn observe_object(&self, object: &Object) {
        if let Some(rv) = object.metadata.resource_version_number() {
            self.observe(rv);
        }
    }

    fn read_options(&self, consistent: bool) -> pb::ReadOptions {
        pb::ReadOptions { min_resource_version: self.resource_version(), consistent }
    }

    /// Moves on from endpoint `index` after it failed (unless another call
    /// already did).
    fn endpoint_failed(&self, index: usize) {
        let next = (index + 1) % self.inner.nodes.len();
        let _ = self.inner.current.compare_exchange(index, next, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Runs one RPC with failover: each endpoint at most once, starting at the
    /// current one, moving on when it cannot be reached or says Unavailable.
    /// Returns the answer and the index of the endpoint that gave it.
    async fn call<T, F, Fut>(&self, mut rpc: F) -> Result<(T, usize)>
    where
        F: FnMut(FleetClient<Channel>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, Status>>,
    {
        let n = self.inner.nodes.len();
        let start = self.inner.current.load(Ordering::Relaxed);
        let mut failures = Vec::new();
        for step in 0..n {
            let index = (start + step) % n;
            let node = &self.inner.nodes[index];
            let client = FleetClient::new(node.channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES);
            let answer = match self.inner.options.request_timeout {
                Some(limit) => match tokio::time::timeout(limit, rpc(client)).await {
                    Ok(answer) => answer,
                    Err(_) => {
                        failures.push(EndpointFailure {
                            endpoint: node.endpoint.clone(),
                            reason: format!("no answer within {}", humantime::format_duration(limit)),
                        });
                        continue;
                    }
                },
                None => rpc(client).await,
            };
            match answer {
                Ok(response) => {
                    self.inner.current.store(index, Ordering::Relaxed);
                    return Ok((response.into_inner(), index));
                }
                Err(status) if is_connection_failure(&status) => {
                    failures
                        .push(EndpointFailure { endpoint: node.endpoint.clone(), reason: describe_failure(&status) });
                }
                Err(status) => {
                    self.inner.current.store(index, Ordering::Relaxed);
                    return Err(Error::from_status(&status));
                }
            }
        }
        self.inner.current.store((start + 1) % n, Ordering::Relaxed);
        Err(Error::Unreachable { failures })
    }

    /// Applies documents (with their source names for error messages) as one
    /// atomic request.
    pub async fn apply(&self, documents: Vec<(String, Object)>) -> Result<ApplyOutcome> {
        let (sources, documents): (Vec<String>, Vec<Vec<u8>>) =
            documents.into_iter().map(|(source, object)| (source, object.to_json())).unzip();
        let request = pb::ApplyRequest { documents, sources };
        let (response, _) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.apply(request).await }
            })
            .await?;
        self.observe(response.resource_version);
        let mut results = Vec::with_capacity(response.results.len());
        for result in response.results {
            let object = decode_object(&result.object)?;
            self.observe_object(&object);
            results.push((ApplyAction::parse(&result.action), object));
        }
        Ok(ApplyOutcome { results, resource_version: response.resource_version })
    }

    /// Reads one object.
    pub async fn get(&self, kind: &KindArg, namespace: &str, name: &str, consistent: bool) -> Result<Object> {
        let request = pb::GetRequest {
            kind: Some(kind.to_proto()),
            namespace: namespace.to_string(),
            name: name.to_string(),
            read: Some(self.read_options(consistent)),
        };
        let (response, _) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.get(request).await }
            })
            .await?;
        self.observe(response.resource_version);
        let object = decode_object(&response.object)?;
        self.observe_object(&object);
        Ok(object)
    }

    /// Lists objects.
    pub async fn list(&self, query: &ListQuery) -> Result<ObjectList> {
        let request = pb::ListRequest {
            kind: Some(query.kind.to_proto()),
            namespace: query.namespace.clone(),
            all_namespaces: query.all_namespaces,
            label_selector: query.label_selector.clone(),
            read: Some(self.read_options(query.consistent)),
        };
        let (response, _) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.list(request).await }
            })
            .await?;
        self.observe(response.resource_version);
        let items = response.items.iter().map(|bytes| decode_object(bytes)).collect::<Result<Vec<_>>>()?;
        Ok(ObjectList { items, resource_version: response.resource_version })
    }

    /// Deletes one object (and, on the server, its dependents); `precondition`
    /// is the resourceVersion it must still have. Returns the deleted object
    /// when the server sends it.
    pub async fn delete(
        &self,
        kind: &KindArg,
        namespace: &str,
        name: &str,
        precondition: Option<u64>,
    ) -> Result<Option<Object>> {
        let request = pb::DeleteRequest {
            kind: Some(kind.to_proto()),
            namespace: namespace.to_string(),
            name: name.to_string(),
            resource_version: precondition.unwrap_or(0),
        };
        let (response, _) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.delete(request).await }
            })
            .await?;
        self.observe(response.resource_version);
        if response.object.is_empty() {
            return Ok(None);
        }
        decode_object(&response.object).map(Some)
    }

    /// Writes the status of an existing object; its resourceVersion, if set,
    /// is a precondition. Returns the stored object.
    pub async fn update_status(&self, object: &Object) -> Result<Object> {
        let request = pb::UpdateStatusRequest { object: object.to_json() };
        let (response, _) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.update_status(request).await }
            })
            .await?;
        self.observe(response.resource_version);
        let object = decode_object(&response.object)?;
        self.observe_object(&object);
        Ok(object)
    }

    /// Starts a watch of the changes after `resource_version` (0: the current
    /// objects first, as `ADDED`). The stream ends with an error when the
    /// node goes away; [`crate::watch::Watcher`] resumes elsewhere.
    pub async fn watch(&self, query: &ListQuery, resource_version: u64) -> Result<WatchStream> {
        let request = pb::WatchRequest {
            kind: Some(query.kind.to_proto()),
            namespace: query.namespace.clone(),
            all_namespaces: query.all_namespaces,
            label_selector: query.label_selector.clone(),
            resource_version,
            min_resource_version: self.resource_version(),
        };
        let (inner, endpoint) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.watch(request).await }
            })
            .await?;
        Ok(WatchStream { inner, client: self.clone(), endpoint, done: false })
    }

    /// Starts streaming a consistent backup of the whole hub.
    pub async fn save_snapshot(&self) -> Result<tonic::Streaming<pb::SnapshotChunk>> {
        let (stream, _) = self.call(|mut c| async move { c.save_snapshot(pb::SaveSnapshotRequest {}).await }).await?;
        Ok(stream)
    }

    /// Creates a single-use bootstrap token for member cluster `cluster`.
    pub async fn create_token(&self, cluster: &str, ttl: std::time::Duration) -> Result<pb::CreateTokenResponse> {
        let request = pb::CreateTokenRequest { cluster: cluster.to_string(), ttl_seconds: ttl.as_secs().max(1) };
        let (response, _) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.create_token(request).await }
            })
            .await?;
        Ok(response)
    }

    /// Milliseconds since each member's last heartbeat, as the leader saw it.
    pub async fn member_heartbeats(&self) -> Result<std::collections::BTreeMap<String, u64>> {
        let (response, _) =
            self.call(|mut c| async move { c.member_heartbeats(pb::MemberHeartbeatsRequest {}).await }).await?;
        Ok(response.age_millis.into_iter().collect())
    }

    /// The hub cluster's membership and roles, as the answering node sees them.
    /// With `digest`, every member also reports its state digest.
    pub async fn cluster_status(&self, digest: bool) -> Result<ClusterStatus> {
        let (response, _) =
            self.call(|mut c| async move { c.cluster_status(pb::ClusterStatusRequest { digest }).await }).await?;
        Ok(ClusterStatus::from_proto(response))
    }

    /// Adds node `id` at `address` to the hub cluster.
    pub async fn add_node(&self, id: u64, address: &str) -> Result<ClusterStatus> {
        let request = pb::AddNodeRequest { id, address: address.to_string() };
        let (response, _) = self
            .call(|mut c| {
                let request = request.clone();
                async move { c.add_node(request).await }
            })
            .await?;
        Ok(ClusterStatus::from_proto(response))
    }

    /// Removes node `id` from the hub cluster.
    pub async fn remove_node(&self, id: u64) -> Result<ClusterStatus> {
        let (response, _) = self.call(|mut c| async move { c.remove_node(pb::RemoveNodeRequest { id }).await }).await?;
        Ok(ClusterStatus::from_proto(response))
    }
}

/// The events of one watch on one node. Ends (after an error item) when the
/// node goes away or refuses to go on.
pub struct WatchStream {
    inner: tonic::Streaming<pb::WatchEvent>,
    client: Client,
    endpoint: usize,
    done: bool,
}

impl WatchStream {
    /// The endpoint this watch runs on.
    pub fn endpoint(&self) -> &str {
        &self.client.inner.nodes[self.endpoint].endpoint
    }
}

impl Stream for WatchStream {
    type Item = Result<WatchEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(event))) => {
                this.client.observe(event.resource_version);
                Poll::Ready(Some(WatchEvent::from_proto(event)))
            }
            Poll::Ready(Some(Err(status))) => {
                this.done = true;
                if is_connection_failure(&status) {
                    this.client.endpoint_failed(this.endpoint);
                    let failure = EndpointFailure {
                        endpoint: this.client.inner.nodes[this.endpoint].endpoint.clone(),
                        reason: describe_failure(&status),
                    };
                    Poll::Ready(Some(Err(Error::Unreachable { failures: vec![failure] })))
                } else {
                    Poll::Ready(Some(Err(Error::from_status(&status))))
                }
            }
        }
    }
}

/// Whether a status means "this endpoint cannot serve us now, try another":
/// the server said Unavailable, or the status was made locally from a
/// transport error (connection refused, TLS failure, reset, timeout).
pub fn is_connection_failure(status: &Status) -> bool {
    status.code() == Code::Unavailable || std::error::Error::source(status).is_some()
}

/// A one-line account of a failed call for [`Error::Unreachable`].
fn describe_failure(status: &Status) -> String {
    match std::error::Error::source(status) {
        Some(source) => {
            let mut text = status.message().to_string();
            append_chain(&mut text, source);
            if text.is_empty() {
                format!("{:?}", status.code())
            } else {
                text
            }
        }
        None => server_error_text(status.code(), status.message()),
    }
}

/// An error and its sources, joined with `: `, skipping repeats.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    append_chain(&mut text, error);
    text
}

fn append_chain(text: &mut String, error: &(dyn std::error::Error + 'static)) {
    let mut next = Some(error);
    while let Some(e) = next {
        let part = e.to_string();
        if !part.is_empty() && !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        next = e.source();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_and_local_transport_errors_fail_over() {
        assert!(is_connection_failure(&Status::unavailable("no leader")));
        assert!(!is_connection_failure(&Status::not_found("x")));
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let local = Status::from_error(Box::new(io));
        assert!(is_connection_failure(&local));
        assert!(describe_failure(&local).contains("connection refused"));
    }

    #[test]
    fn server_unavailable_is_described_with_its_message() {
        assert_eq!(
            describe_failure(&Status::unavailable("no leader elected yet")),
            "Error from server (ServiceUnavailable): no leader elected yet"
        );
    }
}
