//! One test per validation row of docs/spec/envelopes.md, plus its examples.

use serde_json::{json, Value};

use super::*;

/// The three envelopes of docs/spec/envelopes.md, verbatim.
const SPEC_EXAMPLES: &str = r#"apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceEnvelope
metadata: {name: quota, namespace: ops}
data:
  "quota.yaml":
    apiVersion: v1
    kind: ResourceQuota
    metadata: {name: ops-quota, namespace: ops}
    spec: {hard: {requests.cpu: "4", requests.memory: 8Gi}}
  "role.yaml":
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata: {name: ops-reader, namespace: ops}
    rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceEnvelope
metadata: {name: limits, namespace: ops}
data:
  "limits.yaml":
    apiVersion: v1
    kind: LimitRange
    metadata: {name: ops-limits, namespace: ops}
    spec: {limits: [{type: Container, default: {cpu: 500m}}]}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourceEnvelope
metadata: {name: guard}
data:
  "webhook.yaml":
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata: {name: guard}
    webhooks:
      - name: guard.example.com
        rules: [{operations: [CREATE], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"]}]
        clientConfig: {service: {name: guard, namespace: ops}}
        admissionReviewVersions: [v1]
        sideEffects: None
  "clusterrole.yaml":
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata: {name: pod-reader}
    rules: [{apiGroups: [""], resources: [pods], verbs: [get, list, watch]}]
"#;

fn examples() -> Vec<Object> {
    crate::parse::parse_documents("envelopes.yaml", SPEC_EXAMPLES).unwrap()
}

fn envelope(kind: &str, namespace: Option<&str>, data: Value) -> Object {
    let mut metadata = json!({"name": "quota"});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    serde_json::from_value(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
        "metadata": metadata, "data": data}))
    .unwrap()
}

fn role(namespace: Option<&str>) -> Value {
    let mut metadata = json!({"name": "ops-reader"});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": metadata, "rules": []})
}

fn err(mut o: Object) -> String {
    crate::typed::prepare(&mut o).unwrap_err().to_string()
}

/// What Work generation says of an envelope admission accepted (scope and
/// namespace problems, EN-8).
fn unwrap_err(mut o: Object) -> String {
    crate::typed::prepare(&mut o).unwrap_or_else(|e| panic!("admission accepts it: {e}"));
    wrapped_objects(&o).unwrap_err().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

fn has(e: &str, want: &str) {
    assert!(e.contains(want), "missing {want:?} in:\n{e}");
}

#[test]
fn the_spec_examples_validate_and_unwrap() {
    let objects = examples();
    let wrapped: Vec<Vec<String>> = objects
        .iter()
        .map(|o| {
            let mut o = o.clone();
            crate::typed::prepare(&mut o).unwrap_or_else(|e| panic!("{e}"));
            wrapped_objects(&o)
                .unwrap()
                .into_iter()
                .map(|w| format!("{}/{}", w.object.kind, w.object.metadata.name))
                .collect()
        })
        .collect();
    assert_eq!(wrapped[0], ["ResourceQuota/ops-quota", "Role/ops-reader"]);
    assert_eq!(wrapped[1], ["LimitRange/ops-limits"]);
    assert_eq!(wrapped[2], ["ClusterRole/pod-reader", "ValidatingWebhookConfiguration/guard"]);
    let types: Vec<_> = objects.iter().map(|o| envelope_type(o).map(|t| t.as_str())).collect();
    assert_eq!(types, [Some("ResourceEnvelope"), Some("ResourceEnvelope"), Some("ClusterResourceEnvelope")]);
}

#[test]
fn an_envelope_wraps_one_to_fifty_manifests() {
    has(
        &err(envelope(RESOURCE_ENVELOPE, Some("ops"), json!({}))),
        "data: Required value: an envelope must wrap at least 1 manifest",
    );
    let many: serde_json::Map<String, Value> = (0..51)
        .map(|i| {
            let mut r = role(Some("ops"));
            r["metadata"]["name"] = json!(format!("r{i}"));
            (format!("r{i}.yaml"), r)
        })
        .collect();
    has(
        &err(envelope(RESOURCE_ENVELOPE, Some("ops"), Value::Object(many))),
        "data: Too many: 51: must have at most 50 items",
    );
}

#[test]
fn each_entry_is_exactly_one_object() {
    let e = err(envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"a.yaml": "text", "b.yaml": {"kind": "Role"}})));
    has(&e, "data[a.yaml]: Invalid value: \"a string\": must be exactly one Kubernetes object with apiVersion, kind and metadata.name");
    has(&e, "data[b.yaml]: Invalid value: ");
    let e = err(envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"l.yaml": [role(Some("ops"))]})));
    has(&e, "data[l.yaml]: Invalid value: \"a list\"");
}

