//! An in-process stand-in for fleet-node's API, over real mutual TLS, so the
//! client's failover, monotonic reads, watch resume and output can be tested
//! before the real node exists. It is deliberately simple: an in-memory map,
//! a history of events, and switches to make a node "down" or to expire history.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use fleet_api::Object;
use fleet_proto::fleet as pb;
use fleet_proto::fleet::fleet_server::{Fleet, FleetServer};
use fleet_proto::tls::{common_name, PkiDir};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status};

/// Everything the fake nodes of one "cluster" share.
#[derive(Default)]
pub struct Store {
    pub objects: BTreeMap<(String, String, String), Object>,
    pub rv: u64,
    pub history: Vec<pb::WatchEvent>,
    /// Watches from a resourceVersion below this get "expired".
    pub expired_below: u64,
    /// Every `min_resource_version` a read carried, in order.
    pub min_rvs: Vec<u64>,
    /// The CN of every caller, in order.
    pub callers: Vec<String>,
}

/// The shared state plus the event fan-out.
pub struct Shared {
    pub store: Mutex<Store>,
    pub events: broadcast::Sender<pb::WatchEvent>,
}

impl Shared {
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared { store: Mutex::new(Store::default()), events: broadcast::channel(1024).0 })
    }

    /// Writes an object as the server would (new resourceVersion, event).
    pub fn put(&self, mut object: Object) -> (&'static str, Object) {
        let mut store = self.store.lock().unwrap();
        store.rv += 1;
        let rv = store.rv;
        object.metadata.set_resource_version(rv);
        object.metadata.creation_timestamp.get_or_insert_with(|| "2024-01-01T00:00:00Z".to_string());
        if object.metadata.uid.is_empty() {
            object.metadata.uid = format!("uid-{rv}");
        }
        let key = key_of(&object);
        let action = if store.objects.insert(key, object.clone()).is_some() { "configured" } else { "created" };
        let event = pb::WatchEvent {
            r#type: if action == "created" { "ADDED" } else { "MODIFIED" }.to_string(),
            object: object.to_json(),
            resource_version: rv,
        };
        store.history.push(event.clone());
        let _ = self.events.send(event);
        (action, object)
    }

    /// Deletes an object, if present.
    pub fn remove(&self, kind: &str, namespace: &str, name: &str) -> Option<Object> {
        let mut store = self.store.lock().unwrap();
        let object = store.objects.remove(&(kind.to_string(), namespace.to_string(), name.to_string()))?;
        store.rv += 1;
        let event = pb::WatchEvent { r#type: "DELETED".into(), object: object.to_json(), resource_version: store.rv };
        store.history.push(event.clone());
        let _ = self.events.send(event);
        Some(object)
    }
}

fn key_of(object: &Object) -> (String, String, String) {
    (object.kind.clone(), object.metadata.namespace.clone().unwrap_or_default(), object.metadata.name.clone())
}

/// One fake node: serves the shared store until switched down.
#[derive(Clone)]
pub struct FakeNode {
    pub id: u64,
    pub shared: Arc<Shared>,
    pub down: watch::Sender<bool>,
}

impl FakeNode {
    fn check(
        &self,
        request_certs: Option<Arc<Vec<rustls::pki_types::CertificateDer<'static>>>>,
    ) -> Result<String, Status> {
        if *self.down.borrow() {
            return Err(Status::unavailable(format!("node {} is down", self.id)));
        }
        let cn = request_certs
            .and_then(|certs| certs.first().and_then(|c| common_name(c).ok()))
            .ok_or_else(|| Status::unauthenticated("no client certificate"))?;
        self.shared.store.lock().unwrap().callers.push(cn.clone());
        Ok(cn)
    }

    fn record_read(&self, read: Option<&pb::ReadOptions>) {
        let min = read.map(|r| r.min_resource_version).unwrap_or(0);
        self.shared.store.lock().unwrap().min_rvs.push(min);
    }
}

fn kind_name(kind: &Option<pb::KindRef>) -> String {
    kind.as_ref().map(|k| k.kind.clone()).unwrap_or_default()
}

fn plural(kind: &str) -> String {
    format!("{}s", kind.to_ascii_lowercase())
}

fn matches(object: &Object, kind: &str, namespace: &str, all: bool) -> bool {
    object.kind == kind && (all || namespace.is_empty() || object.metadata.namespace.as_deref() == Some(namespace))
}

