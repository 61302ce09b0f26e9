//! The resources the API serves: every kind of the registry (Fleet, OCM
//! and the built-in Kubernetes kinds the hub stores) and every kind a
//! CustomResourceDefinition stored on the hub declares.

use fleet_api::kinds::{Scope, KINDS};
use fleet_statemachine::Store;
use tonic::Status;

use super::errors::Subject;
use crate::admission::{stored_crds, ResolvedKind};

/// One served resource (all its versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub group: String,
    /// Served versions, the preferred one first.
    pub versions: Vec<String>,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub scope: Scope,
    /// Whether it has a `status` subresource.
    pub status: bool,
    /// A Fleet or OCM kind (category `fleet`), typed and validated.
    pub fleet: bool,
}

/// Kinds without a status: everything else gets a `status` subresource.
const NO_STATUS: &[&str] = &[
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Event",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "StorageClass",
    "PriorityClass",
    "IngressClass",
    "LimitRange",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
];

/// The verbs of every served resource.
pub const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

impl Resource {
    /// `G/V` (or `V` in the core group).
    pub fn group_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// The kind as admission and the store know it.
    pub fn resolved(&self) -> ResolvedKind {
        ResolvedKind {
            group: self.group.clone(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
            scope: self.scope,
        }
    }

    /// Whether objects live in namespaces.
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// What errors about object `name` of this resource say.
    pub fn subject(&self, name: &str) -> Subject {
        let qualify = |base: &str| {
            if self.group.is_empty() {
                base.to_string()
            } else {
                format!("{base}.{}", self.group)
            }
        };
        Subject {
            qualified: qualify(&self.plural),
            group: self.group.clone(),
            plural: self.plural.clone(),
            kind_qualified: qualify(&self.kind),
            kind: self.kind.clone(),
            name: name.to_string(),
        }
    }
}

/// Every served resource, registry kinds first, then stored CRDs' kinds.
pub fn all(store: &Store) -> Result<Vec<Resource>, Status> {
    let mut resources: Vec<Resource> = KINDS
        .iter()
        .map(|k| Resource {
            group: k.group.to_string(),
            versions: k.versions.iter().map(|v| v.to_string()).collect(),
            kind: k.kind.to_string(),
            plural: k.plural.to_string(),
            singular: k.kind.to_ascii_lowercase(),
            short_names: k.short_names.iter().map(|s| s.to_string()).collect(),
            scope: k.scope,
            status: !NO_STATUS.contains(&k.kind),
            fleet: k.typed,
        })
        .collect();
    for crd in stored_crds(store).map_err(crate::error::storage_status)? {
        let known = resources.iter().any(|r| r.group == crd.group && (r.kind == crd.kind || r.plural == crd.plural));
        if known || crd.group.is_empty() || crd.plural.is_empty() || crd.versions.is_empty() {
            continue;
        }
        resources.push(Resource {
            group: crd.group,
            versions: crd.versions,
            singular: if crd.singular.is_empty() { crd.kind.to_ascii_lowercase() } else { crd.singular },
            kind: crd.kind,
            plural: crd.plural,
            short_names: crd.short_names,
            scope: crd.scope,
            status: true,
            fleet: false,
        });
    }
    Ok(resources)
}

/// The served resource `plural` of `group` at `version`.
pub fn find<'a>(resources: &'a [Resource], group: &str, version: &str, plural: &str) -> Option<&'a Resource> {
    resources.iter().find(|r| r.group == group && r.plural == plural && r.versions.iter().any(|v| v == version))
}

/// The served groups with their versions, in first-seen order (the core
/// group excluded): the preferred version of a group is its first.
pub fn groups(resources: &[Resource]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        let index = match groups.iter().position(|(g, _)| *g == r.group) {
            Some(i) => i,
            None => {
                groups.push((r.group.clone(), Vec::new()));
                groups.len() - 1
            }
        };
        for v in &r.versions {
            if !groups[index].1.contains(v) {
                groups[index].1.push(v.clone());
            }
        }
    }
    groups
}

/// The resources of `group` served at `version`.
pub fn in_group_version<'a>(resources: &'a [Resource], group: &str, version: &str) -> Vec<&'a Resource> {
    resources.iter().filter(|r| r.group == group && r.versions.iter().any(|v| v == version)).collect()
}
