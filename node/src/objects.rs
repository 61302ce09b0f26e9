//! The object operations every wire format performs: the gRPC `Fleet`
//! service and the Kubernetes-compatible API both call these, so there is
//! one path from a request to admission, the store and Raft.

use std::sync::Arc;
use std::time::Duration;

use fleet_api::ocm::{self, managed_cluster};
use fleet_api::time::now_rfc3339;
use fleet_api::{LabelSelector, Object, ObjectKey};
use fleet_proto::fleet::{KindRef, ReadOptions};
use fleet_raft::Consensus;
use fleet_statemachine::{Command, Op, OpOutcome, Store};

use crate::admission::{self, ResolvedKind};
use crate::auth::Caller;
use crate::blocking::blocking;
use crate::error::{raft_error, storage_error, RequestError};
use crate::members::authz;
use crate::rbac::Authorizer;
use fleet_rbac::Attributes;

/// A refusal of [`crate::fairness`] (each edge says when to retry).
fn too_many(refused: crate::fairness::TooMany) -> RequestError {
    RequestError::too_many(refused.message)
}

/// How long a read waits for this node to catch up with what the client has seen.
const CATCH_UP: Duration = Duration::from_secs(5);

/// Maps a stored object to how a view shows it.
pub type View = fn(&Object) -> Object;

/// Reads, writes and scope checks over this node's consensus.
#[derive(Clone)]
pub struct Objects {
    consensus: Arc<Consensus>,
    authorizer: Arc<Authorizer>,
    fairness: Arc<crate::fairness::Fairness>,
}

impl Objects {
    /// Operations over `consensus`, each user's requests limited by `limits`.
    pub fn new(consensus: Arc<Consensus>, limits: crate::fairness::Limits) -> Objects {
        let authorizer = Arc::new(Authorizer::new(consensus.store().clone()));
        Objects { consensus, authorizer, fairness: crate::fairness::Fairness::new(limits) }
    }

    /// A slot for one more open watch of `caller` ([`crate::fairness`]),
    /// or [`RequestError::TooManyRequests`].
    pub fn watch_slot(&self, caller: &Caller) -> Result<crate::fairness::WatchSlot, RequestError> {
        self.fairness.watch(&caller.identity).map_err(too_many)
    }

    /// A seat for a request of `caller` ([`crate::fairness`]), or
    /// [`RequestError::TooManyRequests`].
    pub async fn seat(&self, caller: &Caller) -> Result<crate::fairness::Seat, RequestError> {
        self.fairness.seat(&caller.identity).await.map_err(too_many)
    }

    /// The RBAC decisions of users' requests.
    pub fn authorizer(&self) -> &Arc<Authorizer> {
        &self.authorizer
    }

    /// Checks that `caller` may do `verb` on objects of `kind` (on its
    /// `subresource` when not empty) in `namespace` (all namespaces or
    /// cluster scope when empty), named `name` (none when empty).
    pub async fn authorize(
        &self,
        caller: &Caller,
        verb: &str,
        kind: &ResolvedKind,
        namespace: &str,
        name: &str,
        subresource: &str,
    ) -> Result<(), RequestError> {
        let attributes =
            Attributes::resource(verb, &kind.group, &kind.plural, namespace, name).on_subresource(subresource);
        self.authorizer.check(caller, &attributes).await
    }

    /// The consensus these operations go through.
    pub fn consensus(&self) -> &Arc<Consensus> {
        &self.consensus
    }

    /// This node's state machine.
    pub fn store(&self) -> Arc<Store> {
        self.consensus.store().clone()
    }

    /// Keeps the internal kinds from all but admin, confines a member agent
    /// to its own Work (no-op for other callers), and checks its
    /// certificate is still one the hub issued. A follower
    /// that has not yet seen a fresh credential catches up once and retries.
    pub async fn member_scope(
        &self,
        caller: &Caller,
        kind: &ResolvedKind,
        namespace: &str,
        rpc: &str,
    ) -> Result<(), RequestError> {
        internal_readable(caller, kind, rpc)?;
        let fleet_proto::tls::Identity::Member(cluster) = &caller.identity else { return Ok(()) };
        authz::check_scope(cluster, kind, namespace, rpc)?;
        self.member_credential(cluster, &caller.serial).await
    }

