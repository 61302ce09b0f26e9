//! Admission: turning what a client sent into objects fit to propose —
//! kind and scope resolved (registry, then CRDs stored on the hub), generic
//! validation with every problem listed, server-set fields dropped.

use fleet_api::eviction as eviction_api;
use fleet_api::kinds::{self, DeclaredScopes, KindInfo, Scope, FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use fleet_api::member;
use fleet_api::ocm::managed_cluster;
use fleet_api::overrides as overrides_api;
use fleet_api::placement::CLUSTER_RESOURCE_PLACEMENT_STATUS;
use fleet_api::validation::validate_generic;
use fleet_api::{Object, ObjectKey};
use fleet_proto::fleet::KindRef;
use fleet_statemachine::{ListQuery, Store};
use serde_json::Value;

use crate::error::RequestError;

const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_KIND: &str = "CustomResourceDefinition";

/// A kind as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKind {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub scope: Scope,
}

impl ResolvedKind {
    fn from_info(info: &KindInfo) -> ResolvedKind {
        ResolvedKind {
            group: info.group.to_string(),
            kind: info.kind.to_string(),
            plural: info.plural.to_string(),
            scope: info.scope,
        }
    }

    /// The namespace to use: `default` when a namespaced kind names none,
    /// nothing for cluster-scoped kinds.
    pub fn namespace_or_default(&self, namespace: &str) -> String {
        match self.scope {
            Scope::Namespaced if namespace.is_empty() => "default".to_string(),
            Scope::Namespaced => namespace.to_string(),
            Scope::Cluster => String::new(),
        }
    }

    /// The key of one object of this kind.
    pub fn key(&self, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey::new(&self.group, &self.kind, &self.namespace_or_default(namespace), name)
    }

    /// A query over this kind.
    pub fn query(&self, namespace: Option<String>) -> ListQuery {
        ListQuery { group: self.group.clone(), kind: self.kind.clone(), namespace, selector: None }
    }
}

/// A CRD stored on the hub, reduced to what names and scopes its kind.
pub struct CrdNames {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub scope: Scope,
    /// `spec.versions[*].name`, served ones first as written.
    pub versions: Vec<String>,
}

