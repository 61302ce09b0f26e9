//! Work rendering with overrides and envelopes: the worked example of
//! docs/spec/envelopes.md (EN-4, EN-5), EN-3/EN-8 and EN-6.

use fleet_api::envelope::{ENVELOPE_NAMESPACE_LABEL, ENVELOPE_NAME_LABEL, ENVELOPE_WORK_LABEL};
use fleet_api::work::spec_of as work_spec_of;
use fleet_api::Object;
use serde_json::{json, Value};

use super::*;
use crate::overrides::OverrideSnapshot;
use fleet_api::kinds::DeclaredScopes;

fn object(value: Value) -> Object {
    serde_json::from_value(value).unwrap()
}

fn placement(kind: &str) -> Object {
    let mut metadata = json!({"name": "ops", "uid": "p"});
    if kind == "ResourcePlacement" {
        metadata["namespace"] = json!("ops");
    }
    object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind, "metadata": metadata,
        "spec": {"resourceSelectors": []}}))
}

fn binding() -> Object {
    object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
        "metadata": {"name": "ops-east-1", "uid": "b"},
        "spec": {"state": "Bound", "targetCluster": "east-1", "resourceSnapshotName": "ops-0-snapshot"}}))
}

/// The worked example's selection: Namespace ops, ConfigMap settings and
/// the three envelopes of docs/spec/envelopes.md, in snapshot order.
fn example_selection() -> Vec<Value> {
    let text = include_str!("../../../deploy/examples/envelopes/envelopes.yaml");
    let mut out = vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}})];
    for o in fleet_api::parse::parse_documents("envelopes.yaml", text).unwrap() {
        if o.kind != "ClusterResourcePlacement" && o.kind != "Namespace" {
            out.push(serde_json::to_value(crate::selection::clean(&o)).unwrap());
        }
    }
    out
}

fn group(resources: Vec<Value>) -> Vec<Object> {
    vec![object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceSnapshot",
        "metadata": {"name": "ops-0-snapshot", "labels": {"kubernetes-fleet.io/resource-index": "0"}},
        "spec": {"selectedResources": resources}}))]
}

fn manifest_names(work: &Object) -> Vec<String> {
    work_spec_of(work)
        .workload
        .manifests
        .iter()
        .map(|m| format!("{}/{}", m["kind"].as_str().unwrap(), m["metadata"]["name"].as_str().unwrap()))
        .collect()
}

#[test]
fn en_4_en_5_the_worked_example_makes_four_works() {
    let works = desired_works(
        &placement("ClusterResourcePlacement"),
        &binding(),
        &group(example_selection()),
        &ClusterOverrides::default(),
    )
    .unwrap();
    let mut got: Vec<(String, Vec<String>)> =
        works.iter().map(|w| (w.metadata.name.clone(), manifest_names(w))).collect();
    got.sort();
    let want = [
        // KubeFleet's order: by JSON text, descending ("rbac…" before "admissionregistration…").
        ("ops-envelope-a3f995da6aee5302", vec!["ClusterRole/pod-reader", "ValidatingWebhookConfiguration/guard"]),
        ("ops-envelope-b1a37da808567140", vec!["ResourceQuota/ops-quota", "Role/ops-reader"]),
        ("ops-envelope-c14720d4333f6111", vec!["LimitRange/ops-limits"]),
        ("ops-work", vec!["Namespace/ops", "ConfigMap/settings"]),
    ];
    let want: Vec<(String, Vec<String>)> =
        want.iter().map(|(n, m)| (n.to_string(), m.iter().map(|s| s.to_string()).collect())).collect();
    assert_eq!(got, want);
    let quota = works.iter().find(|w| w.metadata.name == "ops-envelope-b1a37da808567140").unwrap();
    assert_eq!(quota.metadata.labels[ENVELOPE_WORK_LABEL], "ResourceEnvelope");
    assert_eq!(quota.metadata.labels[ENVELOPE_NAME_LABEL], "quota");
    assert_eq!(quota.metadata.labels[ENVELOPE_NAMESPACE_LABEL], "ops");
    assert_eq!(quota.metadata.labels[PARENT_RESOURCE_INDEX_LABEL], "0");
    assert_eq!(quota.metadata.labels[PARENT_BINDING_LABEL], "ops-east-1");
    let guard = works.iter().find(|w| w.metadata.name == "ops-envelope-a3f995da6aee5302").unwrap();
    assert!(!guard.metadata.labels.contains_key(ENVELOPE_NAMESPACE_LABEL));
}

