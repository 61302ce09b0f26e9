//! The Open Cluster Management controllers (docs/spec/ocm.md), beside the
//! KubeFleet placement controller and dispatched by kind:
//!
//! - [`placement`]: decides each OCM `Placement` with the `placement`
//!   crate's OCM scheduler and keeps its PlacementDecision pages, status and
//!   events current;
//! - [`delivery`]: mirrors each `ManifestWork` into Fleet `Work`s in its
//!   cluster's namespace and folds their status back; [`deleting`] keeps
//!   a deleted one, `Deleting`, until its objects are removed;
//! - [`replicaset`]: keeps one ManifestWork per decided cluster of a
//!   `ManifestWorkReplicaSet`, rolled out as its strategy says;
//! - [`clusterset`]: keeps each ManagedClusterSet's `ClusterSetEmpty` and
//!   each binding's `Bound` current, and puts the sets' managed namespaces
//!   on their member clusters;
//! - [`feed`]: which keys a store change wakes.
//!
//! Like every controller here, each step is one command that is refused
//! whole when anything it read and depends on changed meanwhile.

pub mod clusterset;
pub mod deleting;
pub mod delivery;
pub mod feed;
pub mod placement;
pub mod replicaset;
pub mod template_variables;

use fleet_api::ocm::clusterset::{BINDING_KIND, SET_KIND};
use fleet_api::ocm::{manifestwork, replicaset as replicaset_api, CLUSTER_GROUP, WORK_GROUP};
use fleet_api::ObjectKey;

/// Which OCM controller reconciles a key, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OcmKind {
    /// An OCM Placement.
    Placement,
    /// A ManifestWork.
    ManifestWork,
    /// A ManifestWorkReplicaSet.
    ReplicaSet,
    /// A ManagedClusterSet (its `ClusterSetEmpty`).
    ClusterSet,
    /// A ManagedClusterSetBinding (its `Bound`).
    SetBinding,
    /// Every set's managed namespaces, one key for all.
    ManagedNamespaces,
}

impl OcmKind {
    /// The controller of `key`; `None` for keys of other controllers.
    pub fn of(key: &ObjectKey) -> Option<OcmKind> {
        if clusterset::is_managed_namespaces_key(key) {
            return Some(OcmKind::ManagedNamespaces);
        }
        match (key.group.as_str(), key.kind.as_str()) {
            (CLUSTER_GROUP, SET_KIND) => Some(OcmKind::ClusterSet),
            (CLUSTER_GROUP, BINDING_KIND) => Some(OcmKind::SetBinding),
            (CLUSTER_GROUP, fleet_api::ocm::placement::KIND) => Some(OcmKind::Placement),
            (WORK_GROUP, manifestwork::KIND) => Some(OcmKind::ManifestWork),
            (WORK_GROUP, replicaset_api::KIND) => Some(OcmKind::ReplicaSet),
            _ => None,
        }
    }
}

/// Seconds until `at` from `now`, at least one (a requeue delay).
pub fn delay_until(at: i64, now: i64) -> std::time::Duration {
    std::time::Duration::from_secs(u64::try_from(at.saturating_sub(now)).unwrap_or(0).max(1))
}
