//! Which hub resources a placement selects (docs/spec/placement.md "Resource
//! selection"), cleaned of server-set fields, deduplicated and in the stable
//! order snapshots and hashes rely on.
//!
//! Selection reads the hub through [`ResourceSource`], so this module stays
//! pure: the node implements the trait over its store, tests over a vector.
//!
//! Rules beyond the spec's wording, decided here:
//! - a selector carrying both `name` and `labelSelector` (refused by
//!   validation) matches only objects satisfying both;
//! - objects a source returns that do not belong to the query (other kind,
//!   other namespace, namespaced objects for a CRP) are dropped, so a sloppy
//!   source cannot widen a placement;
//! - cleaning also drops `finalizers` (no controller on a member cluster would
//!   ever remove them), the kubectl last-applied annotation and a Service's
//!   allocated `clusterIP`/`clusterIPs` (kept when `None`: headless), all of
//!   which are specific to the cluster they came from; `generateName` is
//!   kept, as KubeFleet keeps it (the object has its name; a member's API
//!   server then ignores it).

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use fleet_api::envelope::{CLUSTER_RESOURCE_ENVELOPE, RESOURCE_ENVELOPE};
use fleet_api::kinds::{lookup_group_kind, Scope, FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use fleet_api::placement::{
    PlacementSpec, ResourceIdentifier, ResourceSelector, NAMESPACE_ONLY, NAMESPACE_WITH_RESOURCE_SELECTORS,
    RESOURCE_PLACEMENT,
};
use fleet_api::{Object, ObjectKey};
use serde_json::Value;

#[cfg(test)]
mod tests;

/// The Open Cluster Management group, whose kinds Fleet serves itself.
const OCM_CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";
/// The annotation kubectl writes with the whole applied document.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Where selection reads hub objects from (the node implements it over its store).
pub trait ResourceSource {
    /// Every object of `group`/`kind` (any version); `namespace` None = all (or cluster-scoped kinds).
    fn list(&self, group: &str, kind: &str, namespace: Option<&str>) -> Vec<Object>;
    /// Every object stored in `namespace`, of any kind.
    fn namespace_contents(&self, namespace: &str) -> Vec<Object>;
    /// The object of `group`/`kind` named `name` (in `namespace`, `None` for
    /// cluster-scoped kinds), if any: a selector naming its object reads
    /// that one object, not every object of the kind.
    fn get(&self, group: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Object> {
        self.list(group, kind, namespace).into_iter().find(|o| o.metadata.name == name)
    }
}

/// The objects a selector can match: the one it names, or every object of its kind.
fn candidates(selector: &ResourceSelector, namespace: Option<&str>, source: &dyn ResourceSource) -> Vec<Object> {
    match &selector.name {
        Some(name) => source.get(&selector.group, &selector.kind, namespace, name).into_iter().collect(),
        None => source.list(&selector.group, &selector.kind, namespace),
    }
}

/// Whether a namespace is reserved (`kube-*`, `fleet-*`, `default`): such
/// namespaces hold the hub's own machinery (e.g. `fleet-member-<cluster>`
/// Work) and are never placed, nor is anything in them.
pub fn is_reserved_namespace(name: &str) -> bool {
    name == "default" || name.starts_with("kube-") || name.starts_with("fleet-")
}

/// The group of KubeFleet's networking kinds; those that carry a member's
/// traffic set-up are never placed, as KubeFleet never places them.
const FLEET_NETWORKING_GROUP: &str = "networking.fleet.azure.com";

/// Whether a group/kind is one Fleet itself serves (placements, snapshots,
/// bindings, MemberClusters, OCM kinds, internal kinds, Events): copying those
/// to members would make members run the hub's control plane, so they are
/// never selected. The two envelope kinds are the exception (EN-1): they
/// are selected like any hub resource, and only their contents reach members.
pub fn is_fleet_kind(group: &str, kind: &str) -> bool {
    if group == FLEET_PLACEMENT_GROUP && matches!(kind, CLUSTER_RESOURCE_ENVELOPE | RESOURCE_ENVELOPE) {
        return false;
    }
    group == FLEET_PLACEMENT_GROUP
        || group == FLEET_CLUSTER_GROUP
        || (group == FLEET_NETWORKING_GROUP
            && matches!(kind, "ServiceImport" | "TrafficManagerProfile" | "TrafficManagerBackend"))
        || group.contains("fleet.internal")
        || group == OCM_CLUSTER_GROUP
        || (kind == "Event" && (group.is_empty() || group == "events.k8s.io"))
}

/// Built-in kinds KubeFleet never selects: a cluster's own Pods, Nodes,
/// Leases, Events and metrics, which only make sense where they were made.
fn is_cluster_local_kind(group: &str, kind: &str) -> bool {
    (group.is_empty() && matches!(kind, "Pod" | "Node"))
        || matches!(group, "events.k8s.io" | "coordination.k8s.io" | "metrics.k8s.io")
}

/// Objects a hub's own controllers make, which KubeFleet leaves behind
/// because each member's controllers make their own: ReplicaSets and
/// ControllerRevisions owned by a workload, a namespace's `kube-root-ca.crt`
/// ConfigMap and `default` ServiceAccount, service-account token Secrets,
/// PersistentVolumeClaims (a StatefulSet makes its own on each member) and
/// EndpointSlices a controller manages. (Endpoints named after a Service
/// are the other case; that needs the hub, see [`Selected::add`].)
fn made_by_hub_controllers(object: &Object) -> bool {
    let owned = !object.metadata.owner_references.is_empty();
    let name = object.metadata.name.as_str();
    match (object.group(), object.kind.as_str()) {
        ("apps", "ReplicaSet" | "ControllerRevision") => owned,
        ("", "ConfigMap") => name == "kube-root-ca.crt",
        ("", "ServiceAccount") => name == "default",
        ("", "Secret") => {
            object.rest.get("type").and_then(Value::as_str) == Some("kubernetes.io/service-account-token")
        }
        ("", "PersistentVolumeClaim") => true,
        ("discovery.k8s.io", "EndpointSlice") => {
            object.metadata.labels.contains_key("endpointslice.kubernetes.io/managed-by")
        }
        _ => false,
    }
}

/// Whether an object may ever be selected, whatever the selector: not a Fleet
/// kind or a cluster-local one, not made by the hub's controllers, not being
/// deleted, not in (or being) a reserved namespace.
fn selectable(object: &Object) -> bool {
    if is_fleet_kind(object.group(), &object.kind)
        || is_cluster_local_kind(object.group(), &object.kind)
        || made_by_hub_controllers(object)
        || object.metadata.deletion_timestamp.is_some()
    {
        return false;
    }
    if let Some(ns) = object.metadata.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        if is_reserved_namespace(ns) {
            return false;
        }
    }
    !(is_namespace(object) && is_reserved_namespace(&object.metadata.name))
}

/// Whether an object is a core Namespace.
fn is_namespace(object: &Object) -> bool {
    object.group().is_empty() && object.kind == "Namespace"
}

/// The object's namespace, `None` when absent or empty.
fn namespace_of(object: &Object) -> Option<&str> {
    object.metadata.namespace.as_deref().filter(|ns| !ns.is_empty())
}

/// Whether `object` is of the selector's group/kind and matches its name
/// and label selector (neither given: every object of the kind).
fn matches_selector(selector: &ResourceSelector, object: &Object) -> bool {
    object.group() == selector.group
        && object.kind == selector.kind
        && selector.name.as_ref().is_none_or(|n| *n == object.metadata.name)
        && selector.label_selector.as_ref().is_none_or(|s| s.matches(&object.metadata.labels))
}

/// A copy of `object` fit to be placed elsewhere: without the fields the hub
/// set or that only make sense on the hub (see the module notes).
pub fn clean(object: &Object) -> Object {
    let mut out = object.clone();
    let meta = &mut out.metadata;
    meta.uid.clear();
    meta.resource_version.clear();
    meta.generation = 0;
    meta.creation_timestamp = None;
    meta.deletion_timestamp = None;
    meta.owner_references.clear();
    meta.finalizers.clear();
    meta.managed_fields.clear();
    meta.annotations.remove(LAST_APPLIED_ANNOTATION);
    out.rest.remove("status");
    out.rest.remove("managedFields");
    if out.group().is_empty() && out.kind == "Service" {
        if let Some(Value::Object(spec)) = out.rest.get_mut("spec") {
            if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
        }
    }
    out
}

/// KubeFleet's apply order of the kinds it knows: what a placement's
/// selected list (and so its snapshots and Works) is sorted by; kinds not
/// listed come after these.
const APPLY_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// The position of an object in the selected list, as KubeFleet sorts it:
/// by [`APPLY_ORDER`] (unknown kinds last), then `apiVersion` (for unknown
/// kinds `group/version, Kind=kind`), then `namespace/name`. The key ends
/// with the identity used to deduplicate.
type OrderKey = (usize, String, String, ObjectKey);

fn order_key(object: &Object) -> OrderKey {
    let key = ObjectKey::of(object);
    let rank = APPLY_ORDER.iter().position(|k| *k == object.kind);
    let version = object.api_version.rsplit_once('/').map_or(object.api_version.as_str(), |(_, v)| v);
    let type_ = match rank {
        Some(_) => object.api_version.clone(),
        None => format!("{}/{version}, Kind={}", key.group, object.kind),
    };
    let name = format!("{}/{}", key.namespace, key.name);
    (rank.unwrap_or(APPLY_ORDER.len()), type_, name, key)
}

/// Collects selected objects by identity, and the first reason KubeFleet
/// would refuse the selectors: an object selected twice, or a reserved
/// namespace asked for with its contents.
struct Selected<'a> {
    source: &'a dyn ResourceSource,
    objects: BTreeMap<OrderKey, Object>,
    problem: Option<String>,
}

