use serde_json::{json, Value};

use super::*;

fn crp(spec: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web"}, "spec": spec
    }))
    .unwrap()
}

fn rp(spec: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "ResourcePlacement",
        "metadata": {"name": "web", "namespace": "team"}, "spec": spec
    }))
    .unwrap()
}

const NS: &str = r#"{"group": "", "version": "v1", "kind": "Namespace", "name": "web"}"#;

fn ns() -> Value {
    serde_json::from_str(NS).unwrap()
}

/// A CRP spec selecting one namespace with the given policy.
fn with_policy(policy: Value) -> Object {
    crp(json!({"resourceSelectors": [ns()], "policy": policy}))
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

/// The example CRP of docs/spec/placement.md, verbatim.
const KUBEFLEET_EXAMPLE: &str = r#"apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: web}
spec:
  resourceSelectors:
    - {group: "", version: v1, kind: Namespace, name: web}
  policy:
    placementType: PickN
    numberOfClusters: 3
    affinity:
      clusterAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          clusterSelectorTerms:
            - labelSelector: {matchLabels: {environment: production}}
              propertySelector:
                matchExpressions:
                  - {name: kubernetes-fleet.io/node-count, operator: Ge, values: ["5"]}
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 20
            preference:
              labelSelector: {matchLabels: {env: prod}}
              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}
    topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: region, whenUnsatisfiable: DoNotSchedule}
    tolerations:
      - {key: maintenance, operator: Exists}
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 25%, maxSurge: 25%, unavailablePeriodSeconds: 60}}
  revisionHistoryLimit: 10
"#;

#[test]
fn kubefleet_example_parses_and_prepares() {
    let mut objects = crate::parse::parse_documents("placement.md", KUBEFLEET_EXAMPLE).unwrap();
    assert_eq!(objects.len(), 1);
    crate::typed::prepare(&mut objects[0]).unwrap_or_else(|e| panic!("{e}"));
    let spec = spec_of(&objects[0]);
    let policy = spec.policy.unwrap();
    assert_eq!(policy.placement_type(), PICK_N);
    assert_eq!(policy.number_of_clusters, Some(3));
    assert_eq!(policy.tolerations[0].operator(), "Exists");
    assert_eq!(spec.revision_history_limit, Some(10));
}

#[test]
fn defaults_are_filled_and_written_back() {
    let mut o = crp(json!({"resourceSelectors": [ns()]}));
    crate::typed::prepare(&mut o).unwrap();
    let spec = o.spec().unwrap();
    assert_eq!(spec["policy"]["placementType"], "PickAll");
    assert_eq!(spec["strategy"]["type"], "RollingUpdate");
    assert_eq!(
        spec["strategy"]["rollingUpdate"],
        json!({"maxUnavailable": "25%", "maxSurge": "25%", "unavailablePeriodSeconds": 60})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["resourceSelectors"][0]["selectionScope"], "NamespaceWithResources");
    let spec = ok(with_policy(json!({"placementType": "PickN", "numberOfClusters": 2,
        "topologySpreadConstraints": [{"topologyKey": "region"}], "tolerations": [{"key": "k", "value": "v"}]})));
    let policy = spec.policy.unwrap();
    assert_eq!(policy.topology_spread_constraints[0].max_skew, Some(1));
    assert_eq!(policy.topology_spread_constraints[0].when_unsatisfiable.as_deref(), Some("DoNotSchedule"));
    assert_eq!(policy.tolerations[0].operator.as_deref(), Some("Equal"));
    // Preparing twice changes nothing.
    let mut o = crp(json!({"resourceSelectors": [ns()]}));
    crate::typed::prepare(&mut o).unwrap();
    let once = o.clone();
    crate::typed::prepare(&mut o).unwrap();
    assert_eq!(once, o);
}