/// The CRDs stored on the hub.
pub fn stored_crds(store: &Store) -> Result<Vec<CrdNames>, fleet_statemachine::Error> {
    let query = ListQuery { group: CRD_GROUP.into(), kind: CRD_KIND.into(), namespace: None, selector: None };
    let (crds, _) = store.list(&query)?;
    Ok(crds
        .iter()
        .filter_map(|crd| {
            let spec = crd.spec()?;
            let names = spec.get("names")?;
            let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
            Some(CrdNames {
                group: text(spec.get("group")),
                kind: text(names.get("kind")),
                plural: text(names.get("plural")),
                singular: text(names.get("singular")),
                short_names: names
                    .get("shortNames")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default(),
                scope: if text(spec.get("scope")) == "Cluster" { Scope::Cluster } else { Scope::Namespaced },
                versions: spec
                    .get("versions")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter().filter_map(|v| v.get("name").and_then(Value::as_str)).map(str::to_string).collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect())
}

/// Whether group/kind is CustomResourceDefinition.
pub fn is_crd(group: &str, kind: &str) -> bool {
    group == CRD_GROUP && kind == CRD_KIND
}

/// The scopes the CRDs stored on the hub declare, for checking envelopes'
/// wrapped objects (EN-8).
pub fn declared_scopes(store: &Store) -> Result<DeclaredScopes, fleet_statemachine::Error> {
    let mut scopes = DeclaredScopes::default();
    for crd in stored_crds(store)? {
        scopes.declare(&crd.group, &crd.kind, crd.scope);
    }
    Ok(scopes)
}

/// Resolves a kind named on the command line (Kind, plural, short name, or
/// any name a stored CRD declares).
pub fn resolve_kind_ref(store: &Store, kind_ref: &KindRef) -> Result<ResolvedKind, RequestError> {
    let name = kind_ref.kind.trim();
    if name.is_empty() {
        return Err(RequestError::invalid("kind: Required value: name a kind, e.g. configmaps or crp"));
    }
    // A kind.group form (kubectl's `deployments.apps`) narrows the group.
    let (base, group) = match name.split_once('.') {
        Some((b, g)) => (b, Some(g)),
        None => (name, None),
    };
    if let Some(info) = kinds::lookup(base).filter(|k| group.is_none_or(|g| g == k.group)) {
        return Ok(ResolvedKind::from_info(info));
    }
    let lower = base.to_ascii_lowercase();
    for crd in stored_crds(store).map_err(crate::error::storage_error)? {
        let named = crd.kind.eq_ignore_ascii_case(&lower)
            || crd.plural == lower
            || crd.singular == lower
            || crd.short_names.contains(&lower);
        if named && group.is_none_or(|g| g == crd.group) {
            return Ok(ResolvedKind { group: crd.group, kind: crd.kind, plural: crd.plural, scope: crd.scope });
        }
    }
    if !kind_ref.api_version.is_empty() {
        // A kind nobody declared, addressed with its apiVersion: treat the name as the Kind.
        let group = fleet_api::object::group_of(&kind_ref.api_version).to_string();
        return Ok(ResolvedKind { group, kind: name.to_string(), plural: lower, scope: Scope::Namespaced });
    }
    Err(RequestError::not_found(format!(
        "the server doesn't have a resource type {name:?} (not a Fleet or Kubernetes kind, and no CustomResourceDefinition declares it)"
    )))
}

/// The kind of a document: its group and Kind as written, its scope from the
/// registry, a stored CRD, or (unknown) whether it carries a namespace.
pub fn resolve_document(store: &Store, object: &Object) -> Result<ResolvedKind, RequestError> {
    let group = object.group();
    if let Some(info) = kinds::lookup_group_kind(group, &object.kind) {
        return Ok(ResolvedKind::from_info(info));
    }
    if let Some(crd) = stored_crds(store)
        .map_err(crate::error::storage_error)?
        .into_iter()
        .find(|c| c.group == group && c.kind == object.kind)
    {
        return Ok(ResolvedKind { group: crd.group, kind: crd.kind, plural: crd.plural, scope: crd.scope });
    }
    let has_namespace = object.metadata.namespace.as_deref().is_some_and(|n| !n.is_empty());
    Ok(ResolvedKind {
        group: group.to_string(),
        kind: object.kind.clone(),
        plural: object.kind.to_ascii_lowercase(),
        scope: kinds::scope_of_unknown(has_namespace),
    })
}

/// One document a client sent.
pub struct Document {
    /// Where it came from, for messages (`web.yaml`, or `document 2`).
    pub source: String,
    pub bytes: Vec<u8>,
}

/// Parses and validates every document; on any problem, refuses them all
/// with every problem of every document listed.
pub fn admit(store: &Store, documents: Vec<Document>) -> Result<Vec<Object>, RequestError> {
    let mut admitted = Vec::with_capacity(documents.len());
    let mut problems = Vec::new();
    for (i, doc) in documents.into_iter().enumerate() {
        match admit_one(store, &doc.bytes) {
            Ok(object) => admitted.push(object),
            Err(message) => problems.push(format!("{} (document {}): {message}", doc.source, i + 1)),
        }
    }
    if problems.is_empty() {
        Ok(admitted)
    } else {
        Err(RequestError::invalid(format!("nothing was applied:\n{}", problems.join("\n"))))
    }
}

/// Parses, resolves and validates one document for storing.
pub fn admit_one(store: &Store, bytes: &[u8]) -> Result<Object, String> {
    let mut object = Object::from_json(bytes).map_err(|e| format!("not a valid object: {e}"))?;
    if object.group() == crate::members::internal::INTERNAL_GROUP {
        return Err(format!(
            "{} {:?}: apiVersion: Forbidden: the group {} is written only by the hub itself",
            object.kind,
            object.metadata.name,
            crate::members::internal::INTERNAL_GROUP
        ));
    }
    if object.group() == kinds::FLEET_PLACEMENT_GROUP && object.kind == CLUSTER_RESOURCE_PLACEMENT_STATUS {
        return Err(format!(
            "{} {:?} is invalid:\n  kind: Forbidden: ClusterResourcePlacementStatus objects are written only by the \
             hub, which keeps one for each ClusterResourcePlacement whose spec.statusReportingScope is \
             NamespaceAccessible, in the namespace that placement selects; set that field on the placement instead",
            object.kind, object.metadata.name
        ));
    }
    // Before anything is resolved (a stored CRD may declare a kind in these
    // groups): only what Fleet implements is stored there.
    kinds::check_own_group(&object.api_version, &object.kind, &object.metadata.name).map_err(|e| e.to_string())?;
    if managed_cluster::is_managed_cluster(object.group(), &object.kind) {
        object = through_managed_cluster(store, &object)?;
    }
    let kind = resolve_document(store, &object).map_err(|s| s.message().to_string())?;
    if let Some(info) = kinds::lookup_group_kind(&kind.group, &kind.kind) {
        if !object.api_version.is_empty() && !info.accepts_api_version(&object.api_version) {
            let versions: Vec<String> = info
                .versions
                .iter()
                .map(|v| format!("{}/{}", info.group, v).trim_start_matches('/').to_string())
                .collect();
            return Err(format!(
                "{} {:?}: apiVersion: Unsupported value: {:?}: supported values: {}",
                kind.kind,
                object.metadata.name,
                object.api_version,
                versions.join(", ")
            ));
        }
    }
    if kind.scope == Scope::Namespaced && object.metadata.namespace.as_deref().is_none_or(str::is_empty) {
        object.metadata.namespace = Some("default".into());
    }
    if kind.scope == Scope::Cluster && object.metadata.namespace.as_deref() == Some("") {
        object.metadata.namespace = None;
    }
    object.strip_server_fields();
    validate_generic(&object, kind.scope).map_err(|e| e.to_string())?;
    fleet_api::typed::prepare(&mut object).map_err(|e| e.to_string())?;
    fleet_api::defaults::apply(&mut object);
    if object.group() == FLEET_CLUSTER_GROUP && object.kind == "MemberCluster" {
        stamp_taint_times(store, &mut object)?;
    }
    check_update(store, &object)?;
    Ok(object)
}

/// The MemberCluster a ManagedCluster document writes (one inventory: its
/// labels and taints go to the MemberCluster of the same name, conditional
/// on the version read).
fn through_managed_cluster(store: &Store, document: &Object) -> Result<Object, String> {
    let info = kinds::lookup_group_kind(document.group(), &document.kind);
    if let Some(info) = info.filter(|i| !i.accepts_api_version(&document.api_version)) {
        return Err(format!(
            "{} {:?}: apiVersion: Unsupported value: {:?}: supported values: {}",
            info.kind,
            document.metadata.name,
            document.api_version,
            info.api_version()
        ));
    }
    let key = ObjectKey::new(FLEET_CLUSTER_GROUP, "MemberCluster", "", &document.metadata.name);
    let (stored, _) = store.get(&key).map_err(|e| e.to_string())?;
    managed_cluster::to_member(document, stored.as_ref()).map_err(|e| e.to_string())
}

/// Gives every taint of a MemberCluster a `timeAdded` (OCM's
/// `tolerationSeconds` count from it): the stored one for a taint that was
/// already there, now for a new one. The proposer decides the time; the
/// command carries it.
fn stamp_taint_times(store: &Store, object: &mut Object) -> Result<(), String> {
    let mut spec = member::spec_of(object);
    if spec.taints.iter().all(|t| t.time_added.is_some()) {
        return Ok(());
    }
    let (stored, _) = store.get(&ObjectKey::of(object)).map_err(|e| e.to_string())?;
    let before = stored.as_ref().map(member::spec_of).unwrap_or_default();
    let now = fleet_api::time::now_rfc3339();
    for taint in spec.taints.iter_mut().filter(|t| t.time_added.is_none()) {
        let known = before.taints.iter().find(|t| t.same_as(taint)).and_then(|t| t.time_added.clone());
        taint.time_added = Some(known.unwrap_or_else(|| now.clone()));
    }
    object.rest.insert("spec".into(), fleet_api::typed::encode(&spec));
    Ok(())
}

/// The rules about what may change in an update (placementType, only added
/// tolerations, an override's placement, a run's immutable fields, ...:
/// `typed::check_update`), and the store-wide limits of overrides, checked
/// against the store as this node has it.
fn check_update(store: &Store, object: &Object) -> Result<(), String> {
    let (stored, _) = store.get(&ObjectKey::of(object)).map_err(|e| e.to_string())?;
    if let Some(old) = &stored {
        fleet_api::typed::check_update(old, object).map_err(|e| e.to_string())?;
    }
    if object.group() == FLEET_PLACEMENT_GROUP && overrides_api::is_override_kind(&object.kind) {
        return check_override_limits(store, object, stored.is_none());
    }
    if object.group() == FLEET_PLACEMENT_GROUP
        && (eviction_api::is_eviction_kind(&object.kind) || eviction_api::is_budget_kind(&object.kind))
    {
        return check_eviction_placement(store, object);
    }
    Ok(())
}

/// docs/spec/eviction.md: an eviction or disruption budget is checked at
/// apply against the placement it names (an eviction's `placementName`, a
/// budget's own name; in its own namespace for the namespaced kinds) when
/// that placement exists then, as KubeFleet's webhooks check it. One
/// created before its placement is judged by the eviction controller.
fn check_eviction_placement(store: &Store, object: &Object) -> Result<(), String> {
    let name = if eviction_api::is_eviction(object) {
        eviction_api::eviction_spec_of(object).placement_name
    } else {
        object.metadata.name.clone()
    };
    let namespace = if eviction_api::is_namespaced_kind(&object.kind) {
        object.metadata.namespace.clone().unwrap_or_default()
    } else {
        String::new()
    };
    let kind = eviction_api::placement_kind_for(&object.kind);
    let key = ObjectKey::new(FLEET_PLACEMENT_GROUP, kind, &namespace, &name);
    let (placement, _) = store.get(&key).map_err(|e| e.to_string())?;
    eviction_api::check_against_placement(object, placement.as_ref()).map_err(|e| e.to_string())
}

/// docs/spec/overrides.md: at most 100 CROs (100 ROs per namespace), and no resource
/// selected by two overrides of the same scope.
fn check_override_limits(store: &Store, object: &Object, new: bool) -> Result<(), String> {
    let namespace = object.metadata.namespace.clone();
    let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: object.kind.clone(), namespace, selector: None };
    let (others, _) = store.list(&query).map_err(|e| e.to_string())?;
    let others: Vec<&Object> = others.iter().filter(|o| o.metadata.name != object.metadata.name).collect();
    if new && others.len() >= overrides_api::MAX_OVERRIDES {
        let plural = format!("{}s", object.kind);
        return Err(match object.metadata.namespace.as_deref() {
            Some(ns) => format!("at most {} {plural} may exist in namespace {ns:?}", overrides_api::MAX_OVERRIDES),
            None => format!("at most {} {plural} may exist", overrides_api::MAX_OVERRIDES),
        });
    }
    let field = if object.kind == overrides_api::RESOURCE_OVERRIDE {
        "spec.resourceSelectors"
    } else {
        "spec.clusterResourceSelectors"
    };
    let mut errors = Vec::new();
    for (k, selected) in overrides_api::selected_resources(object).iter().enumerate() {
        if let Some(other) = others.iter().find(|o| overrides_api::selected_resources(o).contains(selected)) {
            let (group, kind, _, name) = selected;
            let mut names = [object.metadata.name.as_str(), other.metadata.name.as_str()];
            names.sort();
            errors.push(fleet_api::FieldError::invalid(
                format!("{field}[{k}]"),
                format!("{}{kind} {name}", if group.is_empty() { String::new() } else { format!("{group}/") }),
                format!("the resource has been selected by both {} and {}, which is not supported", names[0], names[1]),
            ));
        }
    }
    fleet_api::ValidationError::check(&object.kind, &object.metadata.name, errors).map_err(|e| e.to_string())
}
