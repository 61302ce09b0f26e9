//! What the simulated API server refuses, with Kubernetes-style messages:
//! names, namespaces and scope (`validate_generic`), API versions of known
//! kinds, and the fields the simulation relies on (replica counts, resource
//! quantities, Service types, CRD names). Everything else is accepted as is.

use fleet_api::kinds::{self, Scope};
use fleet_api::names;
use fleet_api::quantity::Quantity;
use fleet_api::validation::{quote, validate_generic, FieldError, ValidationError};
use fleet_api::Object;
use serde_json::Value;

use super::workload::{field, Workload};
use crate::targets::TargetError;

/// Service types the API server accepts.
const SERVICE_TYPES: &[&str] = &["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

/// The scope of a manifest's kind: from the kind registry, else from a CRD
/// stored in the cluster (`crd_scope`), else namespaced exactly when the
/// manifest carries a namespace.
pub(crate) fn scope_of(manifest: &Object, crd_scope: impl Fn(&str, &str) -> Option<Scope>) -> Scope {
    if let Some(info) = kinds::lookup_group_kind(manifest.group(), &manifest.kind) {
        return info.scope;
    }
    crd_scope(manifest.group(), &manifest.kind).unwrap_or_else(|| {
        kinds::scope_of_unknown(manifest.metadata.namespace.as_deref().is_some_and(|n| !n.is_empty()))
    })
}

/// Checks a manifest before it is applied.
pub(crate) fn validate(manifest: &Object, scope: Scope) -> Result<(), TargetError> {
    let invalid = |e: ValidationError| TargetError::Invalid(e.to_string());
    if let Some(prefix) = manifest.metadata.generate_name.as_deref().filter(|g| !g.is_empty()) {
        return Err(TargetError::Invalid(format!(
            "{} with metadata.generateName {prefix:?} cannot be applied: give it a metadata.name",
            manifest.kind
        )));
    }
    if let Some(info) = kinds::lookup_group_kind(manifest.group(), &manifest.kind) {
        if !info.accepts_api_version(&manifest.api_version) {
            return Err(TargetError::Invalid(format!(
                "no matches for kind {:?} in version {:?} (the cluster serves it as {})",
                manifest.kind,
                manifest.api_version,
                info.versions.iter().map(|v| quote(&with_group(info.group, v))).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    validate_generic(manifest, scope).map_err(invalid)?;
    let mut errors = Vec::new();
    if let Some(workload) = Workload::of(manifest) {
        check_workload(manifest, workload, &mut errors);
    }
    match (manifest.group(), manifest.kind.as_str()) {
        ("", "Namespace") => {
            if let Some(detail) = names::dns1123_label_error(&manifest.metadata.name) {
                errors.push(FieldError::invalid("metadata.name", quote(&manifest.metadata.name), detail));
            }
        }
        ("", "Service") => {
            if let Some(t) = field(manifest, &["spec", "type"]) {
                if !t.as_str().is_some_and(|t| SERVICE_TYPES.contains(&t)) {
                    errors.push(FieldError::not_supported("spec.type", t, SERVICE_TYPES));
                }
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => check_crd(manifest, &mut errors),
        _ => {}
    }
    ValidationError::check(&manifest.kind, &manifest.metadata.name, errors).map_err(invalid)
}

fn with_group(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Replica counts are non-negative integers; resource quantities parse;
/// requests do not exceed limits.
fn check_workload(manifest: &Object, workload: Workload, errors: &mut Vec<FieldError>) {
    if let Some(name) = workload.count_field() {
        if let Some(value) = field(manifest, &["spec", name]) {
            if value.as_i64().is_none_or(|n| n < 0) {
                errors.push(FieldError::invalid(
                    format!("spec.{name}"),
                    value,
                    "must be an integer greater than or equal to 0",
                ));
            }
        }
    }
    let base = workload.pod_spec_path().join(".");
    let Some(pod_spec) = field(manifest, workload.pod_spec_path()) else {
        return;
    };
    for list in ["containers", "initContainers"] {
        let containers = pod_spec.get(list).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for (i, container) in containers.iter().enumerate() {
            let path = format!("{base}.{list}[{i}].resources");
            check_resources(container.get("resources"), &path, errors);
        }
    }
}

fn check_resources(resources: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let Some(resources) = resources else {
        return;
    };
    let mut parsed = std::collections::BTreeMap::new();
    for kind in ["requests", "limits"] {
        let Some(map) = resources.get(kind).and_then(Value::as_object) else {
            continue;
        };
        for (name, value) in map {
            let field_path = format!("{path}.{kind}.{name}");
            let quantity = match value {
                Value::String(s) => Quantity::parse(s).map_err(|e| e.detail),
                Value::Number(n) => Quantity::parse(&n.to_string()).map_err(|e| e.detail),
                _ => Err("must be a quantity string".to_string()),
            };
            match quantity {
                Ok(q) if q < Quantity::default() => {
                    errors.push(FieldError::invalid(field_path, value, "must be greater than or equal to 0"));
                }
                Ok(q) => {
                    parsed.insert((kind, name.clone()), q);
                }
                Err(detail) => errors.push(FieldError::invalid(
                    field_path,
                    value,
                    format!("quantities must match a number with an optional suffix ({detail})"),
                )),
            }
        }
    }
    for ((kind, name), request) in &parsed {
        if *kind != "requests" {
            continue;
        }
        if let Some(limit) = parsed.get(&("limits", name.clone())) {
            if request > limit {
                errors.push(FieldError::invalid(
                    format!("{path}.requests"),
                    quote(&request.to_string()),
                    format!("must be less than or equal to {name} limit of {limit}"),
                ));
            }
        }
    }
}

/// `spec.group`, `spec.names.plural`, `spec.names.kind` present; the name is
/// `<plural>.<group>`; `spec.scope` is Namespaced or Cluster.
fn check_crd(manifest: &Object, errors: &mut Vec<FieldError>) {
    let text = |path: &[&str]| field(manifest, path).and_then(Value::as_str).unwrap_or("").to_string();
    let group = text(&["spec", "group"]);
    let plural = text(&["spec", "names", "plural"]);
    for (value, path) in [(&group, "spec.group"), (&plural, "spec.names.plural")] {
        if value.is_empty() {
            errors.push(FieldError::required(path, ""));
        }
    }
    if text(&["spec", "names", "kind"]).is_empty() {
        errors.push(FieldError::required("spec.names.kind", ""));
    }
    let expected = format!("{plural}.{group}");
    if !group.is_empty() && !plural.is_empty() && manifest.metadata.name != expected {
        errors.push(FieldError::invalid(
            "metadata.name",
            quote(&manifest.metadata.name),
            format!("must be spec.names.plural+\".\"+spec.group ({expected:?})"),
        ));
    }
    let scope = text(&["spec", "scope"]);
    if !["Namespaced", "Cluster"].contains(&scope.as_str()) {
        errors.push(FieldError::not_supported("spec.scope", quote(&scope), &["Cluster", "Namespaced"]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    fn check(v: Value) -> Result<(), String> {
        let o = object(v);
        let scope = scope_of(&o, |_, _| None);
        validate(&o, scope).map_err(|e| e.to_string())
    }

    #[test]
    fn names_scope_and_versions() {
        check(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "b"}})).unwrap();
        let e =
            check(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name", "namespace": "b"}}))
                .unwrap_err();
        assert!(e.contains("metadata.name: Invalid value: \"Bad_Name\""), "{e}");
        let e = check(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "b"}})).unwrap_err();
        assert!(e.contains("metadata.name: Required value"), "{e}");
        let e = check(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})).unwrap_err();
        assert!(e.contains("metadata.namespace: Required value"), "{e}");
        let e = check(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "namespace": "b"}}))
            .unwrap_err();
        assert!(e.contains("metadata.namespace: Forbidden"), "{e}");
        let e = check(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}})).unwrap_err();
        assert!(e.contains("metadata.name"), "{e}");
        let e = check(
            json!({"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "b"}}),
        )
        .unwrap_err();
        assert!(
            e.contains("no matches for kind \"Deployment\" in version \"apps/v1beta1\"") && e.contains("apps/v1"),
            "{e}"
        );
        let e = check(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "a-", "namespace": "b"}}),
        )
        .unwrap_err();
        assert!(e.contains("generateName"), "{e}");
        // RBAC names may hold colons.
        check(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:x"}}))
            .unwrap();
        // Unknown kinds: scope from the namespace, or from a CRD.
        check(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "n"}}))
            .unwrap();
        let w = object(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}));
        let scope = scope_of(&w, |g, k| (g == "example.com" && k == "Widget").then_some(Scope::Namespaced));
        assert!(validate(&w, scope).unwrap_err().to_string().contains("metadata.namespace: Required value"));
    }

    #[test]
    fn workload_fields() {
        let deploy = |spec: Value| {
            check(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"}, "spec": spec}),
            )
        };
        deploy(json!({"replicas": 2, "template": {"spec": {"containers": [{"name": "a",
            "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": 1}}}]}}}))
        .unwrap();
        let e = deploy(json!({"replicas": -1})).unwrap_err();
        assert!(e.contains("spec.replicas: Invalid value: -1"), "{e}");
        let e = deploy(json!({"template": {"spec": {"containers": [{"name": "a",
            "resources": {"requests": {"cpu": "lots"}}}]}}}))
        .unwrap_err();
        assert!(e.contains("spec.template.spec.containers[0].resources.requests.cpu: Invalid value: \"lots\""), "{e}");
        let e = deploy(json!({"template": {"spec": {"containers": [{"name": "a",
            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]}}}))
        .unwrap_err();
        assert!(e.contains("must be less than or equal to cpu limit of 1"), "{e}");
        let e = check(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
            "spec": {"initContainers": [{"name": "i", "resources": {"limits": {"memory": "x"}}}]}}))
        .unwrap_err();
        assert!(e.contains("spec.initContainers[0].resources.limits.memory"), "{e}");
    }

    #[test]
    fn services_and_crds() {
        let e = check(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"},
            "spec": {"type": "Magic"}}))
        .unwrap_err();
        assert!(e.contains("spec.type: Unsupported value: \"Magic\""), "{e}");
        let crd = |name: &str, scope: &str| {
            check(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": name}, "spec": {"group": "example.com", "scope": scope,
                "names": {"plural": "widgets", "kind": "Widget"}}}))
        };
        crd("widgets.example.com", "Namespaced").unwrap();
        let e = crd("widget.example.com", "Namespaced").unwrap_err();
        assert!(e.contains("widgets.example.com"), "{e}");
        let e = crd("widgets.example.com", "Global").unwrap_err();
        assert!(e.contains("spec.scope"), "{e}");
    }
}
