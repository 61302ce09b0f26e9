//! JSON schemas of the typed kinds, derived from the same Rust types that
//! decode and validate them ([`schemars`]), so what the Kubernetes API
//! publishes as OpenAPI (`kubectl explain`, field validation) cannot drift
//! from what admission accepts.

use schemars::generate::SchemaSettings;
use schemars::transform::{transform_subschemas, Transform};
use schemars::JsonSchema;
/// The generator and schema types, for callers that assemble documents.
pub use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::kinds::{FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use crate::ocm::{self, CLUSTER_GROUP, WORK_GROUP};
use crate::{binding, eviction, member, overrides, placement, snapshot, staged, work, ObjectMeta};

/// The schemas of a kind's typed parts, as references into the
/// generator's definitions; `None` where the part is free-form.
#[derive(Debug, Clone, Default)]
pub struct KindSchemas {
    /// `spec`.
    pub spec: Option<Schema>,
    /// `status`.
    pub status: Option<Schema>,
    /// Typed fields at the top level of the object, for kinds that keep
    /// their content there rather than in `spec`/`status`.
    pub fields: Vec<(&'static str, Schema)>,
}

/// A generator for one OpenAPI v3 document in Kubernetes' structural
/// form: definitions are written under `#/components/schemas`, an optional
/// field is its type (never `anyOf` with null), a reference with a
/// description is `allOf: [$ref]`, and free-form parts (a `serde_json`
/// value, a flattened map of further fields) say
/// `x-kubernetes-preserve-unknown-fields` instead of `additionalProperties`.
pub fn openapi_generator() -> SchemaGenerator {
    SchemaSettings::openapi3()
        .with(|s| {
            s.meta_schema = None;
        })
        .with_transform(Structural)
        .into_generator()
}

/// Rewrites a schemars schema into Kubernetes' structural form (see
/// [`openapi_generator`]).
#[derive(Debug, Clone)]
struct Structural;

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";

fn is_null_only(schema: &Value) -> bool {
    schema.get("const").is_some_and(Value::is_null)
        || schema.get("type").is_some_and(|t| t == "null")
        || schema.get("enum").is_some_and(|e| e == &serde_json::json!([null]))
}

/// Whether a schema says nothing about its value's shape.
fn is_free_form(object: &Map<String, Value>) -> bool {
    const SHAPED: &[&str] =
        &["type", "$ref", "allOf", "anyOf", "oneOf", "enum", "properties", "x-kubernetes-int-or-string", PRESERVE];
    !SHAPED.iter().any(|k| object.contains_key(*k))
}

impl Transform for Structural {
    fn transform(&mut self, schema: &mut Schema) {
        let Some(object) = schema.as_object_mut() else { return };
        // `Option<T>`: `anyOf: [T, null]` becomes T.
        if let Some(Value::Array(alternatives)) = object.get("anyOf") {
            let typed: Vec<Value> = alternatives.iter().filter(|a| !is_null_only(a)).cloned().collect();
            if typed.len() == 1 && typed.len() < alternatives.len() {
                object.remove("anyOf");
                object.remove("nullable");
                match typed.into_iter().next() {
                    Some(Value::Object(only)) if only.len() == 1 && only.contains_key("$ref") => {
                        object.insert("allOf".into(), Value::Array(vec![Value::Object(only)]));
                    }
                    Some(Value::Object(only)) => {
                        for (key, value) in only {
                            object.entry(key).or_insert(value);
                        }
                    }
                    _ => {}
                }
            }
        }
        if object.contains_key("$ref") && object.len() > 1 {
            if let Some(reference) = object.remove("$ref") {
                object.insert("allOf".into(), serde_json::json!([{ "$ref": reference }]));
            }
        }
        match object.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                // Closedness is the server's field validation's to report.
                object.remove("additionalProperties");
            }
            Some(Value::Bool(true)) => {
                object.remove("additionalProperties");
                object.insert(PRESERVE.into(), Value::Bool(true));
            }
            Some(Value::Object(extra)) if extra.is_empty() => {
                object.remove("additionalProperties");
                object.insert(PRESERVE.into(), Value::Bool(true));
            }
            _ => {}
        }
        if is_free_form(object) {
            object.insert(PRESERVE.into(), Value::Bool(true));
        }
        transform_subschemas(self, schema);
    }
}

