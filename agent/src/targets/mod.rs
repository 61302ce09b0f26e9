//! Where the agent applies Work: a *target*. Two exist behind this one trait:
//! the embedded simulated cluster (default) and a real Kubernetes cluster.
//! Every apply-strategy rule holds for both; availability is judged by one
//! pure function over the live object ([`availability::availability`]).

pub mod access;
pub mod availability;
pub mod embedded;
pub mod kubernetes;
pub mod last_applied;
pub mod namespaces;

use std::future::Future;

use fleet_api::member::HeartbeatReport;
use fleet_api::Object;
use serde::{Deserialize, Serialize};

/// Annotation on every object the agent created (or took over): the Work
/// that placed it, as `<namespace>/<name>`. Only such objects are ever deleted.
pub const OWNER_ANNOTATION: &str = "fleet.kubernetes-fleet.io/owner-work";

/// The ownership rule every target enforces on a write: only the Work that
/// placed an object may apply it again, and an object that exists without
/// Fleet's annotation is taken over only when the caller decided so
/// (`take_over`, from the Work's `whenToTakeOver`, see
/// [`crate::works::strategy`]). An object placed by *another* Work is always
/// a conflict, reported instead of fought over, whatever the strategy.
///
/// Objects left behind by a Work deleted with `propagationPolicy: Abandon`
/// keep the annotation naming that Work (see [`crate::works`]): another Work
/// wanting one later gets this conflict — it is never taken over — while a
/// Work with the same namespace and name adopts it again.
pub fn check_owner(live: &Object, owner: &str, take_over: bool) -> Result<(), TargetError> {
    let id = ResourceId::of(live);
    match live.metadata.annotations.get(OWNER_ANNOTATION) {
        Some(current) if current == owner => Ok(()),
        Some(current) => Err(TargetError::Conflict(format!(
            "{id} is already placed on this cluster by Work {current:?}; Work {owner:?} cannot apply it too"
        ))),
        None if take_over => Ok(()),
        None => Err(TargetError::Conflict(format!(
            "{id} already exists on this cluster and was not created by Fleet (no {OWNER_ANNOTATION} annotation); \
             Work {owner:?} does not take it over"
        ))),
    }
}

/// Identifies one object on a member cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ResourceId {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
}

impl ResourceId {
    /// The identity of a manifest or live object.
    pub fn of(object: &Object) -> ResourceId {
        let version = match object.api_version.rsplit_once('/') {
            Some((_, v)) => v.to_string(),
            None => object.api_version.clone(),
        };
        ResourceId {
            group: object.group().to_string(),
            version,
            kind: object.kind.clone(),
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone(),
        }
    }
}

impl std::fmt::Display for ResourceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() { String::new() } else { format!(".{}", self.group) };
        if self.namespace.is_empty() {
            write!(f, "{}{group} {:?}", self.kind, self.name)
        } else {
            write!(f, "{}{group} {:?} in namespace {:?}", self.kind, self.name, self.namespace)
        }
    }
}

/// How to apply (from the Work's apply strategy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyMode {
    /// Replace the fields the manifest sets (kubectl apply semantics),
    /// recording the manifest in [`last_applied::LAST_APPLIED_ANNOTATION`].
    ClientSide,
    /// Server-side apply with KubeFleet's field manager `work-api-agent`.
    ServerSide { force: bool },
}

/// One object to apply.
#[derive(Debug, Clone)]
pub struct ApplyRequest<'a> {
    /// The manifest as the Work holds it.
    pub manifest: &'a Object,
    pub mode: ApplyMode,
    /// `<namespace>/<name>` of the Work placing it; written to [`OWNER_ANNOTATION`].
    pub owner: &'a str,
    /// Whether an existing object without [`OWNER_ANNOTATION`] may be taken
    /// over (annotated and applied). The Work's `whenToTakeOver` decides
    /// ([`crate::works::strategy::decide`]); `false` makes such an object a
    /// [`TargetError::Conflict`]. An object of another Work is a conflict either way.
    pub take_over: bool,
}

/// What applying did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApplyOutcome {
    Created,
    Updated,
    Unchanged,
}

