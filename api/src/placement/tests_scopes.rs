//! `spec.statusReportingScope` and the `NamespaceWithResourceSelectors`
//! selection scope: KubeFleet's rules, with its paths and messages.

use serde_json::{json, Value};

use super::*;

fn placement(kind: &str, spec: Value) -> Object {
    let namespace = if kind == RESOURCE_PLACEMENT { json!("team") } else { Value::Null };
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
        "metadata": {"name": "web", "namespace": namespace}, "spec": spec
    }))
    .unwrap()
}

fn crp(spec: Value) -> Object {
    placement(CLUSTER_RESOURCE_PLACEMENT, spec)
}

fn ok(mut o: Object) -> PlacementSpec {
    crate::typed::prepare(&mut o).unwrap_or_else(|e| panic!("{e}"));
    spec_of(&o)
}

fn err(mut o: Object) -> String {
    crate::typed::prepare(&mut o).unwrap_err().to_string()
}

fn has(e: &str, want: &str) {
    assert!(e.contains(want), "missing {want:?} in:\n{e}");
}

fn namespace(name: &str, scope: Option<&str>) -> Value {
    let mut s = json!({"group": "", "version": "v1", "kind": "Namespace", "name": name});
    if let Some(scope) = scope {
        s["selectionScope"] = json!(scope);
    }
    s
}

fn config_map() -> Value {
    json!({"group": "", "version": "v1", "kind": "ConfigMap", "name": "settings"})
}

const ONE_NAMESPACE: &str =
    "when statusReportingScope is NamespaceAccessible, exactly one resourceSelector with kind 'Namespace' is required";

#[test]
fn status_reporting_scope_defaults_to_cluster_scope_only_on_both_kinds() {
    let spec = ok(crp(json!({"resourceSelectors": [namespace("web", None)]})));
    assert_eq!(spec.status_reporting_scope.as_deref(), Some(CLUSTER_SCOPE_ONLY));
    let rp = placement(RESOURCE_PLACEMENT, json!({"resourceSelectors": [config_map()]}));
    assert_eq!(ok(rp).status_reporting_scope.as_deref(), Some(CLUSTER_SCOPE_ONLY));
}

#[test]
fn status_reporting_scope_values() {
    let spec = json!({"resourceSelectors": [namespace("web", None)], "statusReportingScope": "NamespaceAccessible"});
    assert_eq!(ok(crp(spec)).status_reporting_scope(), NAMESPACE_ACCESSIBLE);
    let bad = json!({"resourceSelectors": [namespace("web", None)], "statusReportingScope": "Everywhere"});
    has(
        &err(crp(bad)),
        r#"spec.statusReportingScope: Unsupported value: "Everywhere": supported values: "ClusterScopeOnly", "NamespaceAccessible""#,
    );
}

