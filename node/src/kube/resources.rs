//! The resources the API serves: every kind of the registry (Fleet, OCM
//! and the built-in Kubernetes kinds the hub stores) and every kind a
//! CustomResourceDefinition stored on the hub declares.

use fleet_api::kinds::{is_own_group, Scope, KINDS};
use fleet_statemachine::Store;

use super::errors::Subject;
use crate::admission::{stored_crds, CrdNames, ResolvedKind};
use crate::error::RequestError;

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
    // Its content is at the top level, all of it written by the hub.
    "ClusterResourcePlacementStatus",
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
pub fn all(store: &Store) -> Result<Vec<Resource>, RequestError> {
    let crds = stored_crds(store).map_err(crate::error::storage_error)?;
    Ok(with_crds(registry(), crds))
}

/// The registry's kinds as resources.
fn registry() -> Vec<Resource> {
    KINDS
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
        .collect()
}

/// `resources` and the kinds `crds` declare that are not already served.
fn with_crds(mut resources: Vec<Resource>, crds: Vec<CrdNames>) -> Vec<Resource> {
    for crd in crds {
        let known = resources.iter().any(|r| r.group == crd.group && (r.kind == crd.kind || r.plural == crd.plural));
        // A CRD in one of Fleet's own groups (e.g. KubeFleet's CRDs applied
        // to the hub to be placed) does not make its kinds served: admission
        // refuses them, so discovery must not advertise them.
        if known || crd.group.is_empty() || crd.plural.is_empty() || crd.versions.is_empty() || is_own_group(&crd.group)
        {
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
    resources
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

/// What a 404 for an unserved resource path says: the path, and in one of
/// Fleet's own groups what is served there instead, since there no CRD can
/// make the resource appear (the rule `fleetctl apply` states too).
pub fn unserved(resources: &[Resource], group: &str, version: &str, plural: &str, path: &str) -> String {
    if !is_own_group(group) {
        return path.to_string();
    }
    if let Some(r) = resources.iter().find(|r| r.group == group && r.plural == plural) {
        return format!("{path}: {plural}.{group} is served at versions {} only", r.versions.join(", "));
    }
    let served: Vec<&str> = in_group_version(resources, group, version).iter().map(|r| r.plural.as_str()).collect();
    if served.is_empty() {
        format!("{path}: {group}/{version} is one of Fleet's own API groups and Fleet serves no resources in it")
    } else {
        format!(
            "{path}: {group}/{version} is one of Fleet's own API groups and Fleet serves only these resources in it: {}",
            served.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(group: &str, kind: &str, plural: &str) -> CrdNames {
        CrdNames {
            group: group.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: String::new(),
            short_names: Vec::new(),
            scope: Scope::Cluster,
            versions: vec!["v1".into()],
        }
    }

    /// The registry, plus CRDs a user may store: KubeFleet's own CRDs
    /// (some declaring kinds Fleet does not implement) and their own.
    fn served() -> Vec<Resource> {
        with_crds(
            registry(),
            vec![
                crd(
                    "placement.kubernetes-fleet.io",
                    "ClusterResourcePlacementStatus",
                    "clusterresourceplacementstatuses",
                ),
                crd("placement.kubefleet.dev", "PlacementPolicy", "placementpolicies"),
                crd("addon.open-cluster-management.io", "ClusterManagementAddOn", "clustermanagementaddons"),
                crd("example.com", "Widget", "widgets"),
            ],
        )
    }

    #[test]
    fn own_groups_serve_exactly_the_registrys_kinds() {
        let served = served();
        for group in [
            fleet_api::kinds::FLEET_PLACEMENT_GROUP,
            fleet_api::kinds::FLEET_CLUSTER_GROUP,
            fleet_api::ocm::CLUSTER_GROUP,
            fleet_api::ocm::WORK_GROUP,
        ] {
            let mut advertised: Vec<&str> =
                served.iter().filter(|r| r.group == group).map(|r| r.kind.as_str()).collect();
            let mut implemented: Vec<&str> = fleet_api::kinds::kinds_in_group(group).map(|k| k.kind).collect();
            advertised.sort();
            implemented.sort();
            assert_eq!(advertised, implemented, "{group}");
        }
        assert!(!served.iter().any(|r| r.group == fleet_api::kinds::KUBEFLEET_PLACEMENT_GROUP));
        assert!(!served.iter().any(|r| r.group == "addon.open-cluster-management.io"));
        // A user's CRD kinds are served as before.
        assert!(find(&served, "example.com", "v1", "widgets").is_some());
    }

    #[test]
    fn an_unserved_path_in_an_own_group_names_what_is_served() {
        let served = served();
        let text = unserved(&served, "placement.kubernetes-fleet.io", "v1", "metriccollectors", "/p");
        assert!(text.starts_with("/p: placement.kubernetes-fleet.io/v1 is one of Fleet's own API groups"), "{text}");
        assert!(text.contains("clusterresourceplacements, "), "{text}");
        let text = unserved(&served, "placement.kubernetes-fleet.io", "v2", "clusterresourceplacements", "/p");
        assert!(text.ends_with("served at versions v1beta1, v1, v1alpha1 only"), "{text}");
        assert!(unserved(&served, "placement.kubefleet.dev", "v1alpha1", "placementpolicies", "/p")
            .ends_with("Fleet serves no resources in it"));
        assert_eq!(unserved(&served, "example.com", "v1", "widgets", "/p"), "/p");
    }
}
