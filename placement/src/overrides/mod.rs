//! Overrides (docs/spec/overrides.md): snapshots of ClusterResourceOverrides and
//! ResourceOverrides ([`plan_override_snapshots`]), which of their latest
//! snapshots apply to one binding ([`applicable`]), and rendering a
//! resource for one cluster through them ([`render`]).
//!
//! Decisions beyond the spec's wording:
//! - a selector matches a resource by group, kind and name (and, for an
//!   RO, its namespace); the version is not compared, since the hub stores
//!   one version of each object and the user may name another;
//! - a CRO naming a Namespace applies to every namespaced object of that
//!   namespace that the placement places (wrapped objects included), even
//!   when the Namespace itself is not selected;
//! - a recorded snapshot that no longer exists (pruned, or its override
//!   deleted) leaves the binding's Works as they are and reports
//!   `OverriddenPending` until the rollout records the current ones;
//! - the override hash is the hex sha256 of the spec's canonical JSON.

mod applicable;
mod index;
mod render;
mod snapshots;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_render;

use fleet_api::overrides::{
    snapshot_spec_of, OverrideSpec, CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, RESOURCE_OVERRIDE_SNAPSHOT,
};
use fleet_api::Object;

pub use applicable::{applicable, Applicable, NamespacedName};
pub use index::OverrideIndex;
pub use render::{render, render_value, substitute_variables, OverrideFailure};
pub use snapshots::{latest_override_snapshot, override_hash, plan_override_snapshots};

/// One override snapshot, decoded once per pass.
#[derive(Debug, Clone, PartialEq)]
pub struct OverrideSnapshot {
    /// `true` for a ClusterResourceOverrideSnapshot, `false` for a ResourceOverrideSnapshot.
    pub cluster_scoped: bool,
    /// The snapshot's name (`<override>-<index>`).
    pub name: String,
    /// The RO's namespace (empty for a CRO).
    pub namespace: String,
    /// The override's spec as snapshotted.
    pub spec: OverrideSpec,
}

impl OverrideSnapshot {
    /// Decodes a stored snapshot; `None` for other kinds.
    pub fn from_object(object: &Object) -> Option<OverrideSnapshot> {
        let cluster_scoped = match object.kind.as_str() {
            CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT => true,
            RESOURCE_OVERRIDE_SNAPSHOT => false,
            _ => return None,
        };
        Some(OverrideSnapshot {
            cluster_scoped,
            name: object.metadata.name.clone(),
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            spec: snapshot_spec_of(object).override_spec,
        })
    }

    /// `ClusterResourceOverrideSnapshot` or `ResourceOverrideSnapshot`.
    pub fn kind(&self) -> &'static str {
        if self.cluster_scoped {
            CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT
        } else {
            RESOURCE_OVERRIDE_SNAPSHOT
        }
    }
}
