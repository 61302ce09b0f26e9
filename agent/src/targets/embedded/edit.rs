//! Out-of-band edits of the simulated cluster: what a person with `kubectl`
//! on the member cluster could do behind Fleet's back — create or update an
//! object as another field manager, patch it, delete it — so that drift,
//! takeover (`whenToTakeOver`) and co-ownership can be shown end to end.
//!
//! Each edit goes through the same code as Fleet's own writes (admission,
//! server defaults, `generation` and `resourceVersion` bumps, durable
//! store), so the agent sees it exactly as it would see a real cluster
//! change. What is Fleet's is left alone: an edit never adds or removes
//! Fleet's owner annotation unless it names it itself, and never touches
//! what Fleet last applied (the three-way merge base of its next apply).
//! A created object carries no owner annotation — it is not Fleet's — and
//! may carry `ownerReferences`.
//!
//! Who may call this while an agent runs is the business of
//! [`crate::edits`]: only the agent's own process, so that its in-memory
//! records and the files never disagree.

use std::time::SystemTime;

use fleet_api::kinds::Scope;
use fleet_api::{Object, ObjectKey};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{desired_fields, key_of, merge, object_map, validate, EmbeddedTarget, Inner};
use crate::targets::{ResourceId, TargetError};

/// One edit, as `kubectl` on the member cluster would make it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Edit {
    /// `kubectl apply` by another field manager: creates the object, or
    /// sets the fields it gives on the live one (maps merged key by key,
    /// lists and scalars replaced; nothing removed). A namespaced object
    /// without a namespace goes to `default`.
    Apply {
        /// The object (server-set fields and `status` are ignored); boxed,
        /// as objects are far larger than the other edits.
        object: Box<Object>,
    },
    /// `kubectl patch --type merge`: an RFC 7386 JSON merge patch (`null`
    /// removes a field). The object's identity cannot be patched.
    Patch {
        /// The object.
        id: ResourceId,
        /// The merge patch.
        patch: Value,
    },
    /// `kubectl delete` (a Namespace takes its objects along, a CRD its custom resources).
    Delete {
        /// The object.
        id: ResourceId,
    },
}

/// What an edit did, in `kubectl`'s words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EditOutcome {
    Created,
    Configured,
    Unchanged,
    Patched,
    /// A patch that changed nothing.
    PatchedNoChange,
    Deleted,
}

impl EditOutcome {
    /// `created`, `configured`, `patched (no change)`...
    pub fn as_str(self) -> &'static str {
        match self {
            EditOutcome::Created => "created",
            EditOutcome::Configured => "configured",
            EditOutcome::Unchanged => "unchanged",
            EditOutcome::Patched => "patched",
            EditOutcome::PatchedNoChange => "patched (no change)",
            EditOutcome::Deleted => "deleted",
        }
    }
}

/// The result of an edit: what happened, to which object, and the object
/// as it is now (none once deleted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edited {
    /// What happened.
    pub outcome: EditOutcome,
    /// The object edited.
    pub id: ResourceId,
    /// The live object afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Object>,
}

impl Edited {
    /// `configmap/web-config created`, `deployment.apps/web patched`.
    pub fn line(&self) -> String {
        let group = if self.id.group.is_empty() { String::new() } else { format!(".{}", self.id.group) };
        format!("{}{group}/{} {}", self.id.kind.to_ascii_lowercase(), self.id.name, self.outcome.as_str())
    }
}

impl EmbeddedTarget {
    /// Makes one out-of-band edit (see the module doc). Only the process
    /// holding the store (the running agent, or [`crate::edits`] when none
    /// runs) may call this.
    pub fn edit(&self, edit: &Edit) -> Result<Edited, TargetError> {
        match edit {
            Edit::Apply { object } => self.inner.apply_unmanaged(object),
            Edit::Patch { id, patch } => self.inner.patch(id, patch),
            Edit::Delete { id } => match self.inner.delete(id)? {
                true => Ok(Edited { outcome: EditOutcome::Deleted, id: id.clone(), object: None }),
                false => Err(not_found(id)),
            },
        }
    }
}

fn not_found(id: &ResourceId) -> TargetError {
    TargetError::Invalid(format!("{id} not found"))
}

