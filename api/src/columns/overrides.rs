//! `get` columns of overrides, their snapshots and envelopes.

use serde_json::Value;

use super::{age_column, name_column, Column};
use crate::Object;

/// The override's spec (or a snapshot's `overrideSpec`).
fn override_spec(object: &Object) -> Value {
    let spec = object.spec().cloned().unwrap_or_default();
    spec.get("overrideSpec").cloned().unwrap_or(spec)
}

/// `web`, `web (Namespaced)` or `<all>` for no placement reference.
fn placement_ref(object: &Object) -> String {
    let spec = override_spec(object);
    match spec.get("placement").and_then(|p| p.get("name")).and_then(Value::as_str) {
        Some(name) if spec.pointer("/placement/scope").and_then(Value::as_str) == Some("Namespaced") => {
            format!("{name} (Namespaced)")
        }
        Some(name) => name.to_string(),
        None => "<all>".to_string(),
    }
}

fn count(object: &Object, pointers: &[&str]) -> String {
    let spec = override_spec(object);
    let n: usize = pointers.iter().filter_map(|p| spec.pointer(p).and_then(Value::as_array)).map(Vec::len).sum();
    n.to_string()
}

/// `NAME`, `PLACEMENT`, `RESOURCES`, `RULES`, `AGE` of a CRO or RO.
pub fn override_columns() -> Vec<Column> {
    vec![
        name_column(),
        Column { header: "PLACEMENT", value: |o, _| placement_ref(o) },
        Column { header: "RESOURCES", value: |o, _| count(o, &["/clusterResourceSelectors", "/resourceSelectors"]) },
        Column { header: "RULES", value: |o, _| count(o, &["/policy/overrideRules"]) },
        age_column(),
    ]
}

/// A label's value, `""` when absent.
fn label(object: &Object, key: &str) -> String {
    object.metadata.labels.get(key).cloned().unwrap_or_default()
}

/// `NAME`, `OVERRIDE`, `INDEX`, `LATEST`, `AGE` of an override snapshot.
pub fn override_snapshot_columns() -> Vec<Column> {
    vec![
        name_column(),
        Column { header: "OVERRIDE", value: |o, _| label(o, crate::overrides::PARENT_OVERRIDE_LABEL) },
        Column { header: "INDEX", value: |o, _| label(o, crate::overrides::OVERRIDE_INDEX_LABEL) },
        Column { header: "LATEST", value: |o, _| label(o, crate::snapshot::IS_LATEST_LABEL) },
        age_column(),
    ]
}

/// `NAME`, `MANIFESTS`, `AGE` of an envelope.
pub fn envelope_columns() -> Vec<Column> {
    vec![
        name_column(),
        Column {
            header: "MANIFESTS",
            value: |o, _| o.rest.get("data").and_then(Value::as_object).map_or(0, |d| d.len()).to_string(),
        },
        age_column(),
    ]
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::super::{headers, row, Lookups, RowContext};
    use super::*;

    #[test]
    fn overrides_snapshots_and_envelopes_have_their_columns() {
        let lookups = Lookups::default();
        let c = RowContext { now: SystemTime::now(), lookups: &lookups };
        let ro: Object =
            serde_json::from_value(serde_json::json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ResourceOverride", "metadata": {"name": "frontend", "namespace": "web"},
            "spec": {"placement": {"name": "web"}, "resourceSelectors": [{"kind": "Deployment"}],
                     "policy": {"overrideRules": [{}, {}, {}]}}}))
            .unwrap();
        assert_eq!(headers(&override_columns()), ["NAME", "PLACEMENT", "RESOURCES", "RULES", "AGE"]);
        assert_eq!(&row(&override_columns(), &ro, &c)[..4], ["frontend", "web", "1", "3"]);
        let snap: Object = serde_json::from_value(serde_json::json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ResourceOverrideSnapshot", "metadata": {"name": "frontend-0", "namespace": "web",
            "labels": {"kubernetes-fleet.io/parent-resource-override": "frontend", "kubernetes-fleet.io/override-index": "0",
                       "kubernetes-fleet.io/is-latest-snapshot": "true"}},
            "spec": {"overrideSpec": {"policy": {"overrideRules": [{}]}}, "overrideHash": "x"}}))
        .unwrap();
        assert_eq!(&row(&override_snapshot_columns(), &snap, &c)[..4], ["frontend-0", "frontend", "0", "true"]);
        let env: Object =
            serde_json::from_value(serde_json::json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ResourceEnvelope", "metadata": {"name": "quota", "namespace": "ops"}, "data": {"a": {}, "b": {}}}))
            .unwrap();
        assert_eq!(&row(&envelope_columns(), &env, &c)[..2], ["quota", "2"]);
    }
}
