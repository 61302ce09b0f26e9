//! Field-path validation errors rendered exactly like Kubernetes', and the
//! generic checks every object passes (names, namespace, labels, size).

use std::collections::BTreeMap;
use std::fmt;

use crate::kinds::Scope;
use crate::names;
use crate::object::Object;

/// Largest serialized object accepted (1.5 MiB, as in Kubernetes/etcd).
pub const MAX_OBJECT_BYTES: usize = 1_572_864;

/// Largest total size of an object's annotations (keys plus values), 256 KiB.
pub const MAX_ANNOTATIONS_BYTES: usize = 262_144;

/// The category of a [`FieldError`], mirroring Kubernetes' `field.ErrorType`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldErrorType {
    /// The value is malformed or out of range.
    Invalid,
    /// A required value is missing.
    Required,
    /// The field may not be set here.
    Forbidden,
    /// The value is not one of a fixed set.
    NotSupported,
    /// The value appears twice where it must be unique.
    Duplicate,
    /// The value is longer than allowed.
    TooLong,
    /// A list has more items than allowed.
    TooMany,
}

impl FieldErrorType {
    /// The words Kubernetes prints for this type (`Invalid value`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
        }
    }
}

/// One problem with one field: its path, kind of error, value and detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Dotted field path, e.g. `spec.policy.numberOfClusters`; empty for the
    /// whole object.
    pub path: String,
    /// The category of the problem.
    pub error_type: FieldErrorType,
    /// The offending value, already rendered (strings quoted, numbers bare).
    pub value: Option<String>,
    /// What is allowed.
    pub detail: String,
}

/// Quotes a string the way Kubernetes (Go's `%q`) shows string values: `"x"`.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Renders a value for an error message: text that already reads as JSON (a
/// number, `true`/`false`/`null`, a quoted string, an object or list) is kept
/// as is, any other text is a string and gets quoted.
fn render_value(value: impl fmt::Display) -> String {
    let text = value.to_string();
    if serde_json::from_str::<serde_json::Value>(&text).is_ok() {
        text
    } else {
        quote(&text)
    }
}

/// Joins a field path and a child name: `join_path("spec", "policy")` is
/// `spec.policy`, `join_path("", "spec")` is `spec`.
pub fn join_path(base: &str, child: &str) -> String {
    if base.is_empty() {
        child.to_string()
    } else {
        format!("{base}.{child}")
    }
}