impl Inner {
    /// [`Edit::Apply`].
    fn apply_unmanaged(&self, object: &Object) -> Result<Edited, TargetError> {
        let mut state = self.lock();
        let mut object = object.clone();
        let scope = validate::scope_of(&object, |g, k| Inner::crd_scope(&state, g, k));
        if scope == Scope::Namespaced && object.metadata.namespace.as_deref().unwrap_or_default().is_empty() {
            object.metadata.namespace = Some("default".to_string());
        }
        let key = self.admit(&state, &object)?;
        let given = desired_fields(&object, None)?;
        let id = ResourceId::of(&object);
        let now = SystemTime::now();
        let Some(record) = state.records.get(&key).cloned() else {
            let live = self.create(&mut state, key, &given, None, now)?;
            return Ok(Edited { outcome: EditOutcome::Created, id, object: Some(live) });
        };
        let mut merged = object_map(&record.object)?;
        merge::three_way(&mut merged, &Map::new(), &given);
        let last_applied = record.last_applied.clone();
        let (outcome, live) = self.update(&mut state, &key, record, merged, last_applied, now)?;
        let outcome = if outcome == crate::targets::ApplyOutcome::Unchanged {
            EditOutcome::Unchanged
        } else {
            EditOutcome::Configured
        };
        Ok(Edited { outcome, id, object: Some(live) })
    }

