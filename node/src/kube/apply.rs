//! Server-side apply (`PATCH` with `application/apply-patch+yaml`), a
//! documented subset of Kubernetes': each field manager owns the leaf
//! fields it last applied (lists whole, maps per key), recorded in
//! `metadata.managedFields`. Applying sets the manager's fields, removes
//! those it applied before and no longer does (unless another manager owns
//! them), and refuses with a 409 listing every field another manager owns
//! with a different value, unless `force=true` takes them over. Other
//! writes through this API (`PUT`, merge/JSON/strategic patches, with
//! `fieldManager`) take ownership of the fields they change, as
//! `operation: Update` entries, without conflicts.
//!
//! As in Kubernetes, an object's first apply finds the fields already set
//! owned by `before-first-apply`, and kubectl's own manager (`kubectl`)
//! may take over, without a conflict, every field that kubectl's
//! client-side apply recorded in the last-applied annotation and that still
//! has the value recorded there: that is how `kubectl apply --server-side`
//! follows a client-side `kubectl apply`. Its applies then keep that
//! annotation in step with what it applied.

use std::collections::BTreeSet;

use axum::response::Response;
use fleet_api::time::now_rfc3339;
use fleet_api::Object;
use serde_json::{json, Value};

use super::context::Ctx;
use super::errors::KubeError;
use super::fieldset::{self, Path};
use super::{fieldcheck, patch, write};

/// The field manager `kubectl apply --server-side` uses.
const KUBECTL: &str = "kubectl";

/// Where kubectl's client-side apply records what it applied.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Who owns the fields of an object first applied after other writes.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// One manager's entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    fields: BTreeSet<Path>,
}

impl Entry {
    fn to_json(&self) -> Value {
        json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fieldset::to_fields_v1(&self.fields),
        })
    }
}

fn entries(document: &Value) -> Vec<Entry> {
    let listed = document.pointer("/metadata/managedFields").and_then(Value::as_array).cloned().unwrap_or_default();
    listed
        .iter()
        .map(|e| {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            Entry {
                manager: text("manager"),
                operation: text("operation"),
                api_version: text("apiVersion"),
                time: text("time"),
                fields: e.get("fieldsV1").map(fieldset::from_fields_v1).unwrap_or_default(),
            }
        })
        .collect()
}

/// Stores the non-empty entries in Kubernetes' order: by operation
/// (`Apply` before `Update`), then time, manager and apiVersion.
fn store_entries(document: &mut Value, entries: &[Entry]) {
    let mut kept: Vec<&Entry> = entries.iter().filter(|e| !e.fields.is_empty()).collect();
    kept.sort_by(|a, b| {
        (&a.operation, &a.time, &a.manager, &a.api_version).cmp(&(&b.operation, &b.time, &b.manager, &b.api_version))
    });
    let listed: Vec<Value> = kept.into_iter().map(Entry::to_json).collect();
    document["metadata"]["managedFields"] = Value::Array(listed);
}

fn parse_body(body: &[u8]) -> Result<Value, KubeError> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => serde_yaml_ng::from_slice(body)
            .map_err(|e| KubeError::bad_request(format!("the apply patch is neither JSON nor YAML: {e}")))?,
    };
    if value.is_object() {
        Ok(value)
    } else {
        Err(KubeError::bad_request("the apply patch must be one object"))
    }
}

/// PATCH with `application/apply-patch+yaml`.
pub async fn apply(ctx: &Ctx, body: &[u8], status: bool) -> Result<Response, KubeError> {
    let Some(manager) = ctx.query.get("fieldManager").map(str::to_string) else {
        return Err(KubeError::bad_request("fieldManager: Required value: is required for apply requests"));
    };
    let mut applied = parse_body(body)?;
    let sent = applied.clone();
    write::check_identity(ctx, &mut applied)?;
    let warnings = fieldcheck::check(ctx, &mut applied, None)?;
    Ok(fieldcheck::with_warnings(apply_document(ctx, manager, applied, &sent, status).await?, &warnings))
}

