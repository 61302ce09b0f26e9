//! POST (create), PUT (update, with the body's resourceVersion as the
//! precondition), DELETE, and the `status` subresource: admitted by
//! [`crate::admission`] and proposed through Raft exactly as `fleetctl
//! apply` is. `dryRun=All` admits without proposing.

use axum::http::StatusCode;
use axum::response::Response;
use fleet_api::time::now_rfc3339;
use fleet_api::Object;
use fleet_statemachine::Op;
use serde_json::Value;

use super::context::Ctx;
use super::errors::{KubeError, Subject};
use super::{fieldcheck, respond};
use crate::blocking::blocking;

/// Proposes one op; the object it stored, as this path shows it (through
/// the kind's read view: a ManagedCluster write answers a ManagedCluster).
async fn propose_one(ctx: &Ctx, op: Op, subject: &Subject) -> Result<Value, KubeError> {
    let (_, outcomes) = ctx.api.objects.propose(vec![op]).await.map_err(|s| KubeError::from_request(&s, subject))?;
    let stored = outcomes
        .into_iter()
        .next()
        .map(|o| (*o.object).clone())
        .ok_or_else(|| KubeError::internal("the write committed but reported no object"))?;
    let (_, view) = ctx.read_kind();
    Ok(ctx.present(&view.map_or_else(|| stored.clone(), |v| v(&stored))))
}

/// Parses a request body as one JSON object of this path's kind, with the
/// path's namespace (and, for PUT, name).
pub fn body_object(ctx: &Ctx, body: &[u8]) -> Result<Value, KubeError> {
    let mut value: Value = if ctx.content_type == super::protobuf::MEDIA_TYPE {
        super::protobuf::to_json(body)?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| KubeError::bad_request(format!("the request body is not a JSON object: {e}")))?
    };
    if !value.is_object() {
        return Err(KubeError::bad_request("the request body must be a JSON object"));
    }
    check_identity(ctx, &mut value)?;
    Ok(value)
}

/// Fills in and checks the body's apiVersion, kind, namespace and name
/// against the path.
pub fn check_identity(ctx: &Ctx, value: &mut Value) -> Result<(), KubeError> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if kind.is_empty() {
        value["kind"] = Value::String(ctx.resource.kind.clone());
    } else if kind != ctx.resource.kind {
        return Err(KubeError::bad_request(format!(
            "kind: Invalid value: {kind:?}: the path addresses {} (kind {})",
            ctx.resource.plural, ctx.resource.kind
        )));
    }
    let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if api_version.is_empty() {
        value["apiVersion"] = Value::String(ctx.group_version());
    }
    if !value.get("metadata").is_some_and(Value::is_object) {
        value["metadata"] = serde_json::json!({});
    }
    let metadata = &mut value["metadata"];
    if let Some(namespace) = &ctx.namespace {
        match metadata.get("namespace").and_then(Value::as_str) {
            None | Some("") => metadata["namespace"] = Value::String(namespace.clone()),
            Some(ns) if ns != namespace => {
                return Err(KubeError::bad_request(format!(
                    "the namespace of the provided object ({ns:?}) does not match the namespace sent on the request ({namespace:?})"
                )))
            }
            Some(_) => {}
        }
    }
    if let Some(name) = &ctx.name {
        match metadata.get("name").and_then(Value::as_str) {
            None | Some("") => metadata["name"] = Value::String(name.clone()),
            Some(n) if n != name => {
                return Err(KubeError::bad_request(format!(
                    "the name of the object ({n:?}) does not match the name on the URL ({name:?})"
                )))
            }
            Some(_) => {}
        }
    }
    fold_string_data(ctx, value);
    Ok(())
}

/// A Secret's `stringData` is write-only, as in Kubernetes: each entry
/// is stored base64-encoded in `data` (replacing an entry of the same key)
/// and `stringData` itself is not kept.
fn fold_string_data(ctx: &Ctx, value: &mut Value) {
    use base64::Engine;
    if !(ctx.resource.group.is_empty() && ctx.resource.kind == "Secret") {
        return;
    }
    let Some(object) = value.as_object_mut() else { return };
    let Some(Value::Object(strings)) = object.remove("stringData") else { return };
    if !object.get("data").is_some_and(Value::is_object) {
        object.insert("data".into(), Value::Object(serde_json::Map::new()));
    }
    if let Some(data) = object.get_mut("data").and_then(Value::as_object_mut) {
        for (key, text) in strings {
            let text = text.as_str().map(str::to_string).unwrap_or_else(|| text.to_string());
            data.insert(key, Value::String(base64::engine::general_purpose::STANDARD.encode(text)));
        }
    }
}

