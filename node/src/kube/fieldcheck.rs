//! `fieldValidation=Strict|Warn|Ignore` on writes: the fields of a request
//! body that the kind's published schema ([`super::openapi`], derived from
//! the typed kinds) does not know. Strict refuses them (400 BadRequest
//! naming each, as Kubernetes' strict decoding does), Warn drops them and answers a `Warning` header per
//! field, Ignore drops them silently. As in Kubernetes, Warn is the default.
//! Parts a schema leaves open (`x-kubernetes-preserve-unknown-fields`:
//! wrapped manifests, patch values, kinds Fleet does not type) are kept as
//! sent; admission's typed decoding still refuses what it cannot read.

use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::{Map, Value};

use super::context::Ctx;
use super::errors::KubeError;
use super::openapi;

/// What to do with unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Refuse the request.
    Strict,
    /// Drop them and warn.
    Warn,
    /// Drop them.
    Ignore,
}

impl Mode {
    /// The mode a request asks for (`Warn` when it does not say).
    pub fn of(ctx: &Ctx) -> Result<Mode, KubeError> {
        match ctx.query.get("fieldValidation") {
            None | Some("Warn") => Ok(Mode::Warn),
            Some("Strict") => Ok(Mode::Strict),
            Some("Ignore") => Ok(Mode::Ignore),
            Some(other) => Err(KubeError::bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }
}

/// Checks `value` (a whole object of the path's kind) against its schema:
/// under Strict an unknown field is an error; otherwise unknown fields are
/// removed and the warnings to send are returned (none under Ignore).
/// Fields already unknown in `before` (the stored object a patch starts
/// from: a controller's status field the schema does not name) are kept
/// and not reported: a patch answers only for what it adds.
pub fn check(ctx: &Ctx, value: &mut Value, before: Option<&Value>) -> Result<Vec<String>, KubeError> {
    let mode = Mode::of(ctx)?;
    let (schema, definitions) = openapi::kind_definitions(&ctx.resource, &ctx.version);
    let mut exempt = Vec::new();
    if let Some(before) = before {
        prune(&mut before.clone(), &schema, &definitions, "", &Walk { remove: false, exempt: &[] }, &mut exempt);
    }
    // A write of the object itself ignores its status (written through
    // the status subresource), so only a status write answers for it.
    let status = if ctx.subresource.is_none() { value.as_object_mut().and_then(|o| o.remove("status")) } else { None };
    let mut unknown = Vec::new();
    let walk = Walk { remove: mode != Mode::Strict, exempt: &exempt };
    prune(value, &schema, &definitions, "", &walk, &mut unknown);
    if let (Some(status), Some(object)) = (status, value.as_object_mut()) {
        object.insert("status".into(), status);
    }
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    match mode {
        Mode::Strict => {
            // Kubernetes refuses at decoding, before validation: 400 BadRequest, every field named.
            let fields: Vec<String> = unknown.iter().map(|f| format!("unknown field {f:?}")).collect();
            Err(KubeError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
                fields.join(", "),
                kind = ctx.resource.kind,
                version = ctx.version,
            )))
        }
        Mode::Warn => Ok(unknown.iter().map(|f| format!("unknown field {f:?}")).collect()),
        Mode::Ignore => Ok(Vec::new()),
    }
}

/// Adds one `Warning: 299 - "..."` header per warning.
pub fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let text = format!("299 - {}", serde_json::Value::String(warning.clone()));
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

/// Follows `$ref` and single-entry `allOf` to the schema that describes a value.
fn resolve<'a>(schema: &'a Value, definitions: &'a Map<String, Value>) -> &'a Value {
    let mut current = schema;
    for _ in 0..16 {
        if let Some(name) = current.get("$ref").and_then(Value::as_str) {
            match name.rsplit('/').next().and_then(|n| definitions.get(n)) {
                Some(next) => current = next,
                None => return current,
            }
        } else if current.get("properties").is_none() && current.get("type").is_none() {
            match current.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                Some([only]) => current = only,
                _ => return current,
            }
        } else {
            return current;
        }
    }
    current
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// How [`prune`] treats what it finds.
struct Walk<'a> {
    /// Drop unknown fields (not under Strict).
    remove: bool,
    /// Unknown fields to keep and not report.
    exempt: &'a [String],
}