/// Server-side apply of `applied` (checked; `sent` is the body as sent) by `manager`.
async fn apply_document(
    ctx: &Ctx,
    manager: String,
    applied: Value,
    sent: &Value,
    status: bool,
) -> Result<Response, KubeError> {
    let current = patch::current(ctx).await?;
    if current.is_none() && !status {
        // An apply that creates needs `create` as well as `patch`, as in Kubernetes.
        let attributes = fleet_rbac::Attributes::resource(
            "create",
            &ctx.resource.group,
            &ctx.resource.plural,
            ctx.namespace.as_deref().unwrap_or_default(),
            "",
        );
        ctx.api.objects.authorizer().check(&ctx.caller, &attributes).await.map_err(|s| {
            KubeError::forbidden(format!(
                "{} {:?} is forbidden: {}",
                ctx.resource.plural,
                ctx.subject().name,
                s.message()
            ))
        })?;
    }
    if status {
        let Some(current) = current else { return Err(KubeError::not_found(&ctx.subject())) };
        let mut document = ctx.present(&current);
        if let Some(new_status) = applied.get("status") {
            fieldset::merge(&mut document["status"], new_status);
        }
        return write::update_status_value(ctx, document).await;
    }
    let new_fields = fieldset::leaves(&applied);
    let entry = |fields: BTreeSet<Path>| Entry {
        manager: manager.clone(),
        operation: "Apply".into(),
        api_version: ctx.group_version(),
        time: now_rfc3339(),
        fields,
    };
    let Some(current) = current else {
        let mut document = applied;
        store_entries(&mut document, &[entry(new_fields)]);
        return write::create_value(ctx, document).await;
    };
    let live = ctx.present(&current);
    let mut document = live.clone();
    let mut managers = entries(&document);
    if managers.is_empty() {
        // Written without field tracking so far: what is there belongs to
        // whoever wrote it, which the apply must not silently take over.
        managers.push(Entry {
            manager: BEFORE_FIRST_APPLY.into(),
            operation: "Update".into(),
            api_version: ctx.group_version(),
            time: now_rfc3339(),
            fields: fieldset::leaves(&live),
        });
    }
    let before: BTreeSet<Path> = managers
        .iter()
        .filter(|e| e.manager == manager && e.operation == "Apply")
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    for dropped in before.difference(&new_fields) {
        let owned_elsewhere = managers
            .iter()
            .filter(|e| e.manager != manager)
            .any(|e| e.fields.iter().any(|p| fieldset::overlaps(p, dropped)));
        if !owned_elsewhere {
            fieldset::remove(&mut document, dropped);
        }
    }
    let mut without_identity = applied.clone();
    if let Some(meta) = without_identity.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| ["labels", "annotations", "ownerReferences", "finalizers"].contains(&k.as_str()));
    }
    fieldset::merge(&mut document, &without_identity);
    // Conflicts compare the result as it would be stored (defaults filled
    // in) with the live object: only a field whose value would change is one.
    let result = ctx.present(&write::admit(ctx, &document).await?);
    let conflicts = conflicts(&managers, &manager, &new_fields, &live, &result);
    let mut blocking = conflicts.clone();
    if manager == KUBECTL {
        // Fields client-side apply set and nobody changed since are kubectl's to take.
        let migrating = last_applied_fields(ctx, &live);
        blocking.retain(|(_, path)| !migrating.contains(path));
    }
    if !blocking.is_empty() && !ctx.query.flag("force") {
        let listed: Vec<(String, String)> =
            blocking.iter().map(|(m, path)| (m.clone(), fieldset::dotted(path))).collect();
        return Err(KubeError::apply_conflicts(&ctx.subject(), &listed));
    }
    // Taken over: the others give up the fields whose value this apply
    // changes; those it sets to the value they have stay shared.
    for (owner, path) in &conflicts {
        for other in managers.iter_mut().filter(|e| &e.manager == owner) {
            other.fields.retain(|p| !fieldset::overlaps(p, path));
        }
    }
    // An apply that changes nothing keeps its entry as it was (no new version).
    let previous = managers.iter().find(|e| e.manager == manager && e.operation == "Apply").cloned();
    let mut own = entry(new_fields);
    if let Some(previous) = previous.filter(|p| p.fields == own.fields && p.api_version == own.api_version) {
        own.time = previous.time;
    }
    match managers.iter().position(|e| e.manager == manager && e.operation == "Apply") {
        Some(i) => managers[i] = own,
        None => managers.push(own),
    }
    store_entries(&mut document, &managers);
    if manager == KUBECTL {
        refresh_last_applied(&mut document, sent);
    }
    document["metadata"]["resourceVersion"] = Value::String(current.metadata.resource_version.clone());
    write::update_value(ctx, document, Some(&current)).await
}

