//! Typed Fleet kinds: decoding a part of a generic object into its Rust type
//! with field paths in errors (unknown fields refused), and the one entry
//! point that validates and defaults every typed kind Fleet knows so far.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::ocm::{self, addon_score, clusterset, decision, manifestwork, replicaset, CLUSTER_GROUP, WORK_GROUP};
use crate::validation::{FieldError, ValidationError};
use crate::{binding, envelope, eviction, member, overrides, placement, snapshot, staged, work, Object};

/// Decodes `value` (found at `path`) into `T`; a type error or an unknown
/// field becomes a [`FieldError`] naming the exact field.
pub fn decode<T: DeserializeOwned>(value: &Value, path: &str) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let full = match (path, inner.as_str()) {
            (p, ".") => p.to_string(),
            ("", i) => i.to_string(),
            (p, i) => format!("{p}.{i}"),
        };
        let message = e.into_inner().to_string();
        if message.starts_with("unknown field") {
            FieldError::forbidden(full, message)
        } else {
            FieldError::invalid(full, "<value>", message)
        }
    })
}

/// Decodes an object's `spec` (absent = `{}`) into `T`; a type error or an
/// unknown field is a [`ValidationError`] naming the object and the field.
pub fn decode_spec<T: DeserializeOwned>(object: &Object) -> Result<T, ValidationError> {
    decode_part(object, "spec")
}

/// Decodes an object's `status` (absent = `{}`) into `T`, with the object
/// and the field named in the error: for checks on the status path.
pub fn decode_status<T: DeserializeOwned>(object: &Object) -> Result<T, ValidationError> {
    decode_part(object, "status")
}

/// Decodes a top-level part of an object (absent = `{}`).
fn decode_part<T: DeserializeOwned>(object: &Object, part: &str) -> Result<T, ValidationError> {
    let raw = object.rest.get(part).cloned().unwrap_or(Value::Object(Default::default()));
    decode(&raw, part).map_err(|e| ValidationError {
        kind: object.kind.clone(),
        name: object.metadata.name.clone(),
        errors: vec![e],
    })
}

/// The `spec` of a stored object (admission guarantees it decodes), or the
/// default when it does not.
pub fn spec_or_default<T: DeserializeOwned + Default>(object: &Object) -> T {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// The `status` of a stored object, or the default when it has none or it
/// does not decode.
pub fn status_or_default<T: DeserializeOwned + Default>(object: &Object) -> T {
    object.status().and_then(|s| decode(s, "status").ok()).unwrap_or_default()
}

/// Encodes a typed part back into JSON.
pub fn encode<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Validates and defaults a typed kind in place (spec only; status is
/// written through the status path). Kinds without a schema yet pass.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    match (object.group(), object.kind.as_str()) {
        (crate::kinds::FLEET_CLUSTER_GROUP, "MemberCluster") => member::prepare(object),
        (crate::kinds::FLEET_PLACEMENT_GROUP, "Work") => work::prepare(object),
        (
            crate::kinds::FLEET_PLACEMENT_GROUP,
            placement::CLUSTER_RESOURCE_PLACEMENT | placement::RESOURCE_PLACEMENT,
        ) => placement::prepare(object),
        (crate::kinds::FLEET_PLACEMENT_GROUP, binding::CLUSTER_RESOURCE_BINDING | binding::RESOURCE_BINDING) => {
            binding::prepare(object)
        }
        (
            crate::kinds::FLEET_PLACEMENT_GROUP,
            snapshot::CLUSTER_RESOURCE_SNAPSHOT
            | snapshot::RESOURCE_SNAPSHOT
            | snapshot::CLUSTER_SCHEDULING_POLICY_SNAPSHOT
            | snapshot::SCHEDULING_POLICY_SNAPSHOT,
        ) => snapshot::prepare(object),
        (crate::kinds::FLEET_PLACEMENT_GROUP, overrides::CLUSTER_RESOURCE_OVERRIDE | overrides::RESOURCE_OVERRIDE) => {
            overrides::prepare(object)
        }
        (
            crate::kinds::FLEET_PLACEMENT_GROUP,
            overrides::CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT | overrides::RESOURCE_OVERRIDE_SNAPSHOT,
        ) => overrides::prepare_snapshot(object),
        (crate::kinds::FLEET_PLACEMENT_GROUP, envelope::CLUSTER_RESOURCE_ENVELOPE | envelope::RESOURCE_ENVELOPE)
        | ("", "ConfigMap") => envelope::prepare(object),
        (
            crate::kinds::FLEET_PLACEMENT_GROUP,
            staged::CLUSTER_STAGED_UPDATE_STRATEGY
            | staged::STAGED_UPDATE_STRATEGY
            | staged::CLUSTER_STAGED_UPDATE_RUN
            | staged::STAGED_UPDATE_RUN
            | staged::CLUSTER_APPROVAL_REQUEST
            | staged::APPROVAL_REQUEST,
        ) => staged::prepare(object),
        (
            crate::kinds::FLEET_PLACEMENT_GROUP,
            eviction::CLUSTER_RESOURCE_PLACEMENT_EVICTION
            | eviction::CLUSTER_RESOURCE_PLACEMENT_DISRUPTION_BUDGET
            | eviction::RESOURCE_PLACEMENT_EVICTION
            | eviction::RESOURCE_PLACEMENT_DISRUPTION_BUDGET,
        ) => eviction::prepare(object),
        (CLUSTER_GROUP, ocm::placement::KIND) => ocm::placement::prepare(object),
        (CLUSTER_GROUP, decision::KIND) => decision::prepare(object),
        (CLUSTER_GROUP, clusterset::SET_KIND) => clusterset::prepare_set(object),
        (CLUSTER_GROUP, clusterset::BINDING_KIND) => clusterset::prepare_binding(object),
        (CLUSTER_GROUP, addon_score::KIND) => addon_score::prepare(object),
        (WORK_GROUP, manifestwork::KIND) => manifestwork::prepare(object),
        (WORK_GROUP, replicaset::KIND) => replicaset::prepare(object),
        _ => Ok(()),
    }
}

/// Checks an update of a typed kind against the stored object (both
/// prepared): what the kind's spec says may not change. Kinds without such
/// rules pass.
pub fn check_update(old: &Object, new: &Object) -> Result<(), ValidationError> {
    if placement::is_placement(new) {
        placement::check_update(old, new)
    } else if new.group() == crate::kinds::FLEET_PLACEMENT_GROUP && overrides::is_override_kind(&new.kind) {
        overrides::check_update(old, new)
    } else if staged::is_run(new) || staged::is_approval_request(new) {
        staged::check_update(old, new)
    } else {
        eviction::check_update(old, new)
    }
}