#[test]
fn a_cluster_envelope_wraps_cluster_scoped_objects_only() {
    let e = unwrap_err(envelope(CLUSTER_RESOURCE_ENVELOPE, None, json!({"r.yaml": role(Some("ops"))})));
    has(
        &e,
        "data[r.yaml].metadata.namespace: Forbidden: a ClusterResourceEnvelope may only wrap cluster-scoped objects",
    );
    let e = unwrap_err(envelope(CLUSTER_RESOURCE_ENVELOPE, None, json!({"r.yaml": role(None)})));
    has(&e, "data[r.yaml].metadata.namespace: Forbidden");
}

#[test]
fn a_resource_envelope_wraps_objects_of_its_namespace_only() {
    let e = unwrap_err(envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"r.yaml": role(None)})));
    has(
        &e,
        r#"data[r.yaml].metadata.namespace: Required value: a ResourceEnvelope may only wrap namespaced objects of namespace "ops""#,
    );
    // Another namespace is refused at apply already: writing in one
    // namespace must not store objects meant for another.
    let e = err(envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"role2.yaml": role(Some("app"))})));
    has(&e, r#"data[role2.yaml].metadata.namespace: Invalid value: "app": must be "ops", the envelope's namespace"#);
}

#[test]
fn a_generated_name_and_an_object_wrapped_twice_are_left_to_the_member() {
    // KubeFleet accepts both and its member agent refuses that manifest
    // (FoundGenerateName, Duplicated); so does Fleet's.
    let mut generated = role(Some("ops"));
    generated["metadata"] = json!({"generateName": "x-", "namespace": "ops"});
    let mut e = envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"r.yaml": generated}));
    crate::typed::prepare(&mut e).unwrap();
    let mut twice =
        envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"a.yaml": role(Some("ops")), "b.yaml": role(Some("ops"))}));
    crate::typed::prepare(&mut twice).unwrap();
    assert_eq!(wrapped_objects(&twice).unwrap().len(), 2);
    // Neither a name nor a generated one: not an object.
    let mut unnamed = role(Some("ops"));
    unnamed["metadata"] = json!({"namespace": "ops"});
    has(
        &err(envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"r.yaml": unnamed}))),
        "must be exactly one Kubernetes object",
    );
}

#[test]
fn envelopes_cannot_be_nested() {
    let inner = envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"r.yaml": role(Some("ops"))}));
    let inner = serde_json::to_value(&inner).unwrap();
    let e = err(envelope(RESOURCE_ENVELOPE, Some("ops"), json!({"inner.yaml": inner})));
    has(&e, "data[inner.yaml]: Forbidden: envelopes cannot be nested");
}

#[test]
fn an_annotated_configmap_is_not_an_envelope() {
    // As in KubeFleet's current release: placed as the ConfigMap it is.
    let cm: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "legacy", "namespace": "ops",
                     "annotations": {"kubernetes-fleet.io/envelope-configmap": "true"}},
        "data": {"fielda": "one", "anything": "not: [yaml"}}))
    .unwrap();
    assert_eq!(envelope_type(&cm), None);
    assert!(wrapped_objects(&cm).unwrap().is_empty());
    let mut cm = cm;
    crate::typed::prepare(&mut cm).unwrap();
}