    /// Checks a member's certificate is one of its current credentials.
    pub async fn member_credential(&self, cluster: &str, serial: &str) -> Result<(), RequestError> {
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

    /// Makes the read about to happen at least as new as the client asks:
    /// linearizable through the leader, or at least `min_resource_version`.
    pub async fn read_barrier(&self, options: Option<&ReadOptions>) -> Result<(), RequestError> {
        let Some(options) = options else { return Ok(()) };
        if options.consistent {
            self.consensus.linearizable_index().await.map_err(|e| match e {
                // The leader could not confirm its leadership with a quorum in
                // time (an election, a slow peer): nothing failed, retry.
                fleet_raft::Error::Raft(detail) => RequestError::unavailable(format!(
                    "a linearizable read needs the leader to confirm its leadership with a quorum, which failed: {detail}; retry"
                )),
                other => raft_error(other),
            })?;
        } else if options.min_resource_version > self.consensus.store().applied_index() {
            self.consensus.wait_applied(options.min_resource_version, CATCH_UP).await.map_err(|_| {
                RequestError::unavailable(format!(
                    "node {} has applied up to {} but the client has seen {}: try again or another node",
                    self.consensus.id(),
                    self.consensus.store().applied_index(),
                    options.min_resource_version
                ))
            })?;
        }
        Ok(())
    }

    /// Resolves a kind named by a client (Kind, plural, short name, CRD names).
    pub async fn resolve(&self, kind: KindRef) -> Result<ResolvedKind, RequestError> {
        let store = self.store();
        let resolved = blocking(move || admission::resolve_kind_ref(&store, &kind)).await?;
        crate::metrics::note_kind(&resolved.kind);
        Ok(resolved)
    }

    /// Resolves a kind for reading: the ManagedCluster view reads the
    /// MemberClusters (`Some(view)` maps each one).
    pub async fn resolve_read(&self, kind: KindRef) -> Result<(ResolvedKind, Option<View>), RequestError> {
        Ok(read_view(self.resolve(kind).await?))
    }

    /// Proposes `ops` as one command, stamped with this node's clock.
    pub async fn propose(&self, ops: Vec<Op>) -> Result<(u64, Vec<OpOutcome>), RequestError> {
        self.consensus.write(Command { now: now_rfc3339(), ops }).await.map_err(raft_error)
    }

    /// One object (through `view`) and the index the read was served at.
    pub async fn get(
        &self,
        kind: &ResolvedKind,
        view: Option<View>,
        key: ObjectKey,
    ) -> Result<(Object, u64), RequestError> {
        let store = self.store();
        let lookup = key.clone();
        let (object, index) = blocking(move || store.get(&lookup).map_err(storage_error)).await?;
        let object = object.ok_or_else(|| not_found(kind, &key))?;
        Ok((seen_through(view, object), index))
    }

    /// The objects of `kind` in `namespace` (all when `None`) matching
    /// `selector`, through `view`, and the index the read was served at.
    pub async fn list(
        &self,
        kind: &ResolvedKind,
        view: Option<View>,
        namespace: Option<String>,
        selector: Option<LabelSelector>,
    ) -> Result<(Vec<Object>, u64), RequestError> {
        self.list_map(kind, namespace, selector, move |o| Some(seen_through(view, o))).await
    }

    /// [`Objects::list`] as each object's JSON, made as the object is read
    /// (a list of large objects never holds them all decoded).
    pub async fn list_json(
        &self,
        kind: &ResolvedKind,
        view: Option<View>,
        namespace: Option<String>,
        selector: Option<LabelSelector>,
    ) -> Result<(Vec<Vec<u8>>, u64), RequestError> {
        self.list_map(kind, namespace, selector, move |o| Some(seen_through(view, o).to_json())).await
    }

    /// The objects a list selects, each through `map` as it is read.
    async fn list_map<T: Send + 'static>(
        &self,
        kind: &ResolvedKind,
        namespace: Option<String>,
        selector: Option<LabelSelector>,
        map: impl FnMut(Object) -> Option<T> + Send + 'static,
    ) -> Result<(Vec<T>, u64), RequestError> {
        let mut query = kind.query(namespace.filter(|n| !n.is_empty()));
        query.selector = selector;
        let store = self.store();
        blocking(move || store.list_map(&query, map).map_err(storage_error)).await
    }

