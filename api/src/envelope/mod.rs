//! Envelopes (docs/spec/envelopes.md): `ClusterResourceEnvelope` and
//! `ResourceEnvelope`. The hub stores them as written; their wrapped
//! objects are placed on member clusters, never on the hub. A ConfigMap
//! annotated `kubernetes-fleet.io/envelope-configmap` is an ordinary
//! ConfigMap, as in KubeFleet's current release.
//!
//! [`wrapped_objects`] is the one reading of an envelope's contents: it is
//! used by admission (every problem listed, nothing stored) and by Work
//! rendering (which relies on admission having refused bad envelopes).
//!
//! Decisions beyond the spec's wording:
//! - a wrapped object of a kind whose scope is known (the registry, or a
//!   CRD stored on the hub: [`DeclaredScopes`]) must agree with it: a
//!   namespace on a cluster-scoped kind, or none on a namespaced kind, is
//!   refused like the table's scope rows; a CRD stored after the envelope is
//!   caught when Works are generated (EN-8, `SyncWorkFailed`);
//! - an envelope kind carries `data` only: any other top-level field is
//!   refused (`Forbidden`), as typed kinds refuse unknown fields;
//! - the value shown for an entry that is not one object is its JSON type
//!   (`"a string"`, `"a list"`, `"a mapping"`, ...).

use serde_json::Value;

use crate::kinds::{DeclaredScopes, Scope};
use crate::parse::type_name;
use crate::validation::{join_path, quote, FieldError, ValidationError};
use crate::Object;

/// Kind of the cluster-scoped envelope.
pub const CLUSTER_RESOURCE_ENVELOPE: &str = "ClusterResourceEnvelope";
/// Kind of the namespaced envelope.
pub const RESOURCE_ENVELOPE: &str = "ResourceEnvelope";
/// Annotation on the first resource snapshot of a group: how many envelopes it holds (EN-2).
pub const NUMBER_OF_ENVELOPED_OBJECT_ANNOTATION: &str = "kubernetes-fleet.io/number-of-enveloped-object";
/// Work label: the envelope type a Work unwraps (EN-4).
pub const ENVELOPE_WORK_LABEL: &str = "kubernetes-fleet.io/envelope-work";
/// Work label: the envelope's name.
pub const ENVELOPE_NAME_LABEL: &str = "kubernetes-fleet.io/envelope-name";
/// Work label: the envelope's namespace (namespaced envelopes only).
pub const ENVELOPE_NAMESPACE_LABEL: &str = "kubernetes-fleet.io/envelope-namespace";
/// Most manifests in one envelope.
pub const MAX_WRAPPED: usize = 50;

/// The two forms of envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EnvelopeType {
    /// A namespaced `ResourceEnvelope`.
    ResourceEnvelope,
    /// A cluster-scoped `ClusterResourceEnvelope`.
    ClusterResourceEnvelope,
}

impl EnvelopeType {
    /// The type's name as status and Work labels show it.
    pub fn as_str(&self) -> &'static str {
        match self {
            EnvelopeType::ResourceEnvelope => RESOURCE_ENVELOPE,
            EnvelopeType::ClusterResourceEnvelope => CLUSTER_RESOURCE_ENVELOPE,
        }
    }
}

/// One object found in an envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Wrapped {
    /// The `data` key it was under.
    pub key: String,
    /// The object.
    pub object: Object,
}

/// Whether `object` is an envelope, and which form.
pub fn envelope_type(object: &Object) -> Option<EnvelopeType> {
    match (object.group(), object.kind.as_str()) {
        (crate::kinds::FLEET_PLACEMENT_GROUP, CLUSTER_RESOURCE_ENVELOPE) => Some(EnvelopeType::ClusterResourceEnvelope),
        (crate::kinds::FLEET_PLACEMENT_GROUP, RESOURCE_ENVELOPE) => Some(EnvelopeType::ResourceEnvelope),
        _ => None,
    }
}

/// `"rbac.authorization.k8s.io/v1, Kind=Role ops/ops-reader"`: how messages
/// name a wrapped object.
pub fn describe_object(object: &Object) -> String {
    let place = match object.metadata.namespace.as_deref().filter(|n| !n.is_empty()) {
        Some(ns) => format!("{ns}/{}", object.metadata.name),
        None => object.metadata.name.clone(),
    };
    format!("{}, Kind={} {place}", object.api_version, object.kind)
}

const NOT_ONE_OBJECT: &str = "must be exactly one Kubernetes object with apiVersion, kind and metadata.name";

/// Reads one entry into an object, or says why it is not one.
fn entry_object(path: &str, value: &Value) -> Result<Object, FieldError> {
    let parsed = match value {
        Value::Object(_) => serde_json::from_value::<Object>(value.clone()).map_err(|_| ()),
        other => return Err(FieldError::invalid(path, type_name(other), NOT_ONE_OBJECT)),
    };
    match parsed {
        // An object with only `generateName` is accepted here, as KubeFleet
        // accepts it; the member agent refuses it (`FoundGenerateName`).
        Ok(o)
            if !o.api_version.is_empty()
                && !o.kind.is_empty()
                && (!o.metadata.name.is_empty()
                    || o.metadata.generate_name.as_deref().is_some_and(|g| !g.is_empty())) =>
        {
            Ok(o)
        }
        Ok(o) => Err(FieldError::invalid(path, describe_object(&o), NOT_ONE_OBJECT)),
        Err(()) => Err(FieldError::invalid(path, type_name(value), NOT_ONE_OBJECT)),
    }
}