impl<'a> Selected<'a> {
    fn new(source: &'a dyn ResourceSource) -> Self {
        Selected { source, objects: BTreeMap::new(), problem: None }
    }

    fn add(&mut self, object: Object) {
        if !selectable(&object) || self.is_service_endpoints(&object) {
            return;
        }
        match self.objects.entry(order_key(&object)) {
            Entry::Vacant(slot) => {
                slot.insert(clean(&object));
            }
            Entry::Occupied(_) => self.refuse(format!("found duplicate resource {}", described(&object))),
        }
    }

    fn refuse(&mut self, problem: String) {
        self.problem.get_or_insert(problem);
    }

    /// Endpoints named after a Service of their namespace: the Service's
    /// controller made them, and makes them again on each member.
    fn is_service_endpoints(&self, object: &Object) -> bool {
        object.group().is_empty()
            && object.kind == "Endpoints"
            && self.source.get("", "Service", namespace_of(object), &object.metadata.name).is_some()
    }
}

/// An object's identity as KubeFleet prints a resource identifier.
fn described(object: &Object) -> String {
    let version = object.api_version.rsplit_once('/').map_or(object.api_version.as_str(), |(_, v)| v);
    format!(
        "{{Group:{} Version:{version} Kind:{} Name:{} Namespace:{}}}",
        object.group(),
        object.kind,
        object.metadata.name,
        namespace_of(object).unwrap_or("")
    )
}