    /// Deletes one object (and its dependents), optionally only at `resource_version`.
    pub async fn delete(
        &self,
        kind: &ResolvedKind,
        key: ObjectKey,
        resource_version: Option<u64>,
    ) -> Result<(Object, u64), RequestError> {
        let result = self.propose(vec![Op::Delete { key: key.clone(), resource_version }]).await;
        let (index, outcomes) = match result {
            Err(RequestError::NotFound(_)) => return Err(not_found(kind, &key)),
            other => other?,
        };
        let object = outcomes.into_iter().next().map(|o| (*o.object).clone()).ok_or_else(|| not_found(kind, &key))?;
        Ok((object, index))
    }

    /// Checks a status write and resolves its kind and namespace, ready
    /// for [`Op::UpdateStatus`].
    pub async fn prepare_status(&self, object: Object) -> Result<(Object, ResolvedKind), RequestError> {
        check_status(&object)?;
        let store = self.store();
        blocking(move || {
            let kind = admission::resolve_document(&store, &object)?;
            let mut object = object;
            object.metadata.namespace =
                Some(kind.namespace_or_default(object.metadata.namespace.as_deref().unwrap_or("")))
                    .filter(|n| !n.is_empty());
            Ok((object, kind))
        })
        .await
    }
}

/// `object` as `view` shows it (as stored without one).
fn seen_through(view: Option<View>, object: Object) -> Object {
    match view {
        Some(view) => view(&object),
        None => object,
    }
}

/// The kind to read for `resolved`, and the view that maps what is stored:
/// ManagedClusters are MemberClusters seen through OCM's shape.
pub fn read_view(resolved: ResolvedKind) -> (ResolvedKind, Option<View>) {
    if managed_cluster::is_managed_cluster(&resolved.group, &resolved.kind) {
        return (member_cluster_kind(), Some(managed_cluster::view_of as View));
    }
    if crate::admission::is_crd(&resolved.group, &resolved.kind) {
        return (resolved, Some(crate::crd_status::view_of as View));
    }
    (resolved, None)
}

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
fn check_status(object: &Object) -> Result<(), RequestError> {
    let invalid = |e: fleet_api::ValidationError| RequestError::invalid(e.to_string());
    match (object.group(), object.kind.as_str()) {
        (ocm::CLUSTER_GROUP, ocm::decision::KIND) => ocm::decision::validate_status(object).map_err(invalid),
        (ocm::CLUSTER_GROUP, ocm::addon_score::KIND) => ocm::addon_score::validate_status(object).map_err(invalid),
        (fleet_api::kinds::FLEET_PLACEMENT_GROUP, "Work") => fleet_api::work::validate_status(object).map_err(invalid),
        (group, kind) if managed_cluster::is_managed_cluster(group, kind) => Err(RequestError::invalid(format!(
            "ManagedCluster {:?}: status: Forbidden: a ManagedCluster's status is its MemberCluster's, reported by its agent",
            object.metadata.name
        ))),
        _ => Ok(()),
    }
}

/// Parses a label selector; blank means none.
pub fn parse_selector(text: &str) -> Result<Option<LabelSelector>, RequestError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    LabelSelector::parse(text).map(Some).map_err(|e| RequestError::invalid(e.to_string()))
}

/// The "not found" status of one object.
pub fn not_found(kind: &ResolvedKind, key: &ObjectKey) -> RequestError {
    RequestError::not_found(format!("{} {:?} not found", kind.plural, key.name))
}

/// Refuses reads of the hub's internal kinds (bootstrap tokens, member
/// credentials) to everyone but the `system:masters` group (the admin
/// certificate), whatever RBAC grants: a viewer sees the fleet, not the
/// material that lets clusters join it.
fn internal_readable(caller: &Caller, kind: &ResolvedKind, rpc: &str) -> Result<(), RequestError> {
    use crate::members::internal::{CREDENTIAL_KIND, INTERNAL_GROUP, TOKEN_KIND};
    let secret = kind.group == INTERNAL_GROUP && (kind.kind == TOKEN_KIND || kind.kind == CREDENTIAL_KIND);
    if !secret || crate::rbac::is_master(&caller.identity) {
        return Ok(());
    }
    Err(RequestError::forbidden(format!(
        "{:?} may not call {rpc} on {}.{}: the group {} holds the hub's join tokens and member credentials; only \
         system:masters (admin) reads it",
        caller.identity.to_string(),
        kind.plural,
        kind.group,
        kind.group
    )))
}