/// Admits `value` for storing (the validation `fleetctl apply` gets).
pub async fn admit(ctx: &Ctx, value: &Value) -> Result<Object, KubeError> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let store = ctx.api.objects.store();
    let subject = {
        let mut subject = ctx.subject();
        if let Some(name) = value.pointer("/metadata/name").and_then(Value::as_str) {
            subject.name = name.to_string();
        }
        subject
    };
    let object = blocking(move || Ok(crate::admission::admit_one(&store, &bytes)))
        .await
        .map_err(|s| ctx.fail(s))?
        .map_err(|text| KubeError::invalid(&subject, &text))?;
    crate::audit::note_object(&object);
    // A Role or binding must grant no more than its author holds.
    ctx.api
        .objects
        .authorizer()
        .check_rbac_write(&ctx.caller, &object)
        .await
        .map_err(|s| KubeError::from_request(&s, &subject))?;
    // A placement or override selects only what its author may read.
    crate::reach::check(ctx.api.objects.authorizer(), ctx.api.objects.store(), &ctx.caller, &object)
        .await
        .map_err(|s| KubeError::from_request(&s, &subject))?;
    // A ManifestWork's executor is one its author may act as.
    crate::execute_as::check(ctx.api.objects.authorizer(), ctx.api.objects.store(), &ctx.caller, &object)
        .await
        .map_err(|s| KubeError::from_request(&s, &subject))?;
    Ok(object)
}

/// `generateName`: a name that is its prefix and five random characters.
fn generate_name(value: &mut Value) {
    let named = value.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    if named {
        return;
    }
    if let Some(prefix) = value.pointer("/metadata/generateName").and_then(Value::as_str).map(str::to_string) {
        let suffix: String = uuid::Uuid::new_v4().simple().to_string().chars().take(5).collect();
        value["metadata"]["name"] = Value::String(format!("{prefix}{suffix}"));
    }
}

/// The object a dry run would have stored.
fn dry_run_result(mut object: Object, existing: Option<&Object>) -> Object {
    match existing {
        Some(old) => {
            object.metadata.uid = old.metadata.uid.clone();
            object.metadata.creation_timestamp = old.metadata.creation_timestamp.clone();
            object.metadata.resource_version = old.metadata.resource_version.clone();
            object.metadata.generation =
                if object.same_spec(old) { old.metadata.generation } else { old.metadata.generation + 1 };
            if let Some(status) = old.status() {
                object.rest.insert("status".into(), status.clone());
            }
        }
        None => {
            object.metadata.uid = uuid::Uuid::new_v4().to_string();
            object.metadata.creation_timestamp = Some(now_rfc3339());
            object.metadata.generation = 1;
            object.metadata.resource_version.clear();
        }
    }
    object
}

/// Stores `value` as a new object (201), or refuses with AlreadyExists.
pub async fn create_value(ctx: &Ctx, mut value: Value) -> Result<Response, KubeError> {
    generate_name(&mut value);
    let mut object = admit(ctx, &value).await?;
    if ctx.query.dry_run() {
        let object = dry_run_result(object, None);
        return Ok(respond::json(StatusCode::CREATED, &ctx.present(&object)));
    }
    object.metadata.resource_version.clear();
    object.metadata.uid = uuid::Uuid::new_v4().to_string();
    let mut subject = ctx.subject();
    subject.name = object.metadata.name.clone();
    let created = propose_one(ctx, Op::Create { object }, &subject).await?;
    Ok(respond::json(StatusCode::CREATED, &created))
}

/// POST `.../P`.
pub async fn create(ctx: &Ctx, body: &[u8]) -> Result<Response, KubeError> {
    let mut value = body_object(ctx, body)?;
    let warnings = fieldcheck::check(ctx, &mut value, None)?;
    if let Some(manager) = ctx.query.get("fieldManager") {
        let fields = super::fieldset::to_fields_v1(&super::fieldset::leaves(&value));
        value["metadata"]["managedFields"] = serde_json::json!([{
            "manager": manager, "operation": "Update", "apiVersion": ctx.group_version(),
            "time": now_rfc3339(), "fieldsType": "FieldsV1", "fieldsV1": fields,
        }]);
    }
    Ok(fieldcheck::with_warnings(create_value(ctx, value).await?, &warnings))
}

/// Replaces an existing object with `value` (its resourceVersion, when
/// set, is the precondition); `existing` is what a dry run answers against.
pub async fn update_value(ctx: &Ctx, value: Value, existing: Option<&Object>) -> Result<Response, KubeError> {
    let object = admit(ctx, &value).await?;
    if ctx.query.dry_run() {
        let current = match existing {
            Some(o) => o.clone(),
            None => {
                let (kind, _) = ctx.read_kind();
                let key = ctx.key(&object.metadata.name);
                ctx.api.objects.get(&kind, None, key).await.map_err(|s| ctx.fail(s))?.0
            }
        };
        let object = dry_run_result(object, Some(&current));
        return Ok(respond::ok(&ctx.present(&object)));
    }
    Ok(respond::ok(&propose_one(ctx, Op::Update { object }, &ctx.subject()).await?))
}

