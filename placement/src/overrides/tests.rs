//! Override snapshots (OV-3) and applicability (OV-1, OV-2, OV-4), with the
//! worked example of docs/spec/overrides.md.

use std::collections::BTreeMap;

use fleet_api::overrides::{OVERRIDE_INDEX_LABEL, PARENT_OVERRIDE_LABEL};
use fleet_api::snapshot::IS_LATEST_LABEL;
use fleet_api::Object;
use serde_json::{json, Value};

use super::*;
use crate::snapshot::SnapshotChange;

pub(super) fn object(value: Value) -> Object {
    serde_json::from_value(value).unwrap()
}

/// The three overrides of the worked example, as stored objects.
pub(super) fn example_overrides() -> Vec<Object> {
    let text = include_str!("../../../deploy/examples/overrides/overrides.yaml");
    fleet_api::parse::parse_documents("overrides.yaml", text)
        .unwrap()
        .into_iter()
        .map(|mut o| {
            fleet_api::typed::prepare(&mut o).unwrap();
            o.metadata.uid = format!("uid-{}", o.metadata.name);
            o
        })
        .collect()
}

/// Snapshot 0 of each example override, decoded.
pub(super) fn example_snapshots() -> Vec<OverrideSnapshot> {
    example_overrides()
        .iter()
        .map(|o| match &plan_override_snapshots(o, &[])[..] {
            [SnapshotChange::Create(s)] => OverrideSnapshot::from_object(s).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect()
}

pub(super) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The example's hub resources: Namespace web, Deployment frontend,
/// ConfigMap prod-config, ClusterRole web-reader.
pub(super) fn example_resources() -> Vec<Object> {
    vec![
        object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}})),
        object(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "frontend", "namespace": "web", "labels": {"app": "frontend"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "frontend:1.4"}]}}}})),
        object(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "prod-config", "namespace": "web"},
            "data": {"mode": "prod"}}),
        ),
        object(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "web-reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})),
    ]
}

pub(super) fn crp(name: &str) -> Object {
    object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": name}, "spec": {"resourceSelectors": []}}))
}

fn created(changes: &[SnapshotChange]) -> Vec<Object> {
    changes
        .iter()
        .filter_map(|c| match c {
            SnapshotChange::Create(o) => Some(o.clone()),
            _ => None,
        })
        .collect()
}

fn stored(mut o: Object, rv: u64) -> Object {
    o.metadata.resource_version = rv.to_string();
    o
}

#[test]
fn ov_3_a_new_override_gets_snapshot_0_labelled_latest_and_owned() {
    let cro = &example_overrides()[0];
    let changes = plan_override_snapshots(cro, &[]);
    let snaps = created(&changes);
    assert_eq!(snaps.len(), 1);
    let s = &snaps[0];
    assert_eq!(s.kind, "ClusterResourceOverrideSnapshot");
    assert_eq!(s.metadata.name, "reader-extra-verb-0");
    assert_eq!(s.metadata.labels[PARENT_OVERRIDE_LABEL], "reader-extra-verb");
    assert_eq!(s.metadata.labels[OVERRIDE_INDEX_LABEL], "0");
    assert_eq!(s.metadata.labels[IS_LATEST_LABEL], "true");
    assert_eq!(s.metadata.owner_references[0].uid, "uid-reader-extra-verb");
    let spec = fleet_api::overrides::snapshot_spec_of(s);
    assert_eq!(spec.override_hash, override_hash(&fleet_api::overrides::spec_of(cro)));
    let ro = &example_overrides()[1];
    let s = &created(&plan_override_snapshots(ro, &[]))[0];
    assert_eq!((s.kind.as_str(), s.metadata.namespace.as_deref()), ("ResourceOverrideSnapshot", Some("web")));
}

#[test]
fn ov_3_an_unchanged_spec_makes_no_snapshot_and_a_change_makes_the_next() {
    let mut cro = example_overrides()[0].clone();
    let first = stored(created(&plan_override_snapshots(&cro, &[])).remove(0), 5);
    assert!(plan_override_snapshots(&cro, std::slice::from_ref(&first)).is_empty());
    cro.rest["spec"]["policy"]["overrideRules"][0]["jsonPatchOverrides"][0]["value"] = json!("patch");
    let changes = plan_override_snapshots(&cro, std::slice::from_ref(&first));
    let snaps = created(&changes);
    assert_eq!(snaps[0].metadata.name, "reader-extra-verb-1");
    let relabelled: Vec<_> = changes
        .iter()
        .filter_map(|c| match c {
            SnapshotChange::Update(o) => Some((o.metadata.name.clone(), o.metadata.labels[IS_LATEST_LABEL].clone())),
            _ => None,
        })
        .collect();
    assert_eq!(relabelled, [("reader-extra-verb-0".to_string(), "false".to_string())]);
}

