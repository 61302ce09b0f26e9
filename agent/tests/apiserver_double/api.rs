//! What the double answers: discovery documents, objects and lists, server-side
//! apply and deletion, with the status codes and `Status` bodies of a real
//! API server.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::ssa::{self, dotted};
use super::{Key, Recorded, ResourceType, State, Stored};

/// The content type of server-side apply.
pub const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// A `Status` object as the API server sends with errors.
pub fn status(code: u16, reason: &str, message: &str, details: Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "details": details, "code": code})
}

/// The answer for paths the server has no handler for.
fn no_route() -> (u16, Value) {
    (404, status(404, "NotFound", "the server could not find the requested resource", json!({})))
}

/// Decodes `a=b&c=d` (percent-encoding and `+`).
pub fn parse_query(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match text.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(b) => {
                    out.push(b);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The collection or object URL of `resource`.
pub fn object_path(resource: &ResourceType, namespace: &str, name: &str) -> String {
    let base = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    let scoped = if resource.namespaced { format!("{base}/namespaces/{namespace}") } else { base };
    format!("{scoped}/{}/{name}", resource.plural)
}

/// The served resource, namespace and name of an object.
pub fn identify(state: &State, object: &Value) -> Option<(ResourceType, String, String)> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let resource = state.resources.iter().find(|r| r.api_version() == api_version && r.kind == kind)?.clone();
    let namespace = if resource.namespaced {
        object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string()
    } else {
        String::new()
    };
    let name = object.pointer("/metadata/name")?.as_str()?.to_string();
    Some((resource, namespace, name))
}

/// Handles one request.
pub fn handle(state: &mut State, request: &Recorded) -> (u16, Value) {
    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api"] => return (200, api_versions(state)),
        ["apis"] => return (200, group_list(state)),
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return no_route(),
    };
    if !state.resources.iter().any(|r| r.group == group && r.version == version) {
        return no_route();
    }
    if rest.is_empty() {
        return if request.method == "GET" { (200, resource_list(state, group, version)) } else { no_route() };
    }
    let (namespace, plural, name) = match rest {
        ["namespaces", namespace, plural, name @ ..] if name.len() <= 1 => (Some(*namespace), *plural, name.first()),
        [plural, name @ ..] if name.len() <= 1 => (None, *plural, name.first()),
        _ => return no_route(),
    };
    let Some(resource) =
        state.resources.iter().find(|r| r.group == group && r.version == version && r.plural == plural).cloned()
    else {
        return no_route();
    };
    if namespace.is_some() && !resource.namespaced {
        return no_route();
    }
    let namespace = namespace.unwrap_or("").to_string();
    match (request.method.as_str(), name) {
        ("GET", None) => list(state, &resource, &namespace, request),
        ("GET", Some(name)) => match state.objects.get(&key(&resource, &namespace, name)) {
            Some(stored) => (200, stored.object.clone()),
            None => not_found(&resource, name),
        },
        ("PATCH", Some(name)) if resource.namespaced && namespace.is_empty() => not_found(&resource, name),
        ("PATCH", Some(name)) => apply(state, &resource, &namespace, name, request),
        ("DELETE", Some(name)) => delete(state, &resource, &namespace, name),
        _ => (
            405,
            status(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
                json!({}),
            ),
        ),
    }
}

fn key(resource: &ResourceType, namespace: &str, name: &str) -> Key {
    (resource.group.clone(), resource.plural.clone(), namespace.to_string(), name.to_string())
}

/// `deployments.apps "web"` / `configmaps "c"`.
fn qualified(resource: &ResourceType, name: &str) -> String {
    if resource.group.is_empty() {
        format!("{} {name:?}", resource.plural)
    } else {
        format!("{}.{} {name:?}", resource.plural, resource.group)
    }
}

fn not_found(resource: &ResourceType, name: &str) -> (u16, Value) {
    let details = json!({"name": name, "group": resource.group, "kind": resource.plural});
    (404, status(404, "NotFound", &format!("{} not found", qualified(resource, name)), details))
}

fn api_versions(state: &State) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": state.address}]})
}