/// PUT `.../P/NAME`.
pub async fn update(ctx: &Ctx, body: &[u8]) -> Result<Response, KubeError> {
    let mut value = body_object(ctx, body)?;
    let warnings = fieldcheck::check(ctx, &mut value, None)?;
    Ok(fieldcheck::with_warnings(update_value(ctx, value, None).await?, &warnings))
}

/// Writes only the status of `value` (PUT or PATCH of `.../status`).
pub async fn update_status_value(ctx: &Ctx, value: Value) -> Result<Response, KubeError> {
    let object = Object::from_json(&serde_json::to_vec(&value).unwrap_or_default())
        .map_err(|e| KubeError::bad_request(format!("not a valid object: {e}")))?;
    let (object, kind) = ctx.api.objects.prepare_status(object).await.map_err(|s| ctx.fail(s))?;
    crate::audit::note_object(&object);
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    ctx.api.objects.member_scope(&ctx.caller, &kind, &namespace, "UpdateStatus").await.map_err(|s| ctx.fail(s))?;
    if ctx.query.dry_run() {
        return Ok(respond::ok(&ctx.present(&object)));
    }
    Ok(respond::ok(&propose_one(ctx, Op::UpdateStatus { object }, &ctx.subject()).await?))
}

/// PUT `.../P/NAME/status`.
pub async fn update_status(ctx: &Ctx, body: &[u8]) -> Result<Response, KubeError> {
    let mut value = body_object(ctx, body)?;
    let warnings = fieldcheck::check(ctx, &mut value, None)?;
    Ok(fieldcheck::with_warnings(update_status_value(ctx, value).await?, &warnings))
}

/// DELETE `.../P/NAME` (DeleteOptions' `preconditions.resourceVersion` honoured).
pub async fn delete(ctx: &Ctx, body: &[u8]) -> Result<Response, KubeError> {
    let name = ctx.name.clone().unwrap_or_default();
    let options: Value = if body.is_empty() {
        Value::Null
    } else if ctx.content_type == super::protobuf::MEDIA_TYPE {
        super::protobuf::to_json(body)?
    } else {
        serde_json::from_slice(body).unwrap_or(Value::Null)
    };
    let precondition = options
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
        .or(ctx.query.get("preconditions.resourceVersion"))
        .map(|rv| {
            rv.parse::<u64>().map_err(|_| {
                KubeError::bad_request(format!(
                    "preconditions.resourceVersion: Invalid value: {rv:?}: must be a number"
                ))
            })
        })
        .transpose()?;
    let (kind, view) = ctx.read_kind();
    if ctx.query.dry_run() {
        let (object, _) = ctx.api.objects.get(&kind, view, ctx.key(&name)).await.map_err(|s| ctx.fail(s))?;
        return Ok(respond::ok(&ctx.present(&object)));
    }
    let (object, _) = ctx.api.objects.delete(&kind, ctx.key(&name), precondition).await.map_err(|s| ctx.fail(s))?;
    let object = view.map_or(object.clone(), |v| v(&object));
    Ok(respond::ok(&ctx.present(&object)))
}

/// DELETE `.../P` (deletecollection): every object the label and field
/// selectors choose, each deleted (with its dependents) as `kubectl
/// delete` would; an object already gone is skipped. Answers the list of
/// what was deleted.
pub async fn delete_collection(ctx: &Ctx) -> Result<Response, KubeError> {
    let (items, _) = super::read::select(ctx).await?;
    let (kind, view) = ctx.read_kind();
    let mut deleted = Vec::new();
    for object in items {
        if ctx.query.dry_run() {
            deleted.push(ctx.present(&object));
            continue;
        }
        let key = kind.key(object.metadata.namespace.as_deref().unwrap_or_default(), &object.metadata.name);
        match ctx.api.objects.delete(&kind, key, None).await {
            Ok((gone, _)) => deleted.push(ctx.present(&view.map_or(gone.clone(), |v| v(&gone)))),
            Err(crate::error::RequestError::NotFound(_)) => {}
            Err(s) => {
                let mut subject = ctx.subject();
                subject.name = object.metadata.name.clone();
                return Err(KubeError::from_request(&s, &subject));
            }
        }
    }
    Ok(respond::ok(&serde_json::json!({
        "kind": format!("{}List", ctx.resource.kind),
        "apiVersion": ctx.group_version(),
        "metadata": {},
        "items": deleted,
    })))
}
