//! The user-facing `Fleet` gRPC service: authorization, admission, then a
//! Raft write (forwarded to the leader by consensus) or a local read.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub use crate::objects::View;

use fleet_api::Object;
use fleet_proto::fleet::fleet_server::Fleet;
use fleet_proto::fleet::{
    AddNodeRequest, ApplyRequest, ApplyResponse, ApplyResult, ClusterMember, ClusterStatusRequest,
    ClusterStatusResponse, CreateTokenRequest, CreateTokenResponse, DeleteRequest, GetRequest, GetResponse,
    HeartbeatRequest, HeartbeatResponse, JoinRequest, JoinResponse, KindRef, ListRequest, ListResponse,
    MemberHeartbeatsRequest, MemberHeartbeatsResponse, ReadOptions, RemoveNodeRequest, RenewCertificateRequest,
    SaveSnapshotRequest, UpdateStatusRequest, WatchEvent, WatchRequest, WriteResponse,
};
use fleet_raft::consensus::MembershipChange;
use fleet_statemachine::{Op, Stage, Store};
use futures::Stream;
use tonic::{Request, Response, Status};

use crate::admission::{self, Document, ResolvedKind};
use crate::auth::{authorize, Access, Caller};
use crate::blocking::{blocking, blocking_if_large};
use crate::error::raft_error;
use crate::members::service::{MemberCall, MemberReply, MemberService};
use crate::objects::{parse_selector, Objects};
use fleet_rbac::bootstrap;

/// The `Fleet` service of one node.
#[derive(Clone)]
pub struct FleetService {
    objects: Objects,
    members: Arc<MemberService>,
    /// Becomes true when the node shuts down: long-lived streams end then.
    stopping: tokio::sync::watch::Receiver<bool>,
}

impl FleetService {
    /// A service over this node's object operations.
    pub fn new(
        objects: Objects,
        members: Arc<MemberService>,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) -> FleetService {
        FleetService { objects, members, stopping }
    }

    fn member_cluster(caller: &Caller) -> Result<&str, Status> {
        match &caller.identity {
            fleet_proto::tls::Identity::Member(c) => Ok(c),
            other => Err(Status::permission_denied(format!("{other} is not a member agent"))),
        }
    }

    fn store(&self) -> Arc<Store> {
        self.objects.store()
    }

    /// Apply's work, timed from `started` for the write stages.
    async fn apply_timed(
        &self,
        request: Request<ApplyRequest>,
        started: std::time::Instant,
    ) -> Result<Response<ApplyResponse>, Status> {
        let caller = authorize(&request, "Apply", Access::Write, false)?;
        let _seat = self.objects.seat(&caller).await?;
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
        let bytes = documents.iter().map(|d| d.bytes.len()).sum();
        let objects = blocking_if_large(bytes, move || admission::admit(&store, documents)).await?;
        objects.iter().for_each(|o| crate::metrics::note_kind(&o.kind));
        self.authorize_apply(&caller, &objects).await?;
        let ops =
            objects.into_iter().map(|object| Op::Apply { object, uid: uuid::Uuid::new_v4().to_string() }).collect();
        self.store().metrics().stages.since(Stage::admit, started);
        let (index, outcomes) = self.objects.propose(ops).await?;
        Ok(Response::new(ApplyResponse {
            resource_version: index.max(self.store().applied_index()),
            results: outcomes
                .into_iter()
                .map(|o| ApplyResult { action: o.action.as_str().to_string(), object: o.object.to_json() })
                .collect(),
        }))
    }

    /// Resolves the kind a read names and checks that `caller` may `verb`
    /// it (RBAC sees the kind asked for, e.g. ManagedClusters, not the
    /// kind a view reads).
    async fn resolve_authorized(
        &self,
        caller: &Caller,
        verb: &str,
        kind: Option<KindRef>,
        namespace: &str,
        name: &str,
    ) -> Result<(ResolvedKind, Option<View>), Status> {
        let kind = kind.ok_or_else(|| Status::invalid_argument("kind: Required value"))?;
        let resolved = self.objects.resolve(kind).await?;
        // A named object is in its namespace (`default` when none is given);
        // a list or watch without one is of every namespace.
        let namespace = if namespace.is_empty() && name.is_empty() {
            String::new()
        } else {
            resolved.namespace_or_default(namespace)
        };
        self.objects.authorize(caller, verb, &resolved, &namespace, name, "").await?;
        Ok(crate::objects::read_view(resolved))
    }

