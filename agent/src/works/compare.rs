//! Comparing a manifest (or the manifest as Fleet last applied it) with the
//! live object on the member cluster: the differences, as KubeFleet reports
//! them in `driftDetails.observedDrifts` and `diffDetails.observedDiffs`
//! (`{path, valueInHub, valueInMember}`). Pure; used by every target through
//! [`super::strategy`].
//!
//! Rules:
//! - **Ignored everywhere**: `status`; the server-managed
//!   `metadata.{uid, resourceVersion, generation, creationTimestamp,
//!   managedFields, ownerReferences, selfLink, deletionTimestamp,
//!   deletionGracePeriodSeconds, finalizers}` and the `creationTimestamp`
//!   of a pod template; labels and annotations of the `kubernetes.io/`,
//!   `k8s.io/` and `kubernetes-fleet.io/` domains (Fleet's own
//!   [`crate::targets::OWNER_ANNOTATION`] among them); absent `labels`/`annotations` maps
//!   count as empty ones, and an empty `metadata.namespace` as absent.
//! - **Maps** are compared key by key, recursively. Under
//!   [`Comparison::Partial`] only the keys the hub side sets count; under
//!   [`Comparison::Full`] a key only the member side has is a difference too
//!   (`valueInHub` absent).
//! - **Lists** are compared **by index**, each pair of elements with the
//!   same rule (so fields the API server defaults inside list elements — a
//!   container's `imagePullPolicy` — do not count under partial comparison).
//!   A list being replaced whole on apply, a length mismatch is a difference
//!   under either option: an element only the hub has is reported with
//!   `valueInMember` absent, one only the member has with `valueInHub` absent.
//! - **Scalars** are equal when their JSON values are (numbers by value:
//!   `1` equals `1.0`). A hub `null` means "absent" (apply removes the
//!   field), so a member value there is a difference.
//! - **Paths** are JSON pointers (`/spec/replicas`, `/data/greeting`,
//!   `/spec/template/spec/containers/0/image`); values are strings (a string
//!   as is, anything else as compact JSON). At most [`MAX_DIFFERENCES`] are
//!   reported, in key order (list elements by index).
//! - **Secrets**: their values are redacted ([`super::redact`]).

use serde_json::{json, Map, Value};

use super::redact::redact_differences;

/// The most differences reported for one object.
pub const MAX_DIFFERENCES: usize = 100;

/// Metadata fields set by the API server, never compared.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "ownerReferences",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",
];

/// `comparisonOption` of an apply strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Comparison {
    /// Only the fields the hub side sets (`PartialComparison`, the default).
    #[default]
    Partial,
    /// Also the member's fields the hub side does not set (`FullComparison`).
    Full,
}

impl Comparison {
    /// The option named in a Work's `applyStrategy.comparisonOption`.
    pub fn from_option(option: Option<&str>) -> Comparison {
        match option {
            Some("FullComparison") => Comparison::Full,
            _ => Comparison::Partial,
        }
    }
}

/// One difference between the hub's and the member's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// JSON pointer to the field (`/` for the whole object).
    pub path: String,
    /// The hub's value; `None` if the hub side does not set the field.
    pub value_in_hub: Option<String>,
    /// The member's value; `None` if the member object lacks the field.
    pub value_in_member: Option<String>,
}

impl Difference {
    /// KubeFleet's shape: `{path, valueInHub?, valueInMember?}`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"path": self.path});
        if let Some(h) = &self.value_in_hub {
            v["valueInHub"] = json!(h);
        }
        if let Some(m) = &self.value_in_member {
            v["valueInMember"] = json!(m);
        }
        v
    }
}

/// The differences between `hub` (a manifest, or the manifest as last
/// applied) and `member` (the live object), under `comparison`.
pub fn differences(hub: &Value, member: &Value, comparison: Comparison) -> Vec<Difference> {
    let mut out = Vec::new();
    let (hub, member) = (comparable(hub), comparable(member));
    walk(&hub, Some(&member), comparison, &mut String::new(), &mut out);
    // Here, where every drift and difference is made, so that a Secret's
    // values never exist in a report, not even before it is sent.
    redact_differences(&mut out, &hub, &member);
    out
}

