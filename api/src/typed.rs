//! Typed Fleet kinds: decoding a part of a generic object into its Rust type
//! with field paths in errors (unknown fields refused), and the one entry
//! point that validates and defaults every typed kind Fleet knows so far.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::ocm::{self, addon_score, clusterset, decision, manifestwork, replicaset, CLUSTER_GROUP, WORK_GROUP};
use crate::validation::{FieldError, ValidationError};
use crate::{binding, member, placement, snapshot, work, Object};

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

/// Decodes a top-level `part` of an object (`spec`, `status`; an absent
/// part reads as `{}`) with its field path in the error, which names the
/// object.
pub fn decode_part<T: DeserializeOwned>(object: &Object, part: &str) -> Result<T, ValidationError> {
    let raw = object.rest.get(part).cloned().unwrap_or(Value::Object(Default::default()));
    decode(&raw, part).map_err(|e| ValidationError {
        kind: object.kind.clone(),
        name: object.metadata.name.clone(),
        errors: vec![e],
    })
}

/// A stored object's `part` (admission guaranteed it decodes), or the
/// default when it is absent or somehow does not.
pub fn part_or_default<T: DeserializeOwned + Default>(object: &Object, part: &str) -> T {
    object.rest.get(part).and_then(|v| decode(v, part).ok()).unwrap_or_default()
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
