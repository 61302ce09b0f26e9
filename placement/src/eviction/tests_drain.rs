//! `fleetctl drain` / `uncordon` planning.

use serde_json::{json, Value};

use fleet_api::eviction::{set_eviction_status, EvictionStatus, EXECUTED, REASON_EXECUTED, REASON_NOT_EXECUTED, VALID};
use fleet_api::member::Taint;

use super::drain::*;
use super::*;

fn object(kind: &str, name: &str, labels: Value, spec: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
        "metadata": {"name": name, "labels": labels}, "spec": spec
    }))
    .unwrap()
}

fn crp(name: &str, policy: Value) -> Object {
    object("ClusterResourcePlacement", name, json!({}), json!({"resourceSelectors": [], "policy": policy}))
}

fn crb(placement: &str, cluster: &str, state: &str) -> Object {
    object(
        "ClusterResourceBinding",
        &format!("{placement}-{cluster}"),
        json!({"kubernetes-fleet.io/parent-CRP": placement}),
        json!({"state": state, "targetCluster": cluster}),
    )
}

fn with_status(mut eviction: Object, executed: Option<bool>) -> Object {
    let mut status = EvictionStatus::default();
    if let Some(done) = executed {
        status.conditions.push(Condition::new(
            VALID,
            true,
            "ClusterResourcePlacementEvictionValid",
            "Eviction is valid",
        ));
        let reason = if done { REASON_EXECUTED } else { REASON_NOT_EXECUTED };
        status.conditions.push(Condition::new(EXECUTED, done, reason, "why"));
    }
    set_eviction_status(&mut eviction, &status);
    eviction
}

#[test]
fn cordon_and_uncordon_are_idempotent() {
    let other = Taint::new("maintenance", "true", "NoSchedule");
    let tainted = cordoned(std::slice::from_ref(&other)).unwrap();
    assert_eq!(tainted, [other.clone(), cordon_taint()]);
    assert_eq!(cordon_taint(), Taint::new("cordon-key", "cordon-value", "NoSchedule"));
    assert_eq!(cordoned(&tainted), None);
    assert_eq!(uncordoned(&tainted), Some(vec![other.clone()]));
    assert_eq!(uncordoned(&[other]), None);
}

#[test]
fn drain_evicts_every_placement_on_the_cluster_with_deterministic_names() {
    let placements = [
        crp("web", json!({"placementType": "PickN", "numberOfClusters": 2})),
        crp("api", json!({"placementType": "PickAll"})),
        crp("fixed", json!({"placementType": "PickFixed", "clusterNames": ["b"]})),
        crp("elsewhere", json!({"placementType": "PickAll"})),
    ];
    let bindings = [
        crb("web", "b", "Bound"),
        crb("api", "b", "Scheduled"),
        crb("fixed", "b", "Bound"),
        crb("elsewhere", "c", "Bound"),
        crb("ghost", "b", "Bound"),
    ];
    let plan = plan_drain("b", &[], &placements, &bindings, &[]);
    assert_eq!(plan.taints, Some(vec![cordon_taint()]));
    let names: Vec<&str> = plan.create.iter().map(|e| e.metadata.name.as_str()).collect();
    assert_eq!(names, ["drain-eviction-api-b", "drain-eviction-web-b"]);
    let spec = fleet_api::eviction::eviction_spec_of(&plan.create[1]);
    assert_eq!((spec.placement_name.as_str(), spec.cluster_name.as_str()), ("web", "b"));
    let mut created = plan.create[1].clone();
    fleet_api::typed::prepare(&mut created).unwrap();
    let skipped: Vec<&str> = plan.skipped.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(skipped, ["fixed", "ghost"]);
    assert_eq!(plan_drain("b", &[cordon_taint()], &placements, &bindings, &[]).taints, None);
}

#[test]
fn drain_again_waits_for_pending_and_retries_final_evictions() {
    let placements = [crp("web", json!({"placementType": "PickAll"})), crp("api", json!({"placementType": "PickAll"}))];
    let bindings = [crb("web", "b", "Bound"), crb("api", "b", "Bound")];
    let existing =
        [with_status(drain_eviction("web", "b"), None), with_status(drain_eviction("api", "b"), Some(false))];
    let plan = plan_drain("b", &[cordon_taint()], &placements, &bindings, &existing);
    assert_eq!(plan.waiting, ["drain-eviction-web-b"]);
    assert_eq!(plan.delete_first, ["drain-eviction-api-b"]);
    assert_eq!(plan.create.len(), 1);
}

#[test]
fn drain_outcomes_and_long_names() {
    assert_eq!(drain_outcome(&with_status(drain_eviction("web", "b"), None)), DrainOutcome::Pending);
    assert_eq!(drain_outcome(&with_status(drain_eviction("web", "b"), Some(true))), DrainOutcome::Executed);
    assert_eq!(
        drain_outcome(&with_status(drain_eviction("web", "b"), Some(false))),
        DrainOutcome::Blocked("why".into())
    );
    let mut invalid = drain_eviction("web", "b");
    let status = EvictionStatus {
        conditions: vec![Condition::new(VALID, false, "ClusterResourcePlacementEvictionInvalid", "gone")],
    };
    set_eviction_status(&mut invalid, &status);
    assert_eq!(drain_outcome(&invalid), DrainOutcome::Invalid("gone".into()));
    let long = drain_eviction_name(&"p".repeat(200), &"c".repeat(100));
    assert!(long.len() <= 253 && long.starts_with("drain-eviction-"), "{long}");
    assert_eq!(long, drain_eviction_name(&"p".repeat(200), &"c".repeat(100)), "deterministic");
    assert!(fleet_api::names::dns1123_subdomain_error(&long).is_none());
}

#[test]
fn ev_8_only_cluster_resource_placements_are_evicted_whatever_their_strategy() {
    let mut external = crp("web", json!({"placementType": "PickAll"}));
    external.rest.get_mut("spec").unwrap()["strategy"] = json!({"type": "External"});
    let mut namespaced = crb("web", "b", "Bound");
    namespaced.kind = "ResourceBinding".into();
    namespaced.metadata.namespace = Some("team".into());
    let plan = plan_drain("b", &[], std::slice::from_ref(&external), &[namespaced], &[]);
    assert!(plan.create.is_empty(), "a ResourcePlacement's binding is not evicted");
    let plan = plan_drain("b", &[], &[external], &[crb("web", "b", "Bound")], &[]);
    assert_eq!(plan.create.len(), 1, "an External placement is evicted like any other");
}