/// The schema of `metadata` (a reference into `generator`'s definitions).
pub fn object_meta(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<ObjectMeta>()
}

fn part<T: JsonSchema>(generator: &mut SchemaGenerator) -> Option<Schema> {
    Some(generator.subschema_for::<T>())
}

fn parts<S: JsonSchema, T: JsonSchema>(generator: &mut SchemaGenerator) -> KindSchemas {
    KindSchemas { spec: part::<S>(generator), status: part::<T>(generator), fields: Vec::new() }
}

fn spec_only<S: JsonSchema>(generator: &mut SchemaGenerator) -> KindSchemas {
    KindSchemas { spec: part::<S>(generator), status: None, fields: Vec::new() }
}

fn status_only<T: JsonSchema>(generator: &mut SchemaGenerator) -> KindSchemas {
    KindSchemas { spec: None, status: part::<T>(generator), fields: Vec::new() }
}

/// The ClusterResourcePlacementStatus fields (`sourceStatus`,
/// `lastUpdatedTime`), each with its description.
fn placement_status_mirror(generator: &mut SchemaGenerator) -> KindSchemas {
    let status = generator.subschema_for::<placement::PlacementStatus>();
    let source = schemars::json_schema!({
        "allOf": [status],
        "description": "The ClusterResourcePlacement's status, copied by the hub (without its \
                        ClusterResourcePlacementStatusSynced condition)."
    });
    let updated = schemars::json_schema!({
        "type": "string",
        "format": "date-time",
        "description": "When the hub last wrote this object."
    });
    let fields = vec![("sourceStatus", source), ("lastUpdatedTime", updated)];
    KindSchemas { spec: None, status: None, fields }
}