/// The result of a successful apply: what happened and the live object.
#[derive(Debug, Clone)]
pub struct Applied {
    pub outcome: ApplyOutcome,
    pub live: Object,
}

/// Why a target operation failed. Messages name the object and say what
/// would be accepted; they end up in Work status (and travel as JSON in
/// answers to out-of-band edits, [`crate::edits`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "reason", content = "message")]
pub enum TargetError {
    /// The manifest is not acceptable to the cluster (bad field, missing namespace...).
    #[error("{0}")]
    Invalid(String),
    /// The cluster serves no such kind: the manifest cannot even be
    /// mapped to a resource (KubeFleet reports this as a decoding error).
    #[error("{0}")]
    NotServed(String),
    /// The object exists and belongs to someone else (another Work, or not Fleet).
    #[error("{0}")]
    Conflict(String),
    /// The cluster could not be reached or failed; worth retrying.
    #[error("{0}")]
    Unavailable(String),
}

/// What a watching target tells the Work loop (see [`Target::take_changes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// An object placed by this Work (`<namespace>/<name>`, its
    /// [`OWNER_ANNOTATION`]) changed on the cluster.
    Work(String),
    /// Changes may have been missed: check every Work.
    Resync,
}

/// A member cluster the agent applies to.
pub trait Target: Send + Sync + 'static {
    /// `embedded` or `kubernetes` (reported as a property, shown by `get mc -o wide`).
    fn name(&self) -> &'static str;

    /// Creates or updates one object. Takes over nothing placed by another
    /// Work, and an object not created by Fleet only with
    /// [`ApplyRequest::take_over`] ([`check_owner`]; else [`TargetError::Conflict`]).
    fn apply(&self, request: ApplyRequest<'_>) -> impl Future<Output = Result<Applied, TargetError>> + Send;

    /// The live object, if it exists.
    fn get(&self, id: &ResourceId) -> impl Future<Output = Result<Option<Object>, TargetError>> + Send;

    /// The live object, read for Work `work` (`<namespace>/<name>`): a
    /// target that watches also brings `work` back when the object changes
    /// while it does not carry the Work's annotation (a difference reported,
    /// a take-over refused), as it does for the objects it placed.
    fn get_for(
        &self,
        id: &ResourceId,
        _work: &str,
    ) -> impl Future<Output = Result<Option<Object>, TargetError>> + Send {
        self.get(id)
    }

    /// Whether the cluster serves the object's kind at its version: a
    /// report of differences must tell a kind it cannot read (KubeFleet's
    /// `DecodingErred`) from an object that is not there. A target that
    /// takes any kind serves them all.
    fn serves(&self, _id: &ResourceId) -> impl Future<Output = Result<bool, TargetError>> + Send {
        async { Ok(true) }
    }

    /// Whether the request's service account may perform its verbs on
    /// the object, by the member's own RBAC ([`access`]). A target that
    /// cannot tell refuses: a Work with an executor is never applied with
    /// more than the executor may do.
    fn access(
        &self,
        request: access::AccessRequest<'_>,
    ) -> impl Future<Output = Result<access::Access, TargetError>> + Send {
        let name = self.name();
        let subject = request.subject.user_name();
        async move {
            Err(TargetError::Invalid(format!(
                "the {name} target cannot check what {subject} may do: a Work with an executor cannot be applied here"
            )))
        }
    }

    /// Deletes an object; `false` if it did not exist.
    fn delete(&self, id: &ResourceId) -> impl Future<Output = Result<bool, TargetError>> + Send;

    /// Properties and resource usage for the next heartbeat, and the
    /// cluster's namespaces with their condition only `with_namespaces`
    /// (collection is opt-in: a cluster that does not collect is not
    /// listed at all, and reports neither).
    fn report(&self, with_namespaces: bool) -> impl Future<Output = Result<HeartbeatReport, TargetError>> + Send;

    /// The changes this target watches for, taken once by the Work loop;
    /// `None` for a target that does not watch (the loop then finds drift
    /// only by its periodic checks).
    fn take_changes(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Change>> {
        None
    }
}