impl FieldError {
    /// A malformed or out-of-range value. `value` is shown bare when it reads
    /// as a number (or JSON), quoted otherwise.
    pub fn invalid(path: impl Into<String>, value: impl fmt::Display, detail: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            error_type: FieldErrorType::Invalid,
            value: Some(render_value(value)),
            detail: detail.into(),
        }
    }

    /// A missing required value.
    pub fn required(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError { path: path.into(), error_type: FieldErrorType::Required, value: None, detail: detail.into() }
    }

    /// A field that may not be set here.
    pub fn forbidden(path: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError { path: path.into(), error_type: FieldErrorType::Forbidden, value: None, detail: detail.into() }
    }

    /// A value outside a fixed set; the detail lists the supported values.
    pub fn not_supported(path: impl Into<String>, value: impl fmt::Display, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
            format!("supported values: {}", list.join(", "))
        };
        FieldError {
            path: path.into(),
            error_type: FieldErrorType::NotSupported,
            value: Some(render_value(value)),
            detail,
        }
    }

    /// A value that must be unique but is repeated.
    pub fn duplicate(path: impl Into<String>, value: impl fmt::Display) -> Self {
        FieldError {
            path: path.into(),
            error_type: FieldErrorType::Duplicate,
            value: Some(render_value(value)),
            detail: String::new(),
        }
    }

    /// A value longer than `max` bytes.
    pub fn too_long(path: impl Into<String>, max: usize) -> Self {
        FieldError {
            path: path.into(),
            error_type: FieldErrorType::TooLong,
            value: None,
            detail: format!("must have at most {max} bytes"),
        }
    }

    /// A list with `actual` items where at most `max` are allowed.
    pub fn too_many(path: impl Into<String>, actual: usize, max: usize) -> Self {
        FieldError {
            path: path.into(),
            error_type: FieldErrorType::TooMany,
            value: Some(actual.to_string()),
            detail: format!("must have at most {max} items"),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() { "<object>" } else { &self.path };
        write!(f, "{path}: {}", self.error_type.as_str())?;
        if let Some(value) = &self.value {
            write!(f, ": {value}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Every problem found in one object, rendered like Kubernetes' "is invalid".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// Every problem, in the order found.
    pub errors: Vec<FieldError>,
}

impl ValidationError {
    /// `Ok(())` when `errors` is empty, otherwise the error naming the object.
    pub fn check(kind: &str, name: &str, errors: Vec<FieldError>) -> Result<(), ValidationError> {
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ValidationError { kind: kind.to_string(), name: name.to_string(), errors })
        }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} is invalid:", self.kind, quote(&self.name))?;
        for e in &self.errors {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// Adds a "not supported" error at `path` when `value` is given and is not
/// one of `allowed`.
pub fn check_enum(errors: &mut Vec<FieldError>, path: &str, value: Option<&str>, allowed: &[&str]) {
    if let Some(v) = value {
        if !allowed.contains(&v) {
            errors.push(FieldError::not_supported(path, quote(v), allowed));
        }
    }
}

/// Adds an error at `path` when `key` is not a valid label key (topology
/// keys, toleration keys, property and claim names share that syntax).
pub fn check_label_key(errors: &mut Vec<FieldError>, path: String, key: &str) {
    if let Some(detail) = names::validate_label_key(key) {
        errors.push(FieldError::invalid(path, quote(key), detail));
    }
}

/// Checks label keys and values; key errors are reported at `path`, value
/// errors at `path[key]`.
pub fn validate_labels(labels: &BTreeMap<String, String>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, value) in labels {
        if let Some(detail) = names::validate_label_key(key) {
            errors.push(FieldError::invalid(path, quote(key), detail));
        }
        if let Some(detail) = names::validate_label_value(value) {
            errors.push(FieldError::invalid(format!("{path}[{key}]"), quote(value), detail));
        }
    }
    errors
}

/// Checks annotation keys (label-key syntax) and their total size.
pub fn validate_annotations(annotations: &BTreeMap<String, String>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut total = 0usize;
    for (key, value) in annotations {
        if let Some(detail) = names::validate_label_key(key) {
            errors.push(FieldError::invalid(path, quote(key), detail));
        }
        total += key.len() + value.len();
    }
    if total > MAX_ANNOTATIONS_BYTES {
        errors.push(FieldError::too_long(path, MAX_ANNOTATIONS_BYTES));
    }
    errors
}

/// The name rule of an object's kind: RBAC kinds accept any path-segment
/// name (`system:aggregate-to-view`), every other kind a DNS-1123 subdomain.
fn name_error(object: &Object) -> Option<String> {
    if object.group() == "rbac.authorization.k8s.io" {
        names::path_segment_error(&object.metadata.name)
    } else {
        names::dns1123_subdomain_error(&object.metadata.name)
    }
}

/// Longest kind accepted.
const MAX_KIND: usize = 63;

/// Why `api_version` is not `VERSION` or `GROUP/VERSION` (a group is a
/// lowercase DNS subdomain, a version lowercase letters and digits): no
/// storage key part may hold a `/`.
fn api_version_error(api_version: &str) -> Option<String> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if api_version.matches('/').count() > 1 || (api_version.contains('/') && group.is_empty()) {
        return Some("must be VERSION or GROUP/VERSION, with one '/' at most (e.g. 'v1', 'apps/v1')".into());
    }
    if !group.is_empty() {
        if let Some(detail) = names::dns1123_subdomain_error(group) {
            return Some(format!("group {}: {detail}", quote(group)));
        }
    }
    let valid_version = !version.is_empty()
        && version.len() <= MAX_KIND
        && version.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (!valid_version).then(|| {
        format!("version {}: must be 1-{MAX_KIND} lowercase letters and digits (e.g. 'v1', 'v1beta1')", quote(version))
    })
}

/// Why `kind` is not a CamelCase name of ASCII letters and digits starting
/// with a letter (no `/`, so no storage key can be forged from it).
fn kind_error(kind: &str) -> Option<String> {
    let valid = kind.len() <= MAX_KIND
        && kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && kind.bytes().all(|b| b.is_ascii_alphanumeric());
    (!valid).then(|| format!("must be 1-{MAX_KIND} ASCII letters and digits starting with a letter (e.g. 'ConfigMap')"))
}

/// Checks what every object must satisfy regardless of kind (apiVersion,
/// kind, name, namespace for `scope`, labels, annotations, size), listing all
/// problems rather than the first.
pub fn validate_generic(object: &Object, scope: Scope) -> Result<(), ValidationError> {
    let mut errors = Vec::new();
    let meta = &object.metadata;
    if object.api_version.is_empty() {
        errors.push(FieldError::required("apiVersion", "apiVersion is required"));
    } else if let Some(detail) = api_version_error(&object.api_version) {
        errors.push(FieldError::invalid("apiVersion", quote(&object.api_version), detail));
    }
    if object.kind.is_empty() {
        errors.push(FieldError::required("kind", "kind is required"));
    } else if let Some(detail) = kind_error(&object.kind) {
        errors.push(FieldError::invalid("kind", quote(&object.kind), detail));
    }
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    if meta.name.is_empty() {
        if generate_name.is_empty() {
            errors.push(FieldError::required("metadata.name", "name is required"));
        } else {
            // The generated name appends random characters, so the prefix
            // without its trailing dashes must itself be a valid name.
            let prefix = generate_name.trim_end_matches('-');
            if let Some(detail) = names::dns1123_subdomain_error(prefix) {
                errors.push(FieldError::invalid("metadata.generateName", quote(generate_name), detail));
            }
        }
    } else if let Some(detail) = name_error(object) {
        errors.push(FieldError::invalid("metadata.name", quote(&meta.name), detail));
    }
    let namespace = meta.namespace.as_deref().unwrap_or("");
    match scope {
        Scope::Namespaced if namespace.is_empty() => {
            errors.push(FieldError::required("metadata.namespace", "namespace is required"));
        }
        Scope::Namespaced => {
            if let Some(detail) = names::dns1123_label_error(namespace) {
                errors.push(FieldError::invalid("metadata.namespace", quote(namespace), detail));
            }
        }
        Scope::Cluster if !namespace.is_empty() => {
            errors.push(FieldError::forbidden(
                "metadata.namespace",
                format!("not allowed on cluster-scoped kind {}", object.kind),
            ));
        }
        Scope::Cluster => {}
    }
    errors.extend(validate_labels(&meta.labels, "metadata.labels"));
    errors.extend(validate_annotations(&meta.annotations, "metadata.annotations"));
    if object.to_json().len() > MAX_OBJECT_BYTES {
        errors.push(FieldError::too_long("", MAX_OBJECT_BYTES));
    }
    ValidationError::check(&object.kind, &meta.name, errors)
}

#[cfg(test)]
mod tests {
    #[test]
    fn api_version_and_kind_cannot_put_a_slash_in_a_storage_key() {
        for (api_version, kind) in
            [("a/b/v1", "ConfigMap"), ("/v1", "ConfigMap"), ("v1", "Config/Map"), ("apps/V1", "Deployment")]
        {
            let o = object(&format!(r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"name":"a"}}}}"#));
            let err = validate_generic(&o, Scope::Cluster).expect_err(&format!("{api_version} {kind} refused"));
            let text = err.to_string();
            assert!(text.contains("apiVersion") || text.contains("kind"), "{text}");
            assert!(text.contains(&quote(api_version)) || text.contains(&quote(kind)), "{text}");
        }
        for (api_version, kind) in [("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("fleet.example.io/v1beta1", "X2")]
        {
            let o = object(&format!(r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"name":"a"}}}}"#));
            assert!(validate_generic(&o, Scope::Cluster).is_ok(), "{api_version} {kind} accepted");
        }
    }

    use super::*;

    fn object(json: &str) -> Object {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn field_errors_render_like_kubernetes() {
        let cases = [
            (
                FieldError::invalid("spec.policy.numberOfClusters", -1, "must be greater than or equal to 0"),
                "spec.policy.numberOfClusters: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                FieldError::forbidden("spec.policy.clusterNames", "only allowed with placementType PickFixed"),
                "spec.policy.clusterNames: Forbidden: only allowed with placementType PickFixed",
            ),
            (
                FieldError::required("metadata.name", "name is required"),
                "metadata.name: Required value: name is required",
            ),
            (
                FieldError::not_supported("spec.x", "Foo", &["A", "B"]),
                r#"spec.x: Unsupported value: "Foo": supported values: "A", "B""#,
            ),
            (FieldError::too_many("spec.x", 101, 100), "spec.x: Too many: 101: must have at most 100 items"),
            (FieldError::duplicate("spec.clusterNames[2]", "a"), r#"spec.clusterNames[2]: Duplicate value: "a""#),
            (
                FieldError::too_long("metadata.annotations", 10),
                "metadata.annotations: Too long: must have at most 10 bytes",
            ),
            (FieldError::too_long("", MAX_OBJECT_BYTES), "<object>: Too long: must have at most 1572864 bytes"),
            (FieldError::invalid("spec.s", "web app", "bad"), r#"spec.s: Invalid value: "web app": bad"#),
            (FieldError::invalid("spec.s", quote("5"), "bad"), r#"spec.s: Invalid value: "5": bad"#),
            (FieldError::invalid("spec.f", 1.5, "bad"), "spec.f: Invalid value: 1.5: bad"),
            (FieldError::required("spec.x", ""), "spec.x: Required value"),
            (FieldError::not_supported("spec.x", "Foo", &[]), r#"spec.x: Unsupported value: "Foo""#),
        ];
        for (error, want) in cases {
            assert_eq!(error.to_string(), want);
        }
    }

    #[test]
    fn stored_value_is_rendered() {
        assert_eq!(FieldError::invalid("a", "x", "d").value.as_deref(), Some("\"x\""));
        assert_eq!(FieldError::invalid("a", 7, "d").value.as_deref(), Some("7"));
        assert_eq!(FieldError::invalid("a", "", "d").value.as_deref(), Some("\"\""));
        assert_eq!(FieldError::required("a", "d").value, None);
    }

    #[test]
    fn validation_error_lists_every_problem() {
        let error = ValidationError {
            kind: "ClusterResourcePlacement".into(),
            name: "web".into(),
            errors: vec![
                FieldError::invalid("spec.policy.numberOfClusters", -1, "must be greater than or equal to 0"),
                FieldError::forbidden("spec.policy.clusterNames", "only allowed with placementType PickFixed"),
            ],
        };
        assert_eq!(
            error.to_string(),
            "ClusterResourcePlacement \"web\" is invalid:\n  spec.policy.numberOfClusters: Invalid value: -1: must be greater than or equal to 0\n  spec.policy.clusterNames: Forbidden: only allowed with placementType PickFixed"
        );
        assert_eq!(ValidationError::check("K", "n", vec![]), Ok(()));
    }

    #[test]
    fn valid_objects_pass() {
        let cm = object(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app.config-1","namespace":"team-a","labels":{"app":"web","example.com/tier":""},"annotations":{"kubernetes.io/description":"anything goes here: !@#"}},"data":{"a":"b"}}"#,
        );
        assert_eq!(validate_generic(&cm, Scope::Namespaced), Ok(()));
        let crp = object(
            r#"{"apiVersion":"placement.kubernetes-fleet.io/v1beta1","kind":"ClusterResourcePlacement","metadata":{"name":"web"}}"#,
        );
        assert_eq!(validate_generic(&crp, Scope::Cluster), Ok(()));
        let generated = object(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"web-"}}"#);
        assert_eq!(validate_generic(&generated, Scope::Cluster), Ok(()));
    }

    #[test]
    fn several_problems_are_all_reported() {
        let bad = object(
            r#"{"apiVersion":"","kind":"ConfigMap","metadata":{"name":"Web_1","namespace":"Team.A","labels":{"bad key":"ok","app":"-x"},"annotations":{"/x":"y"}}}"#,
        );
        let err = validate_generic(&bad, Scope::Namespaced).unwrap_err();
        let lines: Vec<String> = err.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            vec![
                "apiVersion: Required value: apiVersion is required".to_string(),
                format!(
                    "metadata.name: Invalid value: \"Web_1\": {}",
                    names::dns1123_subdomain_error("Web_1").unwrap()
                ),
                format!(
                    "metadata.namespace: Invalid value: \"Team.A\": {}",
                    names::dns1123_label_error("Team.A").unwrap()
                ),
                format!("metadata.labels[app]: Invalid value: \"-x\": {}", names::validate_label_value("-x").unwrap()),
                format!(
                    "metadata.labels: Invalid value: \"bad key\": {}",
                    names::validate_label_key("bad key").unwrap()
                ),
                "metadata.annotations: Invalid value: \"/x\": prefix part must be non-empty".to_string(),
            ]
        );
        let text = err.to_string();
        assert!(text.starts_with("ConfigMap \"Web_1\" is invalid:\n  apiVersion: Required value"));
        assert_eq!(text.lines().count(), 7);
        assert!(!text.ends_with('\n'));
    }

    #[test]
    fn missing_kind_name_and_namespace() {
        let bad = object(r#"{"apiVersion":"v1","metadata":{}}"#);
        let err = validate_generic(&bad, Scope::Namespaced).unwrap_err();
        let lines: Vec<String> = err.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "kind: Required value: kind is required",
                "metadata.name: Required value: name is required",
                "metadata.namespace: Required value: namespace is required",
            ]
        );
    }

    #[test]
    fn namespace_forbidden_on_cluster_scoped_kinds() {
        let ns = object(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","namespace":"b"}}"#);
        let err = validate_generic(&ns, Scope::Cluster).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Namespace \"a\" is invalid:\n  metadata.namespace: Forbidden: not allowed on cluster-scoped kind Namespace"
        );
    }

    #[test]
    fn bad_generate_name_and_long_names() {
        let bad = object(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"Web-"}}"#);
        let err = validate_generic(&bad, Scope::Cluster).unwrap_err();
        assert_eq!(err.errors[0].path, "metadata.generateName");
        let long = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{}","namespace":"{}"}}}}"#,
            "a".repeat(254),
            "b".repeat(64)
        );
        let err = validate_generic(&object(&long), Scope::Namespaced).unwrap_err();
        assert_eq!(err.errors.len(), 2);
        assert!(err.errors[0].detail.contains("no more than 253 characters"));
        assert!(err.errors[1].detail.contains("no more than 63 characters"));
    }

    #[test]
    fn size_limits() {
        let mut obj = object(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"a"}}"#);
        obj.rest.insert("data".into(), serde_json::json!({ "x": "y".repeat(MAX_OBJECT_BYTES) }));
        let err = validate_generic(&obj, Scope::Namespaced).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ConfigMap \"big\" is invalid:\n  <object>: Too long: must have at most 1572864 bytes"
        );
        let mut obj = object(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ann","namespace":"a"}}"#);
        obj.metadata.annotations.insert("a".into(), "x".repeat(MAX_ANNOTATIONS_BYTES));
        let err = validate_generic(&obj, Scope::Namespaced).unwrap_err();
        assert_eq!(err.errors[0].to_string(), "metadata.annotations: Too long: must have at most 262144 bytes");
    }

    #[test]
    fn paths_join() {
        assert_eq!(join_path("", "spec"), "spec");
        assert_eq!(join_path("spec", "policy"), "spec.policy");
    }
}
