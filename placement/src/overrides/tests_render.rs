//! Rendering through overrides (OV-5, OV-6, OV-7) and the worked example.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::tests::{example_resources, example_snapshots, labels, object};
use super::*;

fn example_render(cluster: &str, pairs: &[(&str, &str)], resource: usize) -> Result<Option<Value>, OverrideFailure> {
    let snaps = example_snapshots();
    let labels = labels(pairs);
    let resources = example_resources();
    let found = applicable(&tests::crp("web"), &resources, &labels, &snaps);
    let ordered: Vec<&OverrideSnapshot> = found
        .cluster
        .iter()
        .chain(found.resource.iter().map(|n| &n.name))
        .map(|name| snaps.iter().find(|s| &s.name == name).unwrap())
        .collect();
    render(&resources[resource], cluster, &labels, &ordered).map(|o| o.map(|o| serde_json::to_value(o).unwrap()))
}

#[test]
fn the_worked_example_per_cluster() {
    let east = [("env", "prod"), ("region", "east")];
    let west = [("env", "prod"), ("region", "west")];
    let test = [("env", "test"), ("region", "east")];
    for (cluster, pairs, verbs, image, replicas, config) in [
        ("east-1", &east, json!(["get", "list"]), "registry-east.example.com/frontend:1.4", 3, true),
        ("west-1", &west, json!(["get", "list"]), "registry-west.example.com/frontend:1.4", 3, true),
        ("test-1", &test, json!(["get", "list", "watch"]), "frontend:1.4", 1, false),
    ] {
        let role = example_render(cluster, pairs, 3).unwrap().unwrap();
        assert_eq!(role["rules"][0]["verbs"], verbs, "{cluster}");
        let deployment = example_render(cluster, pairs, 1).unwrap().unwrap();
        assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], image, "{cluster}");
        assert_eq!(deployment["spec"]["replicas"], replicas, "{cluster}");
        assert_eq!(deployment["metadata"]["labels"]["placed-on"], cluster);
        assert_eq!(deployment["metadata"]["labels"]["app"], "frontend");
        assert_eq!(example_render(cluster, pairs, 2).unwrap().is_some(), config, "{cluster}");
        let namespace = example_render(cluster, pairs, 0).unwrap().unwrap();
        assert_eq!(namespace, serde_json::to_value(&example_resources()[0]).unwrap(), "untouched");
    }
}

#[test]
fn ov_7_a_missing_label_fails_with_the_spec_message() {
    let e = example_render("west-1", &[("env", "prod")], 1).unwrap_err();
    assert_eq!(
        e.message,
        r#"ResourceOverrideSnapshot "frontend-0" failed to apply on Deployment "frontend" in namespace "web": label key region not found on cluster west-1"#
    );
}

fn one_rule(patches: Value) -> OverrideSnapshot {
    let mut s = example_snapshots().remove(1);
    s.spec.policy.override_rules = vec![serde_json::from_value(
        json!({"clusterSelector": {"clusterSelectorTerms": []}, "jsonPatchOverrides": patches}),
    )
    .unwrap()];
    s
}

fn deployment() -> fleet_api::Object {
    example_resources()[1].clone()
}

fn render_with(patches: Value) -> Result<Value, String> {
    let s = one_rule(patches);
    render(&deployment(), "c1", &labels(&[("a/b", "x~y")]), &[&s])
        .map(|o| serde_json::to_value(o.unwrap()).unwrap())
        .map_err(|e| e.message)
}

#[test]
fn ov_7_patches_that_cannot_apply_fail() {
    for patches in [
        json!([{"op": "replace", "path": "/spec/missing", "value": 1}]),
        json!([{"op": "remove", "path": "/spec/missing"}]),
        json!([{"op": "add", "path": "/spec/no/parent", "value": 1}]),
    ] {
        let e = render_with(patches.clone()).unwrap_err();
        assert!(
            e.starts_with(
                r#"ResourceOverrideSnapshot "frontend-0" failed to apply on Deployment "frontend" in namespace "web": "#
            ),
            "{e}"
        );
    }
    let e =
        render_with(json!([{"op": "add", "path": "/metadata/labels/x", "value": "${MEMBER-CLUSTER-LABEL-KEY-a/b"}]))
            .unwrap_err();
    assert!(e.ends_with("has no closing }"), "{e}");
}

#[test]
fn ov_5_a_rules_patches_apply_in_order_and_append_with_dash() {
    let out = render_with(json!([
        {"op": "add", "path": "/spec/template/spec/containers/-", "value": {"name": "side", "image": "s"}},
        {"op": "replace", "path": "/spec/replicas", "value": 5},
        {"op": "replace", "path": "/spec/replicas", "value": 7},
        {"op": "add", "path": "/metadata/annotations", "value": {"a~b/c": "1"}},
        {"op": "replace", "path": "/metadata/annotations/a~0b~1c", "value": "2"},
    ]))
    .unwrap();
    assert_eq!(out["spec"]["template"]["spec"]["containers"][1]["name"], "side");
    assert_eq!(out["spec"]["replicas"], 7, "the later patch of a field wins");
    assert_eq!(out["metadata"]["annotations"]["a~b/c"], "2", "escaped pointer segments");
}

