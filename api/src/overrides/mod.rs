//! `ClusterResourceOverride` (CRO, cluster-scoped) and `ResourceOverride`
//! (RO, namespaced): per-cluster JSON patches (or removal) of selected
//! resources before they enter a member cluster's Work (docs/spec/overrides.md), and
//! their immutable snapshots (`ClusterResourceOverrideSnapshot` /
//! `ResourceOverrideSnapshot`) that bindings name.
//!
//! [`prepare`] validates every row of docs/spec/overrides.md's table (all problems
//! listed) and writes the spec back; [`check_update`] refuses a change of
//! `spec.placement`. The limits that need the rest of the store (at most 100
//! overrides, one override per selected resource) are checked by the node's
//! admission with [`selected_resources`] and [`MAX_OVERRIDES`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::placement::ClusterSelectorTerm;
use crate::typed::{decode, encode};
use crate::validation::{quote, FieldError, ValidationError};
use crate::Object;

#[cfg(test)]
mod tests;
mod validate;

/// Kind of the cluster-scoped override.
pub const CLUSTER_RESOURCE_OVERRIDE: &str = "ClusterResourceOverride";
/// Kind of the namespaced override.
pub const RESOURCE_OVERRIDE: &str = "ResourceOverride";
/// Kind of a CRO's snapshots.
pub const CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT: &str = "ClusterResourceOverrideSnapshot";
/// Kind of an RO's snapshots.
pub const RESOURCE_OVERRIDE_SNAPSHOT: &str = "ResourceOverrideSnapshot";

/// Label on a snapshot: the override it was taken of.
pub const PARENT_OVERRIDE_LABEL: &str = "kubernetes-fleet.io/parent-resource-override";
/// Label on a snapshot: its index (from 0).
pub const OVERRIDE_INDEX_LABEL: &str = "kubernetes-fleet.io/override-index";
/// How many snapshots of one override are kept.
pub const OVERRIDE_HISTORY_LIMIT: usize = 10;
/// At most this many CROs, and this many ROs per namespace.
pub const MAX_OVERRIDES: usize = 100;
/// Most resource selectors, rules, terms and patches (per their lists).
pub const MAX_SELECTORS: usize = 20;
/// Most override rules.
pub const MAX_RULES: usize = 20;
/// Most JSON patch operations in one rule.
pub const MAX_PATCHES: usize = 20;
/// Most cluster selector terms in one rule.
pub const MAX_TERMS: usize = 10;

/// `overrideType`: apply the rule's JSON patches (the default).
pub const OVERRIDE_JSON_PATCH: &str = "JSONPatch";
/// `overrideType`: remove the resource from the cluster's Work.
pub const OVERRIDE_DELETE: &str = "Delete";
/// `spec.placement.scope` default: a ClusterResourcePlacement.
pub const SCOPE_CLUSTER: &str = "Cluster";
/// `spec.placement.scope`: the ResourcePlacement of the RO's namespace.
pub const SCOPE_NAMESPACED: &str = "Namespaced";

/// `spec.placement`: the one placement an override is limited to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementRef {
    /// The placement's name.
    #[serde(default)]
    pub name: String,
    /// `Cluster` (a CRP, the default) or `Namespaced` (an RP; RO only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl PlacementRef {
    /// The scope, defaulted to `Cluster`.
    pub fn scope(&self) -> &str {
        self.scope.as_deref().unwrap_or(SCOPE_CLUSTER)
    }
}

/// One selected resource: group/version/kind/name (no label selector).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideSelector {
    /// API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// The object's name.
    #[serde(default)]
    pub name: String,
    /// Refused: overrides name their objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<Value>,
}

/// `P.clusterSelector`: absent = no cluster; no terms = every cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideClusterSelector {
    /// OR-ed terms (label selectors only).
    #[serde(default)]
    pub cluster_selector_terms: Vec<ClusterSelectorTerm>,
}

/// One JSON patch operation of a rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsonPatchOverride {
    /// `add`, `remove` or `replace`.
    #[serde(default)]
    pub op: String,
    /// JSON pointer into the resource.
    #[serde(default)]
    pub path: String,
    /// The value (absent for `remove`); may contain the variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// One rule of `spec.policy.overrideRules`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideRule {
    /// Which clusters the rule applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<OverrideClusterSelector>,
    /// `JSONPatch` (default) or `Delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_type: Option<String>,
    /// The patch (JSONPatch rules only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_patch_overrides: Vec<JsonPatchOverride>,
}

impl OverrideRule {
    /// The override type, defaulted to `JSONPatch`.
    pub fn override_type(&self) -> &str {
        self.override_type.as_deref().unwrap_or(OVERRIDE_JSON_PATCH)
    }
}

/// `spec.policy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverridePolicy {
    /// Rules, applied in order.
    #[serde(default)]
    pub override_rules: Vec<OverrideRule>,
}

