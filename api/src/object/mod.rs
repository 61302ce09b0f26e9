//! The generic object: typed metadata, everything else kept as JSON.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod object_de;

/// A reference from a dependent object to the object that owns it; deleting the
/// owner deletes the dependent in the same command (cascade).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// API version of the owner.
    pub api_version: String,
    /// Kind of the owner.
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// Uid of the owner.
    #[serde(default)]
    pub uid: String,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether the owner's deletion waits for this object's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    /// The controller reference to `owner`: deleting it deletes the dependent
    /// (placements own their snapshots and bindings, bindings their Works).
    pub fn controller_of(owner: &Object) -> OwnerReference {
        OwnerReference {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            name: owner.metadata.name.clone(),
            uid: owner.metadata.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// Kubernetes-style object metadata. Server-set fields (`uid`,
/// `resourceVersion`, `generation`, `creationTimestamp`) are decided by the
/// proposer and the state machine, never trusted from a user's document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Name of the object, unique within its kind and namespace.
    #[serde(default)]
    pub name: String,
    /// A prefix the server completes into a unique name when name is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// Namespace of a namespaced object (default: "default").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Set by the hub: unique id of this incarnation of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The Raft log index of the write that last changed the object, as a
    /// decimal string (Kubernetes' wire format). Empty when not set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Set by the hub: grows on every spec change.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: i64,
    /// Set by the hub: RFC 3339 creation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// Set by the hub while the object is being deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// Labels, selected by label selectors.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations: arbitrary metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Objects this one belongs to: deleting the owner deletes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// Keys that hold the object's deletion until each is removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// Which field manager owns which fields (server-side apply through the
    /// Kubernetes-compatible API), in Kubernetes' `managedFields` shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<Value>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

impl ObjectMeta {
    /// The resourceVersion as a number; `None` when unset or not a number.
    pub fn resource_version_number(&self) -> Option<u64> {
        if self.resource_version.is_empty() {
            None
        } else {
            self.resource_version.parse().ok()
        }
    }

    /// Sets the resourceVersion from a log index.
    pub fn set_resource_version(&mut self, index: u64) {
        self.resource_version = index.to_string();
    }
}

/// Any Kubernetes-style document: `apiVersion`, `kind`, typed `metadata`, and
/// the rest (`spec`, `status`, `data`, ...) kept as JSON.
///
/// Deserialized by hand ([`object_de`]): serde's derive for a `flatten`ed
/// field buffers the whole document before reading it, which made decoding
/// objects one of the larger CPU costs of a busy hub.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Object {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Every other top-level field, in document order as JSON.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Object {
    /// The API group of `apiVersion` (`""` for the core group).
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    /// The `spec` field, if any.
    pub fn spec(&self) -> Option<&Value> {
        self.rest.get("spec")
    }

    /// The `status` field, if any.
    pub fn status(&self) -> Option<&Value> {
        self.rest.get("status")
    }

    /// Whether everything but `metadata` and `status` is equal: what a change
    /// of makes a new `generation`. For kinds without `spec` (ConfigMap
    /// `data`, ...) every non-status field counts as spec. Compares in place.
    pub fn same_spec(&self, other: &Object) -> bool {
        let spec_len = |o: &Object| o.rest.len() - usize::from(o.rest.contains_key("status"));
        // By key, not by position: equal whatever order the maps keep.
        spec_len(self) == spec_len(other)
            && self.rest.iter().filter(|(k, _)| k.as_str() != "status").all(|(k, v)| other.rest.get(k) == Some(v))
    }

    /// Drops the fields a user may not set (`uid`, `generation`,
    /// `creationTimestamp`, `deletionTimestamp`, `status`); `resourceVersion`
    /// is kept because it is the optimistic-concurrency precondition.
    pub fn strip_server_fields(&mut self) {
        self.metadata.uid.clear();
        self.metadata.generation = 0;
        self.metadata.creation_timestamp = None;
        self.metadata.deletion_timestamp = None;
        self.rest.remove("status");
    }

    /// Serializes to compact JSON. Serializing this type cannot fail (string
    /// keys, no non-finite floats can be held in a `serde_json::Value`).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses one object from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Object, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// The API group of an `apiVersion` string: `apps/v1` → `apps`, `v1` → `""`.
pub fn group_of(api_version: &str) -> &str {
    match api_version.rsplit_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// Identifies one stored object independently of API version: group, kind,
/// namespace (empty for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    /// Builds a key from its parts.
    pub fn new(group: &str, kind: &str, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key of an object as it will be stored.
    pub fn of(object: &Object) -> ObjectKey {
        ObjectKey::new(
            object.group(),
            &object.kind,
            object.metadata.namespace.as_deref().unwrap_or(""),
            &object.metadata.name,
        )
    }

    /// The storage key: `group/Kind/namespace/name`. Kinds, groups, namespaces
    /// and names never contain `/`, so the encoding is unambiguous and keys of
    /// one kind (and one namespace) are contiguous.
    pub fn storage_key(&self) -> String {
        format!("{}/{}/{}/{}", self.group, self.kind, self.namespace, self.name)
    }

    /// Parses a storage key back into its parts.
    pub fn from_storage_key(key: &str) -> Option<ObjectKey> {
        let mut parts = key.splitn(4, '/');
        Some(ObjectKey::new(parts.next()?, parts.next()?, parts.next()?, parts.next()?))
    }

    /// The storage-key prefix of every object of a kind, or of a kind in one
    /// namespace.
    pub fn prefix(group: &str, kind: &str, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) => format!("{group}/{kind}/{ns}/"),
            None => format!("{group}/{kind}/"),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} \"{}\"", self.kind, self.name)
        } else {
            write!(f, "{} \"{}/{}\"", self.kind, self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_unknown_fields_and_keeps_metadata_typed() {
        let json = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"app","labels":{"a":"b"}},"spec":{"replicas":3}}"#;
        let obj = Object::from_json(json.as_bytes()).unwrap();
        assert_eq!(obj.group(), "apps");
        assert_eq!(obj.metadata.labels.get("a").map(String::as_str), Some("b"));
        assert_eq!(obj.spec().unwrap()["replicas"], 3);
        let back: Value = serde_json::from_slice(&obj.to_json()).unwrap();
        let orig: Value = serde_json::from_str(json).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn storage_key_round_trips() {
        let key = ObjectKey::new("", "ConfigMap", "ns", "cm");
        assert_eq!(key.storage_key(), "/ConfigMap/ns/cm");
        assert_eq!(ObjectKey::from_storage_key(&key.storage_key()), Some(key));
    }

    #[test]
    fn same_spec_ignores_status_and_metadata_only() {
        let a: Object = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"1"},"status":{"x":1}}"#,
        )
        .unwrap();
        let mut b = a.clone();
        b.rest.insert("status".into(), serde_json::json!({"x": 2}));
        b.metadata.labels.insert("l".into(), "v".into());
        assert!(a.same_spec(&b));
        b.rest.insert("data".into(), serde_json::json!({"k": "2"}));
        assert!(!a.same_spec(&b));
        b.rest.insert("data".into(), serde_json::json!({"k": "1"}));
        b.rest.insert("extra".into(), serde_json::json!(true));
        assert!(!a.same_spec(&b));
    }

    #[test]
    fn strip_keeps_resource_version() {
        let mut obj: Object = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"x","resourceVersion":"7","generation":3},"status":{"a":1}}"#,
        )
        .unwrap();
        obj.strip_server_fields();
        assert_eq!(obj.metadata.resource_version_number(), Some(7));
        assert!(obj.metadata.uid.is_empty());
        assert!(obj.status().is_none());
    }
}
