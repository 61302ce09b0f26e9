//! What goes through Raft: a [`Command`] of one or more [`Op`]s applied
//! atomically, and its deterministic [`Response`].

use std::sync::Arc;

use fleet_api::{Object, ObjectKey};
use serde::{Deserialize, Serialize};

/// One replicated write. All ops succeed together or none is applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    /// The proposer's clock (RFC 3339), used for `creationTimestamp` and the
    /// like: apply never reads a clock.
    pub now: String,
    /// The operations, applied in order; later ops see earlier ones.
    pub ops: Vec<Op>,
}

/// One operation on one object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// Creates an object; fails if it exists. `metadata.uid` is set by the
    /// proposer. Status, if present, is kept (controllers create with status).
    Create { object: Object },
    /// Creates or replaces spec, labels, annotations and owners of an object,
    /// keeping its status; `uid` is used only when the object is created. A
    /// set `metadata.resourceVersion` is a precondition.
    Apply { object: Object, uid: String },
    /// Replaces an existing object's spec and metadata (not status); a set
    /// `metadata.resourceVersion` is a precondition.
    Update { object: Object },
    /// Replaces only the status of an existing object; a set
    /// `metadata.resourceVersion` is a precondition.
    UpdateStatus { object: Object },
    /// Deletes an object and, through ownerReferences, its dependents.
    Delete {
        key: ObjectKey,
        /// Fails with a conflict unless the object is at this version.
        resource_version: Option<u64>,
    },
    /// Changes nothing; fails with a conflict unless the object exists at
    /// exactly this version. Controllers add it for every object their
    /// decision was based on but do not write, so a decision made on a
    /// stale view is refused as a whole.
    Check { key: ObjectKey, resource_version: u64 },
    /// Changes nothing; fails with a conflict unless the object exists with
    /// exactly this `metadata.generation` (its spec unchanged). For a
    /// decision that read an object's spec but not its status when others
    /// rewrite that status often (a placement's follows every Work): a
    /// status write does not refuse it, a spec change or deletion does.
    CheckGeneration { key: ObjectKey, generation: i64 },
}

/// What one op did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// The object did not exist and was created.
    Created,
    /// The object existed and changed.
    Configured,
    /// The object existed and the op changed nothing (no write, no new version).
    Unchanged,
    /// The object was deleted.
    Deleted,
}

impl Action {
    /// kubectl's word for the action.
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Configured => "configured",
            Action::Unchanged => "unchanged",
            Action::Deleted => "deleted",
        }
    }
}

/// The result of one op: what happened and the object as stored (for a
/// delete, as it was last stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpOutcome {
    pub action: Action,
    /// Shared with the state machine's watch event for the same change.
    pub object: Arc<Object>,
}

/// Why a command was refused. Part of the replicated state: every node
/// reaches the same verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum StoreError {
    /// The object does not exist.
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    /// The object exists already.
    #[error("{key} already exists")]
    AlreadyExists { key: ObjectKey },
    /// The resourceVersion precondition failed.
    #[error("conflict: {key} is at resourceVersion {current}, not {expected}: the object has been modified; read it again and retry")]
    Conflict { key: ObjectKey, expected: u64, current: u64 },
    /// The generation precondition failed: the spec changed.
    #[error("conflict: {key} is at generation {current}, not {expected}: its spec has been modified; read it again and retry")]
    GenerationConflict { key: ObjectKey, expected: i64, current: i64 },
    /// The op cannot be applied as written.
    #[error("{0}")]
    Invalid(String),
}

/// The outcome of a command, returned to the proposer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Response {
    /// Every op applied; outcomes in op order. The log index is the
    /// `resourceVersion` of every object written.
    Applied { index: u64, outcomes: Vec<OpOutcome> },
    /// Nothing applied.
    Refused { index: u64, error: StoreError },
}

impl Response {
    /// The outcomes, or the refusal.
    pub fn into_result(self) -> Result<(u64, Vec<OpOutcome>), StoreError> {
        match self {
            Response::Applied { index, outcomes } => Ok((index, outcomes)),
            Response::Refused { error, .. } => Err(error),
        }
    }
}
