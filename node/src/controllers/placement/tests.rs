//! A placement's whole reconcile on a real store without Raft: each step
//! [`next_step`] decides is committed as the controllers would, until it is
//! done. What the hub then holds is checked, in milliseconds.

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use fleet_statemachine::ListQuery;
use serde_json::json;

use super::*;
use crate::controllers::testkit::Fixture;

const NOW: &str = "2026-11-27T10:00:00Z";
const UNIX_NOW: i64 = 1_795_773_600;

fn member(name: &str, env: &str) -> Object {
    let condition = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": "R", "message": "", "lastTransitionTime": NOW,
               "observedGeneration": 1})
    };
    serde_json::from_value(json!({
        "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
        "metadata": {"name": name, "labels": {"env": env}, "generation": 1},
        "spec": {"identity": {"name": "a", "kind": "ServiceAccount", "namespace": "fleet-system"}},
        "status": {"conditions": [condition("Joined"), condition("Healthy")]}
    }))
    .unwrap()
}

/// A hub with namespace `app` (and a ConfigMap in it), two member clusters'
/// namespaces, and a placement of `app` to the clusters labelled `env=prod`.
fn hub() -> (Fixture, Vec<ClusterInfo>, ObjectKey) {
    let mut fixture = Fixture::new();
    for ns in ["app".to_string(), member_namespace("east"), member_namespace("west")] {
        fixture.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}), NOW);
    }
    fixture.create(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "app"},
               "data": {"k": "v"}}),
        NOW,
    );
    let placement = fixture.create(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web", "generation": 1},
        "spec": {
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {"placementType": "PickAll", "affinity": {"clusterAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                    {"labelSelector": {"matchLabels": {"env": "prod"}}}
                ]}}}}
        }}),
        NOW,
    );
    let clusters = [member("east", "prod"), member("west", "dev")].iter().map(ClusterInfo::from_member).collect();
    (fixture, clusters, ObjectKey::of(&placement))
}

/// Commits each step until the placement is done; the steps taken.
fn reconcile(fixture: &mut Fixture, clusters: &[ClusterInfo], key: &ObjectKey) -> usize {
    let overrides = OverrideIndex::default();
    for taken in 0..50 {
        // A new pacer each time: pacing is tested on its own.
        let pacer = StatusPacer::default();
        let next = next_step(&fixture.store, clusters, &overrides, &pacer, key, NOW, UNIX_NOW).unwrap();
        let steps = match next {
            Next::Write(step) => vec![*step],
            Next::WriteEach(steps) => steps,
            Next::Done { .. } => return taken,
        };
        for step in steps {
            fixture.apply(step.ops, NOW);
        }
    }
    panic!("the placement did not settle in 50 steps");
}

fn list(fixture: &Fixture, group: &str, kind: &str) -> Vec<Object> {
    let query = ListQuery { group: group.into(), kind: kind.into(), ..Default::default() };
    fixture.store.list(&query).unwrap().0
}

#[test]
fn a_placement_is_snapshotted_scheduled_and_rendered_into_works_for_its_clusters() {
    let (mut fixture, clusters, key) = hub();
    let steps = reconcile(&mut fixture, &clusters, &key);
    assert!(steps > 0);

    let policies = list(&fixture, FLEET_PLACEMENT_GROUP, "ClusterSchedulingPolicySnapshot");
    let resources = list(&fixture, FLEET_PLACEMENT_GROUP, "ClusterResourceSnapshot");
    assert_eq!((policies.len(), resources.len()), (1, 1));
    let bindings = list(&fixture, FLEET_PLACEMENT_GROUP, "ClusterResourceBinding");
    let bound: Vec<String> =
        bindings.iter().map(|b| b.rest["spec"]["targetCluster"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(bound, ["east"], "only the cluster the affinity selects");
    let works = list(&fixture, FLEET_PLACEMENT_GROUP, "Work");
    assert_eq!(works.len(), 1);
    assert_eq!(works[0].metadata.namespace.as_deref(), Some(member_namespace("east").as_str()));
    let manifests = works[0].rest["spec"]["workload"]["manifests"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = manifests.iter().filter_map(|m| m["kind"].as_str()).collect();
    assert_eq!(kinds, ["Namespace", "ConfigMap"]);

    // Settled: looking again changes nothing.
    assert_eq!(reconcile(&mut fixture, &clusters, &key), 0);
}

/// Reports every Work applied and available at its generation, as a
/// member agent would.
fn agents_report_available(fixture: &mut Fixture) {
    for mut work in list(fixture, FLEET_PLACEMENT_GROUP, "Work") {
        let condition = |type_: &str| {
            json!({"type": type_, "status": "True", "reason": "R", "message": "", "lastTransitionTime": NOW,
                   "observedGeneration": work.metadata.generation})
        };
        let conditions = json!([condition("Applied"), condition("Available")]);
        work.rest.insert("status".into(), json!({"conditions": conditions}));
        fixture.apply(vec![fleet_statemachine::Op::UpdateStatus { object: work }], NOW);
    }
}

#[test]
fn a_changed_resource_gets_a_new_snapshot_and_updated_works() {
    let (mut fixture, clusters, key) = hub();
    reconcile(&mut fixture, &clusters, &key);
    agents_report_available(&mut fixture);
    reconcile(&mut fixture, &clusters, &key);
    let (cfg, _) = fixture.store.get(&ObjectKey::new("", "ConfigMap", "app", "cfg")).unwrap();
    let mut cfg = cfg.unwrap();
    cfg.rest.insert("data".into(), json!({"k": "changed"}));
    fixture.apply(vec![fleet_statemachine::Op::Update { object: cfg }], NOW);

    assert!(reconcile(&mut fixture, &clusters, &key) > 0);
    let resources = list(&fixture, FLEET_PLACEMENT_GROUP, "ClusterResourceSnapshot");
    assert_eq!(resources.len(), 2, "the old snapshot is kept beside the new one");
    let works = list(&fixture, FLEET_PLACEMENT_GROUP, "Work");
    let manifests = works[0].rest["spec"]["workload"]["manifests"].to_string();
    assert!(manifests.contains("changed"), "{manifests}");
}

#[test]
fn a_placement_that_is_gone_is_done() {
    let (fixture, clusters, _) = hub();
    let key = ObjectKey::new(FLEET_PLACEMENT_GROUP, "ClusterResourcePlacement", "", "nothing");
    let pacer = StatusPacer::default();
    let next = next_step(&fixture.store, &clusters, &OverrideIndex::default(), &pacer, &key, NOW, UNIX_NOW).unwrap();
    assert!(matches!(next, Next::Done { recheck_after: None }));
}
