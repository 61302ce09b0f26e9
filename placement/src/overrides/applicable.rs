//! OV-1, OV-2, OV-4: which override snapshots apply to one binding — those
//! that reference its placement (or none), select one of its resources (or
//! an object wrapped in one of its envelopes), and have a rule matching its
//! cluster.

use std::collections::BTreeMap;

use fleet_api::envelope::wrapped_objects;
use fleet_api::overrides::{OverrideRule, SCOPE_NAMESPACED};
use fleet_api::placement::{CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT};
use fleet_api::Object;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::OverrideSnapshot;

/// An RO snapshot as a binding records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespacedName {
    /// The snapshot's namespace (sorted first).
    pub namespace: String,
    /// The snapshot's name.
    pub name: String,
}

/// The override snapshots that apply to one binding, in OV-4 order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applicable {
    /// CRO snapshot names, by name.
    pub cluster: Vec<String>,
    /// RO snapshots, by namespace then name.
    pub resource: Vec<NamespacedName>,
}

impl Applicable {
    /// Whether no override applies.
    pub fn is_empty(&self) -> bool {
        self.cluster.is_empty() && self.resource.is_empty()
    }
}

/// Whether the snapshot's override may apply to `placement` (OV-2).
pub(crate) fn references_placement(snapshot: &OverrideSnapshot, placement: &Object) -> bool {
    let Some(reference) = &snapshot.spec.placement else { return true };
    if reference.name != placement.metadata.name {
        return false;
    }
    if !snapshot.cluster_scoped && reference.scope() == SCOPE_NAMESPACED {
        placement.kind == RESOURCE_PLACEMENT && placement.metadata.namespace.as_deref() == Some(&snapshot.namespace)
    } else {
        placement.kind == CLUSTER_RESOURCE_PLACEMENT
    }
}

/// The identity an override selector matches: group, kind, namespace
/// (empty for cluster-scoped) and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResourceId<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl<'a> ResourceId<'a> {
    /// The identity of an object.
    pub fn of(object: &'a Object) -> ResourceId<'a> {
        ResourceId {
            group: object.group(),
            kind: &object.kind,
            namespace: object.metadata.namespace.as_deref().unwrap_or(""),
            name: &object.metadata.name,
        }
    }

    /// The identity of an object still in JSON form (a snapshot's
    /// `selectedResources` entry), without decoding it.
    pub fn of_value(value: &'a Value) -> ResourceId<'a> {
        let text = |v: Option<&'a Value>| v.and_then(Value::as_str).unwrap_or("");
        let metadata = value.get("metadata");
        ResourceId {
            group: fleet_api::object::group_of(text(value.get("apiVersion"))),
            kind: text(value.get("kind")),
            namespace: text(metadata.and_then(|m| m.get("namespace"))),
            name: text(metadata.and_then(|m| m.get("name"))),
        }
    }
}

/// Whether the snapshot's override selects `resource` (OV-1): a CRO by
/// group/kind/name of a cluster-scoped object, or through the Namespace of
/// a namespaced one; an RO by group/kind/name in its own namespace.
pub(crate) fn selects(snapshot: &OverrideSnapshot, resource: ResourceId) -> bool {
    snapshot.spec.selectors().iter().any(|s| {
        let named = s.group == resource.group && s.kind == resource.kind && s.name == resource.name;
        if snapshot.cluster_scoped {
            let through_namespace = !resource.namespace.is_empty()
                && s.group.is_empty()
                && s.kind == "Namespace"
                && s.name == resource.namespace;
            (resource.namespace.is_empty() && named) || through_namespace
        } else {
            resource.namespace == snapshot.namespace && named
        }
    })
}

/// Whether `rule` applies to a cluster with `labels`: no cluster selector
/// matches none, an empty term list every cluster, terms are OR-ed.
pub(crate) fn rule_matches(rule: &OverrideRule, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = &rule.cluster_selector else { return false };
    selector.cluster_selector_terms.is_empty()
        || selector.cluster_selector_terms.iter().any(|t| t.label_selector.as_ref().is_some_and(|s| s.matches(labels)))
}

/// The objects placed from `resources`: each resource, and for envelopes
/// the objects they wrap (the envelope itself is never patched, EN-6).
pub(crate) fn placed_objects(resources: &[Object]) -> impl Iterator<Item = Object> + '_ {
    resources.iter().flat_map(|r| match fleet_api::envelope::envelope_type(r) {
        Some(_) => wrapped_objects(r).unwrap_or_default().into_iter().map(|w| w.object).collect(),
        None => vec![r.clone()],
    })
}

/// The latest override snapshots (`latest`, any order) that apply to a
/// binding of `placement` to a cluster with `labels`, placing `resources`
/// (a resource snapshot group's selected resources).
pub fn applicable(
    placement: &Object,
    resources: &[Object],
    labels: &BTreeMap<String, String>,
    latest: &[OverrideSnapshot],
) -> Applicable {
    let candidates: Vec<&OverrideSnapshot> = latest
        .iter()
        .filter(|s| references_placement(s, placement))
        .filter(|s| s.spec.policy.override_rules.iter().any(|r| rule_matches(r, labels)))
        .collect();
    let mut out = Applicable::default();
    if candidates.is_empty() {
        return out;
    }
    let placed: Vec<Object> = placed_objects(resources).collect();
    for snapshot in candidates {
        if !placed.iter().any(|r| selects(snapshot, ResourceId::of(r))) {
            continue;
        }
        if snapshot.cluster_scoped {
            out.cluster.push(snapshot.name.clone());
        } else {
            out.resource.push(NamespacedName { namespace: snapshot.namespace.clone(), name: snapshot.name.clone() });
        }
    }
    out.cluster.sort();
    out.resource.sort();
    out
}