/// Whether a kind is known (registry) to have `scope`.
fn known_scope_is(group: &str, kind: &str, scope: Scope) -> bool {
    lookup_group_kind(group, kind).is_some_and(|k| k.scope == scope)
}

/// One selector of a ClusterResourcePlacement: cluster-scoped objects; a
/// Namespace brings its contents unless `NamespaceOnly` or
/// `NamespaceWithResourceSelectors` (whose contents come from the other
/// selectors).
fn select_cluster_scoped(selector: &ResourceSelector, source: &dyn ResourceSource, out: &mut Selected) {
    if known_scope_is(&selector.group, &selector.kind, Scope::Namespaced) {
        return;
    }
    let with_contents =
        !matches!(selector.selection_scope.as_deref(), Some(NAMESPACE_ONLY | NAMESPACE_WITH_RESOURCE_SELECTORS));
    let names_namespace = selector.group.is_empty() && selector.kind == "Namespace";
    if let Some(name) =
        selector.name.as_deref().filter(|n| names_namespace && with_contents && is_reserved_namespace(n))
    {
        out.refuse(format!("namespace {name} is not allowed to propagate"));
        return;
    }
    for object in candidates(selector, None, source) {
        if namespace_of(&object).is_some() || !matches_selector(selector, &object) {
            continue;
        }
        if is_namespace(&object) && with_contents && is_reserved_namespace(&object.metadata.name) {
            out.refuse(format!("namespace {} is not allowed to propagate", object.metadata.name));
            continue;
        }
        if !selectable(&object) {
            continue;
        }
        if is_namespace(&object) && with_contents {
            let ns = object.metadata.name.clone();
            for inner in source.namespace_contents(&ns) {
                if namespace_of(&inner) == Some(ns.as_str()) {
                    out.add(inner);
                }
            }
        }
        out.add(object);
    }
}

/// One selector of a ResourcePlacement: namespaced objects of its namespace.
fn select_namespaced(selector: &ResourceSelector, namespace: &str, source: &dyn ResourceSource, out: &mut Selected) {
    if (selector.group.is_empty() && selector.kind == "Namespace")
        || known_scope_is(&selector.group, &selector.kind, Scope::Cluster)
    {
        return;
    }
    for object in candidates(selector, Some(namespace), source) {
        if namespace_of(&object) == Some(namespace) && matches_selector(selector, &object) {
            out.add(object);
        }
    }
}