#[test]
fn ov_3_ten_snapshots_are_kept() {
    let mut cro = example_overrides()[0].clone();
    let mut existing: Vec<Object> = Vec::new();
    for i in 0..12 {
        cro.rest["spec"]["policy"]["overrideRules"][0]["jsonPatchOverrides"][0]["value"] = json!(format!("v{i}"));
        for change in plan_override_snapshots(&cro, &existing) {
            match change {
                SnapshotChange::Create(o) => existing.push(stored(o, i + 1)),
                SnapshotChange::Update(o) => {
                    let at = existing.iter().position(|e| e.metadata.name == o.metadata.name).unwrap();
                    existing[at] = o;
                }
                SnapshotChange::Delete { name, .. } => existing.retain(|e| e.metadata.name != name),
            }
        }
    }
    let mut names: Vec<_> = existing.iter().map(|o| o.metadata.name.clone()).collect();
    names.sort_by_key(|n| n.rsplit('-').next().unwrap().parse::<u32>().unwrap());
    assert_eq!(names.first().map(String::as_str), Some("reader-extra-verb-2"));
    assert_eq!(names.len(), 10);
    assert_eq!(latest_override_snapshot("reader-extra-verb", &existing).unwrap().metadata.name, "reader-extra-verb-11");
    let latest: Vec<_> = existing.iter().filter(|o| o.metadata.labels[IS_LATEST_LABEL] == "true").collect();
    assert_eq!(latest.len(), 1);
}

#[test]
fn ov_4_the_worked_example_applicable_overrides() {
    let snaps = example_snapshots();
    let resources = example_resources();
    let web = crp("web");
    let prod_east = applicable(&web, &resources, &labels(&[("env", "prod"), ("region", "east")]), &snaps);
    let test = applicable(&web, &resources, &labels(&[("env", "test"), ("region", "east")]), &snaps);
    assert!(prod_east.cluster.is_empty());
    let names = |a: &Applicable| a.resource.iter().map(|n| format!("{}/{}", n.namespace, n.name)).collect::<Vec<_>>();
    assert_eq!(names(&prod_east), ["web/frontend-0"]);
    assert_eq!(test.cluster, ["reader-extra-verb-0"]);
    assert_eq!(names(&test), ["web/frontend-0", "web/no-prod-config-0"]);
}

#[test]
fn ov_2_a_placement_reference_limits_the_override() {
    let snaps = example_snapshots();
    let resources = example_resources();
    let test = labels(&[("env", "test")]);
    assert!(applicable(&crp("api"), &resources, &test, &snaps).is_empty());
    let mut unreferenced = snaps.clone();
    for s in &mut unreferenced {
        s.spec.placement = None;
    }
    assert_eq!(applicable(&crp("api"), &resources, &test, &unreferenced).resource.len(), 2);
    let mut rp = crp("web");
    rp.kind = "ResourcePlacement".into();
    rp.metadata.namespace = Some("web".into());
    assert!(applicable(&rp, &resources, &test, &snaps).is_empty(), "scope Cluster names a CRP");
    let mut namespaced = snaps.clone();
    namespaced[1].spec.placement.as_mut().unwrap().scope = Some("Namespaced".into());
    assert_eq!(applicable(&rp, &resources, &test, &namespaced).resource.len(), 1);
}

#[test]
fn ov_1_a_cro_naming_a_namespace_covers_its_objects_and_an_absent_cluster_selector_matches_none() {
    let mut snaps = example_snapshots();
    snaps[0].spec.cluster_resource_selectors[0] = fleet_api::overrides::OverrideSelector {
        version: "v1".into(),
        kind: "Namespace".into(),
        name: "web".into(),
        ..Default::default()
    };
    let only_deployment = vec![example_resources()[1].clone()];
    let test = labels(&[("env", "test")]);
    assert_eq!(applicable(&crp("web"), &only_deployment, &test, &snaps[..1]).cluster, ["reader-extra-verb-0"]);
    snaps[0].spec.policy.override_rules[0].cluster_selector = None;
    assert!(applicable(&crp("web"), &only_deployment, &test, &snaps[..1]).is_empty());
}

#[test]
fn ov_4_objects_wrapped_in_an_envelope_are_selected_by_their_own_identity() {
    let envelope = object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourceEnvelope",
        "metadata": {"name": "env", "namespace": "web"},
        "data": {"d.yaml": serde_json::to_value(&example_resources()[1]).unwrap()}}));
    let snaps = example_snapshots();
    let prod = labels(&[("env", "prod"), ("region", "west")]);
    let found = applicable(&crp("web"), &[envelope], &prod, &snaps);
    assert_eq!(found.resource.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["frontend-0"]);
}
