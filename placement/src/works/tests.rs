//! Work rendering and planning.

use fleet_api::work::spec_of as work_spec_of;
use fleet_api::Object;
use serde_json::{json, Value};

use super::*;
use fleet_api::snapshot::{PARENT_PLACEMENT_LABEL, SUBINDEX_ANNOTATION};

/// The Works of a binding without overrides.
fn works_of(placement: &Object, binding: &Object, group: &[Object]) -> Vec<Object> {
    desired_works(placement, binding, group, &ClusterOverrides::default()).unwrap()
}

fn object(value: Value) -> Object {
    serde_json::from_value(value).unwrap()
}

fn crp(strategy: Value) -> Object {
    object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web", "uid": "p-uid"}, "spec": {"resourceSelectors": [], "strategy": strategy}}))
}

fn rp() -> Object {
    object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourcePlacement",
        "metadata": {"name": "web", "namespace": "shop", "uid": "p-uid"}, "spec": {"resourceSelectors": []}}))
}

fn binding(kind: &str, apply: Option<Value>) -> Object {
    let mut spec = json!({"state": "Bound", "targetCluster": "east", "resourceSnapshotName": "web-2-snapshot",
        "schedulingPolicySnapshotName": "web-0"});
    if let Some(a) = apply {
        spec["applyStrategy"] = a;
    }
    object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
        "metadata": {"name": "web-east-x1", "uid": "b-uid"}, "spec": spec}))
}

fn snapshot(name: &str, sub: Option<usize>, resources: Value) -> Object {
    let mut o =
        object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceSnapshot",
        "metadata": {"name": name, "labels": {"kubernetes-fleet.io/resource-index": "2"}},
        "spec": {"selectedResources": resources}}));
    match sub {
        Some(s) => o.metadata.annotations.insert(SUBINDEX_ANNOTATION.into(), s.to_string()),
        None => o.metadata.annotations.insert("kubernetes-fleet.io/number-of-resource-snapshots".into(), "2".into()),
    };
    o
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app"}})
}

fn group() -> Vec<Object> {
    // Given out of order: the sub-snapshot first.
    vec![snapshot("web-2-1", Some(1), json!([cm("b")])), snapshot("web-2-snapshot", None, json!([cm("a")]))]
}

#[test]
fn work_names_for_crp_rp_and_parts() {
    assert_eq!(work_name(&crp(json!({})), 0), "web-work");
    assert_eq!(work_name(&crp(json!({})), 2), "web-work-2");
    assert_eq!(work_name(&rp(), 0), "shop.web-work");
    assert_eq!(work_name(&rp(), 1), "shop.web-work-1");
}

#[test]
fn one_work_per_snapshot_in_the_member_namespace_with_its_manifests() {
    let works = works_of(&crp(json!({})), &binding("ClusterResourceBinding", None), &group());
    let names: Vec<_> = works.iter().map(|w| w.metadata.name.as_str()).collect();
    assert_eq!(names, vec!["web-work", "web-work-1"]);
    assert!(works.iter().all(|w| w.metadata.namespace.as_deref() == Some("fleet-member-east") && w.kind == "Work"));
    assert_eq!(work_spec_of(&works[0]).workload.manifests, vec![cm("a")]);
    assert_eq!(work_spec_of(&works[1]).workload.manifests, vec![cm("b")]);
}

#[test]
fn labels_and_owner_name_the_placement_binding_and_index() {
    let works = works_of(&crp(json!({})), &binding("ClusterResourceBinding", None), &group());
    let labels = &works[0].metadata.labels;
    assert_eq!(labels.get(PARENT_PLACEMENT_LABEL).map(String::as_str), Some("web"));
    assert_eq!(labels.get(PARENT_BINDING_LABEL).map(String::as_str), Some("web-east-x1"));
    assert_eq!(labels.get(PARENT_RESOURCE_INDEX_LABEL).map(String::as_str), Some("2"));
    assert!(!labels.contains_key(PARENT_NAMESPACE_LABEL));
    let owner = &works[0].metadata.owner_references;
    assert_eq!(owner.len(), 1);
    assert_eq!(
        (owner[0].kind.as_str(), owner[0].name.as_str(), owner[0].uid.as_str()),
        ("ClusterResourceBinding", "web-east-x1", "b-uid")
    );
    assert_eq!(owner[0].controller, Some(true));
    let rp_works = works_of(&rp(), &binding("ResourceBinding", None), &group());
    assert_eq!(rp_works[0].metadata.name, "shop.web-work");
    assert_eq!(rp_works[0].metadata.labels.get(PARENT_NAMESPACE_LABEL).map(String::as_str), Some("shop"));
}