/// `spec` of a CRO or RO (CROs use `clusterResourceSelectors`, ROs
/// `resourceSelectors`; validation refuses the other one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideSpec {
    /// The placement the override is limited to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementRef>,
    /// CRO: the cluster-scoped objects it changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_selectors: Vec<OverrideSelector>,
    /// RO: the objects of its namespace it changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selectors: Vec<OverrideSelector>,
    /// The rules.
    #[serde(default)]
    pub policy: OverridePolicy,
}

impl OverrideSpec {
    /// The selectors of whichever kind this is.
    pub fn selectors(&self) -> &[OverrideSelector] {
        if self.cluster_resource_selectors.is_empty() {
            &self.resource_selectors
        } else {
            &self.cluster_resource_selectors
        }
    }
}

/// `spec` of an override snapshot: the override's spec as it was, and its hash.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideSnapshotSpec {
    /// The override's spec.
    #[serde(default)]
    pub override_spec: OverrideSpec,
    /// Hex sha256 of the spec's canonical JSON.
    #[serde(default)]
    pub override_hash: String,
}

/// Whether `kind` (of the placement group) is an override.
pub fn is_override_kind(kind: &str) -> bool {
    matches!(kind, CLUSTER_RESOURCE_OVERRIDE | RESOURCE_OVERRIDE)
}

/// Whether `kind` (of the placement group) is an override snapshot.
pub fn is_override_snapshot_kind(kind: &str) -> bool {
    matches!(kind, CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT | RESOURCE_OVERRIDE_SNAPSHOT)
}

/// The snapshot kind of an override kind.
pub fn snapshot_kind(override_kind: &str) -> &'static str {
    if override_kind == RESOURCE_OVERRIDE {
        RESOURCE_OVERRIDE_SNAPSHOT
    } else {
        CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT
    }
}

/// The name of snapshot `index` of override `name`: `<name>-<index>`.
pub fn snapshot_name(name: &str, index: u64) -> String {
    format!("{name}-{index}")
}

/// The spec of a stored override (admission guarantees it decodes).
pub fn spec_of(object: &Object) -> OverrideSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// The spec of a stored override snapshot.
pub fn snapshot_spec_of(object: &Object) -> OverrideSnapshotSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

fn decode_spec(object: &Object) -> Result<OverrideSpec, ValidationError> {
    let raw = object.spec().cloned().unwrap_or(Value::Object(Default::default()));
    decode(&raw, "spec").map_err(|e| ValidationError {
        kind: object.kind.clone(),
        name: object.metadata.name.clone(),
        errors: vec![e],
    })
}

/// Validates a CRO or RO (every row of docs/spec/overrides.md's table that needs only
/// the object itself) and writes the decoded spec back.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let spec = decode_spec(object)?;
    let cluster_scoped = object.kind == CLUSTER_RESOURCE_OVERRIDE;
    let errors = validate::validate_spec(&spec, cluster_scoped);
    ValidationError::check(&object.kind, &object.metadata.name, errors)?;
    object.rest.insert("spec".into(), encode(&spec));
    Ok(())
}

/// Validates an override snapshot written by the controllers.
pub fn prepare_snapshot(object: &mut Object) -> Result<(), ValidationError> {
    let raw = object.spec().cloned().unwrap_or(Value::Object(Default::default()));
    let spec: OverrideSnapshotSpec = decode(&raw, "spec").map_err(|e| ValidationError {
        kind: object.kind.clone(),
        name: object.metadata.name.clone(),
        errors: vec![e],
    })?;
    object.rest.insert("spec".into(), encode(&spec));
    Ok(())
}

/// `spec.placement` cannot be added, changed or removed after creation.
pub fn check_update(old: &Object, new: &Object) -> Result<(), ValidationError> {
    let old_ref = decode_spec(old)?.placement;
    let new_ref = decode_spec(new)?.placement;
    let normalized = |r: &Option<PlacementRef>| {
        r.as_ref().map(|p| PlacementRef { name: p.name.clone(), scope: Some(p.scope().to_string()) })
    };
    if normalized(&old_ref) == normalized(&new_ref) {
        return Ok(());
    }
    let shown = new_ref.as_ref().map(|p| quote(&p.name)).unwrap_or_else(|| "null".to_string());
    let error = FieldError::invalid("spec.placement", shown, "The placement field is immutable");
    ValidationError::check(&new.kind, &new.metadata.name, vec![error])
}

/// Identity of one selected resource as `(group, kind, namespace, name)`
/// (namespace empty for cluster-scoped objects), for the store-wide
/// uniqueness check of admission.
pub fn selected_resources(object: &Object) -> Vec<(String, String, String, String)> {
    let spec = spec_of(object);
    let namespace = if object.kind == RESOURCE_OVERRIDE {
        object.metadata.namespace.clone().unwrap_or_default()
    } else {
        String::new()
    };
    spec.selectors().iter().map(|s| (s.group.clone(), s.kind.clone(), namespace.clone(), s.name.clone())).collect()
}