#[test]
fn ov_5_an_ro_wins_over_a_cro_and_delete_stops_evaluation() {
    let mut cro = example_snapshots().remove(0);
    cro.spec.cluster_resource_selectors[0].kind = "Namespace".into();
    cro.spec.cluster_resource_selectors[0].group = String::new();
    cro.spec.cluster_resource_selectors[0].name = "web".into();
    cro.spec.policy.override_rules =
        vec![serde_json::from_value(json!({"clusterSelector": {"clusterSelectorTerms": []},
        "jsonPatchOverrides": [{"op": "replace", "path": "/spec/replicas", "value": 2}]}))
        .unwrap()];
    let ro = one_rule(json!([{"op": "replace", "path": "/spec/replicas", "value": 9}]));
    let out = render(&deployment(), "c", &labels(&[]), &[&cro, &ro]).unwrap().unwrap();
    assert_eq!(serde_json::to_value(out).unwrap()["spec"]["replicas"], 9);
    let mut delete = ro.clone();
    delete.spec.policy.override_rules.insert(
        0,
        serde_json::from_value(json!({"clusterSelector": {"clusterSelectorTerms": []}, "overrideType": "Delete"}))
            .unwrap(),
    );
    delete.spec.policy.override_rules.push(
        serde_json::from_value(json!({"clusterSelector": {"clusterSelectorTerms": []},
            "jsonPatchOverrides": [{"op": "remove", "path": "/no/such"}]}))
        .unwrap(),
    );
    assert_eq!(render(&deployment(), "c", &labels(&[]), &[&cro, &delete]), Ok(None));
}

#[test]
fn ov_6_variables_in_values_only_and_unknown_ones_left_alone() {
    let l = labels(&[("region", "east"), ("quote", "a\"b")]);
    let v = json!({"x": "${MEMBER-CLUSTER-NAME}/${MEMBER-CLUSTER-LABEL-KEY-region}", "y": "${OTHER} ${MEMBER-CLUSTER-OTHER}",
        "z": ["${MEMBER-CLUSTER-LABEL-KEY-quote}"], "n": 3});
    let out = substitute_variables(&v, "east-1", &l).unwrap();
    assert_eq!(out, json!({"x": "east-1/east", "y": "${OTHER} ${MEMBER-CLUSTER-OTHER}", "z": ["a\"b"], "n": 3}));
    let out =
        render_with(json!([{"op": "add", "path": "/metadata/labels/${MEMBER-CLUSTER-NAME}", "value": "v"}])).unwrap();
    assert_eq!(out["metadata"]["labels"]["${MEMBER-CLUSTER-NAME}"], "v", "paths are never substituted");
    assert_eq!(
        substitute_variables(&json!("${MEMBER-CLUSTER-LABEL-KEY-Region}"), "c", &l),
        Err("label key Region not found on cluster c".to_string()),
        "keys are case-sensitive"
    );
}

proptest! {
    /// A rule set that matches no cluster leaves every resource as it was.
    #[test]
    fn rules_that_match_no_cluster_change_nothing(env in "[a-z]{1,8}", index in 0usize..4) {
        prop_assume!(env != "test" && env != "prod");
        let snaps = example_snapshots();
        let refs: Vec<&OverrideSnapshot> = snaps.iter().filter(|s| s.name != "frontend-0").collect();
        let resource = example_resources()[index].clone();
        let out = render(&resource, "c", &labels(&[("env", &env)]), &refs).unwrap();
        prop_assert_eq!(out, Some(resource));
    }

    /// `${MEMBER-CLUSTER-NAME}` always becomes the cluster's name, whatever
    /// text surrounds it.
    #[test]
    fn the_cluster_name_variable_is_always_replaced(before in "[a-z -]{0,10}", after in "[a-z -]{0,10}", name in "[a-z0-9-]{1,20}") {
        let v = Value::String(format!("{before}${{MEMBER-CLUSTER-NAME}}{after}"));
        let out = substitute_variables(&v, &name, &labels(&[])).unwrap();
        prop_assert_eq!(out, Value::String(format!("{before}{name}{after}")));
    }
}

#[test]
fn an_unselected_resource_is_returned_as_is() {
    let cm =
        object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "web"}}));
    let snaps = example_snapshots();
    let refs: Vec<&OverrideSnapshot> = snaps.iter().collect();
    assert_eq!(render(&cm, "c", &labels(&[("env", "test")]), &refs), Ok(Some(cm.clone())));
}