    /// Checks that `caller` may `verb` the non-resource `path` (the calls
    /// that are about the hub, not its objects).
    async fn authorize_path(&self, caller: &Caller, verb: &str, path: &str) -> Result<(), Status> {
        Ok(self.objects.authorizer().check(caller, &fleet_rbac::Attributes::path(verb, path)).await?)
    }

    /// Checks that `caller` may create or update (whichever applying it
    /// does) each of `objects`, and write it if it is an RBAC object.
    async fn authorize_apply(&self, caller: &Caller, objects: &[fleet_api::Object]) -> Result<(), Status> {
        if crate::rbac::user_of(&caller.identity).is_none() {
            return Ok(());
        }
        // Each object's kind and whether it exists, in one blocking call;
        // the kind resolves from apiVersion and kind (no need for the body).
        let stubs: Vec<fleet_api::Object> = objects
            .iter()
            .map(|o| fleet_api::Object {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
                metadata: o.metadata.clone(),
                rest: Default::default(),
            })
            .collect();
        let store = self.store();
        let found = blocking(move || {
            stubs
                .iter()
                .map(|stub| {
                    let kind = admission::resolve_document(&store, stub)?;
                    let key = fleet_api::ObjectKey::of(stub);
                    let exists = store.get(&key).map_err(crate::error::storage_error)?.0.is_some();
                    Ok((kind, exists))
                })
                .collect::<Result<Vec<_>, crate::error::RequestError>>()
        })
        .await?;
        for (object, (kind, exists)) in objects.iter().zip(found) {
            let verb = if exists { "update" } else { "create" };
            let namespace = object.metadata.namespace.clone().unwrap_or_default();
            let name = if exists { object.metadata.name.as_str() } else { "" };
            self.objects.authorize(caller, verb, &kind, &namespace, name, "").await?;
            crate::audit::note_object(object);
            self.objects.authorizer().check_rbac_write(caller, object).await?;
            crate::reach::check(self.objects.authorizer(), self.store(), caller, object).await?;
            crate::execute_as::check(self.objects.authorizer(), self.store(), caller, object).await?;
        }
        Ok(())
    }

    async fn status(&self, digest: bool) -> ClusterStatusResponse {
        let (leader, term, members) = self.objects.consensus().cluster_status(digest).await;
        ClusterStatusResponse {
            leader: leader.unwrap_or(0),
            term,
            node_id: self.objects.consensus().id(),
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
                    version: m.version,
                })
                .collect(),
        }
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchEvent, Status>> + Send>>;

#[tonic::async_trait]
impl Fleet for FleetService {
    async fn apply(&self, request: Request<ApplyRequest>) -> Result<Response<ApplyResponse>, Status> {
        let started = std::time::Instant::now();
        let answer = self.apply_timed(request, started).await;
        self.store().metrics().stages.since(Stage::handler, started);
        answer
    }

