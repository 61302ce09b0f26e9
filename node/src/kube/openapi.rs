//! OpenAPI v3: `/openapi/v3` lists every served group-version, each with a
//! document naming its kinds (`x-kubernetes-group-version-kind`) and the
//! PATCH operation's `fieldValidation` parameter, which is what tells
//! kubectl to let the server validate (`kubectl apply`/`create`), and the
//! schemas `kubectl explain` prints. Schemas describe the envelope
//! (`apiVersion`, `kind`, `metadata`) exactly and `spec`/`status` as open
//! objects: the server's admission, not the schema, is the validation.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::errors::KubeError;
use super::resources::{self, Resource};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

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

fn object_meta_schema() -> Value {
    let string = |d: &str| json!({"type": "string", "description": d});
    let map = |d: &str| json!({"type": "object", "description": d, "additionalProperties": {"type": "string", "default": ""}});
    json!({
        "type": "object",
        "description": "Standard object metadata: name, namespace, labels, annotations, and the fields the hub sets.",
        "properties": {
            "name": string("Name of the object, unique within its kind and namespace."),
            "generateName": string("A prefix the server completes into a unique name when name is empty."),
            "namespace": string("Namespace of a namespaced object (default: \"default\")."),
            "labels": map("Labels, selected by label selectors."),
            "annotations": map("Annotations: arbitrary metadata."),
            "uid": string("Set by the hub: unique id of this incarnation of the object."),
            "resourceVersion": string("Set by the hub: the Raft log index of the last write; a precondition on update."),
            "generation": {"type": "integer", "format": "int64", "description": "Set by the hub: grows on every spec change."},
            "creationTimestamp": string("Set by the hub: RFC 3339 creation time."),
            "deletionTimestamp": string("Set by the hub while the object is being deleted."),
            "ownerReferences": {"type": "array", "description": "Objects this one belongs to: deleting the owner deletes it.", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "finalizers": {"type": "array", "items": {"type": "string", "default": ""}},
            "managedFields": {"type": "array", "description": "Field managers of server-side apply and the fields each owns.", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
        }
    })
}

fn kind_schema(r: &Resource, version: &str) -> Value {
    let gvk = json!([{"group": r.group, "version": version, "kind": r.kind}]);
    let mut properties = json!({
        "apiVersion": {"type": "string", "description": format!("APIVersion: {}", r.group_version(version))},
        "kind": {"type": "string", "description": format!("Kind: {}", r.kind)},
        "metadata": {"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}], "default": {}, "description": "Standard object metadata."},
    });
    let open =
        |what: &str| json!({"type": "object", "description": what, "x-kubernetes-preserve-unknown-fields": true});
    if r.status {
        properties["spec"] =
            open(&format!("The desired state of the {} (validated by the hub on every write).", r.kind));
        properties["status"] =
            open(&format!("The observed state of the {}, written by the hub's controllers and agents.", r.kind));
    }
    let mut schema = json!({
        "type": "object",
        "description": format!("{} ({}), served by the Fleet hub.", r.kind, r.group_version(version)),
        "properties": properties,
        "x-kubernetes-group-version-kind": gvk,
    });
    if !r.status {
        // Kinds without spec (ConfigMap data, RBAC rules, ...): every other field is open.
        schema["x-kubernetes-preserve-unknown-fields"] = json!(true);
    }
    schema
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
    schemas.insert(OBJECT_META.into(), object_meta_schema());
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
        schemas.insert(name, kind_schema(r, version));
    }
    Ok(json!({
        "openapi": "3.0.0",
        "info": {"title": "Fleet hub", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
