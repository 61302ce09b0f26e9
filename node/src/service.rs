//! The user-facing `Fleet` gRPC service: authorization, admission, then a
//! Raft write (forwarded to the leader by consensus) or a local read.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fleet_api::ocm::{self, managed_cluster};
use fleet_api::{LabelSelector, Object, ObjectKey};
use fleet_proto::fleet::fleet_server::Fleet;
use fleet_proto::fleet::{
    AddNodeRequest, ApplyRequest, ApplyResponse, ApplyResult, ClusterMember, ClusterStatusRequest,
    ClusterStatusResponse, CreateTokenRequest, CreateTokenResponse, DeleteRequest, GetRequest, GetResponse,
    HeartbeatRequest, HeartbeatResponse, JoinRequest, JoinResponse, KindRef, ListRequest, ListResponse,
    MemberHeartbeatsRequest, MemberHeartbeatsResponse, ReadOptions, RemoveNodeRequest, RenewCertificateRequest,
    SaveSnapshotRequest, UpdateStatusRequest, WatchEvent, WatchRequest, WriteResponse,
};
use fleet_raft::consensus::MembershipChange;
use fleet_raft::Consensus;
use fleet_statemachine::{Command, Op, Store};
use futures::Stream;
use tonic::{Request, Response, Status};

use crate::admission::{self, Document, ResolvedKind};
use crate::auth::{authorize, Access, Caller};
use crate::error::{raft_status, storage_status};
use crate::members::authz;
use crate::members::service::{MemberCall, MemberReply, MemberService};

/// How long a read waits for this node to catch up with what the client has seen.
const CATCH_UP: Duration = Duration::from_secs(5);

/// The `Fleet` service of one node.
#[derive(Clone)]
pub struct FleetService {
    consensus: Arc<Consensus>,
    members: Arc<MemberService>,
    /// Becomes true when the node shuts down: long-lived streams end then.
    stopping: tokio::sync::watch::Receiver<bool>,
}

/// The proposer's clock, carried in commands (apply never reads a clock).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Runs a blocking store call off the async runtime threads.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Status> + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Status::internal(format!("store task failed: {e}")))?
}

impl FleetService {
    /// A service over this node's consensus.
    pub fn new(
        consensus: Arc<Consensus>,
        members: Arc<MemberService>,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) -> FleetService {
        FleetService { consensus, members, stopping }
    }

    /// Confines a member agent to its own Work (no-op for other callers),
    /// and checks its certificate is still one the hub issued. A follower
    /// that has not yet seen a fresh credential catches up once and retries.
    async fn member_scope(
        &self,
        caller: &Caller,
        kind: &ResolvedKind,
        namespace: &str,
        rpc: &str,
    ) -> Result<(), Status> {
        let fleet_proto::tls::Identity::Member(cluster) = &caller.identity else { return Ok(()) };
        authz::check_scope(cluster, kind, namespace, rpc)?;
        self.member_credential(cluster, &caller.serial).await
    }

    async fn member_credential(&self, cluster: &str, serial: &str) -> Result<(), Status> {
        let check = || {
            let store = self.store();
            let (c, s) = (cluster.to_string(), serial.to_string());
            blocking(move || authz::check_credential(&store, &c, &s))
        };
        match check().await {
            Ok(()) => Ok(()),
            Err(first) => {
                if self.consensus.linearizable_index().await.is_err() {
                    return Err(first);
                }
                check().await
            }
        }
    }

    fn member_cluster(caller: &Caller) -> Result<&str, Status> {
        match &caller.identity {
            fleet_proto::tls::Identity::Member(c) => Ok(c),
            other => Err(Status::permission_denied(format!("{other} is not a member agent"))),
        }
    }

    fn store(&self) -> Arc<Store> {
        self.consensus.store().clone()
    }

