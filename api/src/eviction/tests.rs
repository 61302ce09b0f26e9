//! Eviction and budget validation (docs/spec/eviction.md "Fields and validation").

use serde_json::{json, Value};

use super::*;
use crate::testing::{err, has, object};

fn eviction(spec: Value) -> Object {
    object(CLUSTER_RESOURCE_PLACEMENT_EVICTION, "evict-b", spec)
}

fn budget(spec: Value) -> Object {
    object(CLUSTER_RESOURCE_PLACEMENT_DISRUPTION_BUDGET, "web", spec)
}

fn crp(policy: Value) -> Object {
    let mut o = object(
        "ClusterResourcePlacement",
        "web",
        json!({
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "web"}], "policy": policy
        }),
    );
    crate::typed::prepare(&mut o).unwrap();
    o
}

/// The two documents of docs/spec/eviction.md, verbatim.
const SPEC_EXAMPLE: &str = r#"apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacementDisruptionBudget
metadata: {name: web}          # = the CRP's name
spec:
  minAvailable: 2              # or maxUnavailable; integer or "NN%"
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacementEviction
metadata: {name: evict-b}
spec:
  placementName: web
  clusterName: b
"#;

#[test]
fn spec_example_validates_unchanged() {
    let mut objects = crate::parse::parse_documents("eviction.md", SPEC_EXAMPLE).unwrap();
    for o in &mut objects {
        crate::typed::prepare(o).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(budget_spec_of(&objects[0]).min_available, Some(IntOrString::Int(2)));
    assert_eq!(eviction_spec_of(&objects[1]), EvictionSpec { placement_name: "web".into(), cluster_name: "b".into() });
    let pick_n = crp(json!({"placementType": "PickN", "numberOfClusters": 3}));
    for o in &objects {
        check_against_placement(o, Some(&pick_n)).unwrap();
    }
    // v1alpha1 is accepted as well.
    let mut alpha = eviction(json!({"placementName": "web", "clusterName": "b"}));
    alpha.api_version = "placement.kubernetes-fleet.io/v1alpha1".into();
    crate::typed::prepare(&mut alpha).unwrap();
}

#[test]
fn eviction_fields_required_and_immutable() {
    let e = err(eviction(json!({})));
    has(&e, "spec.placementName: Required value");
    has(&e, "spec.clusterName: Required value");
    has(&err(eviction(json!({"placementName": "p".repeat(256), "clusterName": "b"}))), "spec.placementName: Too long");
    has(
        &err(eviction(json!({"placementName": "web", "cluster": "b"}))),
        "spec.cluster: Forbidden: unknown field `cluster`",
    );
    let old = eviction(json!({"placementName": "web", "clusterName": "b"}));
    let new = eviction(json!({"placementName": "x", "clusterName": "c"}));
    let e = crate::typed::check_update(&old, &new).unwrap_err().to_string();
    has(&e, r#"spec.placementName: Invalid value: "x": The PlacementName field is immutable"#);
    has(&e, r#"spec.clusterName: Invalid value: "c": The ClusterName field is immutable"#);
    crate::typed::check_update(&old, &old.clone()).unwrap();
}

#[test]
fn budget_values() {
    const WANT: &str = "If supplied value is String should match regex '^(100|[0-9]{1,2})%$' or If supplied value is Integer must be greater than or equal to 0";
    has(
        &err(budget(json!({"maxUnavailable": "150%"}))),
        &format!(r#"spec.maxUnavailable: Invalid value: "150%": {WANT}"#),
    );
    has(&err(budget(json!({"minAvailable": -1}))), &format!("spec.minAvailable: Invalid value: -1: {WANT}"));
    for bad in ["1000%", "5", "%", "x%", "-1%"] {
        has(&err(budget(json!({ "minAvailable": bad }))), "spec.minAvailable: Invalid value");
    }
    for good in [json!(0), json!(7), json!("0%"), json!("05%"), json!("99%"), json!("100%")] {
        crate::typed::prepare(&mut budget(json!({ "maxUnavailable": good }))).unwrap();
    }
    crate::typed::prepare(&mut budget(json!({}))).unwrap();
    let e = err(budget(json!({"maxUnavailable": 1, "minAvailable": 2})));
    has(
        &e,
        r#"spec: Invalid value: {"maxUnavailable":1,"minAvailable":2}: Both MaxUnavailable and MinAvailable cannot be specified"#,
    );
}

#[test]
fn eviction_checked_against_its_placement_at_apply() {
    let e = eviction(json!({"placementName": "web", "clusterName": "b"}));
    let fixed = crp(json!({"placementType": "PickFixed", "clusterNames": ["a"]}));
    has(
        &check_against_placement(&e, Some(&fixed)).unwrap_err().to_string(),
        "spec.placementName: Forbidden: cluster resource placement policy type PickFixed is not supported",
    );
    let mut deleting = crp(json!({"placementType": "PickAll"}));
    deleting.metadata.deletion_timestamp = Some("2024-05-01T10:00:00Z".into());
    has(
        &check_against_placement(&e, Some(&deleting)).unwrap_err().to_string(),
        "spec.placementName: Forbidden: cluster resource placement web is being deleted",
    );
    check_against_placement(&e, None).unwrap();
}

#[test]
fn budget_checked_against_a_pick_all_placement_at_apply() {
    let all = crp(json!({"placementType": "PickAll"}));
    has(
        &check_against_placement(&budget(json!({"maxUnavailable": 1})), Some(&all)).unwrap_err().to_string(),
        "spec.maxUnavailable: Forbidden: cluster resource placement policy type PickAll is not supported with any specified max unavailable 1",
    );
    has(
        &check_against_placement(&budget(json!({"minAvailable": "50%"})), Some(&all)).unwrap_err().to_string(),
        "spec.minAvailable: Forbidden: cluster resource placement policy type PickAll is not supported with min available as a percentage 50%",
    );
    check_against_placement(&budget(json!({"minAvailable": 2})), Some(&all)).unwrap();
    check_against_placement(&budget(json!({})), Some(&all)).unwrap();
    let n = crp(json!({"placementType": "PickN", "numberOfClusters": 3}));
    check_against_placement(&budget(json!({"maxUnavailable": "50%"})), Some(&n)).unwrap();
}

#[test]
fn ev_1_final_states() {
    let status = |conds: Vec<Condition>| EvictionStatus { conditions: conds };
    assert!(!status(vec![]).is_final());
    assert!(!status(vec![Condition::new(VALID, true, REASON_VALID, MESSAGE_VALID)]).is_final());
    assert!(status(vec![Condition::new(VALID, false, REASON_INVALID, MESSAGE_MISSING_PLACEMENT)]).is_final());
    let blocked = Condition::new(EXECUTED, false, REASON_NOT_EXECUTED, MESSAGE_NOT_PROPAGATED);
    assert!(status(vec![Condition::new(VALID, true, REASON_VALID, MESSAGE_VALID), blocked]).is_final());
}

fn in_team(mut o: Object) -> Object {
    o.metadata.namespace = Some("team".into());
    o
}

#[test]
fn namespaced_kinds_take_the_same_fields_and_rules() {
    let eviction = |spec: Value| in_team(object(RESOURCE_PLACEMENT_EVICTION, "evict-b", spec));
    let budget = |spec: Value| in_team(object(RESOURCE_PLACEMENT_DISRUPTION_BUDGET, "web", spec));
    let e = err(eviction(json!({})));
    has(&e, "ResourcePlacementEviction \"evict-b\" is invalid");
    has(&e, "spec.placementName: Required value");
    has(&e, "spec.clusterName: Required value");
    has(&err(eviction(json!({"placementName": "web", "cluster": "b"}))), "spec.cluster: Forbidden: unknown field");
    let old = eviction(json!({"placementName": "web", "clusterName": "b"}));
    let new = eviction(json!({"placementName": "web", "clusterName": "c"}));
    has(
        &crate::typed::check_update(&old, &new).unwrap_err().to_string(),
        r#"spec.clusterName: Invalid value: "c": The ClusterName field is immutable"#,
    );
    has(&err(budget(json!({"minAvailable": "150%"}))), r#"spec.minAvailable: Invalid value: "150%""#);
    has(
        &err(budget(json!({"maxUnavailable": 1, "minAvailable": 2}))),
        "Both MaxUnavailable and MinAvailable cannot be specified",
    );
    crate::typed::prepare(&mut budget(json!({"minAvailable": 1}))).unwrap();
    crate::typed::prepare(&mut old.clone()).unwrap();
}

#[test]
fn namespaced_kinds_are_checked_against_a_resource_placement_in_their_words() {
    let mut rp = crp(json!({"placementType": "PickFixed", "clusterNames": ["a"]}));
    rp.kind = "ResourcePlacement".into();
    let e =
        in_team(object(RESOURCE_PLACEMENT_EVICTION, "evict-b", json!({"placementName": "web", "clusterName": "a"})));
    has(
        &check_against_placement(&e, Some(&rp)).unwrap_err().to_string(),
        "spec.placementName: Forbidden: resource placement policy type PickFixed is not supported",
    );
    // A ClusterResourcePlacement of that name is not the one a namespaced eviction names.
    let crp_fixed = crp(json!({"placementType": "PickFixed", "clusterNames": ["a"]}));
    check_against_placement(&e, Some(&crp_fixed)).unwrap();
    let mut all = crp(json!({"placementType": "PickAll"}));
    all.kind = "ResourcePlacement".into();
    let b = in_team(object(RESOURCE_PLACEMENT_DISRUPTION_BUDGET, "web", json!({"maxUnavailable": 1})));
    has(
        &check_against_placement(&b, Some(&all)).unwrap_err().to_string(),
        "spec.maxUnavailable: Forbidden: resource placement policy type PickAll is not supported with any specified max unavailable 1",
    );
}

#[test]
fn namespaced_text_renames_every_kind_once() {
    assert_eq!(namespaced_text(REASON_VALID), "ResourcePlacementEvictionValid");
    assert_eq!(
        namespaced_text(MESSAGE_NO_BUDGET),
        "Eviction is allowed, no ResourcePlacementDisruptionBudget specified"
    );
    assert_eq!(
        namespaced_text(MESSAGE_MISCONFIGURED_BUDGET),
        "Eviction is blocked by misconfigured ResourcePlacementDisruptionBudget, either MaxUnavailable is specified or MinAvailable is specified as a percentage for PickAll ResourcePlacement"
    );
    assert_eq!(namespaced_text(MESSAGE_VALID), MESSAGE_VALID);
}