/// The rule admission keeps for a wrapped object: a ResourceEnvelope's
/// object names no other namespace than the envelope's, so that whoever
/// may write in one namespace cannot store objects meant for another.
fn check_namespace(kind: EnvelopeType, envelope_namespace: &str, path: &str, object: &Object) -> Option<FieldError> {
    let namespace = object.metadata.namespace.as_deref().filter(|n| !n.is_empty())?;
    (kind == EnvelopeType::ResourceEnvelope && namespace != envelope_namespace).then(|| {
        FieldError::invalid(
            join_path(path, "metadata.namespace"),
            quote(namespace),
            format!("must be {}, the envelope's namespace", quote(envelope_namespace)),
        )
    })
}

/// The scope rules of one wrapped object (docs/spec/envelopes.md "Validation").
fn check_scope(
    kind: EnvelopeType,
    envelope_namespace: &str,
    path: &str,
    object: &Object,
    scopes: &DeclaredScopes,
) -> Vec<FieldError> {
    let ns_path = join_path(path, "metadata.namespace");
    let namespace = object.metadata.namespace.as_deref().filter(|n| !n.is_empty());
    let known = scopes.scope_of(object.group(), &object.kind);
    let mut errors = Vec::new();
    if kind == EnvelopeType::ClusterResourceEnvelope {
        if namespace.is_some() || known == Some(Scope::Namespaced) {
            errors
                .push(FieldError::forbidden(ns_path, "a ClusterResourceEnvelope may only wrap cluster-scoped objects"));
        }
        return errors;
    }
    match namespace {
        None => errors.push(FieldError::required(
            ns_path,
            format!("a ResourceEnvelope may only wrap namespaced objects of namespace {}", quote(envelope_namespace)),
        )),
        Some(ns) if ns != envelope_namespace => errors.push(FieldError::invalid(
            ns_path,
            quote(ns),
            format!("must be {}, the envelope's namespace", quote(envelope_namespace)),
        )),
        Some(ns) if known == Some(Scope::Cluster) => {
            errors.push(FieldError::invalid(ns_path, quote(ns), format!("{} is cluster-scoped", object.kind)))
        }
        Some(_) => {}
    }
    errors
}

/// The objects an envelope wraps, in `data` key order, or every problem
/// (docs/spec/envelopes.md "Validation"): 1..50 entries, each exactly one object, in
/// the right scope and namespace, not an envelope. An object wrapped twice,
/// or with only `generateName`, passes: as in KubeFleet, the member agent
/// refuses that manifest (`Duplicated`, `FoundGenerateName`) and applies
/// the others. Scopes are the registry's only; see [`wrapped_objects_in`].
pub fn wrapped_objects(envelope: &Object) -> Result<Vec<Wrapped>, Vec<FieldError>> {
    wrapped_objects_in(envelope, &DeclaredScopes::default())
}

/// [`wrapped_objects`], with the scopes of kinds that CRDs stored on the hub
/// declare checked too: what Work generation unwraps (a scope problem stops
/// the placement's Work, EN-8).
pub fn wrapped_objects_in(envelope: &Object, scopes: &DeclaredScopes) -> Result<Vec<Wrapped>, Vec<FieldError>> {
    read_wrapped(envelope, Some(scopes))
}

/// Reads an envelope's entries; with `scopes`, also checks each object's
/// scope and namespace.
fn read_wrapped(envelope: &Object, scopes: Option<&DeclaredScopes>) -> Result<Vec<Wrapped>, Vec<FieldError>> {
    let Some(kind) = envelope_type(envelope) else { return Ok(Vec::new()) };
    let envelope_namespace = envelope.metadata.namespace.clone().unwrap_or_default();
    let mut errors = Vec::new();
    for field in envelope.rest.keys().filter(|k| k.as_str() != "data") {
        errors.push(FieldError::forbidden(field.as_str(), "an envelope carries its manifests in data only"));
    }
    let empty = serde_json::Map::new();
    let data = match envelope.rest.get("data") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(map)) => map,
        Some(other) => {
            errors.push(FieldError::invalid("data", type_name(other), "must map keys to manifests"));
            return Err(errors);
        }
    };
    if data.is_empty() {
        errors.push(FieldError::required("data", "an envelope must wrap at least 1 manifest"));
    }
    if data.len() > MAX_WRAPPED {
        errors.push(FieldError::too_many("data", data.len(), MAX_WRAPPED));
    }
    let mut out = Vec::new();
    for (key, value) in data {
        let path = format!("data[{key}]");
        let object = match entry_object(&path, value) {
            Ok(o) => o,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if envelope_type(&object).is_some() {
            errors.push(FieldError::forbidden(path.as_str(), "envelopes cannot be nested"));
        }
        match scopes {
            Some(scopes) => errors.extend(check_scope(kind, &envelope_namespace, &path, &object, scopes)),
            None => errors.extend(check_namespace(kind, &envelope_namespace, &path, &object)),
        }
        out.push(Wrapped { key: key.clone(), object });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Validates an envelope (either kind) at apply; any other object passes.
/// Its form is checked here (entries that are objects, no nesting, 1..50
/// of them, a ResourceEnvelope's objects in its own namespace): as in
/// KubeFleet, an object in the wrong scope is accepted and stops the
/// placement's Work when it is generated (EN-8), where the hub's CRDs of
/// that moment decide the scope.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    check(object)
}

/// [`prepare`] for an envelope that is not to be changed.
pub fn check(object: &Object) -> Result<(), ValidationError> {
    match read_wrapped(object, None) {
        Ok(_) => Ok(()),
        Err(errors) => ValidationError::check(&object.kind, &object.metadata.name, errors),
    }
}

#[cfg(test)]
mod tests;
