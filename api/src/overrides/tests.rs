//! One test per validation row of docs/spec/overrides.md, plus its examples.

use serde_json::{json, Value};

use super::*;

fn cro(spec: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceOverride",
        "metadata": {"name": "cro-a"}, "spec": spec
    }))
    .unwrap()
}

fn ro(spec: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1alpha1", "kind": "ResourceOverride",
        "metadata": {"name": "ro-a", "namespace": "web"}, "spec": spec
    }))
    .unwrap()
}

fn role_selector() -> Value {
    json!({"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "name": "web-reader"})
}

fn patch_rule(patch: Value) -> Value {
    json!({"clusterSelector": {"clusterSelectorTerms": []}, "jsonPatchOverrides": [patch]})
}

fn cro_with_rules(rules: Value) -> Object {
    cro(json!({"clusterResourceSelectors": [role_selector()], "policy": {"overrideRules": rules}}))
}

fn err(mut o: Object) -> String {
    crate::typed::prepare(&mut o).unwrap_err().to_string()
}

fn has(e: &str, want: &str) {
    assert!(e.contains(want), "missing {want:?} in:\n{e}");
}

/// The three overrides of docs/spec/overrides.md, verbatim (the deploy example).
const SPEC_EXAMPLES: &str = include_str!("../../../deploy/examples/overrides/overrides.yaml");

#[test]
fn the_spec_examples_validate_unchanged() {
    let objects = crate::parse::parse_documents("overrides.yaml", SPEC_EXAMPLES).unwrap();
    assert_eq!(objects.len(), 3);
    for mut o in objects {
        crate::typed::prepare(&mut o).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn placement_is_immutable() {
    let with = |name: Option<&str>| {
        let mut spec = json!({"clusterResourceSelectors": [role_selector()],
            "policy": {"overrideRules": [patch_rule(json!({"op": "remove", "path": "/rules/0"}))]}});
        if let Some(n) = name {
            spec["placement"] = json!({"name": n});
        }
        cro(spec)
    };
    check_update(&with(Some("web")), &with(Some("web"))).unwrap();
    for (old, new) in [(Some("web"), Some("api")), (None, Some("web")), (Some("web"), None)] {
        let e = check_update(&with(old), &with(new)).unwrap_err().to_string();
        has(&e, "spec.placement: Invalid value: ");
        has(&e, "The placement field is immutable");
    }
}

#[test]
fn a_cro_cannot_reference_a_namespaced_placement() {
    let mut o = cro_with_rules(json!([patch_rule(json!({"op": "remove", "path": "/rules/0"}))]));
    o.rest["spec"]["placement"] = json!({"name": "web", "scope": "Namespaced"});
    has(
        &err(o),
        r#"spec.placement.scope: Unsupported value: "Namespaced": clusterResourceOverride placement reference cannot be Namespaced scope"#,
    );
    let mut ok = ro(json!({"placement": {"name": "web", "scope": "Namespaced"},
        "resourceSelectors": [{"group": "apps", "version": "v1", "kind": "Deployment", "name": "frontend"}],
        "policy": {"overrideRules": [patch_rule(json!({"op": "remove", "path": "/spec/replicas"}))]}}));
    crate::typed::prepare(&mut ok).unwrap();
}

#[test]
fn selectors_need_a_name_and_no_label_selector_and_are_unique() {
    let rules = json!({"overrideRules": [patch_rule(json!({"op": "remove", "path": "/rules/0"}))]});
    let e = err(cro(json!({"clusterResourceSelectors": [
        {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole"},
        {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "name": "x",
         "labelSelector": {"matchLabels": {"a": "b"}}},
        role_selector(), role_selector()
    ], "policy": rules})));
    has(&e, "spec.clusterResourceSelectors[0].name: Required value: resource name is required");
    has(&e, "spec.clusterResourceSelectors[1].labelSelector: Forbidden: label selector is not supported");
    has(&e, "spec.clusterResourceSelectors[3]: Duplicate value");
    let e = err(cro(json!({"clusterResourceSelectors": [], "policy": rules})));
    has(&e, "spec.clusterResourceSelectors: Required value");
    let many: Vec<Value> =
        (0..21).map(|i| json!({"group": "", "version": "v1", "kind": "Namespace", "name": format!("n{i}")})).collect();
    has(&err(cro(json!({"clusterResourceSelectors": many, "policy": rules}))), "Too many: 21");
}

#[test]
fn rules_are_required_and_at_most_twenty() {
    has(&err(cro_with_rules(json!([]))), "spec.policy.overrideRules: Required value");
    let rules: Vec<Value> = (0..21).map(|_| patch_rule(json!({"op": "remove", "path": "/rules/0"}))).collect();
    has(&err(cro_with_rules(json!(rules))), "spec.policy.overrideRules: Too many: 21: must have at most 20 items");
}

#[test]
fn cluster_selector_terms_take_label_selectors_only() {
    let term_rule = |term: Value| {
        json!({"clusterSelector": {"clusterSelectorTerms": [term]},
               "jsonPatchOverrides": [{"op": "remove", "path": "/rules/0"}]})
    };
    let e = err(cro_with_rules(json!([
        term_rule(json!({})),
        term_rule(json!({"labelSelector": {}, "propertySelector": {"matchExpressions": []}})),
        term_rule(json!({"labelSelector": {}, "propertySorter": {"name": "x", "sortOrder": "Ascending"}})),
        term_rule(json!({"labelSelector": {"matchLabels": {"bad key!": "x"}}})),
    ])));
    let base = "spec.policy.overrideRules";
    has(&e, &format!("{base}[0].clusterSelector.clusterSelectorTerms[0].labelSelector: Required value"));
    has(
        &e,
        &format!("{base}[1].clusterSelector.clusterSelectorTerms[0].propertySelector: Forbidden: only labelSelector is supported"),
    );
    has(
        &e,
        &format!("{base}[2].clusterSelector.clusterSelectorTerms[0].propertySorter: Forbidden: only labelSelector is supported"),
    );
    has(&e, &format!("{base}[3].clusterSelector.clusterSelectorTerms[0].labelSelector.matchLabels: Invalid value"));
    let eleven: Vec<Value> = (0..11).map(|_| json!({"labelSelector": {}})).collect();
    let e = err(cro_with_rules(json!([{"clusterSelector": {"clusterSelectorTerms": eleven},
        "jsonPatchOverrides": [{"op": "remove", "path": "/rules/0"}]}])));
    has(&e, "clusterSelectorTerms: Too many: 11: must have at most 10 items");
}

#[test]
fn override_type_is_json_patch_or_delete() {
    let e = err(cro_with_rules(json!([{"overrideType": "Drop"}])));
    has(
        &e,
        r#"spec.policy.overrideRules[0].overrideType: Unsupported value: "Drop": supported values: "JSONPatch", "Delete""#,
    );
}

#[test]
fn json_patch_rules_need_patches_and_delete_rules_none() {
    let e = err(cro_with_rules(json!([{"clusterSelector": {"clusterSelectorTerms": []}}])));
    has(&e, "spec.policy.overrideRules[0].jsonPatchOverrides: Required value: JSONPatchOverrides cannot be empty");
    let e = err(cro_with_rules(json!([{"overrideType": "Delete",
        "jsonPatchOverrides": [{"op": "remove", "path": "/rules/0"}]}])));
    has(
        &e,
        "spec.policy.overrideRules[0].jsonPatchOverrides: Forbidden: JSONPatchOverrides cannot be set when the override type is Delete",
    );
    let patches: Vec<Value> = (0..21).map(|_| json!({"op": "remove", "path": "/rules/0"})).collect();
    let e = err(cro_with_rules(json!([{"jsonPatchOverrides": patches}])));
    has(&e, "jsonPatchOverrides: Too many: 21: must have at most 20 items");
}

#[test]
fn patch_ops_are_add_remove_replace() {
    let e = err(cro_with_rules(json!([patch_rule(json!({"op": "move", "path": "/rules/0"}))])));
    has(&e, r#"spec.policy.overrideRules[0].jsonPatchOverrides[0].op: Unsupported value: "move""#);
}

#[test]
fn patch_paths_refuse_type_meta_status_and_most_metadata() {
    let cases = [
        ("/status/x", "cannot override status fields"),
        ("rules/0", "path must start with /"),
        ("/rules//0", "path cannot contain empty string"),
        ("/kind", "cannot override typeMeta fields"),
        ("/apiVersion", "cannot override typeMeta fields"),
        ("/metadata", "cannot override metadata fields except annotations and labels"),
        ("/metadata/name", "cannot override metadata fields except annotations and labels"),
    ];
    for (path, detail) in cases {
        let e = err(cro_with_rules(json!([patch_rule(json!({"op": "add", "path": path, "value": 1}))])));
        has(&e, &format!("jsonPatchOverrides[0].path: Invalid value: {}: {detail}", quote(path)));
    }
    for path in ["/metadata/labels/x", "/metadata/annotations", "/spec/replicas", "/rules/0/verbs/-"] {
        assert_eq!(validate::path_problem(path), None, "{path}");
    }
}

#[test]
fn remove_takes_no_value() {
    let e = err(cro_with_rules(json!([patch_rule(json!({"op": "remove", "path": "/rules/0", "value": 1}))])));
    has(&e, "jsonPatchOverrides[0].value: Forbidden: remove operation cannot have value");
}

#[test]
fn each_kind_uses_its_own_selector_field() {
    let rules = json!({"overrideRules": [patch_rule(json!({"op": "remove", "path": "/spec/replicas"}))]});
    let e = err(ro(json!({"clusterResourceSelectors": [role_selector()], "policy": rules})));
    has(&e, "spec.clusterResourceSelectors: Forbidden");
    has(&e, "spec.resourceSelectors: Required value");
}

#[test]
fn selected_resources_carry_the_ro_namespace() {
    let o = ro(json!({"resourceSelectors": [{"group": "apps", "version": "v1", "kind": "Deployment", "name": "f"}],
        "policy": {"overrideRules": [patch_rule(json!({"op": "remove", "path": "/spec/replicas"}))]}}));
    assert_eq!(selected_resources(&o), vec![("apps".into(), "Deployment".into(), "web".into(), "f".into())]);
}