fn group_list(state: &State) -> Value {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in state.resources.iter().filter(|r| !r.group.is_empty()) {
        let versions = groups.entry(&r.group).or_default();
        if !versions.contains(&r.version.as_str()) {
            versions.push(&r.version);
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(name, versions)| {
            let versions: Vec<Value> =
                versions.iter().map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v})).collect();
            json!({"name": name, "preferredVersion": versions[0].clone(), "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn resource_list(state: &State, group: &str, version: &str) -> Value {
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    let mut resources = Vec::new();
    for r in state.resources.iter().filter(|r| r.group == group && r.version == version) {
        let singular = r.kind.to_lowercase();
        resources.push(json!({"name": r.plural, "singularName": singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}));
        resources.push(json!({"name": format!("{}/status", r.plural), "singularName": "",
            "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get", "patch", "update"]}));
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

/// `a.b=c` / `a.b!=c` terms, comma-separated, all of which must hold.
fn matches_fields(object: &Value, selector: &str) -> bool {
    selector.split(',').filter(|t| !t.is_empty()).all(|term| {
        let (path, wanted, equal) = match term.split_once("!=") {
            Some((p, v)) => (p, v, false),
            None => match term.split_once("==").or_else(|| term.split_once('=')) {
                Some((p, v)) => (p, v, true),
                None => return false,
            },
        };
        let actual = path.split('.').try_fold(object, |v, k| v.get(k)).and_then(Value::as_str).unwrap_or("");
        (actual == wanted) == equal
    })
}

fn list(state: &State, resource: &ResourceType, namespace: &str, request: &Recorded) -> (u16, Value) {
    let selector = request.param("fieldSelector").unwrap_or("");
    let items: Vec<&Value> = state
        .objects
        .iter()
        .filter(|((g, p, _, _), _)| *g == resource.group && *p == resource.plural)
        .filter(|((_, _, ns, _), _)| namespace.is_empty() || ns == namespace)
        .map(|(_, stored)| &stored.object)
        .filter(|o| matches_fields(o, selector))
        .collect();
    let start: usize = request.param("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
    let limit: usize = request.param("limit").and_then(|l| l.parse().ok()).filter(|l| *l > 0).unwrap_or(usize::MAX);
    let end = start.saturating_add(limit).min(items.len());
    let page: Vec<Value> = items.get(start..end).unwrap_or_default().iter().map(|o| (*o).clone()).collect();
    let mut metadata = json!({"resourceVersion": state.resource_version.to_string()});
    if end < items.len() {
        metadata["continue"] = Value::String(end.to_string());
        metadata["remainingItemCount"] = json!(items.len() - end);
    }
    (
        200,
        json!({"apiVersion": resource.api_version(), "kind": format!("{}List", resource.kind),
                 "metadata": metadata, "items": page}),
    )
}

/// Checks of the request and its body; the apply configuration when all pass.
fn admit(
    state: &State,
    resource: &ResourceType,
    namespace: &str,
    name: &str,
    request: &Recorded,
) -> Result<Value, (u16, Value)> {
    let bad = |message: String| (400, status(400, "BadRequest", &message, json!({})));
    if request.content_type.as_deref() != Some(APPLY_PATCH) {
        let message = format!(
            "the body of the request was in an unknown format - accepted media types include: {APPLY_PATCH} (this double implements server-side apply only)"
        );
        return Err((415, status(415, "UnsupportedMediaType", &message, json!({}))));
    }
    if request.param("fieldManager").is_none_or(str::is_empty) {
        return Err(bad("fieldManager is required for apply requests".into()));
    }
    let mut config: Value =
        serde_json::from_slice(&request.body).map_err(|e| bad(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(bad("the apply configuration is not an object".into()));
    }
    let api_version = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != resource.api_version() || kind != resource.kind {
        return Err(bad(format!(
            "the API version in the data ({api_version}) and kind ({kind}) do not match the request ({}, {})",
            resource.api_version(),
            resource.kind
        )));
    }
    let body_name = config.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if body_name != name {
        return Err(bad(format!("the name of the object ({body_name}) does not match the name on the URL ({name})")));
    }
    match config.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) if resource.namespaced && ns != namespace => {
            return Err(bad(
                "the namespace of the provided object does not match the namespace sent on the request".into()
            ))
        }
        Some(_) if !resource.namespaced => {
            if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("namespace");
            }
        }
        _ => {}
    }
    if resource.namespaced
        && !state.objects.contains_key(&(String::new(), "namespaces".into(), String::new(), namespace.into()))
    {
        let details = json!({"name": namespace, "kind": "namespaces"});
        return Err((404, status(404, "NotFound", &format!("namespaces {namespace:?} not found"), details)));
    }
    // Status and server-set metadata are not applied through the main resource.
    if let Some(map) = config.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"] {
            meta.remove(field);
        }
    }
    Ok(config)
}