/// What a placement's selectors pick.
#[derive(Debug, Default)]
pub struct Selection {
    /// The selected resources: cleaned, deduplicated, in stable order.
    pub resources: Vec<Object>,
    /// Why KubeFleet would refuse these selectors (`InvalidResourceSelectors`):
    /// one object selected more than once, or a reserved namespace selected
    /// with its contents. The placement then takes no new snapshot.
    pub problem: Option<String>,
}

/// The selected resources of a placement: cleaned, deduplicated, in stable order.
///
/// `placement_kind` is `ClusterResourcePlacement` or `ResourcePlacement`;
/// `placement_namespace` is the RP's namespace (an RP without one, or in a
/// reserved namespace, selects nothing).
pub fn select_resources(
    placement_kind: &str,
    placement_namespace: Option<&str>,
    spec: &PlacementSpec,
    source: &dyn ResourceSource,
) -> Vec<Object> {
    select(placement_kind, placement_namespace, spec, source).resources
}

/// A placement's selection with the problem KubeFleet would report, as
/// [`select_resources`] describes it.
pub fn select(
    placement_kind: &str,
    placement_namespace: Option<&str>,
    spec: &PlacementSpec,
    source: &dyn ResourceSource,
) -> Selection {
    let mut out = Selected::new(source);
    // A CRP's NamespaceWithResourceSelectors namespace: its other selectors
    // pick namespaced objects in it (nothing when it is not there).
    let picked_namespace = if placement_kind == RESOURCE_PLACEMENT { None } else { selected_namespace(spec, source) };
    for selector in &spec.resource_selectors {
        if is_fleet_kind(&selector.group, &selector.kind) {
            continue;
        }
        if placement_kind == RESOURCE_PLACEMENT {
            match placement_namespace.filter(|ns| !ns.is_empty() && !is_reserved_namespace(ns)) {
                Some(ns) => select_namespaced(selector, ns, source, &mut out),
                None => return Selection::default(),
            }
        } else {
            select_cluster_scoped(selector, source, &mut out);
            if let Some(ns) = picked_namespace.as_deref() {
                select_namespaced(selector, ns, source, &mut out);
            }
        }
    }
    Selection { resources: out.objects.into_values().collect(), problem: out.problem }
}

/// The namespace a ClusterResourcePlacement's `NamespaceWithResourceSelectors`
/// selector names, when it exists on the hub and may be placed.
fn selected_namespace(spec: &PlacementSpec, source: &dyn ResourceSource) -> Option<String> {
    let name = spec.namespace_with_resource_selectors().filter(|n| !n.is_empty())?;
    let namespace = source.get("", "Namespace", None, name)?;
    selectable(&namespace).then(|| name.to_string())
}

/// Why a ClusterResourcePlacement's selectors cannot be resolved now, as
/// KubeFleet words it: a `NamespaceWithResourceSelectors` selector whose
/// namespace is not on the hub (or is being deleted, or is reserved). The
/// placement then keeps what it placed until the namespace is back or the
/// selectors change.
pub fn selector_problem(
    placement_kind: &str,
    placement_name: &str,
    spec: &PlacementSpec,
    source: &dyn ResourceSource,
) -> Option<String> {
    if placement_kind == RESOURCE_PLACEMENT || spec.namespace_with_resource_selectors().is_none() {
        return None;
    }
    if selected_namespace(spec, source).is_some() {
        return None;
    }
    Some(format!(
        "invalid clusterResourcePlacement {placement_name}: NamespaceWithResourceSelectors mode requires exactly one \
         namespace, but no namespaces were selected"
    ))
}

/// Status identifiers of selected resources (group, version from apiVersion, kind, name, namespace),
/// in the same order, for `status.selectedResources`.
pub fn identifiers(resources: &[Object]) -> Vec<ResourceIdentifier> {
    resources
        .iter()
        .map(|o| {
            let version = o.api_version.rsplit_once('/').map_or(o.api_version.as_str(), |(_, v)| v);
            ResourceIdentifier {
                group: o.group().to_string(),
                version: version.to_string(),
                kind: o.kind.clone(),
                name: o.metadata.name.clone(),
                namespace: namespace_of(o).unwrap_or("").to_string(),
            }
        })
        .collect()
}