#[test]
fn namespace_accessible_needs_exactly_one_namespace_selector() {
    let cluster_role = json!({"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole"});
    let none = json!({"resourceSelectors": [cluster_role], "statusReportingScope": "NamespaceAccessible"});
    has(&err(crp(none)), &format!(r#"spec: Invalid value: "object": {ONE_NAMESPACE}"#));
    let two = json!({
        "resourceSelectors": [namespace("a", None), namespace("b", None)],
        "statusReportingScope": "NamespaceAccessible"
    });
    has(&err(crp(two)), ONE_NAMESPACE);
    // The same selectors are fine with the default scope.
    ok(crp(json!({"resourceSelectors": [namespace("a", None), namespace("b", None)]})));
    // A ResourcePlacement's status is namespaced already: KubeFleet accepts
    // and ignores the value there.
    let rp = json!({"resourceSelectors": [config_map()], "statusReportingScope": "NamespaceAccessible"});
    ok(placement(RESOURCE_PLACEMENT, rp));
}

#[test]
fn status_reporting_scope_is_immutable() {
    let scoped =
        |scope: &str| crp(json!({"resourceSelectors": [namespace("web", None)], "statusReportingScope": scope}));
    let unset = crp(json!({"resourceSelectors": [namespace("web", None)]}));
    let want = r#"spec: Invalid value: "object": statusReportingScope is immutable"#;
    has(&check_update(&unset, &scoped(NAMESPACE_ACCESSIBLE)).unwrap_err().to_string(), want);
    has(&check_update(&scoped(NAMESPACE_ACCESSIBLE), &scoped(CLUSTER_SCOPE_ONLY)).unwrap_err().to_string(), want);
    has(&check_update(&scoped(NAMESPACE_ACCESSIBLE), &unset).unwrap_err().to_string(), want);
    check_update(&unset, &scoped(CLUSTER_SCOPE_ONLY)).unwrap();
    check_update(&scoped(NAMESPACE_ACCESSIBLE), &scoped(NAMESPACE_ACCESSIBLE)).unwrap();
}

#[test]
fn namespace_with_resource_selectors_lets_a_crp_name_namespaced_kinds() {
    let scoped = namespace("web", Some(NAMESPACE_WITH_RESOURCE_SELECTORS));
    let cluster_role =
        json!({"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "name": "r"});
    let spec = ok(crp(json!({"resourceSelectors": [scoped.clone(), config_map(), cluster_role]})));
    assert_eq!(spec.namespace_with_resource_selectors(), Some("web"));
    ok(crp(json!({"resourceSelectors": [scoped]})));
    // Without it, namespaced kinds stay refused, saying what would allow them.
    let e = err(crp(json!({"resourceSelectors": [namespace("web", None), config_map()]})));
    has(&e, r#"spec.resourceSelectors[1].kind: Invalid value: "ConfigMap""#);
    has(&e, "unless a Namespace selector with selectionScope NamespaceWithResourceSelectors");
}

#[test]
fn at_most_one_namespace_with_resource_selectors_selector() {
    let scoped = |name: &str| namespace(name, Some(NAMESPACE_WITH_RESOURCE_SELECTORS));
    let e = err(crp(json!({"resourceSelectors": [scoped("a"), scoped("b")]})));
    has(
        &e,
        r#"spec: Invalid value: "object": only one namespace selector with NamespaceWithResourceSelectors mode is allowed"#,
    );
}

#[test]
fn namespace_with_resource_selectors_selects_by_name() {
    let by_label = json!({
        "group": "", "version": "v1", "kind": "Namespace", "selectionScope": NAMESPACE_WITH_RESOURCE_SELECTORS,
        "labelSelector": {"matchLabels": {"team": "web"}}
    });
    let want = r#"spec: Invalid value: "object": namespace selector with NamespaceWithResourceSelectors mode must select by name (not by label)"#;
    has(&err(crp(json!({"resourceSelectors": [by_label]}))), want);
    let every =
        json!({"group": "", "version": "v1", "kind": "Namespace", "selectionScope": NAMESPACE_WITH_RESOURCE_SELECTORS});
    has(&err(crp(json!({"resourceSelectors": [every]}))), want);
}

#[test]
fn namespace_with_resource_selectors_is_the_only_namespace_selector() {
    let e = err(crp(json!({"resourceSelectors": [
        namespace("a", Some(NAMESPACE_WITH_RESOURCE_SELECTORS)),
        namespace("b", Some(NAMESPACE_ONLY)),
    ]})));
    has(
        &e,
        r#"spec: Invalid value: "object": when using NamespaceWithResourceSelectors mode, only one namespace selector is allowed (cannot mix with other namespace selectors)"#,
    );
}

#[test]
fn the_mirror_carries_the_status_without_its_own_condition() {
    let placement = {
        let mut p = crp(json!({"resourceSelectors": [namespace("web", None)]}));
        p.metadata.uid = "u-1".into();
        p
    };
    let status = PlacementStatus {
        observed_resource_index: "2".into(),
        conditions: vec![
            crate::conditions::Condition::new("ClusterResourcePlacementScheduled", true, "Scheduled", "ok"),
            crate::conditions::Condition::new(STATUS_SYNCED_CONDITION, true, REASON_STATUS_SYNC_SUCCEEDED, "ok"),
        ],
        ..Default::default()
    };
    let mirror = build_mirror(&placement, "web", &status, "2026-01-01T00:00:00Z");
    assert_eq!(mirror.kind, CLUSTER_RESOURCE_PLACEMENT_STATUS);
    assert_eq!((mirror.metadata.namespace.as_deref(), mirror.metadata.name.as_str()), (Some("web"), "web"));
    assert_eq!(mirror.metadata.owner_references[0].uid, "u-1");
    let fields = mirror_of(&mirror);
    assert_eq!(fields.last_updated_time, "2026-01-01T00:00:00Z");
    assert_eq!(fields.source_status.observed_resource_index, "2");
    let types: Vec<&str> = fields.source_status.conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["ClusterResourcePlacementScheduled"]);
    assert_eq!(mirror.rest["sourceStatus"]["observedResourceIndex"], "2");
}
