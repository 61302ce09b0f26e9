//! OV-5, OV-6, OV-7: one resource rendered for one cluster through the
//! override snapshots a binding records — CRO snapshots first, then RO
//! snapshots, rules in order, each matching JSONPatch rule applied as one
//! RFC 6902 patch (the `json-patch` crate), a matching Delete rule ending
//! evaluation with the resource removed.

use std::collections::BTreeMap;

use fleet_api::overrides::OVERRIDE_DELETE;
use fleet_api::validation::quote;
use fleet_api::Object;
use serde_json::{json, Value};

use super::applicable::{rule_matches, selects, ResourceId};
use super::OverrideSnapshot;

const NAME_VARIABLE: &str = "${MEMBER-CLUSTER-NAME}";
const LABEL_VARIABLE: &str = "${MEMBER-CLUSTER-LABEL-KEY-";

/// Why a resource could not be rendered for a cluster: the whole message
/// the cluster's `Overridden` condition carries after its prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OverrideFailure {
    /// `ResourceOverrideSnapshot "frontend-0" failed to apply on Deployment
    /// "frontend" in namespace "web": <why>`.
    pub message: String,
}

/// `Deployment "frontend" in namespace "web"` / `ClusterRole "web-reader"`.
fn describe(id: ResourceId) -> String {
    if id.namespace.is_empty() {
        format!("{} {}", id.kind, quote(id.name))
    } else {
        format!("{} {} in namespace {}", id.kind, quote(id.name), quote(id.namespace))
    }
}

/// OV-6: `value` with `${MEMBER-CLUSTER-NAME}` and
/// `${MEMBER-CLUSTER-LABEL-KEY-<key>}` replaced in its JSON text; other
/// `${...}` text is left alone. A missing label or an unclosed label
/// variable is an error naming it.
pub fn substitute_variables(value: &Value, cluster: &str, labels: &BTreeMap<String, String>) -> Result<Value, String> {
    let text = value.to_string();
    if !text.contains("${MEMBER-CLUSTER-") {
        return Ok(value.clone());
    }
    // JSON-escaped text to splice inside a JSON string.
    let escaped = |s: &str| {
        let quoted = Value::String(s.to_string()).to_string();
        quoted[1..quoted.len() - 1].to_string()
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("${MEMBER-CLUSTER-") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix(NAME_VARIABLE) {
            out.push_str(&escaped(cluster));
            rest = after;
        } else if let Some(after) = tail.strip_prefix(LABEL_VARIABLE) {
            let Some(end) = after.find('}') else {
                return Err(format!("variable {LABEL_VARIABLE}... has no closing }}"));
            };
            let key = &after[..end];
            let Some(label) = labels.get(key) else {
                return Err(format!("label key {key} not found on cluster {cluster}"));
            };
            out.push_str(&escaped(label));
            rest = &after[end + 1..];
        } else {
            out.push_str("${");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    serde_json::from_str(&out).map_err(|e| format!("the value after substituting variables is not JSON: {e}"))
}

/// Renders `resource` for cluster `cluster` (with `labels`) through
/// `snapshots`, given in OV-5 order (CRO snapshots, then RO snapshots).
/// `Ok(None)`: a Delete rule removed it from this cluster's Work.
pub fn render(
    resource: &Object,
    cluster: &str,
    labels: &BTreeMap<String, String>,
    snapshots: &[&OverrideSnapshot],
) -> Result<Option<Object>, OverrideFailure> {
    let value = fleet_api::typed::encode(resource);
    match render_value(&value, cluster, labels, snapshots)? {
        None => Ok(None),
        Some(rendered) if rendered == value => Ok(Some(resource.clone())),
        Some(rendered) => serde_json::from_value::<Object>(rendered).map(Some).map_err(|e| OverrideFailure {
            message: format!("the overridden {} is not a valid object: {e}", describe(ResourceId::of(resource))),
        }),
    }
}

/// [`render`] on an object still in JSON form (a snapshot's
/// `selectedResources` entry): patched in place of a copy, never decoded.
/// The result must still be an object with `apiVersion`, `kind` and
/// `metadata.name`.
pub fn render_value(
    resource: &Value,
    cluster: &str,
    labels: &BTreeMap<String, String>,
    snapshots: &[&OverrideSnapshot],
) -> Result<Option<Value>, OverrideFailure> {
    let id = ResourceId::of_value(resource);
    let mut document: Option<Value> = None;
    for snapshot in snapshots.iter().filter(|s| selects(s, id)) {
        let fail = |why: String| OverrideFailure {
            message: format!(
                "{} {} failed to apply on {}: {why}",
                snapshot.kind(),
                quote(&snapshot.name),
                describe(id)
            ),
        };
        for rule in snapshot.spec.policy.override_rules.iter().filter(|r| rule_matches(r, labels)) {
            if rule.override_type() == OVERRIDE_DELETE {
                return Ok(None);
            }
            let mut operations = Vec::with_capacity(rule.json_patch_overrides.len());
            for p in &rule.json_patch_overrides {
                let mut op = json!({"op": p.op, "path": p.path});
                if p.op != "remove" {
                    let value = p.value.clone().unwrap_or(Value::Null);
                    op["value"] = substitute_variables(&value, cluster, labels).map_err(fail)?;
                }
                operations.push(op);
            }
            let patch: json_patch::Patch =
                serde_json::from_value(Value::Array(operations)).map_err(|e| fail(e.to_string()))?;
            let doc = document.get_or_insert_with(|| resource.clone());
            json_patch::patch(doc, &patch).map_err(|e| fail(e.to_string()))?;
        }
    }
    let Some(doc) = document else { return Ok(Some(resource.clone())) };
    let text = |pointer: &str| doc.pointer(pointer).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if text("/apiVersion") && text("/kind") && text("/metadata/name") {
        Ok(Some(doc))
    } else {
        Err(OverrideFailure {
            message: format!(
                "the overridden {} is not a valid object: it needs apiVersion, kind and metadata.name",
                describe(id)
            ),
        })
    }
}