#[test]
fn unknown_fields_are_refused_with_their_path() {
    let e = err(with_policy(json!({"placementType": "PickN", "numberOfCluster": 3})));
    has(&e, "spec.policy.numberOfCluster: Forbidden: unknown field `numberOfCluster`");
    let e = err(crp(json!({"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "nam": "x"}]})));
    has(&e, "spec.resourceSelectors[0].nam");
}

#[test]
fn resource_selector_count_and_fields() {
    has(&err(crp(json!({}))), "spec.resourceSelectors: Required value");
    let many: Vec<Value> = (0..101).map(|_| ns()).collect();
    has(
        &err(crp(json!({"resourceSelectors": many}))),
        "spec.resourceSelectors: Too many: 101: must have at most 100 items",
    );
    let many: Vec<Value> = (0..100).map(|_| ns()).collect();
    ok(crp(json!({"resourceSelectors": many})));
    let e = err(crp(json!({"resourceSelectors": [{"group": ""}]})));
    has(&e, "spec.resourceSelectors[0].version: Required value");
    has(&e, "spec.resourceSelectors[0].kind: Required value");
}

#[test]
fn name_xor_label_selector() {
    let both = json!({"group": "", "version": "v1", "kind": "Namespace", "name": "a", "labelSelector": {"matchLabels": {"a": "b"}}});
    has(&err(crp(json!({"resourceSelectors": [both]}))), "spec.resourceSelectors[0].labelSelector: Forbidden");
    let labels =
        json!({"group": "", "version": "v1", "kind": "Namespace", "labelSelector": {"matchLabels": {"a": "b"}}});
    let neither = json!({"group": "", "version": "v1", "kind": "Namespace"});
    ok(crp(json!({"resourceSelectors": [labels, neither]})));
    let bad = json!({"group": "", "version": "v1", "kind": "Namespace", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}});
    has(
        &err(crp(json!({"resourceSelectors": [bad]}))),
        "spec.resourceSelectors[0].labelSelector.matchExpressions[0].values: Required value",
    );
}

#[test]
fn selection_scope_values() {
    let only =
        json!({"group": "", "version": "v1", "kind": "Namespace", "name": "a", "selectionScope": "NamespaceOnly"});
    let spec = ok(crp(json!({"resourceSelectors": [only]})));
    assert_eq!(spec.resource_selectors[0].selection_scope.as_deref(), Some(NAMESPACE_ONLY));
    let bad = json!({"group": "", "version": "v1", "kind": "Namespace", "name": "a", "selectionScope": "All"});
    has(
        &err(crp(json!({"resourceSelectors": [bad]}))),
        "spec.resourceSelectors[0].selectionScope: Unsupported value: \"All\"",
    );
}

#[test]
fn crp_selects_cluster_scoped_and_rp_namespaced_kinds() {
    let cm = json!({"group": "", "version": "v1", "kind": "ConfigMap", "name": "c"});
    let crd = json!({"group": "example.com", "version": "v1", "kind": "Widget"});
    has(
        &err(crp(json!({"resourceSelectors": [cm.clone()]}))),
        "spec.resourceSelectors[0].kind: Invalid value: \"ConfigMap\"",
    );
    ok(crp(json!({"resourceSelectors": [ns(), crd.clone()]})));
    ok(rp(json!({"resourceSelectors": [cm, crd]})));
    has(&err(rp(json!({"resourceSelectors": [ns()]}))), "spec.resourceSelectors[0].kind: Invalid value: \"Namespace\"");
}

#[test]
fn placement_type_values() {
    has(
        &err(with_policy(json!({"placementType": "PickSome"}))),
        "spec.policy.placementType: Unsupported value: \"PickSome\"",
    );
    assert_eq!(ok(with_policy(json!({}))).policy.unwrap().placement_type(), PICK_ALL);
}

#[test]
fn cluster_names_only_with_pick_fixed() {
    ok(with_policy(json!({"placementType": "PickFixed", "clusterNames": ["a", "b"]})));
    // No names (absent or empty) scales a PickFixed placement to zero.
    ok(with_policy(json!({"placementType": "PickFixed"})));
    ok(with_policy(json!({"placementType": "PickFixed", "clusterNames": []})));
    has(
        &err(with_policy(json!({"clusterNames": ["a"]}))),
        "spec.policy.clusterNames: Forbidden: only allowed with placementType PickFixed",
    );
    let many: Vec<String> = (0..101).map(|i| format!("c{i}")).collect();
    has(
        &err(with_policy(json!({"placementType": "PickFixed", "clusterNames": many}))),
        "spec.policy.clusterNames: Too many: 101",
    );
    let e = err(with_policy(json!({"placementType": "PickFixed", "clusterNames": ["a", "a", "B_"]})));
    has(&e, "spec.policy.clusterNames[1]: Duplicate value: \"a\"");
    has(&e, "spec.policy.clusterNames[2]: Invalid value: \"B_\"");
}

#[test]
fn number_of_clusters_only_with_pick_n() {
    ok(with_policy(json!({"placementType": "PickN", "numberOfClusters": 0})));
    has(&err(with_policy(json!({"placementType": "PickN"}))), "spec.policy.numberOfClusters: Required value");
    has(
        &err(with_policy(json!({"placementType": "PickN", "numberOfClusters": -1}))),
        "spec.policy.numberOfClusters: Invalid value: -1: must be greater than or equal to 0",
    );
    has(
        &err(with_policy(json!({"placementType": "PickAll", "numberOfClusters": 2}))),
        "spec.policy.numberOfClusters: Forbidden: only allowed with placementType PickN",
    );
}

#[test]
fn all_errors_are_collected() {
    let e = err(with_policy(json!({"placementType": "PickN", "numberOfClusters": -1, "clusterNames": ["a"]})));
    assert_eq!(
        e,
        "ClusterResourcePlacement \"web\" is invalid:\n  spec.policy.clusterNames: Forbidden: only allowed with placementType PickFixed\n  spec.policy.numberOfClusters: Invalid value: -1: must be greater than or equal to 0"
    );
}

fn required_terms(terms: Value) -> Value {
    json!({"placementType": "PickN", "numberOfClusters": 1,
        "affinity": {"clusterAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": terms}}}})
}

const TERMS: &str =
    "spec.policy.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms";

#[test]
fn required_terms_rules() {
    let term = json!({"labelSelector": {"matchLabels": {"env": "prod"}}});
    ok(with_policy(required_terms(json!([term]))));
    let many: Vec<Value> = (0..11).map(|_| term.clone()).collect();
    has(&err(with_policy(required_terms(json!(many)))), &format!("{TERMS}: Too many: 11: must have at most 10 items"));
    has(&err(with_policy(required_terms(json!([{}])))), &format!("{TERMS}[0]: Required value"));
    let sorter = json!({"labelSelector": {}, "propertySorter": {"name": "x", "sortOrder": "Ascending"}});
    has(&err(with_policy(required_terms(json!([sorter])))), &format!("{TERMS}[0].propertySorter: Forbidden"));
}

#[test]
fn property_selector_rules() {
    let expr = |e: Value| json!([{"propertySelector": {"matchExpressions": [e]}}]);
    ok(with_policy(required_terms(expr(
        json!({"name": "kubernetes-fleet.io/node-count", "operator": "Gt", "values": ["3"]}),
    ))));
    ok(with_policy(required_terms(expr(
        json!({"name": "resources.kubernetes-fleet.io/available-memory", "operator": "Le", "values": ["10Gi"]}),
    ))));
    let path = format!("{TERMS}[0].propertySelector.matchExpressions[0]");
    let e = err(with_policy(required_terms(expr(json!({"name": "", "operator": "In", "values": ["1", "2"]})))));
    has(&e, &format!("{path}.name: Required value"));
    has(&e, &format!("{path}.operator: Unsupported value: \"In\""));
    has(&e, &format!("{path}.values: Too many: 2: must have at most 1 items"));
    let e = err(with_policy(required_terms(expr(json!({"name": "a", "operator": "Eq", "values": []})))));
    has(&e, &format!("{path}.values: Required value"));
    let e = err(with_policy(required_terms(expr(json!({"name": "a", "operator": "Eq", "values": ["lots"]})))));
    has(&e, &format!("{path}.values[0]: Invalid value: \"lots\""));
}

#[test]
fn node_count_alias_is_accepted_and_normalized() {
    let terms = json!([{"propertySelector": {"matchExpressions": [
        {"name": NODE_COUNT_PROPERTY_ALIAS, "operator": "Ge", "values": ["5"]}]}}]);
    let spec = ok(with_policy(required_terms(terms)));
    let affinity = spec.policy.unwrap().affinity.unwrap().cluster_affinity.unwrap();
    let term = &affinity.required_during_scheduling_ignored_during_execution.unwrap().cluster_selector_terms[0];
    assert_eq!(term.property_selector.as_ref().unwrap().match_expressions[0].name, NODE_COUNT_PROPERTY);
    assert_eq!(canonical_property_name(NODE_COUNT_PROPERTY_ALIAS), NODE_COUNT_PROPERTY);
    assert_eq!(canonical_property_name("x/y"), "x/y");
}

fn preferred(items: Value) -> Value {
    json!({"affinity": {"clusterAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": items}}})
}