#[test]
fn apply_and_delete_strategies_are_carried_over() {
    let placement = crp(json!({"applyStrategy": {"type": "ServerSideApply", "whenToApply": "IfNotDrifted"},
        "deleteStrategy": {"propagationPolicy": "Abandon"}}));
    let works = works_of(&placement, &binding("ClusterResourceBinding", None), &group());
    let spec = work_spec_of(&works[0]);
    assert_eq!(spec.apply_strategy.as_ref().map(|s| s.apply_type()), Some("ServerSideApply"));
    assert_eq!(spec.apply_strategy.and_then(|s| s.when_to_apply).as_deref(), Some("IfNotDrifted"));
    assert!(work_spec_of(&works[0]).abandons_on_delete());
    // The binding's own strategy wins; no delete strategy means Delete.
    let works = works_of(
        &crp(json!({"applyStrategy": {"type": "ServerSideApply"}})),
        &binding("ClusterResourceBinding", Some(json!({"type": "ReportDiff"}))),
        &group(),
    );
    let spec = work_spec_of(&works[0]);
    assert_eq!(spec.apply_strategy.map(|s| s.apply_type().to_string()).as_deref(), Some("ReportDiff"));
    assert_eq!(spec.delete_options.and_then(|d| d.propagation_policy).as_deref(), Some("Delete"));
}

fn stored(mut w: Object, rv: &str) -> Object {
    w.metadata.uid = format!("uid-{}", w.metadata.name);
    w.metadata.resource_version = rv.into();
    w.metadata.generation = 1;
    w.rest.insert("status".into(), json!({"conditions": []}));
    w.metadata.labels.insert("extra".into(), "kept".into());
    w
}

#[test]
fn plan_creates_missing_works() {
    let desired = works_of(&crp(json!({})), &binding("ClusterResourceBinding", None), &group());
    let changes = plan_works(&desired, &[]);
    assert_eq!(changes, vec![WorkChange::Create(desired[0].clone()), WorkChange::Create(desired[1].clone())]);
}

#[test]
fn plan_is_empty_when_nothing_changed() {
    let desired = works_of(&crp(json!({})), &binding("ClusterResourceBinding", None), &group());
    let existing: Vec<_> = desired.iter().cloned().map(|w| stored(w, "7")).collect();
    assert!(plan_works(&desired, &existing).is_empty());
}

#[test]
fn plan_updates_changed_specs_keeping_server_fields() {
    let desired = works_of(&crp(json!({})), &binding("ClusterResourceBinding", None), &group());
    let mut old = stored(desired[0].clone(), "7");
    old.rest.insert("spec".into(), json!({"workload": {"manifests": []}}));
    old.metadata.labels.insert(PARENT_RESOURCE_INDEX_LABEL.into(), "1".into());
    let changes = plan_works(&desired[..1], &[old]);
    let [WorkChange::Update(updated)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(updated.metadata.resource_version, "7");
    assert_eq!(updated.metadata.uid, "uid-web-work");
    assert_eq!(updated.metadata.labels.get(PARENT_RESOURCE_INDEX_LABEL).map(String::as_str), Some("2"));
    assert_eq!(updated.metadata.labels.get("extra").map(String::as_str), Some("kept"));
    assert_eq!(updated.spec(), desired[0].spec());
    assert!(updated.status().is_some());
}

#[test]
fn plan_deletes_works_no_longer_needed() {
    let desired = works_of(&crp(json!({})), &binding("ClusterResourceBinding", None), &group());
    let existing: Vec<_> = desired.iter().cloned().map(|w| stored(w, "7")).collect();
    let changes = plan_works(&desired[..1], &existing);
    assert_eq!(
        changes,
        vec![WorkChange::Delete {
            namespace: "fleet-member-east".into(),
            name: "web-work-1".into(),
            resource_version: "7".into()
        }]
    );
}