#[tonic::async_trait]
impl Fleet for FakeNode {
    async fn apply(&self, request: Request<pb::ApplyRequest>) -> Result<Response<pb::ApplyResponse>, Status> {
        let cn = self.check(request.peer_certs())?;
        if cn != "admin" {
            return Err(Status::permission_denied(format!("{cn} may not write")));
        }
        let mut results = Vec::new();
        for doc in request.into_inner().documents {
            let mut object = Object::from_json(&doc).map_err(|e| Status::invalid_argument(e.to_string()))?;
            if object.kind == "ConfigMap" && object.metadata.namespace.is_none() {
                object.metadata.namespace = Some("default".into());
            }
            let (action, stored) = self.shared.put(object);
            results.push(pb::ApplyResult { action: action.into(), object: stored.to_json() });
        }
        let resource_version = self.shared.store.lock().unwrap().rv;
        Ok(Response::new(pb::ApplyResponse { results, resource_version }))
    }

    async fn update_status(
        &self,
        request: Request<pb::UpdateStatusRequest>,
    ) -> Result<Response<pb::WriteResponse>, Status> {
        self.check(request.peer_certs())?;
        let object =
            Object::from_json(&request.into_inner().object).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let (_, stored) = self.shared.put(object);
        let resource_version = stored.metadata.resource_version_number().unwrap_or(0);
        Ok(Response::new(pb::WriteResponse { object: stored.to_json(), resource_version }))
    }

    async fn get(&self, request: Request<pb::GetRequest>) -> Result<Response<pb::GetResponse>, Status> {
        self.check(request.peer_certs())?;
        let req = request.into_inner();
        self.record_read(req.read.as_ref());
        let kind = kind_name(&req.kind);
        let store = self.shared.store.lock().unwrap();
        match store.objects.get(&(kind.clone(), req.namespace.clone(), req.name.clone())) {
            Some(object) => Ok(Response::new(pb::GetResponse { object: object.to_json(), resource_version: store.rv })),
            None => Err(Status::not_found(format!("{} \"{}\" not found", plural(&kind), req.name))),
        }
    }

    async fn list(&self, request: Request<pb::ListRequest>) -> Result<Response<pb::ListResponse>, Status> {
        self.check(request.peer_certs())?;
        let req = request.into_inner();
        self.record_read(req.read.as_ref());
        let kind = kind_name(&req.kind);
        let selector = fleet_api::LabelSelector::parse(&req.label_selector)
            .map_err(|e| Status::invalid_argument(format!("bad label selector: {e}")))?;
        let store = self.shared.store.lock().unwrap();
        let items = store
            .objects
            .values()
            .filter(|o| matches(o, &kind, &req.namespace, req.all_namespaces))
            .filter(|o| selector.matches(&o.metadata.labels))
            .map(Object::to_json)
            .collect();
        Ok(Response::new(pb::ListResponse { items, resource_version: store.rv }))
    }

    async fn delete(&self, request: Request<pb::DeleteRequest>) -> Result<Response<pb::WriteResponse>, Status> {
        self.check(request.peer_certs())?;
        let req = request.into_inner();
        let kind = kind_name(&req.kind);
        match self.shared.remove(&kind, &req.namespace, &req.name) {
            Some(object) => {
                let resource_version = self.shared.store.lock().unwrap().rv;
                Ok(Response::new(pb::WriteResponse { object: object.to_json(), resource_version }))
            }
            None => Err(Status::not_found(format!("{} \"{}\" not found", plural(&kind), req.name))),
        }
    }

    type WatchStream = ReceiverStream<Result<pb::WatchEvent, Status>>;