#[test]
fn an_annotated_config_map_is_placed_as_it_is() {
    // KubeFleet's current release no longer unwraps ConfigMaps.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "legacy", "namespace": "ops", "annotations": {"kubernetes-fleet.io/envelope-configmap": "true"}},
        "data": {"fielda": "one"}});
    let works = desired_works(
        &placement("ResourcePlacement"),
        &binding(),
        &group(vec![cm.clone()]),
        &ClusterOverrides::default(),
    )
    .unwrap();
    assert_eq!(works.len(), 1);
    assert_eq!(work_spec_of(&works[0]).workload.manifests, [cm]);
}

#[test]
fn wrapped_objects_keep_their_generated_name() {
    let envelope = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourceEnvelope",
        "metadata": {"name": "w", "namespace": "ops"},
        "data": {"a.yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-", "namespace": "ops"}},
                 "b.yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "generateName": "x-", "namespace": "ops"}}}});
    let works = desired_works(
        &placement("ResourcePlacement"),
        &binding(),
        &group(vec![envelope]),
        &ClusterOverrides::default(),
    )
    .unwrap();
    let envelope_work = works.iter().find(|w| w.metadata.name.contains("-envelope-")).unwrap();
    let manifests = &work_spec_of(envelope_work).workload.manifests;
    let generated: Vec<_> = manifests.iter().map(|m| m["metadata"].get("generateName").cloned()).collect();
    assert!(generated.contains(&Some(json!("cm-"))), "{manifests:?}");
    assert!(generated.contains(&Some(json!("x-"))), "a named object keeps it too, as KubeFleet: {manifests:?}");
}

fn override_of(kind: &str, name: &str, namespace: &str, spec: Value) -> OverrideSnapshot {
    OverrideSnapshot {
        cluster_scoped: kind == "ClusterResourceOverride",
        name: name.into(),
        namespace: namespace.into(),
        spec: serde_json::from_value(spec).unwrap(),
    }
}

#[test]
fn en_6_overrides_target_wrapped_objects_and_a_delete_leaves_the_work() {
    let drop_role = override_of(
        "ResourceOverride",
        "drop-0",
        "ops",
        json!({
        "resourceSelectors": [{"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "Role", "name": "ops-reader"},
                              {"group": "", "version": "v1", "kind": "LimitRange", "name": "ops-limits"}],
        "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []}, "overrideType": "Delete"}]}}),
    );
    let patch_envelope = override_of(
        "ResourceOverride",
        "env-0",
        "ops",
        json!({
        "resourceSelectors": [{"group": "placement.kubernetes-fleet.io", "version": "v1beta1", "kind": "ResourceEnvelope", "name": "quota"}],
        "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
            "jsonPatchOverrides": [{"op": "remove", "path": "/data"}]}]}}),
    );
    let label_limits = override_of(
        "ClusterResourceOverride",
        "ns-0",
        "",
        json!({
        "clusterResourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "ops"}],
        "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
            "jsonPatchOverrides": [{"op": "add", "path": "/metadata/labels", "value": {"on": "${MEMBER-CLUSTER-NAME}"}}]}]}}),
    );
    let overrides = ClusterOverrides {
        labels: Default::default(),
        snapshots: vec![label_limits, drop_role, patch_envelope],
        cluster: "east-1".into(),
    };
    let works =
        desired_works(&placement("ClusterResourcePlacement"), &binding(), &group(example_selection()), &overrides)
            .unwrap();
    let quota = works.iter().find(|w| w.metadata.name == "ops-envelope-b1a37da808567140").unwrap();
    assert_eq!(
        manifest_names(quota),
        ["ResourceQuota/ops-quota"],
        "the Role deleted; a patch of the envelope itself ignored"
    );
    let quota_object = &work_spec_of(quota).workload.manifests[0];
    assert_eq!(
        quota_object["metadata"]["labels"]["on"], "east-1",
        "a CRO naming the namespace reaches wrapped objects"
    );
    let limits = works.iter().find(|w| w.metadata.name == "ops-envelope-c14720d4333f6111").unwrap();
    assert!(manifest_names(limits).is_empty(), "its only object deleted; the Work stays, empty");
    let main = works.iter().find(|w| w.metadata.name == "ops-work").unwrap();
    assert_eq!(work_spec_of(main).workload.manifests[1]["metadata"]["labels"]["on"], "east-1");
}