    /// Makes the read about to happen at least as new as the client asks:
    /// linearizable through the leader, or at least `min_resource_version`.
    async fn read_barrier(&self, options: Option<&ReadOptions>) -> Result<(), Status> {
        let Some(options) = options else { return Ok(()) };
        if options.consistent {
            self.consensus.linearizable_index().await.map_err(raft_status)?;
        } else if options.min_resource_version > self.consensus.store().applied_index() {
            self.consensus.wait_applied(options.min_resource_version, CATCH_UP).await.map_err(|_| {
                Status::unavailable(format!(
                    "node {} has applied up to {} but the client has seen {}: try again or another node",
                    self.consensus.id(),
                    self.consensus.store().applied_index(),
                    options.min_resource_version
                ))
            })?;
        }
        Ok(())
    }

    async fn resolve(&self, kind: Option<KindRef>) -> Result<ResolvedKind, Status> {
        let kind = kind.ok_or_else(|| Status::invalid_argument("kind: Required value"))?;
        let store = self.store();
        blocking(move || admission::resolve_kind_ref(&store, &kind)).await
    }

    /// Resolves a kind for reading: the ManagedCluster view reads the
    /// MemberClusters (`Some(view)` maps each one).
    async fn resolve_read(&self, kind: Option<KindRef>) -> Result<(ResolvedKind, Option<View>), Status> {
        let resolved = self.resolve(kind).await?;
        if managed_cluster::is_managed_cluster(&resolved.group, &resolved.kind) {
            return Ok((member_cluster_kind(), Some(managed_cluster::view_of as View)));
        }
        Ok((resolved, None))
    }

    async fn propose(&self, ops: Vec<Op>) -> Result<(u64, Vec<fleet_statemachine::OpOutcome>), Status> {
        self.consensus.write(Command { now: now_rfc3339(), ops }).await.map_err(raft_status)
    }

    async fn status(&self, digest: bool) -> ClusterStatusResponse {
        let (leader, term, members) = self.consensus.cluster_status(digest).await;
        ClusterStatusResponse {
            leader: leader.unwrap_or(0),
            term,
            node_id: self.consensus.id(),
            members: members
                .into_iter()
                .map(|m| ClusterMember {
                    id: m.id,
                    address: m.address,
                    role: m.role,
                    last_applied: m.last_applied,
                    reachable: m.reachable,
                    digest: m.digest,
                    digest_index: m.digest_index,
                })
                .collect(),
        }
    }
}

/// Refuses reads of the hub's internal kinds (bootstrap tokens, member
/// credentials) to everyone but an admin: a viewer sees the fleet, not the
/// material that lets clusters join it.
fn internal_readable(caller: &Caller, kind: &ResolvedKind, rpc: &str) -> Result<(), Status> {
    if kind.group != crate::members::internal::INTERNAL_GROUP
        || matches!(caller.identity, fleet_proto::tls::Identity::Admin)
    {
        return Ok(());
    }
    Err(Status::permission_denied(format!(
        "{:?} may not call {rpc} on {}.{}: the group {} holds the hub's join tokens and member credentials; only \
         admin reads it",
        caller.identity.to_string(),
        kind.plural,
        kind.group,
        kind.group
    )))
}

/// Maps a stored object to how a view shows it.
pub type View = fn(&Object) -> Object;

/// The MemberCluster kind, which the ManagedCluster view reads and writes.
fn member_cluster_kind() -> ResolvedKind {
    ResolvedKind {
        group: fleet_api::kinds::FLEET_CLUSTER_GROUP.into(),
        kind: "MemberCluster".into(),
        plural: "memberclusters".into(),
        scope: fleet_api::Scope::Cluster,
    }
}

/// Refuses status writes the kind's own rules refuse (PlacementDecision
/// pages, AddOnPlacementScores) and writes through the read-only view.
fn check_status(object: &Object) -> Result<(), Status> {
    let invalid = |e: fleet_api::ValidationError| Status::invalid_argument(e.to_string());
    match (object.group(), object.kind.as_str()) {
        (ocm::CLUSTER_GROUP, ocm::decision::KIND) => ocm::decision::validate_status(object).map_err(invalid),
        (ocm::CLUSTER_GROUP, ocm::addon_score::KIND) => ocm::addon_score::validate_status(object).map_err(invalid),
        (fleet_api::kinds::FLEET_PLACEMENT_GROUP, "Work") => fleet_api::work::validate_status(object).map_err(invalid),
        (group, kind) if managed_cluster::is_managed_cluster(group, kind) => Err(Status::invalid_argument(format!(
            "ManagedCluster {:?}: status: Forbidden: a ManagedCluster's status is its MemberCluster's, reported by its agent",
            object.metadata.name
        ))),
        _ => Ok(()),
    }
}

