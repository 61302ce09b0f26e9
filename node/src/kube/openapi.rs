//! OpenAPI v3: `/openapi/v3` lists every served group-version, each with a
//! document naming its kinds (`x-kubernetes-group-version-kind`) and the
//! PATCH operation's `fieldValidation` parameter, which is what tells
//! kubectl to let the server validate (`kubectl apply`/`create`), and the
//! schemas `kubectl explain` prints. The envelope (`apiVersion`, `kind`,
//! `metadata`) and the typed kinds' `spec`/`status` come from the Rust
//! types that decode them ([`fleet_api::schema`]), in Kubernetes'
//! structural form; what Fleet does not type stays an open object. The
//! same schemas decide which fields are unknown for `fieldValidation`
//! ([`super::fieldcheck`]).

use fleet_api::schema::{Schema, SchemaGenerator};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::errors::KubeError;
use super::resources::{self, Resource};

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: every group-version's document, with a content hash.
pub fn index(all: &[Resource]) -> Value {
    let mut paths = Map::new();
    let mut versions: Vec<(String, String)> = vec![(String::new(), "v1".to_string())];
    for (group, vs) in resources::groups(all) {
        versions.extend(vs.into_iter().map(|v| (group.clone(), v)));
    }
    for (group, version) in versions {
        let Ok(document) = document(all, &group, &version) else { continue };
        let hash = hex::encode(Sha256::digest(serde_json::to_vec(&document).unwrap_or_default()));
        let path = gv_path(&group, &version);
        paths.insert(path.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", &hash[..16])}));
    }
    json!({"paths": paths})
}

/// The schema of kind `r` at `version`: the envelope, and `spec`/`status`
/// from the typed kind's Rust types (their definitions land in
/// `generator`); a part Fleet does not type is an open object, and so is
/// every field of a kind without a typed spec or status.
fn kind_schema(r: &Resource, version: &str, generator: &mut SchemaGenerator) -> Value {
    let gvk = json!([{"group": r.group, "version": version, "kind": r.kind}]);
    let metadata = fleet_api::schema::object_meta(generator);
    let mut properties = json!({
        "apiVersion": {"type": "string", "description": format!("APIVersion: {}", r.group_version(version))},
        "kind": {"type": "string", "description": format!("Kind: {}", r.kind)},
        "metadata": {"allOf": [metadata], "default": {}, "description": "Standard object metadata."},
    });
    let typed = if r.fleet { fleet_api::schema::kind_schemas(generator, &r.group, &r.kind) } else { None };
    let part = |schema: Option<Schema>, what: String| match schema {
        Some(reference) => json!({"allOf": [reference], "description": what}),
        None => json!({"type": "object", "description": what, "x-kubernetes-preserve-unknown-fields": true}),
    };
    let (spec, status, fields) = typed.clone().map(|t| (t.spec, t.status, t.fields)).unwrap_or_default();
    for (name, schema) in fields {
        properties[name] = serde_json::to_value(schema).unwrap_or_else(|_| json!({"type": "object"}));
    }
    if r.status || spec.is_some() || status.is_some() {
        properties["spec"] =
            part(spec, format!("The desired state of the {} (validated by the hub on every write).", r.kind));
        properties["status"] =
            part(status, format!("The observed state of the {}, written by the hub's controllers and agents.", r.kind));
    }
    let mut schema = json!({
        "type": "object",
        "description": format!("{} ({}), served by the Fleet hub.", r.kind, r.group_version(version)),
        "properties": properties,
        "x-kubernetes-group-version-kind": gvk,
    });
    if typed.is_none() {
        // Kinds Fleet does not type (ConfigMap data, RBAC rules, envelopes' data, ...): every other field is open.
        schema["x-kubernetes-preserve-unknown-fields"] = json!(true);
    }
    schema
}

/// The schema of kind `r` at `version` and the definitions it refers to
/// (`#/components/schemas/...`), as the group-version's document has them.
pub fn kind_definitions(r: &Resource, version: &str) -> (Value, Map<String, Value>) {
    let mut generator = fleet_api::schema::openapi_generator();
    let schema = kind_schema(r, version, &mut generator);
    (schema, generator.take_definitions(true))
}

fn schema_name(r: &Resource, version: &str) -> String {
    let group = if r.group.is_empty() { "core".to_string() } else { r.group.clone() };
    format!("{group}.{version}.{}", r.kind)
}

/// The document of one group-version.
pub fn document(all: &[Resource], group: &str, version: &str) -> Result<Value, KubeError> {
    let served = resources::in_group_version(all, group, version);
    if served.is_empty() {
        return Err(KubeError::no_route(&format!("/openapi/v3/{}", gv_path(group, version))));
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let mut generator = fleet_api::schema::openapi_generator();
    for r in served {
        let base = format!("/{}", gv_path(group, version));
        let path = if r.namespaced() {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{base}/{}/{{name}}", r.plural)
        };
        let name = schema_name(r, version);
        let reference = json!({"schema": {"$ref": format!("#/components/schemas/{name}")}});
        let gvk = json!({"group": r.group, "version": version, "kind": r.kind});
        // Strategic merge patch is not listed: kubectl then computes it from
        // its own built-in types (with their list merge keys), which is what
        // the server's strategic merge expects.
        let bodies = json!({
            "application/json": reference,
            "application/merge-patch+json": reference,
            "application/json-patch+json": reference,
            "application/apply-patch+yaml": reference,
        });
        let parameters = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "force", "in": "query", "schema": {"type": "boolean"}}
        ]);
        paths.insert(
            path,
            json!({
                "get": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "get",
                        "responses": {"200": {"content": {"application/json": reference}}}},
                "put": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "put", "parameters": parameters,
                        "requestBody": {"content": {"application/json": reference}}},
                "patch": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "patch", "parameters": parameters,
                          "requestBody": {"content": bodies}},
            }),
        );
        schemas.insert(name, kind_schema(r, version, &mut generator));
    }
    schemas.extend(generator.take_definitions(true));
    Ok(json!({
        "openapi": "3.0.0",
        "info": {"title": "Fleet hub", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