const PREFERRED: &str = "spec.policy.affinity.clusterAffinity.preferredDuringSchedulingIgnoredDuringExecution";

#[test]
fn preferred_terms_rules() {
    let sorter = json!({"name": "resources.kubernetes-fleet.io/available-cpu", "sortOrder": "Descending"});
    ok(with_policy(preferred(json!([
        {"weight": -100, "preference": {"labelSelector": {"matchLabels": {"a": "b"}}}},
        {"weight": 100, "preference": {"propertySorter": sorter}},
    ]))));
    let e = err(with_policy(preferred(json!([
        {"weight": 101, "preference": {"propertySorter": {"name": "x", "sortOrder": "Up"}}},
        {"weight": -101, "preference": {"propertySorter": {"name": "x"}}},
    ]))));
    has(&e, &format!("{PREFERRED}[0].weight: Invalid value: 101: must be between -100 and 100"));
    has(&e, &format!("{PREFERRED}[0].preference.propertySorter.sortOrder: Unsupported value: \"Up\""));
    has(&e, &format!("{PREFERRED}[1].weight: Invalid value: -101"));
    has(&e, &format!("{PREFERRED}[1].preference.propertySorter.sortOrder: Required value"));
}

#[test]
fn metric_sorter_is_accepted_and_written_as_property_sorter() {
    let mut o = with_policy(preferred(json!([
        {"weight": 20, "preference": {"metricSorter": {"name": "kubernetes.azure.com/node-count", "sortOrder": "Ascending"}}}
    ])));
    crate::typed::prepare(&mut o).unwrap();
    let pref = &o.spec().unwrap()["policy"]["affinity"]["clusterAffinity"]
        ["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"];
    assert_eq!(pref["propertySorter"], json!({"name": NODE_COUNT_PROPERTY, "sortOrder": "Ascending"}));
    assert!(pref.get("metricSorter").is_none());
}