    async fn watch(&self, request: Request<pb::WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        self.check(request.peer_certs())?;
        let req = request.into_inner();
        let kind = kind_name(&req.kind);
        let (backlog, mut live) = {
            let store = self.shared.store.lock().unwrap();
            if req.resource_version < store.expired_below {
                return Err(Status::failed_precondition(format!(
                    "resourceVersion {} expired (oldest kept is {}): relist",
                    req.resource_version, store.expired_below
                )));
            }
            let backlog: Vec<_> =
                store.history.iter().filter(|e| e.resource_version > req.resource_version).cloned().collect();
            (backlog, self.shared.events.subscribe())
        };
        let wanted = move |e: &pb::WatchEvent| {
            Object::from_json(&e.object).is_ok_and(|o| matches(&o, &kind, &req.namespace, req.all_namespaces))
        };
        let (tx, rx) = mpsc::channel(64);
        let mut down = self.down.subscribe();
        let id = self.id;
        tokio::spawn(async move {
            for event in backlog.into_iter().filter(|e| wanted(e)) {
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
            }
            loop {
                let event = tokio::select! {
                    biased;
                    _ = down.wait_for(|d| *d) => None,
                    event = live.recv() => Some(event),
                };
                let Some(event) = event else {
                    let _ = tx.send(Err(Status::unavailable(format!("node {id} is shutting down")))).await;
                    return;
                };
                match event {
                    Ok(event) if wanted(&event) => {
                        if tx.send(Ok(event)).await.is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn cluster_status(
        &self,
        request: Request<pb::ClusterStatusRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        self.check(request.peer_certs())?;
        let last_applied = self.shared.store.lock().unwrap().rv;
        let members = (1..=3)
            .map(|id| pb::ClusterMember {
                id,
                address: format!("127.0.0.1:{}", 7000 + id),
                role: "Follower".into(),
                last_applied,
                reachable: true,
                ..Default::default()
            })
            .collect();
        Ok(Response::new(pb::ClusterStatusResponse { leader: 1, term: 2, members, node_id: self.id }))
    }

    async fn add_node(
        &self,
        request: Request<pb::AddNodeRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        self.check(request.peer_certs())?;
        Err(Status::unimplemented("not in the fake"))
    }

    async fn remove_node(
        &self,
        request: Request<pb::RemoveNodeRequest>,
    ) -> Result<Response<pb::ClusterStatusResponse>, Status> {
        self.check(request.peer_certs())?;
        Err(Status::unimplemented("not in the fake"))
    }

    type SaveSnapshotStream = ReceiverStream<Result<pb::SnapshotChunk, Status>>;

    async fn save_snapshot(
        &self,
        request: Request<pb::SaveSnapshotRequest>,
    ) -> Result<Response<Self::SaveSnapshotStream>, Status> {
        self.check(request.peer_certs())?;
        Err(Status::unimplemented("not in the fake"))
    }

    async fn create_token(
        &self,
        request: Request<pb::CreateTokenRequest>,
    ) -> Result<Response<pb::CreateTokenResponse>, Status> {
        self.check(request.peer_certs())?;
        let cluster = request.into_inner().cluster;
        Ok(Response::new(pb::CreateTokenResponse {
            token: format!("{cluster}.secret"),
            ca_fingerprint: "sha256:00".into(),
            expires_at: "2026-01-01T00:00:00Z".into(),
        }))
    }

    async fn join(&self, _: Request<pb::JoinRequest>) -> Result<Response<pb::JoinResponse>, Status> {
        Err(Status::unimplemented("not in the fake"))
    }

    async fn renew_certificate(
        &self,
        _: Request<pb::RenewCertificateRequest>,
    ) -> Result<Response<pb::JoinResponse>, Status> {
        Err(Status::unimplemented("not in the fake"))
    }

    async fn heartbeat(&self, _: Request<pb::HeartbeatRequest>) -> Result<Response<pb::HeartbeatResponse>, Status> {
        Err(Status::unimplemented("not in the fake"))
    }

    async fn member_heartbeats(
        &self,
        _: Request<pb::MemberHeartbeatsRequest>,
    ) -> Result<Response<pb::MemberHeartbeatsResponse>, Status> {
        Err(Status::unimplemented("not in the fake"))
    }
}

/// Starts fake node `id` on a loopback port with the PKI's node certificate;
/// returns it and its `host:port`.
pub async fn start_node(pki_dir: &Path, id: u64, shared: Arc<Shared>) -> (FakeNode, String) {
    fleetctl::install_crypto_provider();
    let pki = PkiDir::new(pki_dir);
    let identity =
        Identity::from_pem(std::fs::read(pki.node_cert(id)).unwrap(), std::fs::read(pki.node_key(id)).unwrap());
    let ca = Certificate::from_pem(std::fs::read(pki.ca_cert()).unwrap());
    let tls = ServerTlsConfig::new().identity(identity).client_ca_root(ca);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let node = FakeNode { id, shared, down: watch::channel(false).0 };
    let service = FleetServer::new(node.clone());
    let router = Server::builder().tls_config(tls).unwrap().add_service(service);
    tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener)));
    (node, address)
}

/// A loopback address nothing listens on.
pub async fn closed_address() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A ConfigMap in `default`.
pub fn config_map(name: &str, value: &str) -> Object {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"value": value}
    }))
    .unwrap()
}