/// A copy of an object without what is never compared (see the module doc).
pub fn comparable(object: &Value) -> Value {
    let mut v = object.clone();
    let Value::Object(map) = &mut v else { return v };
    map.remove("status");
    if let Some(Value::Object(meta)) = map.get_mut("metadata") {
        for field in SERVER_METADATA {
            meta.remove(*field);
        }
        // Both sides always have the two maps, so a key only one side has
        // is reported at its own path (`/metadata/labels/team`), as KubeFleet
        // reports it.
        for field in ["annotations", "labels"] {
            let kept = match meta.remove(field) {
                Some(Value::Object(m)) => m.into_iter().filter(|(k, _)| !is_reserved_key(k)).collect(),
                _ => Map::new(),
            };
            meta.insert(field.to_string(), Value::Object(kept));
        }
        if matches!(meta.get("namespace"), Some(Value::String(s)) if s.is_empty()) {
            meta.remove("namespace");
        }
    }
    for pod_template in ["/spec/template/metadata", "/spec/jobTemplate/spec/template/metadata"] {
        if let Some(Value::Object(meta)) = v.pointer_mut(pod_template) {
            meta.remove("creationTimestamp");
        }
    }
    v
}

/// Labels and annotations of Kubernetes' and Fleet's own domains, which
/// servers, controllers and Fleet set (`kubernetes.io/metadata.name`,
/// Fleet's owner annotation): never compared, as in KubeFleet.
fn is_reserved_key(key: &str) -> bool {
    ["kubernetes.io/", "k8s.io/", "kubernetes-fleet.io/"].iter().any(|domain| key.contains(domain))
}

/// A value as reported: strings as they are, anything else as compact JSON.
pub fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn push(out: &mut Vec<Difference>, path: &str, hub: Option<&Value>, member: Option<&Value>) {
    if out.len() < MAX_DIFFERENCES {
        out.push(Difference {
            path: if path.is_empty() { "/".to_string() } else { path.to_string() },
            value_in_hub: hub.map(render),
            value_in_member: member.map(render),
        });
    }
}

fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64().zip(y.as_f64()).is_some_and(|(x, y)| x == y),
        _ => a == b,
    }
}

fn with_child<R>(path: &mut String, key: &str, f: impl FnOnce(&mut String) -> R) -> R {
    let len = path.len();
    path.push('/');
    path.push_str(&escape(key));
    let r = f(path);
    path.truncate(len);
    r
}

fn walk(hub: &Value, member: Option<&Value>, comparison: Comparison, path: &mut String, out: &mut Vec<Difference>) {
    if out.len() >= MAX_DIFFERENCES {
        return;
    }
    let member = member.filter(|m| !m.is_null());
    match (hub, member) {
        (Value::Null, None) => {}
        (Value::Null, Some(m)) => push(out, path, None, Some(m)),
        (_, None) => push(out, path, Some(hub), None),
        (Value::Object(h), Some(Value::Object(m))) => walk_maps(h, m, comparison, path, out),
        (Value::Array(h), Some(Value::Array(m))) => {
            for i in 0..h.len().max(m.len()) {
                with_child(path, &i.to_string(), |path| match (h.get(i), m.get(i)) {
                    (Some(hv), mv) => walk(hv, mv, comparison, path, out),
                    (None, Some(mv)) => push(out, path, None, Some(mv)),
                    (None, None) => {}
                });
            }
        }
        (h, Some(m)) => {
            if !same_scalar(h, m) {
                push(out, path, Some(h), Some(m));
            }
        }
    }
}