#[test]
fn affinity_not_with_pick_fixed() {
    let mut policy = preferred(json!([{"weight": 1, "preference": {"labelSelector": {}}}]));
    policy["placementType"] = json!("PickFixed");
    policy["clusterNames"] = json!(["a"]);
    has(&err(with_policy(policy)), "spec.policy.affinity: Forbidden: not allowed with placementType PickFixed");
    ok(with_policy(preferred(json!([{"weight": 1, "preference": {"labelSelector": {}}}]))));
}

#[test]
fn topology_spread_rules() {
    let pick_n = |c: Value| {
        with_policy(json!({"placementType": "PickN", "numberOfClusters": 2, "topologySpreadConstraints": [c]}))
    };
    ok(pick_n(json!({"maxSkew": 2, "topologyKey": "region", "whenUnsatisfiable": "ScheduleAnyway"})));
    let e = err(pick_n(json!({"maxSkew": 0, "whenUnsatisfiable": "Never"})));
    let p = "spec.policy.topologySpreadConstraints[0]";
    has(&e, &format!("{p}.maxSkew: Invalid value: 0: must be greater than or equal to 1"));
    has(&e, &format!("{p}.topologyKey: Required value"));
    has(&e, &format!("{p}.whenUnsatisfiable: Unsupported value: \"Never\""));
    has(
        &err(with_policy(json!({"topologySpreadConstraints": [{"topologyKey": "region"}]}))),
        "spec.policy.topologySpreadConstraints: Forbidden: only allowed with placementType PickN",
    );
}

#[test]
fn toleration_rules() {
    ok(with_policy(json!({"tolerations": [
        {"key": "a", "value": "b", "effect": "NoSchedule"}, {"key": "c", "operator": "Exists"}, {"operator": "Exists"}]})));
    let e = err(with_policy(json!({"tolerations": [
        {"key": "a", "operator": "Exists", "value": "b"}, {"key": "c", "operator": "Like", "effect": "NoExecute"}, {"value": "x"}]})));
    has(&e, "spec.policy.tolerations[0].value: Forbidden: may not be specified when operator is Exists");
    has(&e, "spec.policy.tolerations[1].operator: Unsupported value: \"Like\"");
    has(&e, "spec.policy.tolerations[1].effect: Unsupported value: \"NoExecute\"");
    has(&e, "spec.policy.tolerations[2].key: Required value");
    has(
        &err(with_policy(json!({"placementType": "PickFixed", "clusterNames": ["a"], "tolerations": [{"key": "a"}]}))),
        "spec.policy.tolerations: Forbidden: not allowed with placementType PickFixed",
    );
}