/// The schemas of kind `kind` of `group`, adding their definitions to
/// `generator`; `None` for kinds Fleet does not type.
pub fn kind_schemas(generator: &mut SchemaGenerator, group: &str, kind: &str) -> Option<KindSchemas> {
    let g = generator;
    let schemas = match (group, kind) {
        (FLEET_CLUSTER_GROUP, "MemberCluster") => parts::<member::MemberClusterSpec, member::MemberClusterStatus>(g),
        (FLEET_PLACEMENT_GROUP, placement::CLUSTER_RESOURCE_PLACEMENT | placement::RESOURCE_PLACEMENT) => {
            parts::<placement::PlacementSpec, placement::PlacementStatus>(g)
        }
        (FLEET_PLACEMENT_GROUP, placement::CLUSTER_RESOURCE_PLACEMENT_STATUS) => placement_status_mirror(g),
        (FLEET_PLACEMENT_GROUP, snapshot::CLUSTER_RESOURCE_SNAPSHOT | snapshot::RESOURCE_SNAPSHOT) => {
            spec_only::<snapshot::ResourceSnapshotSpec>(g)
        }
        (
            FLEET_PLACEMENT_GROUP,
            snapshot::CLUSTER_SCHEDULING_POLICY_SNAPSHOT | snapshot::SCHEDULING_POLICY_SNAPSHOT,
        ) => parts::<snapshot::PolicySnapshotSpec, snapshot::PolicySnapshotStatus>(g),
        (FLEET_PLACEMENT_GROUP, binding::CLUSTER_RESOURCE_BINDING | binding::RESOURCE_BINDING) => {
            parts::<binding::BindingSpec, binding::BindingStatus>(g)
        }
        (FLEET_PLACEMENT_GROUP, "Work") => parts::<work::WorkSpec, work::WorkStatus>(g),
        (FLEET_PLACEMENT_GROUP, overrides::CLUSTER_RESOURCE_OVERRIDE | overrides::RESOURCE_OVERRIDE) => {
            spec_only::<overrides::OverrideSpec>(g)
        }
        (
            FLEET_PLACEMENT_GROUP,
            overrides::CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT | overrides::RESOURCE_OVERRIDE_SNAPSHOT,
        ) => spec_only::<overrides::OverrideSnapshotSpec>(g),
        (FLEET_PLACEMENT_GROUP, staged::CLUSTER_STAGED_UPDATE_STRATEGY | staged::STAGED_UPDATE_STRATEGY) => {
            spec_only::<staged::UpdateStrategySpec>(g)
        }
        (FLEET_PLACEMENT_GROUP, staged::CLUSTER_STAGED_UPDATE_RUN | staged::STAGED_UPDATE_RUN) => {
            parts::<staged::UpdateRunSpec, staged::UpdateRunStatus>(g)
        }
        (FLEET_PLACEMENT_GROUP, staged::CLUSTER_APPROVAL_REQUEST | staged::APPROVAL_REQUEST) => {
            parts::<staged::ApprovalRequestSpec, staged::ApprovalRequestStatus>(g)
        }
        (
            FLEET_PLACEMENT_GROUP,
            eviction::CLUSTER_RESOURCE_PLACEMENT_EVICTION | eviction::RESOURCE_PLACEMENT_EVICTION,
        ) => parts::<eviction::EvictionSpec, eviction::EvictionStatus>(g),
        (
            FLEET_PLACEMENT_GROUP,
            eviction::CLUSTER_RESOURCE_PLACEMENT_DISRUPTION_BUDGET | eviction::RESOURCE_PLACEMENT_DISRUPTION_BUDGET,
        ) => spec_only::<eviction::DisruptionBudgetSpec>(g),
        (CLUSTER_GROUP, ocm::managed_cluster::KIND) => spec_only::<ocm::managed_cluster::ManagedClusterSpec>(g),
        (CLUSTER_GROUP, ocm::placement::KIND) => {
            parts::<ocm::placement::PlacementSpec, ocm::placement::PlacementStatus>(g)
        }
        (CLUSTER_GROUP, ocm::decision::KIND) => status_only::<ocm::decision::PlacementDecisionStatus>(g),
        (CLUSTER_GROUP, ocm::clusterset::SET_KIND) => {
            parts::<ocm::clusterset::ManagedClusterSetSpec, ocm::clusterset::ConditionsStatus>(g)
        }
        (CLUSTER_GROUP, ocm::clusterset::BINDING_KIND) => {
            parts::<ocm::clusterset::ManagedClusterSetBindingSpec, ocm::clusterset::ConditionsStatus>(g)
        }
        (CLUSTER_GROUP, ocm::addon_score::KIND) => status_only::<ocm::addon_score::AddOnPlacementScoreStatus>(g),
        (WORK_GROUP, ocm::manifestwork::KIND) => {
            parts::<ocm::manifestwork::ManifestWorkSpec, ocm::manifestwork::ManifestWorkStatus>(g)
        }
        (WORK_GROUP, ocm::replicaset::KIND) => {
            parts::<ocm::replicaset::ManifestWorkReplicaSetSpec, ocm::replicaset::ManifestWorkReplicaSetStatus>(g)
        }
        _ => return None,
    };
    Some(schemas)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn definitions(mut generator: SchemaGenerator) -> serde_json::Map<String, Value> {
        generator.take_definitions(true)
    }

    #[test]
    fn a_placement_spec_names_its_typed_fields_with_their_docs() {
        let mut generator = openapi_generator();
        let schemas = kind_schemas(&mut generator, FLEET_PLACEMENT_GROUP, "ClusterResourcePlacement").expect("typed");
        let spec = serde_json::to_value(schemas.spec.expect("spec")).expect("json");
        assert_eq!(spec["$ref"], "#/components/schemas/PlacementSpec");
        let defs = definitions(generator);
        let policy = &defs["PlacementPolicy"];
        assert_eq!(policy["properties"]["numberOfClusters"]["type"], "integer");
        assert!(policy["properties"]["placementType"]["description"].as_str().unwrap_or_default().contains("PickN"));
        let rolling = &defs["RollingUpdateConfig"]["properties"]["maxUnavailable"];
        assert_eq!(rolling["allOf"][0]["$ref"], "#/components/schemas/IntOrString", "{rolling}");
        assert_eq!(defs["IntOrString"]["x-kubernetes-int-or-string"], true);
    }

    #[test]
    fn a_member_cluster_spec_describes_its_delete_options() {
        let mut generator = openapi_generator();
        let schemas = kind_schemas(&mut generator, FLEET_CLUSTER_GROUP, "MemberCluster").expect("typed");
        let spec = serde_json::to_value(schemas.spec.expect("spec")).expect("json");
        assert_eq!(spec["$ref"], "#/components/schemas/MemberClusterSpec");
        // Work's DeleteOptions in the same document must not take its place.
        kind_schemas(&mut generator, FLEET_PLACEMENT_GROUP, "Work").expect("typed");
        let defs = definitions(generator);
        let options = &defs["MemberClusterSpec"]["properties"]["deleteOptions"];
        assert_eq!(options["allOf"][0]["$ref"], "#/components/schemas/MemberClusterDeleteOptions", "{options}");
        let mode = &defs["MemberClusterDeleteOptions"]["properties"]["validationMode"];
        assert_eq!(mode["type"], "string", "{mode}");
        assert!(mode["description"].as_str().unwrap_or_default().contains("Strict"), "{mode}");
        assert!(defs["DeleteOptions"]["properties"].get("propagationPolicy").is_some());
    }

    #[test]
    fn the_status_mirror_has_its_fields_at_the_top_level() {
        let mut generator = openapi_generator();
        let schemas =
            kind_schemas(&mut generator, FLEET_PLACEMENT_GROUP, "ClusterResourcePlacementStatus").expect("typed");
        assert!(schemas.spec.is_none() && schemas.status.is_none());
        let fields: Vec<&str> = schemas.fields.iter().map(|(name, _)| *name).collect();
        assert_eq!(fields, ["sourceStatus", "lastUpdatedTime"]);
        let source = serde_json::to_value(&schemas.fields[0].1).expect("json");
        assert_eq!(source["allOf"][0]["$ref"], "#/components/schemas/PlacementStatus", "{source}");
        assert!(definitions(generator).contains_key("PlacementStatus"));
    }

    #[test]
    fn an_ocm_placement_describes_sort_by_rate_limit_and_decision_scores() {
        let mut generator = openapi_generator();
        let schemas = kind_schemas(&mut generator, CLUSTER_GROUP, ocm::placement::KIND).expect("typed");
        let spec = serde_json::to_value(schemas.spec.expect("spec")).expect("json");
        let status = serde_json::to_value(schemas.status.expect("status")).expect("json");
        kind_schemas(&mut generator, CLUSTER_GROUP, ocm::decision::KIND).expect("typed");
        let defs = definitions(generator);
        let name =
            |r: &Value| r["$ref"].as_str().unwrap_or_default().rsplit('/').next().unwrap_or_default().to_string();
        let spec = &defs[&name(&spec)]["properties"];
        assert!(spec["sortBy"]["description"].as_str().unwrap_or_default().contains("Score"), "{spec}");
        assert!(spec["scoreRateLimit"]["description"].as_str().unwrap_or_default().contains("1m"), "{spec}");
        assert!(defs[&name(&status)]["properties"].get("lastScoreUpdateTime").is_some());
        assert_eq!(defs["ClusterDecision"]["properties"]["score"]["type"], "integer");
    }

    #[test]
    fn untyped_kinds_have_no_schemas() {
        let mut generator = openapi_generator();
        assert!(kind_schemas(&mut generator, "apps", "Deployment").is_none());
        assert!(kind_schemas(&mut generator, CLUSTER_GROUP, ocm::manifestwork::KIND).is_none());
        assert!(kind_schemas(&mut generator, WORK_GROUP, ocm::manifestwork::KIND).is_some());
    }
}