    async fn update_status(&self, request: Request<UpdateStatusRequest>) -> Result<Response<WriteResponse>, Status> {
        let caller = authorize(&request, "UpdateStatus", Access::Write, true)?;
        let _seat = self.objects.seat(&caller).await?;
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
        let (object, kind) = self.objects.prepare_status(object).await?;
        crate::metrics::note_kind(&kind.kind);
        let namespace = object.metadata.namespace.clone().unwrap_or_default();
        self.objects.authorize(&caller, "update", &kind, &namespace, &object.metadata.name, "status").await?;
        crate::audit::note_object(&object);
        self.objects.member_scope(&caller, &kind, &namespace, "UpdateStatus").await?;
        let (index, outcomes) = self.objects.propose(vec![Op::UpdateStatus { object }]).await?;
        let object = outcomes.into_iter().next().map(|o| o.object.to_json()).unwrap_or_default();
        Ok(Response::new(WriteResponse { object, resource_version: index }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        let caller = authorize(&request, "Get", Access::Read, true)?;
        let _seat = self.objects.seat(&caller).await?;
        let req = request.into_inner();
        let (kind, view) = self.resolve_authorized(&caller, "get", req.kind, &req.namespace, &req.name).await?;
        self.objects.member_scope(&caller, &kind, &kind.namespace_or_default(&req.namespace), "Get").await?;
        self.objects.read_barrier(req.read.as_ref()).await?;
        let (object, index) = self.objects.get(&kind, view, kind.key(&req.namespace, &req.name)).await?;
        Ok(Response::new(GetResponse { object: object.to_json(), resource_version: index }))
    }

    async fn list(&self, request: Request<ListRequest>) -> Result<Response<ListResponse>, Status> {
        let caller = authorize(&request, "List", Access::Read, true)?;
        let _seat = self.objects.seat(&caller).await?;
        let req = request.into_inner();
        let scope_ns = if req.all_namespaces { String::new() } else { req.namespace.clone() };
        let (kind, view) = self.resolve_authorized(&caller, "list", req.kind, &scope_ns, "").await?;
        self.objects.member_scope(&caller, &kind, &scope_ns, "List").await?;
        let selector = parse_selector(&req.label_selector)?;
        self.objects.read_barrier(req.read.as_ref()).await?;
        let namespace =
            (!req.all_namespaces && !req.namespace.is_empty()).then(|| kind.namespace_or_default(&req.namespace));
        let (items, index) = self.objects.list_json(&kind, view, namespace, selector).await?;
        Ok(Response::new(ListResponse { items, resource_version: index }))
    }

    async fn delete(&self, request: Request<DeleteRequest>) -> Result<Response<WriteResponse>, Status> {
        let caller = authorize(&request, "Delete", Access::Write, false)?;
        let _seat = self.objects.seat(&caller).await?;
        let req = request.into_inner();
        // Deleting a ManagedCluster deletes its MemberCluster: one inventory.
        let (kind, _) = self.resolve_authorized(&caller, "delete", req.kind, &req.namespace, &req.name).await?;
        let key = kind.key(&req.namespace, &req.name);
        let precondition = (req.resource_version > 0).then_some(req.resource_version);
        let (object, index) = self.objects.delete(&kind, key, precondition).await?;
        Ok(Response::new(WriteResponse { object: object.to_json(), resource_version: index }))
    }

    type WatchStream = WatchStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let caller = authorize(&request, "Watch", Access::Read, true)?;
        let _seat = self.objects.seat(&caller).await?;
        let req = request.into_inner();
        let scope_ns = if req.all_namespaces { String::new() } else { req.namespace.clone() };
        let (kind, view) = self.resolve_authorized(&caller, "watch", req.kind.clone(), &scope_ns, "").await?;
        self.objects.member_scope(&caller, &kind, &scope_ns, "Watch").await?;
        let selector = parse_selector(&req.label_selector)?;
        let floor = req.min_resource_version.max(req.resource_version);
        self.objects.read_barrier(Some(&ReadOptions { min_resource_version: floor, consistent: false })).await?;
        let namespace =
            (!req.all_namespaces && !req.namespace.is_empty()).then(|| kind.namespace_or_default(&req.namespace));
        let mut query = kind.query(namespace.filter(|n| !n.is_empty()));
        query.selector = selector;
        let member = match &caller.identity {
            fleet_proto::tls::Identity::Member(c) => Some((c.clone(), caller.serial.clone())),
            _ => None,
        };
        let slot = self.objects.watch_slot(&caller)?;
        let stream = crate::watch::start_with_bookmarks(
            self.store(),
            query,
            req.resource_version,
            self.stopping.clone(),
            member,
            view,
            None,
        )
        .await?;
        // The slot is given back when the stream ends.
        let stream = futures::StreamExt::map(stream, move |event| {
            let _open = &slot;
            event.map_err(Status::from)
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn cluster_status(
        &self,
        request: Request<ClusterStatusRequest>,
    ) -> Result<Response<ClusterStatusResponse>, Status> {
        let caller = authorize(&request, "ClusterStatus", Access::Read, false)?;
        let _seat = self.objects.seat(&caller).await?;
        self.authorize_path(&caller, "get", bootstrap::PATH_CLUSTER_STATUS).await?;
        Ok(Response::new(self.status(request.get_ref().digest).await))
    }

    async fn add_node(&self, request: Request<AddNodeRequest>) -> Result<Response<ClusterStatusResponse>, Status> {
        let caller = authorize(&request, "AddNode", Access::Write, false)?;
        let _seat = self.objects.seat(&caller).await?;
        self.authorize_path(&caller, "create", bootstrap::PATH_NODES).await?;
        let req = request.into_inner();
        if req.id == 0 || req.address.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).is_none() {
            return Err(Status::invalid_argument(format!(
                "add-node: Invalid value: id={} address={:?}: need a positive id and host:port",
                req.id, req.address
            )));
        }
        self.objects
            .consensus()
            .change_membership(MembershipChange::Add { id: req.id, address: req.address })
            .await
            .map_err(raft_error)?;
        Ok(Response::new(self.status(false).await))
    }

    async fn remove_node(
        &self,
        request: Request<RemoveNodeRequest>,
    ) -> Result<Response<ClusterStatusResponse>, Status> {
        let caller = authorize(&request, "RemoveNode", Access::Write, false)?;
        let _seat = self.objects.seat(&caller).await?;
        self.authorize_path(&caller, "delete", bootstrap::PATH_NODES).await?;
        let id = request.into_inner().id;
        self.objects.consensus().change_membership(MembershipChange::Remove { id }).await.map_err(raft_error)?;
        Ok(Response::new(self.status(false).await))
    }

    type SaveSnapshotStream = crate::backup::SnapshotStream;

    async fn save_snapshot(
        &self,
        request: Request<SaveSnapshotRequest>,
    ) -> Result<Response<Self::SaveSnapshotStream>, Status> {
        // Every object, internal ones (tokens, credentials) included: admin only.
        let caller = authorize(&request, "SaveSnapshot", Access::Write, false)?;
        let _seat = self.objects.seat(&caller).await?;
        self.authorize_path(&caller, "create", bootstrap::PATH_SNAPSHOT).await?;
        if !crate::rbac::is_master(&caller.identity) {
            return Err(Status::permission_denied(format!(
                "{:?} may not call SaveSnapshot: a snapshot holds the hub's join tokens and member credentials, which \
                 only system:masters (admin) reads",
                caller.identity.to_string()
            )));
        }
        Ok(Response::new(crate::backup::save(self.objects.consensus()).await?))
    }

    async fn create_token(
        &self,
        request: Request<CreateTokenRequest>,
    ) -> Result<Response<CreateTokenResponse>, Status> {
        let caller = authorize(&request, "CreateToken", Access::Write, false)?;
        let _seat = self.objects.seat(&caller).await?;
        self.authorize_path(&caller, "create", bootstrap::PATH_TOKENS).await?;
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
        self.objects.member_credential(&cluster, &caller.serial).await?;
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
        let caller = authorize(&request, "MemberHeartbeats", Access::Read, false)?;
        let _seat = self.objects.seat(&caller).await?;
        self.authorize_path(&caller, "get", bootstrap::PATH_HEARTBEATS).await?;
        match self.members.call(MemberCall::Ages).await? {
            MemberReply::Ages(age_millis) => {
                Ok(Response::new(MemberHeartbeatsResponse { age_millis: age_millis.into_iter().collect() }))
            }
            _ => Err(Status::internal("unexpected reply to a heartbeat-age request")),
        }
    }
}
