//! Cluster sets, bindings, add-on scores and decision pages: what is refused.

use serde_json::json;

use super::{has, ok, refused};
use crate::ocm::{addon_score, decision};
use crate::Object;

fn set(spec: &str) -> String {
    format!("apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {{name: east}}\nspec: {spec}\n")
}

#[test]
fn set_selector_rules() {
    has(
        &refused(&set("{clusterSelector: {selectorType: Legacy}}")),
        &[
            r#"spec.clusterSelector.selectorType: Unsupported value: "Legacy": supported values: "ExclusiveClusterSetLabel", "LabelSelector""#,
        ],
    );
    has(
        &refused(&set("{clusterSelector: {selectorType: LabelSelector}}")),
        &["spec.clusterSelector.labelSelector: Required value: required when selectorType is LabelSelector"],
    );
    has(
        &refused(&set("{clusterSelector: {labelSelector: {}}}")),
        &["spec.clusterSelector.labelSelector: Forbidden: only allowed when selectorType is LabelSelector"],
    );
    has(
        &refused(&set("{clusterSelector: {selectorType: LabelSelector, labelSelector: {matchLabels: {region: -x}}}}")),
        &[r#"spec.clusterSelector.labelSelector.matchLabels[region]: Invalid value: "-x""#],
    );
    has(&refused(&set("{clusterselector: {}}")), &["spec.clusterselector: Forbidden: unknown field `clusterselector`"]);
    ok(&set("{clusterSelector: {selectorType: LabelSelector, labelSelector: {}}}"));
    // A set chosen by the set label needs a name a label can hold.
    let long = format!(
        "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {{name: {}}}\n",
        "a".repeat(64)
    );
    has(
        &refused(&long),
        &["metadata.name: Invalid value", "a set chosen by the label cluster.open-cluster-management.io/clusterset"],
    );
}

#[test]
fn managed_namespaces_are_labels_named_once() {
    has(
        &refused(&set("{managedNamespaces: [{name: Team_A}, {name: ok}, {name: ok}, {}]}")),
        &[
            r#"spec.managedNamespaces[0].name: Invalid value: "Team_A""#,
            r#"spec.managedNamespaces[2].name: Duplicate value: "ok""#,
            "spec.managedNamespaces[3].name: Required value",
        ],
    );
    has(&refused(&set("{managedNamespaces: [{name: a, labels: {}}]}")), &["unknown field `labels`"]);
    ok(&set("{managedNamespaces: [{name: team-a}, {name: team-b}]}"));
}

#[test]
fn binding_names_its_set() {
    let binding = |name: &str, spec: &str| {
        format!("apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {{name: {name}, namespace: ns1}}\nspec: {spec}\n")
    };
    has(
        &refused(&binding("east", "{clusterSet: west}")),
        &[
            r#"ManagedClusterSetBinding "east" is invalid:"#,
            r#"spec.clusterSet: Invalid value: "west": must equal the binding's name "east""#,
        ],
    );
    has(&refused(&binding("east", "{}")), &["spec.clusterSet: Required value"]);
    ok(&binding("east", "{clusterSet: east}"));
}

fn with_status(kind: &str, status: serde_json::Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": kind,
        "metadata": {"name": "default", "namespace": "cluster1"}, "status": status
    }))
    .unwrap()
}

#[test]
fn addon_score_status_rules() {
    let good = with_status(
        "AddOnPlacementScore",
        json!({
            "scores": [{"name": "cpuratio", "value": -100}, {"name": "memratio", "value": 100}],
            "validUntil": "2024-05-01T10:00:00Z"
        }),
    );
    addon_score::validate_status(&good).unwrap();
    assert_eq!(addon_score::status_of(&good).score("memratio"), Some(100));
    let bad = with_status(
        "AddOnPlacementScore",
        json!({
            "scores": [{"name": "cpuratio", "value": 101}, {"name": "cpuratio", "value": 0}, {"name": "", "value": 0}],
            "validUntil": "tomorrow"
        }),
    );
    let e = addon_score::validate_status(&bad).unwrap_err().to_string();
    has(
        &e,
        &[
            "status.scores[0].value: Invalid value: 101: must be between -100 and 100",
            r#"status.scores[1].name: Duplicate value: "cpuratio""#,
            "status.scores[2].name: Required value",
            r#"status.validUntil: Invalid value: "tomorrow": must be an RFC 3339 timestamp"#,
        ],
    );
    let e = addon_score::validate_status(&with_status("AddOnPlacementScore", json!({"score": []}))).unwrap_err();
    has(&e.to_string(), &["status.score: Forbidden: unknown field `score`"]);
    has(&refused("apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: AddOnPlacementScore\nmetadata: {name: a, namespace: c}\nspec: {}\n"), &[
        "spec: Forbidden: AddOnPlacementScore has no spec; its content is status",
    ]);
}

#[test]
fn decision_status_rules() {
    let decisions = |n: usize| -> Vec<serde_json::Value> {
        (0..n).map(|i| json!({"clusterName": format!("c{i}"), "reason": ""})).collect()
    };
    decision::validate_status(&with_status("PlacementDecision", json!({"decisions": decisions(100)}))).unwrap();
    let e =
        decision::validate_status(&with_status("PlacementDecision", json!({"decisions": decisions(101)}))).unwrap_err();
    has(&e.to_string(), &["status.decisions: Too many: 101: must have at most 100 items"]);
    let dup = json!({"decisions": [{"clusterName": "a", "reason": ""}, {"clusterName": "a", "reason": ""}, {"clusterName": "", "reason": ""}]});
    let e = decision::validate_status(&with_status("PlacementDecision", dup)).unwrap_err().to_string();
    has(
        &e,
        &[
            r#"status.decisions[1].clusterName: Duplicate value: "a""#,
            "status.decisions[2].clusterName: Required value",
        ],
    );
    assert_eq!(decision::page_name("demo", 3), "demo-decision-3");
}