fn parse_selector(text: &str) -> Result<Option<LabelSelector>, Status> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    LabelSelector::parse(text).map(Some).map_err(|e| Status::invalid_argument(e.to_string()))
}

fn not_found(kind: &ResolvedKind, key: &ObjectKey) -> Status {
    Status::not_found(format!("{} {:?} not found", kind.plural, key.name))
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl Fleet for FleetService {
    async fn apply(&self, request: Request<ApplyRequest>) -> Result<Response<ApplyResponse>, Status> {
        authorize(&request, "Apply", Access::Write, false)?;
        let req = request.into_inner();
        if req.documents.is_empty() {
            return Err(Status::invalid_argument("documents: Required value: nothing to apply"));
        }
        let documents: Vec<Document> = req
            .documents
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| Document {
                source: req.sources.get(i).cloned().unwrap_or_else(|| "request".to_string()),
                bytes,
            })
            .collect();
        let store = self.store();
        let objects = blocking(move || admission::admit(&store, documents)).await?;
        let ops =
            objects.into_iter().map(|object| Op::Apply { object, uid: uuid::Uuid::new_v4().to_string() }).collect();
        let (index, outcomes) = self.propose(ops).await?;
        Ok(Response::new(ApplyResponse {
            resource_version: index.max(self.consensus.store().applied_index()),
            results: outcomes
                .into_iter()
                .map(|o| ApplyResult { action: o.action.as_str().to_string(), object: o.object.to_json() })
                .collect(),
        }))
    }

    async fn update_status(&self, request: Request<UpdateStatusRequest>) -> Result<Response<WriteResponse>, Status> {
        let caller = authorize(&request, "UpdateStatus", Access::Write, true)?;
        let bytes = request.into_inner().object;
        // Size-limited like any write, before decoding anything.
        if bytes.len() > fleet_api::validation::MAX_OBJECT_BYTES {
            return Err(Status::invalid_argument(format!(
                "object: Too long: a status update of {} bytes, over the limit of {} bytes for an object",
                bytes.len(),
                fleet_api::validation::MAX_OBJECT_BYTES
            )));
        }
        let object = Object::from_json(&bytes)
            .map_err(|e| Status::invalid_argument(format!("object: not a valid object: {e}")))?;
        check_status(&object)?;
        let store = self.store();
        let (object, kind) = blocking(move || {
            let kind = admission::resolve_document(&store, &object)?;
            let mut object = object;
            object.metadata.namespace =
                Some(kind.namespace_or_default(object.metadata.namespace.as_deref().unwrap_or("")))
                    .filter(|n| !n.is_empty());
            Ok((object, kind))
        })
        .await?;
        let namespace = object.metadata.namespace.clone().unwrap_or_default();
        self.member_scope(&caller, &kind, &namespace, "UpdateStatus").await?;
        let (index, outcomes) = self.propose(vec![Op::UpdateStatus { object }]).await?;
        let object = outcomes.into_iter().next().map(|o| o.object.to_json()).unwrap_or_default();
        Ok(Response::new(WriteResponse { object, resource_version: index }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        let caller = authorize(&request, "Get", Access::Read, true)?;
        let req = request.into_inner();
        let (kind, view) = self.resolve_read(req.kind).await?;
        internal_readable(&caller, &kind, "Get")?;
        self.member_scope(&caller, &kind, &kind.namespace_or_default(&req.namespace), "Get").await?;
        self.read_barrier(req.read.as_ref()).await?;
        let key = kind.key(&req.namespace, &req.name);
        let store = self.store();
        let lookup = key.clone();
        let (object, index) = blocking(move || store.get(&lookup).map_err(storage_status)).await?;
        let object = object.ok_or_else(|| not_found(&kind, &key))?;
        let object = view.map_or(object.clone(), |v| v(&object));
        Ok(Response::new(GetResponse { object: object.to_json(), resource_version: index }))
    }

    async fn list(&self, request: Request<ListRequest>) -> Result<Response<ListResponse>, Status> {
        let caller = authorize(&request, "List", Access::Read, true)?;
        let req = request.into_inner();
        let (kind, view) = self.resolve_read(req.kind).await?;
        let scope_ns = if req.all_namespaces { String::new() } else { req.namespace.clone() };
        internal_readable(&caller, &kind, "List")?;
        self.member_scope(&caller, &kind, &scope_ns, "List").await?;
        let selector = parse_selector(&req.label_selector)?;
        self.read_barrier(req.read.as_ref()).await?;
        let namespace =
            (!req.all_namespaces && !req.namespace.is_empty()).then(|| kind.namespace_or_default(&req.namespace));
        let mut query = kind.query(namespace.filter(|n| !n.is_empty()));
        query.selector = selector;
        let store = self.store();
        let (items, index) = blocking(move || store.list(&query).map_err(storage_status)).await?;
        let items = items.iter().map(|o| view.map_or_else(|| o.to_json(), |v| v(o).to_json())).collect();
        Ok(Response::new(ListResponse { items, resource_version: index }))
    }

    async fn delete(&self, request: Request<DeleteRequest>) -> Result<Response<WriteResponse>, Status> {
        authorize(&request, "Delete", Access::Write, false)?;
        let req = request.into_inner();
        // Deleting a ManagedCluster deletes its MemberCluster: one inventory.
        let (kind, _) = self.resolve_read(req.kind).await?;
        let key = kind.key(&req.namespace, &req.name);
        let precondition = (req.resource_version > 0).then_some(req.resource_version);
        let result = self.propose(vec![Op::Delete { key: key.clone(), resource_version: precondition }]).await;
        let (index, outcomes) = match result {
            Err(s) if s.code() == tonic::Code::NotFound => return Err(not_found(&kind, &key)),
            other => other?,
        };
        let object = outcomes.into_iter().next().map(|o| o.object.to_json()).unwrap_or_default();
        Ok(Response::new(WriteResponse { object, resource_version: index }))
    }

    type WatchStream = WatchStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let caller = authorize(&request, "Watch", Access::Read, true)?;
        let req = request.into_inner();
        let (kind, view) = self.resolve_read(req.kind.clone()).await?;
        let scope_ns = if req.all_namespaces { String::new() } else { req.namespace.clone() };
        internal_readable(&caller, &kind, "Watch")?;
        self.member_scope(&caller, &kind, &scope_ns, "Watch").await?;
        let selector = parse_selector(&req.label_selector)?;
        let floor = req.min_resource_version.max(req.resource_version);
        self.read_barrier(Some(&ReadOptions { min_resource_version: floor, consistent: false })).await?;
        let namespace =
            (!req.all_namespaces && !req.namespace.is_empty()).then(|| kind.namespace_or_default(&req.namespace));
        let mut query = kind.query(namespace.filter(|n| !n.is_empty()));
        query.selector = selector;
        let member = match &caller.identity {
            fleet_proto::tls::Identity::Member(c) => Some((c.clone(), caller.serial.clone())),
            _ => None,
        };
        let stream =
            crate::watch::start(self.store(), query, req.resource_version, self.stopping.clone(), member, view).await?;
        Ok(Response::new(stream))
    }

    async fn cluster_status(
        &self,
        request: Request<ClusterStatusRequest>,
    ) -> Result<Response<ClusterStatusResponse>, Status> {
        authorize(&request, "ClusterStatus", Access::Read, false)?;
        Ok(Response::new(self.status(request.get_ref().digest).await))
    }

    async fn add_node(&self, request: Request<AddNodeRequest>) -> Result<Response<ClusterStatusResponse>, Status> {
        authorize(&request, "AddNode", Access::Write, false)?;
        let req = request.into_inner();
        if req.id == 0 || req.address.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).is_none() {
            return Err(Status::invalid_argument(format!(
                "add-node: Invalid value: id={} address={:?}: need a positive id and host:port",
                req.id, req.address
            )));
        }
        self.consensus
            .change_membership(MembershipChange::Add { id: req.id, address: req.address })
            .await
            .map_err(raft_status)?;
        Ok(Response::new(self.status(false).await))
    }

    async fn remove_node(
        &self,
        request: Request<RemoveNodeRequest>,
    ) -> Result<Response<ClusterStatusResponse>, Status> {
        authorize(&request, "RemoveNode", Access::Write, false)?;
        let id = request.into_inner().id;
        self.consensus.change_membership(MembershipChange::Remove { id }).await.map_err(raft_status)?;
        Ok(Response::new(self.status(false).await))
    }

    type SaveSnapshotStream = crate::backup::SnapshotStream;

    async fn save_snapshot(
        &self,
        request: Request<SaveSnapshotRequest>,
    ) -> Result<Response<Self::SaveSnapshotStream>, Status> {
        // Every object, internal ones (tokens, credentials) included: admin only.
        authorize(&request, "SaveSnapshot", Access::Write, false)?;
        Ok(Response::new(crate::backup::save(&self.consensus).await?))
    }

    async fn create_token(
        &self,
        request: Request<CreateTokenRequest>,
    ) -> Result<Response<CreateTokenResponse>, Status> {
        authorize(&request, "CreateToken", Access::Write, false)?;
        let req = request.into_inner();
        // 0: the default hour; over a day is refused by create_token.
        let ttl = Duration::from_secs(if req.ttl_seconds == 0 { 3600 } else { req.ttl_seconds });
        Ok(Response::new(self.members.create_token(&req.cluster, ttl).await?))
    }

    async fn join(&self, request: Request<JoinRequest>) -> Result<Response<JoinResponse>, Status> {
        // No client certificate: the bootstrap token is the credential.
        let req = request.into_inner();
        let reply = self
            .members
            .call(MemberCall::Join { cluster: req.cluster, token: req.token, csr_pem: req.csr_pem })
            .await?;
        Ok(Response::new(MemberService::join_response(reply)?))
    }

    async fn renew_certificate(
        &self,
        request: Request<RenewCertificateRequest>,
    ) -> Result<Response<JoinResponse>, Status> {
        let caller = authorize(&request, "RenewCertificate", Access::MemberOnly, true)?;
        let cluster = Self::member_cluster(&caller)?.to_string();
        let call = MemberCall::Renew { cluster, serial: caller.serial, csr_pem: request.into_inner().csr_pem };
        Ok(Response::new(MemberService::join_response(self.members.call(call).await?)?))
    }

    async fn heartbeat(&self, request: Request<HeartbeatRequest>) -> Result<Response<HeartbeatResponse>, Status> {
        let caller = authorize(&request, "Heartbeat", Access::MemberOnly, true)?;
        let cluster = Self::member_cluster(&caller)?.to_string();
        let req = request.into_inner();
        if req.cluster != cluster {
            return Err(Status::permission_denied(format!(
                "system:fleet:member:{cluster} may not heartbeat for cluster {:?}",
                req.cluster
            )));
        }
        self.member_credential(&cluster, &caller.serial).await?;
        match self.members.call(MemberCall::Heartbeat { cluster, report: req.report }).await? {
            MemberReply::Heartbeat { period_seconds } => {
                Ok(Response::new(HeartbeatResponse { heartbeat_period_seconds: period_seconds }))
            }
            _ => Err(Status::internal("unexpected reply to a heartbeat")),
        }
    }

    async fn member_heartbeats(
        &self,
        request: Request<MemberHeartbeatsRequest>,
    ) -> Result<Response<MemberHeartbeatsResponse>, Status> {
        authorize(&request, "MemberHeartbeats", Access::Read, false)?;
        match self.members.call(MemberCall::Ages).await? {
            MemberReply::Ages(age_millis) => {
                Ok(Response::new(MemberHeartbeatsResponse { age_millis: age_millis.into_iter().collect() }))
            }
            _ => Err(Status::internal("unexpected reply to a heartbeat-age request")),
        }
    }
}