    /// [`Edit::Patch`].
    fn patch(&self, id: &ResourceId, patch: &Value) -> Result<Edited, TargetError> {
        let Value::Object(patch) = patch else {
            // Its kind only, not the value: the answer is logged, and a patch
            // meant for a Secret may hold its data.
            let kind = match patch {
                Value::Array(_) => "a list",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            };
            return Err(TargetError::Invalid(format!(
                "cannot patch {id}: a JSON merge patch is a JSON object, not {kind}"
            )));
        };
        let mut state = self.lock();
        let key = key_of(id);
        let record = state.records.get(&key).cloned().ok_or_else(|| not_found(id))?;
        let mut merged = object_map(&record.object)?;
        merge::three_way(&mut merged, &Map::new(), patch);
        merged.remove("status");
        let patched: Object = serde_json::from_value(Value::Object(merged.clone()))
            .map_err(|e| TargetError::Invalid(format!("cannot patch {id}: the result is not an object: {e}")))?;
        if ObjectKey::of(&patched) != key || patched.api_version != record.object.api_version {
            return Err(TargetError::Invalid(format!(
                "cannot patch {id}: apiVersion, kind, metadata.name and metadata.namespace cannot be changed"
            )));
        }
        self.admit(&state, &patched)?;
        let last_applied = record.last_applied.clone();
        let (outcome, live) = self.update(&mut state, &key, record, merged, last_applied, SystemTime::now())?;
        let outcome = if outcome == crate::targets::ApplyOutcome::Unchanged {
            EditOutcome::PatchedNoChange
        } else {
            EditOutcome::Patched
        };
        Ok(Edited { outcome, id: ResourceId::of(&live), object: Some(live) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::embedded::SimConfig;
    use crate::targets::{ApplyMode, ApplyRequest, Target, OWNER_ANNOTATION};
    use serde_json::json;

    fn object(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn cm_id(name: &str) -> ResourceId {
        ResourceId {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "app".into(),
            name: name.into(),
        }
    }

    /// A cluster with namespace `app` and ConfigMap `c` placed by Fleet.
    async fn cluster(dir: &tempfile::TempDir) -> EmbeddedTarget {
        let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
        target
            .create_unmanaged(&object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}})))
            .unwrap();
        let cm = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "app"}, "data": {"a": "1", "b": "2"}}));
        let request = ApplyRequest { manifest: &cm, mode: ApplyMode::ClientSide, owner: "ns/w", take_over: false };
        target.apply(request).await.unwrap();
        target
    }

    #[tokio::test]
    async fn apply_creates_unowned_objects_and_updates_only_the_given_fields() {
        let dir = tempfile::tempdir().unwrap();
        let target = cluster(&dir).await;
        let owned = object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "theirs",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "u"}]},
            "data": {"k": "v"}}));
        let created = target.edit(&Edit::Apply { object: Box::new(owned.clone()) }).unwrap();
        assert_eq!(created.line(), "configmap/theirs created");
        let live = created.object.unwrap();
        assert_eq!(live.metadata.namespace.as_deref(), Some("default"), "kubectl's default namespace");
        assert!(!live.metadata.annotations.contains_key(OWNER_ANNOTATION));
        assert_eq!(live.metadata.owner_references.len(), 1);
        assert_eq!(target.edit(&Edit::Apply { object: Box::new(owned) }).unwrap().outcome, EditOutcome::Unchanged);

        // Updating Fleet's object: the given field replaced, the rest and Fleet's marks kept.
        let before = target.get(&cm_id("c")).await.unwrap().unwrap();
        let edit =
            object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "app",
            "labels": {"by": "kubectl"}}, "data": {"a": "edited"}, "status": {"ignored": true}}));
        let edited = target.edit(&Edit::Apply { object: Box::new(edit) }).unwrap();
        assert_eq!(edited.line(), "configmap/c configured");
        let after = edited.object.unwrap();
        assert_eq!(after.rest["data"], json!({"a": "edited", "b": "2"}));
        assert_eq!(after.metadata.annotations.get(OWNER_ANNOTATION).map(String::as_str), Some("ns/w"));
        assert_eq!(after.metadata.labels.get("by").map(String::as_str), Some("kubectl"));
        assert_eq!(after.metadata.generation, before.metadata.generation + 1);
        assert!(after.metadata.resource_version_number() > before.metadata.resource_version_number());
        assert_eq!(after.metadata.uid, before.metadata.uid);
        let record = target.inner.lock().records.get(&key_of(&cm_id("c"))).cloned().unwrap();
        assert_eq!(record.last_applied.unwrap()["data"], json!({"a": "1", "b": "2"}), "Fleet's merge base untouched");

        // Fleet applies again: its fields win, the label added by someone else stays.
        let cm = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "app"}, "data": {"a": "1", "b": "2"}}));
        let request = ApplyRequest { manifest: &cm, mode: ApplyMode::ClientSide, owner: "ns/w", take_over: false };
        let again = target.apply(request).await.unwrap().live;
        assert_eq!(again.rest["data"], json!({"a": "1", "b": "2"}));
        assert_eq!(again.metadata.labels.get("by").map(String::as_str), Some("kubectl"));
    }

    #[tokio::test]
    async fn patch_merges_removes_with_null_and_refuses_identity_changes() {
        let dir = tempfile::tempdir().unwrap();
        let target = cluster(&dir).await;
        let patched =
            target.edit(&Edit::Patch { id: cm_id("c"), patch: json!({"data": {"a": "x", "b": null}}) }).unwrap();
        assert_eq!(patched.line(), "configmap/c patched");
        assert_eq!(patched.object.unwrap().rest["data"], json!({"a": "x"}));
        let same = target.edit(&Edit::Patch { id: cm_id("c"), patch: json!({"data": {"a": "x"}}) }).unwrap();
        assert_eq!(same.outcome, EditOutcome::PatchedNoChange);
        let renamed = target.edit(&Edit::Patch { id: cm_id("c"), patch: json!({"metadata": {"name": "d"}}) });
        assert!(matches!(renamed, Err(TargetError::Invalid(m)) if m.contains("cannot be changed")));
        let missing = target.edit(&Edit::Patch { id: cm_id("nope"), patch: json!({}) });
        assert!(matches!(missing, Err(TargetError::Invalid(m)) if m.contains("not found")));
        let not_a_map = target.edit(&Edit::Patch { id: cm_id("c"), patch: json!([1]) });
        assert!(matches!(not_a_map, Err(TargetError::Invalid(m)) if m.contains("JSON object")));
        // Survives a restart: it went through the store.
        drop(target);
        let reopened = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
        assert_eq!(reopened.get(&cm_id("c")).await.unwrap().unwrap().rest["data"], json!({"a": "x"}));
    }

    #[tokio::test]
    async fn delete_removes_and_reports_a_missing_object() {
        let dir = tempfile::tempdir().unwrap();
        let target = cluster(&dir).await;
        assert_eq!(target.edit(&Edit::Delete { id: cm_id("c") }).unwrap().line(), "configmap/c deleted");
        assert!(target.get(&cm_id("c")).await.unwrap().is_none());
        assert!(
            matches!(target.edit(&Edit::Delete { id: cm_id("c") }), Err(TargetError::Invalid(m)) if m.contains("not found"))
        );
    }

    #[test]
    fn edits_travel_as_json() {
        let edit = Edit::Patch { id: cm_id("c"), patch: json!({"data": {"a": null}}) };
        let text = serde_json::to_string(&edit).unwrap();
        assert!(text.starts_with(r#"{"op":"patch""#), "{text}");
        assert_eq!(serde_json::from_str::<Edit>(&text).unwrap(), edit);
    }
}