/// The one validation rule of the double, on the object an apply would
/// store: a Deployment needs `spec.selector`.
fn validate(resource: &ResourceType, object: &Value, name: &str) -> Result<(), (u16, Value)> {
    if resource.group == "apps" && resource.kind == "Deployment" && object.pointer("/spec/selector").is_none() {
        let message = format!("Deployment.apps {name:?} is invalid: spec.selector: Required value");
        let cause = json!({"reason": "FieldValueRequired", "message": "Required value", "field": "spec.selector"});
        let details = json!({"name": name, "group": "apps", "kind": "Deployment", "causes": [cause]});
        return Err((422, status(422, "Invalid", &message, details)));
    }
    Ok(())
}

/// Everything but metadata and status: what a change of bumps the generation.
fn spec_part(object: &Value) -> Map<String, Value> {
    object
        .as_object()
        .map(|m| {
            m.iter().filter(|(k, _)| *k != "metadata" && *k != "status").map(|(k, v)| (k.clone(), v.clone())).collect()
        })
        .unwrap_or_default()
}

fn managed_fields(object: &Value, managers: &BTreeMap<String, Value>) -> Value {
    let api_version = object.get("apiVersion").cloned().unwrap_or(Value::Null);
    managers
        .keys()
        .map(|m| {
            json!({"manager": m, "operation": "Apply", "apiVersion": api_version, "fieldsType": "FieldsV1",
                        "fieldsV1": {}, "time": "2026-01-01T00:00:00Z"})
        })
        .collect()
}

fn apply(state: &mut State, resource: &ResourceType, namespace: &str, name: &str, request: &Recorded) -> (u16, Value) {
    let config = match admit(state, resource, namespace, name, request) {
        Ok(config) => config,
        Err(answer) => return answer,
    };
    let manager = request.param("fieldManager").unwrap_or_default().to_string();
    let force = request.param("force") == Some("true");
    let key = key(resource, namespace, name);
    let existing = state.objects.get(&key).cloned();
    let created = existing.is_none();
    let (mut object, mut managers) = match existing.clone() {
        Some(stored) => (stored.object, stored.managers),
        None => {
            let mut fresh = json!({"apiVersion": resource.api_version(), "kind": resource.kind,
                "metadata": {"name": name, "uid": uuid::Uuid::new_v4().to_string(), "generation": 1,
                             "creationTimestamp": "2026-01-01T00:00:00Z"}});
            if resource.namespaced {
                fresh["metadata"]["namespace"] = json!(namespace);
            }
            (fresh, BTreeMap::new())
        }
    };
    if let Err(conflicts) = ssa::apply(&mut object, &mut managers, &manager, &config, force) {
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {:?}", c.manager), "field": dotted(&c.path)}))
            .collect();
        let list: Vec<String> =
            conflicts.iter().map(|c| format!("conflict with {:?}: {}", c.manager, dotted(&c.path))).collect();
        let message = format!("Apply failed with {} conflict(s): {}", conflicts.len(), list.join(", "));
        let details = json!({"name": name, "group": resource.group, "kind": resource.plural, "causes": causes});
        return (409, status(409, "Conflict", &message, details));
    }
    if created {
        server_defaults(resource, &mut object);
    }
    if let Err(answer) = validate(resource, &object, name) {
        return answer;
    }
    object["metadata"]["managedFields"] = managed_fields(&object, &managers);
    if let Some(old) = &existing {
        if old.object == object {
            return (200, object);
        }
        if spec_part(&old.object) != spec_part(&object) {
            let generation = old.object.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
            object["metadata"]["generation"] = json!(generation + 1);
        }
    }
    object["metadata"]["resourceVersion"] = Value::String(state.next_version());
    state.objects.insert(key, Stored { object: object.clone(), managers });
    (if created { 201 } else { 200 }, object)
}

/// What the API server adds to new objects of the kinds tests use.
fn server_defaults(resource: &ResourceType, object: &mut Value) {
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => {
            object["spec"] = json!({"finalizers": ["kubernetes"]});
            object["status"] = json!({"phase": "Active"});
        }
        ("apps", "Deployment") if object.pointer("/spec/replicas").is_none() => {
            object["spec"]["replicas"] = json!(1);
        }
        _ => {}
    }
}

fn delete(state: &mut State, resource: &ResourceType, namespace: &str, name: &str) -> (u16, Value) {
    let key = key(resource, namespace, name);
    let Some(stored) = state.objects.remove(&key) else {
        return not_found(resource, name);
    };
    if resource.group.is_empty() && resource.kind == "Namespace" {
        state.objects.retain(|(_, _, ns, _), _| ns != name);
    }
    state.resource_version += 1;
    (200, stored.object)
}