#[test]
fn ov_7_a_failing_override_fails_the_whole_render() {
    let bad = override_of(
        "ClusterResourceOverride",
        "bad-0",
        "",
        json!({
        "clusterResourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "ops"}],
        "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
            "jsonPatchOverrides": [{"op": "replace", "path": "/spec/nothing", "value": 1}]}]}}),
    );
    let overrides = ClusterOverrides { labels: Default::default(), snapshots: vec![bad], cluster: "east-1".into() };
    let err =
        desired_works(&placement("ClusterResourcePlacement"), &binding(), &group(example_selection()), &overrides)
            .unwrap_err();
    assert!(matches!(err, RenderError::Override(_)), "{err}");
    assert!(
        err.to_string().starts_with(r#"ClusterResourceOverrideSnapshot "bad-0" failed to apply on Namespace "ops""#),
        "{err}"
    );
}

#[test]
fn en_8_a_scope_declared_after_the_envelope_was_stored_stops_work_generation() {
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ops"}});
    let envelope = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourceEnvelope",
        "metadata": {"name": "widgets", "namespace": "ops"}, "data": {"w.yaml": widget}});
    let snapshots = group(vec![envelope]);
    let binding = binding();
    let placement = placement("ResourcePlacement");
    let none = ClusterOverrides::default();

    // Unknown kind: its namespace decides, and the Work is made.
    let unknown = PreparedGroup::new(&snapshots, &DeclaredScopes::default());
    let works = desired_works_prepared(&placement, &binding, &unknown, &none).unwrap();
    let names: Vec<Vec<String>> = works.iter().map(manifest_names).collect();
    assert_eq!(names, vec![vec![], vec!["Widget/w".to_string()]], "the main Work (empty) and the envelope's");

    // A CRD declaring Widget cluster-scoped arrives: generation stops.
    let mut scopes = DeclaredScopes::default();
    scopes.declare("example.com", "Widget", fleet_api::kinds::Scope::Cluster);
    let declared = PreparedGroup::new(&snapshots, &scopes);
    let err = desired_works_prepared(&placement, &binding, &declared, &none).unwrap_err();
    assert_eq!(
        err.to_string(),
        "envelope ResourceEnvelope ops/widgets is invalid: data[w.yaml].metadata.namespace: Invalid value: \"ops\": Widget is cluster-scoped"
    );
}

/// As KubeFleet: an override that applies but leaves an invalid object
/// (annotations set to a string) fails the Work, not the override.
#[test]
fn an_override_leaving_an_invalid_object_fails_the_work() {
    let as_string = override_of(
        "ClusterResourceOverride",
        "anno-0",
        "",
        json!({
        "clusterResourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "ops"}],
        "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
            "jsonPatchOverrides": [{"op": "add", "path": "/metadata/annotations", "value": "not-a-map"}]}]}}),
    );
    let overrides =
        ClusterOverrides { labels: Default::default(), snapshots: vec![as_string], cluster: "east-1".into() };
    let err =
        desired_works(&placement("ClusterResourcePlacement"), &binding(), &group(example_selection()), &overrides)
            .unwrap_err();
    assert!(matches!(err, RenderError::Invalid(_)), "{err}");
    assert!(err.to_string().starts_with(r#"the override rules leave Namespace "ops" an invalid object"#), "{err}");
}
