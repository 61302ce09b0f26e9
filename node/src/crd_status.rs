//! The status a CustomResourceDefinition is read with. The hub serves a
//! definition's kind from the moment it is stored (there is no separate
//! serving step to wait for), so every stored definition reads as
//! Kubernetes reports one that is ready: its names accepted as given,
//! `NamesAccepted` and `Established` true since its creation, and the
//! storage version recorded. Clients that wait for `Established` (kubectl
//! wait, controller-runtime, installers) see it at once.

use fleet_api::Object;
use serde_json::{json, Value};

/// `crd` with the status derived from its spec.
pub fn view_of(crd: &Object) -> Object {
    let mut out = crd.clone();
    let spec = crd.rest.get("spec").cloned().unwrap_or(Value::Null);
    let mut names = spec.get("names").cloned().unwrap_or_else(|| json!({}));
    let kind = names.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if names.get("listKind").is_none() && !kind.is_empty() {
        names["listKind"] = Value::String(format!("{kind}List"));
    }
    if names.get("singular").is_none() && !kind.is_empty() {
        names["singular"] = Value::String(kind.to_lowercase());
    }
    let stored: Vec<Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let since = crd.metadata.creation_timestamp.clone().unwrap_or_default();
    let condition = |type_: &str, reason: &str, message: &str| json!({"type": type_, "status": "True", "reason": reason, "message": message, "lastTransitionTime": since});
    out.rest.insert(
        "status".into(),
        json!({
            "acceptedNames": names,
            "conditions": [
                condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": stored,
        }),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_definition_reads_as_established_with_its_names() {
        let crd: Object = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "creationTimestamp": "2026-01-02T03:04:05Z"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": "v1", "served": true, "storage": true},
                                  {"name": "v1beta1", "served": true, "storage": false}]}
        }))
        .expect("crd");
        let status = view_of(&crd).rest["status"].clone();
        assert_eq!(
            status["acceptedNames"],
            json!({"kind": "Widget", "plural": "widgets", "listKind": "WidgetList", "singular": "widget"})
        );
        assert_eq!(status["storedVersions"], json!(["v1"]));
        let types: Vec<(&str, &str)> = status["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| (c["type"].as_str().unwrap_or(""), c["status"].as_str().unwrap_or("")))
            .collect();
        assert_eq!(types, [("NamesAccepted", "True"), ("Established", "True")]);
        assert_eq!(status["conditions"][1]["lastTransitionTime"], "2026-01-02T03:04:05Z");
    }
}