fn walk_maps(
    hub: &Map<String, Value>,
    member: &Map<String, Value>,
    comparison: Comparison,
    path: &mut String,
    out: &mut Vec<Difference>,
) {
    for (key, hv) in hub {
        with_child(path, key, |path| walk(hv, member.get(key), comparison, path, out));
    }
    if comparison == Comparison::Full {
        for (key, mv) in member {
            if !hub.contains_key(key) && !mv.is_null() {
                with_child(path, key, |path| push(out, path, None, Some(mv)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::OWNER_ANNOTATION;

    fn d(path: &str, hub: Option<&str>, member: Option<&str>) -> Difference {
        Difference { path: path.into(), value_in_hub: hub.map(Into::into), value_in_member: member.map(Into::into) }
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": data})
    }

    #[test]
    fn identical_objects_have_no_differences_under_either_option() {
        for c in [Comparison::Partial, Comparison::Full] {
            assert!(differences(&cm(json!({"a": "1"})), &cm(json!({"a": "1"})), c).is_empty());
        }
    }

    #[test]
    fn partial_ignores_member_only_fields_full_reports_them() {
        let hub = cm(json!({"a": "1"}));
        let member = cm(json!({"a": "1", "extra": "x"}));
        assert!(differences(&hub, &member, Comparison::Partial).is_empty());
        assert_eq!(differences(&hub, &member, Comparison::Full), vec![d("/data/extra", None, Some("x"))]);
    }

    #[test]
    fn changed_and_missing_fields_are_reported_with_json_pointer_paths() {
        let hub =
            json!({"spec": {"replicas": 2, "selector": {"matchLabels": {"app/name": "web"}}}, "data": {"k": "v"}});
        let member = json!({"spec": {"replicas": 3, "selector": {"matchLabels": {"app/name": "api"}}}});
        assert_eq!(
            differences(&hub, &member, Comparison::Partial),
            vec![
                d("/data", Some(r#"{"k":"v"}"#), None),
                d("/spec/replicas", Some("2"), Some("3")),
                d("/spec/selector/matchLabels/app~1name", Some("web"), Some("api")),
            ]
        );
    }

    #[test]
    fn lists_are_compared_by_index_with_the_same_rule_for_their_elements() {
        let hub = json!({"spec": {"containers": [{"name": "a", "image": "nginx:1"}]}});
        let defaulted =
            json!({"spec": {"containers": [{"name": "a", "image": "nginx:1", "imagePullPolicy": "Always"}]}});
        assert!(differences(&hub, &defaulted, Comparison::Partial).is_empty());
        assert_eq!(
            differences(&hub, &defaulted, Comparison::Full),
            vec![d("/spec/containers/0/imagePullPolicy", None, Some("Always"))]
        );
        let changed = json!({"spec": {"containers": [{"name": "a", "image": "nginx:2"}, {"name": "b"}]}});
        assert_eq!(
            differences(&hub, &changed, Comparison::Partial),
            vec![
                d("/spec/containers/0/image", Some("nginx:1"), Some("nginx:2")),
                d("/spec/containers/1", None, Some(r#"{"name":"b"}"#))
            ]
        );
        let shorter = json!({"spec": {"containers": []}});
        assert_eq!(
            differences(&hub, &shorter, Comparison::Partial),
            vec![d("/spec/containers/0", Some(r#"{"image":"nginx:1","name":"a"}"#), None)]
        );
    }

    #[test]
    fn server_fields_status_and_the_owner_annotation_are_ignored_even_in_full() {
        let hub = cm(json!({"a": "1"}));
        let mut member = cm(json!({"a": "1"}));
        member["metadata"] = json!({"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "7", "generation": 2,
            "creationTimestamp": "t", "managedFields": [{}], "ownerReferences": [{"name": "x"}],
            "annotations": {OWNER_ANNOTATION: "ns/w"}, "labels": {}});
        member["status"] = json!({"phase": "Active"});
        assert!(differences(&hub, &member, Comparison::Full).is_empty());
        member["metadata"]["annotations"]["other"] = json!("x");
        assert_eq!(
            differences(&hub, &member, Comparison::Full),
            vec![d("/metadata/annotations/other", None, Some("x"))]
        );
        // Kubernetes' and Fleet's own keys are not compared; the maps are
        // there on both sides, so a user's key is reported by itself.
        member["metadata"]["labels"] = json!({"kubernetes.io/metadata.name": "n", "team": "a"});
        member["metadata"]["annotations"] =
            json!({"deployment.kubernetes.io/revision": "3", "kubernetes-fleet.io/x": "y"});
        member["metadata"]["finalizers"] = json!(["example.com/keep"]);
        assert_eq!(differences(&hub, &member, Comparison::Full), vec![d("/metadata/labels/team", None, Some("a"))]);
    }

    #[test]
    fn a_pod_templates_creation_timestamp_is_ignored() {
        let hub = json!({"spec": {"template": {"metadata": {"labels": {"app": "web"}}}}});
        let member = json!({"spec": {"template": {"metadata": {"creationTimestamp": null, "labels": {"app": "web"}}}}});
        assert!(differences(&hub, &member, Comparison::Full).is_empty());
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"metadata": {"creationTimestamp": "t"}}}}}});
        let bare = json!({"spec": {"jobTemplate": {"spec": {"template": {"metadata": {}}}}}});
        assert!(differences(&bare, &cron, Comparison::Full).is_empty());
    }

    #[test]
    fn scalars_numbers_types_and_nulls() {
        let hub = json!({"a": 1, "b": "1", "c": null, "d": null, "e": {"x": 1}});
        let member = json!({"a": 1.0, "b": 1, "c": "set", "e": "flat"});
        assert_eq!(
            differences(&hub, &member, Comparison::Partial),
            vec![d("/b", Some("1"), Some("1")), d("/c", None, Some("set")), d("/e", Some(r#"{"x":1}"#), Some("flat"))]
        );
    }

    #[test]
    fn at_most_a_hundred_differences() {
        let hub: Map<String, Value> = (0..250).map(|i| (format!("k{i:03}"), json!(i))).collect();
        let out = differences(&json!({"data": hub}), &json!({"data": {}}), Comparison::Partial);
        assert_eq!(out.len(), MAX_DIFFERENCES);
        assert_eq!(out[0].path, "/data/k000");
        assert_eq!(out[0].to_json(), json!({"path": "/data/k000", "valueInHub": "0"}));
    }
}