/// The fields of `live`'s last-applied annotation (written by kubectl's
/// client-side apply) that still hold the values recorded there; none when
/// the annotation is absent, unreadable or of another apiVersion.
fn last_applied_fields(ctx: &Ctx, live: &Value) -> BTreeSet<Path> {
    let recorded = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok());
    let Some(recorded) = recorded else { return BTreeSet::new() };
    if recorded.get("apiVersion").and_then(Value::as_str) != Some(ctx.group_version().as_str()) {
        return BTreeSet::new();
    }
    fieldset::leaves(&recorded)
        .into_iter()
        .filter(|path| fieldset::get(&recorded, path) == fieldset::get(live, path))
        .collect()
}

/// Rewrites an existing last-applied annotation to what kubectl's
/// server-side apply just sent, so a later client-side apply computes its
/// patch from the current configuration rather than an older one.
fn refresh_last_applied(document: &mut Value, sent: &Value) {
    let present = document
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .is_some_and(|text| !text.is_empty());
    if !present {
        return;
    }
    let mut configuration = sent.clone();
    if let Some(annotations) = configuration.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        annotations.remove(LAST_APPLIED);
    }
    // Encoded as kubectl encodes it: compact JSON, keys sorted, one line.
    document["metadata"]["annotations"][LAST_APPLIED] = Value::String(format!("{configuration}\n"));
}

/// `(manager, field)` for every field `manager` sets that another owns with a different value.
fn conflicts(
    managers: &[Entry],
    manager: &str,
    new_fields: &BTreeSet<Path>,
    live: &Value,
    applied: &Value,
) -> Vec<(String, Path)> {
    let mut found = Vec::new();
    for other in managers.iter().filter(|e| e.manager != manager) {
        for path in new_fields {
            let owned = other.fields.iter().any(|p| fieldset::overlaps(p, path));
            if owned && fieldset::get(live, path) != fieldset::get(applied, path) {
                found.push((other.manager.clone(), path.clone()));
            }
        }
    }
    found
}

/// Records a non-apply write: `manager` (the request's `fieldManager`, or
/// the client's name) takes the fields whose value changed; fields that
/// disappeared leave every manager's set.
pub fn record_update(ctx: &Ctx, current: &Object, document: &mut Value) {
    let manager = ctx.query.get("fieldManager").unwrap_or("unknown").to_string();
    let live = ctx.present(current);
    let mut managers = entries(document);
    if managers.is_empty() {
        managers = entries(&live);
    }
    let new_leaves = fieldset::leaves(document);
    let old_leaves = fieldset::leaves(&live);
    let changed: BTreeSet<Path> =
        new_leaves.iter().filter(|p| fieldset::get(&live, p) != fieldset::get(document, p)).cloned().collect();
    let gone: BTreeSet<Path> = old_leaves.difference(&new_leaves).cloned().collect();
    if changed.is_empty() && gone.is_empty() {
        store_entries(document, &managers);
        return;
    }
    for e in managers.iter_mut() {
        e.fields.retain(|p| !gone.contains(p) && (e.manager == manager || !changed.contains(p)));
    }
    match managers.iter_mut().find(|e| e.manager == manager && e.operation == "Update") {
        Some(e) => {
            e.fields.extend(changed);
            e.time = now_rfc3339();
        }
        None if !changed.is_empty() => managers.push(Entry {
            manager,
            operation: "Update".into(),
            api_version: ctx.group_version(),
            time: now_rfc3339(),
            fields: changed,
        }),
        None => {}
    }
    store_entries(document, &managers);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_managers_changed_field_conflicts() {
        let owned = |m: &str, path: &[&str]| Entry {
            manager: m.into(),
            operation: "Apply".into(),
            api_version: "v1".into(),
            time: String::new(),
            fields: [path.iter().map(|s| s.to_string()).collect::<Path>()].into_iter().collect(),
        };
        let managers = vec![owned("kubectl", &["data", "a"]), owned("other", &["data", "b"])];
        let live = json!({"data": {"a": "1", "b": "2"}});
        let applied = json!({"data": {"a": "1", "b": "3"}});
        let fields = fieldset::leaves(&applied);
        let found = conflicts(&managers, "kubectl", &fields, &live, &applied);
        assert_eq!(found, vec![("other".to_string(), vec!["data".to_string(), "b".into()])]);
        let same = json!({"data": {"a": "1", "b": "2"}});
        assert!(conflicts(&managers, "kubectl", &fieldset::leaves(&same), &live, &same).is_empty());
    }
}
