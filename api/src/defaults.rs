//! What a Kubernetes API server fills in on built-in kinds when they are
//! written, done the same way on the hub: clients (KubeFleet's own tests
//! among them) read an object back from the hub as the reference for what
//! a member should hold, and a real server's defaults are part of it.
//!
//! Namespace: the `kubernetes.io/metadata.name` label (always the
//! namespace's own name) and the `kubernetes` finalizer in
//! `spec.finalizers`.

use serde_json::{json, Value};

use crate::Object;

/// The label a Namespace always carries with its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Fills in the server-side defaults of a built-in kind.
pub fn apply(object: &mut Object) {
    if object.kind == "Namespace" && object.group().is_empty() {
        object.metadata.labels.insert(NAMESPACE_NAME_LABEL.into(), object.metadata.name.clone());
        let spec = object.rest.entry("spec").or_insert_with(|| json!({}));
        if let Value::Object(spec) = spec {
            spec.entry("finalizers").or_insert_with(|| json!(["kubernetes"]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_gets_its_name_label_and_the_kubernetes_finalizer() {
        let mut ns: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "other", "a": "b"}}}))
        .expect("namespace");
        apply(&mut ns);
        assert_eq!(ns.metadata.labels[NAMESPACE_NAME_LABEL], "team");
        assert_eq!(ns.metadata.labels["a"], "b");
        assert_eq!(ns.rest["spec"], json!({"finalizers": ["kubernetes"]}));
        let mut kept: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "t"}, "spec": {"finalizers": []}}))
        .expect("namespace");
        apply(&mut kept);
        assert_eq!(kept.rest["spec"], json!({"finalizers": []}), "given finalizers are kept");
        let mut cm: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "t"}}))
        .expect("config map");
        apply(&mut cm);
        assert!(cm.metadata.labels.is_empty() && cm.rest.get("spec").is_none());
    }
}