/// Walks `value` with `schema`, collecting (and, if asked, dropping) the
/// fields no `properties` entry names, as `spec.a[0].b` paths.
fn prune(
    value: &mut Value,
    schema: &Value,
    definitions: &Map<String, Value>,
    path: &str,
    walk: &Walk,
    unknown: &mut Vec<String>,
) {
    let schema = resolve(schema, definitions);
    if schema.get("x-kubernetes-preserve-unknown-fields").is_some_and(|p| p == true) {
        return;
    }
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let extra = schema.get("additionalProperties").filter(|a| a.is_object());
            if properties.is_none() && extra.is_none() {
                // A shape the schema does not spell out (one of several alternatives): admission decides.
                return;
            }
            let mut dropped = Vec::new();
            for (key, field) in fields.iter_mut() {
                let field_path = child(path, key);
                match properties.and_then(|p| p.get(key)).or(extra) {
                    Some(field_schema) => prune(field, field_schema, definitions, &field_path, walk, unknown),
                    None if walk.exempt.contains(&field_path) => {}
                    None => {
                        unknown.push(field_path);
                        dropped.push(key.clone());
                    }
                }
            }
            if walk.remove {
                for key in dropped {
                    fields.remove(&key);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.get("items") else { return };
            for (i, item) in items.iter_mut().enumerate() {
                prune(item, item_schema, definitions, &format!("{path}[{i}]"), walk, unknown);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::kube::resources::Resource;

    fn crp() -> Resource {
        let info = fleet_api::kinds::KINDS.iter().find(|k| k.kind == "ClusterResourcePlacement").expect("crp");
        Resource {
            group: info.group.into(),
            versions: vec!["v1beta1".into()],
            kind: info.kind.into(),
            plural: info.plural.into(),
            singular: "clusterresourceplacement".into(),
            short_names: Vec::new(),
            scope: info.scope,
            status: true,
            fleet: true,
        }
    }

    fn unknown_in(mut value: Value) -> (Vec<String>, Value) {
        let (schema, definitions) = openapi::kind_definitions(&crp(), "v1beta1");
        let mut unknown = Vec::new();
        prune(&mut value, &schema, &definitions, "", &Walk { remove: true, exempt: &[] }, &mut unknown);
        (unknown, value)
    }

    #[test]
    fn unknown_fields_are_found_at_every_depth_and_dropped() {
        let (unknown, kept) = unknown_in(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "web", "labels": {"a": "b"}, "colour": "red"},
            "spec": {
                "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "nmae": "x"}],
                "policy": {"placementType": "PickN", "numberOfClusters": 2, "extra": true},
                "strategy": {"rollingUpdate": {"maxUnavailable": "25%"}}
            },
            "top": 1
        }));
        assert_eq!(
            unknown,
            vec!["metadata.colour", "spec.policy.extra", "spec.resourceSelectors[0].nmae", "top"],
            "{kept}"
        );
        assert_eq!(kept["spec"]["policy"], json!({"placementType": "PickN", "numberOfClusters": 2}));
        assert_eq!(kept["metadata"]["labels"]["a"], "b");
        assert!(kept.get("top").is_none());
    }

    #[test]
    fn known_and_open_fields_pass() {
        let (unknown, _) = unknown_in(json!({
            "metadata": {"name": "web", "annotations": {"x": "y"}, "managedFields": [{"anything": 1}]},
            "spec": {"resourceSelectors": [], "policy": {"affinity": {"clusterAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                    {"labelSelector": {"matchLabels": {"env": "prod"}}}]}}}}},
            "status": {"conditions": [], "placementStatuses": [{"clusterName": "a", "laterField": 1}]}
        }));
        assert!(unknown.is_empty(), "{unknown:?}");
    }
}