fn with_strategy(strategy: Value) -> Object {
    crp(json!({"resourceSelectors": [ns()], "strategy": strategy}))
}

#[test]
fn strategy_rules() {
    let spec = ok(with_strategy(
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "maxSurge": "50%", "unavailablePeriodSeconds": 0},
        "applyStrategy": {"type": "ServerSideApply", "whenToTakeOver": "IfNoDiff"}, "deleteStrategy": {"propagationPolicy": "Abandon"}}),
    ));
    let strategy = spec.strategy.unwrap();
    assert_eq!(strategy.rolling_update.unwrap().max_unavailable, Some(IntOrString::Int(2)));
    let e = err(with_strategy(
        json!({"type": "Recreate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "x%", "unavailablePeriodSeconds": -1},
        "applyStrategy": {"type": "Replace"}, "deleteStrategy": {"propagationPolicy": "Orphan"}}),
    ));
    has(&e, "spec.strategy.type: Unsupported value: \"Recreate\"");
    has(&e, "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: must be greater than or equal to 1");
    has(&e, "spec.strategy.rollingUpdate.maxSurge: Invalid value: \"x%\": must be an integer or a percentage");
    has(&e, "spec.strategy.rollingUpdate.unavailablePeriodSeconds: Invalid value: -1");
    has(&e, "spec.strategy.applyStrategy.type: Unsupported value: \"Replace\"");
    has(&e, "spec.strategy.deleteStrategy.propagationPolicy: Unsupported value: \"Orphan\"");
    let e = err(with_strategy(json!({"rollingUpdate": {"maxSurge": "101%"}})));
    has(&e, "spec.strategy.rollingUpdate.maxSurge: Invalid value: \"101%\": must be a percentage of at most 100%");
    let spec = ok(with_strategy(json!({"deleteStrategy": {}})));
    assert_eq!(spec.strategy.unwrap().delete_strategy.unwrap().propagation_policy.as_deref(), Some("Delete"));
}

#[test]
fn revision_history_limit_range() {
    ok(crp(json!({"resourceSelectors": [ns()], "revisionHistoryLimit": 1000})));
    ok(crp(json!({"resourceSelectors": [ns()], "revisionHistoryLimit": 1})));
    for bad in [0, 1001] {
        has(
            &err(crp(json!({"resourceSelectors": [ns()], "revisionHistoryLimit": bad}))),
            &format!("spec.revisionHistoryLimit: Invalid value: {bad}: must be between 1 and 1000"),
        );
    }
}

#[test]
fn int_or_percent_parses_validates_and_scales() {
    assert_eq!(IntOrPercent::parse("25%"), Ok(IntOrPercent::Percent(25)));
    assert_eq!(IntOrPercent::parse("3"), Ok(IntOrPercent::Int(3)));
    for bad in ["", "%", "x", "2.5%", "-5%", "25 %"] {
        assert!(IntOrPercent::parse(bad).is_err(), "{bad}");
    }
    assert!(IntOrPercent::Percent(0).validate(1).is_err());
    assert!(IntOrPercent::Percent(0).validate(0).is_ok());
    assert!(IntOrPercent::Int(1).validate(1).is_ok());
    assert!(IntOrPercent::Percent(100).validate(1).is_ok());
    assert_eq!(IntOrPercent::Percent(25).scaled(8), 2);
    assert_eq!(IntOrPercent::Percent(25).scaled(9), 3);
    assert_eq!(IntOrPercent::Percent(25).scaled(1), 1);
    assert_eq!(IntOrPercent::Percent(25).scaled(0), 0);
    assert_eq!(IntOrPercent::Percent(100).scaled(7), 7);
    assert_eq!(IntOrPercent::Int(3).scaled(100), 3);
    assert_eq!(IntOrPercent::Int(-3).scaled(100), 0);
    assert_eq!(IntOrPercent::Percent(25).to_string(), "25%");
    assert_eq!(IntOrPercent::from_int_or_string(&IntOrString::Str("10%".into())), Ok(IntOrPercent::Percent(10)));
    assert_eq!(IntOrPercent::Percent(25).to_int_or_string(), IntOrString::Str("25%".into()));
}

#[test]
fn both_api_versions_and_rp_namespace_are_accepted() {
    let mut o = crp(json!({"resourceSelectors": [ns()]}));
    o.api_version = "placement.kubernetes-fleet.io/v1".into();
    ok(o);
    ok(rp(json!({"resourceSelectors": [{"group": "apps", "version": "v1", "kind": "Deployment", "name": "d"}]})));
}

#[test]
fn placement_type_is_immutable() {
    let old = with_policy(json!({}));
    let new = with_policy(json!({"placementType": "PickN", "numberOfClusters": 1}));
    let e = check_update(&old, &new).unwrap_err().to_string();
    has(&e, "spec.policy.placementType: Invalid value: \"PickN\": field is immutable (was \"PickAll\")");
    check_update(&old, &with_policy(json!({"placementType": "PickAll"}))).unwrap();
    let n3 = with_policy(json!({"placementType": "PickN", "numberOfClusters": 3}));
    check_update(&new, &n3).unwrap();
}

#[test]
fn tolerations_can_only_be_added() {
    let old = with_policy(json!({"tolerations": [{"key": "a", "value": "b"}]}));
    let added = with_policy(
        json!({"tolerations": [{"key": "c", "operator": "Exists"}, {"key": "a", "operator": "Equal", "value": "b"}]}),
    );
    check_update(&old, &added).unwrap();
    let removed = with_policy(json!({"tolerations": [{"key": "c", "operator": "Exists"}]}));
    has(
        &check_update(&old, &removed).unwrap_err().to_string(),
        "spec.policy.tolerations: Forbidden: tolerations can only be added",
    );
    let changed = with_policy(json!({"tolerations": [{"key": "a", "value": "z"}]}));
    assert!(check_update(&old, &changed).is_err());
}

#[test]
fn external_strategy_has_no_rolling_update_and_may_be_left() {
    let external = ok(with_strategy(json!({"type": "External"})));
    let strategy = external.strategy.unwrap();
    assert_eq!(strategy.type_.as_deref(), Some(EXTERNAL));
    assert_eq!(strategy.rolling_update, None, "no rollingUpdate defaults for External");
    let e = err(with_strategy(json!({"type": "External", "rollingUpdate": {"maxSurge": 1}})));
    has(&e, "spec.strategy.rollingUpdate: Forbidden: rollingUpdate is not allowed when the rollout strategy type is External");
    let old = with_strategy(json!({"type": "External"}));
    for new in [with_strategy(json!({"type": "RollingUpdate"})), with_strategy(json!({}))] {
        check_update(&old, &new).unwrap();
    }
    check_update(&with_strategy(json!({})), &old).unwrap();
    check_update(&old, &with_strategy(json!({"type": "External"}))).unwrap();
}

#[test]
fn report_back_strategy_takes_kubefleets_values_and_rule() {
    let spec = ok(with_strategy(json!({"reportBackStrategy": {"type": "Mirror", "destination": "WorkAPI"}})));
    let r = spec.strategy.unwrap().report_back_strategy.unwrap();
    assert!(r.mirrors());
    assert_eq!(r.destination.as_deref(), Some("WorkAPI"));
    ok(with_strategy(json!({"reportBackStrategy": {"type": "Mirror", "destination": "OriginalResource"}})));
    has(
        &err(with_strategy(json!({"reportBackStrategy": {"type": "Mirror", "destination": "Elsewhere"}}))),
        "spec.strategy.reportBackStrategy.destination: Unsupported value: \"Elsewhere\"",
    );
    ok(with_strategy(json!({"reportBackStrategy": {"type": "Disabled", "destination": "OriginalResource"}})));
    // Defaulted to Disabled once given, as KubeFleet's CRD does.
    let spec = ok(with_strategy(json!({"reportBackStrategy": {}})));
    assert_eq!(spec.strategy.unwrap().report_back_strategy.unwrap().type_.as_deref(), Some("Disabled"));
    has(
        &err(with_strategy(json!({"reportBackStrategy": {"type": "Mirror"}}))),
        "spec.strategy.reportBackStrategy.destination: Required value: when reportBackStrategy.type is 'Mirror', a destination must be specified",
    );
    let e = err(with_strategy(json!({"reportBackStrategy": {"type": "Copy", "destination": "Elsewhere"}})));
    has(&e, "spec.strategy.reportBackStrategy.type: Unsupported value: \"Copy\"");
    has(&e, "spec.strategy.reportBackStrategy.destination: Unsupported value: \"Elsewhere\"");
    has(
        &err(with_strategy(json!({"reportBackStrategy": {"type": "Mirror", "destination": "WorkAPI", "rate": 1}}))),
        "spec.strategy.reportBackStrategy.rate: Forbidden: unknown field",
    );
}
