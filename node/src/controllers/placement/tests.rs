//! A placement's whole reconcile on a real store without Raft: each step
//! [`next_step`] decides is committed as the controllers would, until it is
//! done. What the hub then holds is checked, in milliseconds.

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use serde_json::json;

use super::*;
use crate::controllers::testkit::{list, member, report_works_available, settle_placement, Fixture, NOW};

const UNIX_NOW: i64 = 1_795_773_600;

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
    let clusters = [member("east", json!({"env": "prod"})), member("west", json!({"env": "dev"}))]
        .iter()
        .map(ClusterInfo::from_member)
        .collect();
    (fixture, clusters, ObjectKey::of(&placement))
}

#[test]
fn a_placement_is_snapshotted_scheduled_and_rendered_into_works_for_its_clusters() {
    let (mut fixture, clusters, key) = hub();
    let steps = settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);
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
    assert_eq!(settle_placement(&mut fixture, &clusters, &key, UNIX_NOW), 0);
}

#[test]
fn a_changed_resource_gets_a_new_snapshot_and_updated_works() {
    let (mut fixture, clusters, key) = hub();
    settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);
    report_works_available(&mut fixture);
    settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);
    let (cfg, _) = fixture.store.get(&ObjectKey::new("", "ConfigMap", "app", "cfg")).unwrap();
    let mut cfg = cfg.unwrap();
    cfg.rest.insert("data".into(), json!({"k": "changed"}));
    fixture.apply(vec![fleet_statemachine::Op::Update { object: cfg }], NOW);

    assert!(settle_placement(&mut fixture, &clusters, &key, UNIX_NOW) > 0);
    let resources = list(&fixture, FLEET_PLACEMENT_GROUP, "ClusterResourceSnapshot");
    assert_eq!(resources.len(), 2, "the old snapshot is kept beside the new one");
    let works = list(&fixture, FLEET_PLACEMENT_GROUP, "Work");
    let manifests = works[0].rest["spec"]["workload"]["manifests"].to_string();
    assert!(manifests.contains("changed"), "{manifests}");
}

#[test]
fn a_deleted_placement_held_by_a_finalizer_is_withdrawn_from_its_clusters() {
    let (mut fixture, clusters, key) = hub();
    let (placement, _) = fixture.store.get(&key).unwrap();
    let mut placement = placement.unwrap();
    placement.metadata.finalizers.push("example.com/hold".into());
    fixture.apply(vec![fleet_statemachine::Op::Update { object: placement }], NOW);
    settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);
    assert_eq!(list(&fixture, FLEET_PLACEMENT_GROUP, "Work").len(), 1);

    fixture.apply(vec![fleet_statemachine::Op::Delete { key: key.clone(), resource_version: None }], NOW);
    assert!(settle_placement(&mut fixture, &clusters, &key, UNIX_NOW) > 0);
    for kind in ["ClusterResourceBinding", "ClusterResourceSnapshot", "ClusterSchedulingPolicySnapshot", "Work"] {
        assert!(list(&fixture, FLEET_PLACEMENT_GROUP, kind).is_empty(), "{kind} left");
    }
    let (held, _) = fixture.store.get(&key).unwrap();
    assert!(held.is_some_and(|p| p.metadata.deletion_timestamp.is_some()), "the finalizer still holds it");
}

#[test]
fn a_placement_made_again_under_its_name_ignores_the_old_ones_leftovers() {
    let (mut fixture, clusters, key) = hub();
    settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);
    // The old placement's binding waits for its member (a finalizer) when
    // the placement goes.
    let mut old_binding = list(&fixture, FLEET_PLACEMENT_GROUP, "ClusterResourceBinding").remove(0);
    old_binding.metadata.finalizers.push("example.com/member-cleanup".into());
    fixture.apply(vec![fleet_statemachine::Op::Update { object: old_binding.clone() }], NOW);
    let (placement, _) = fixture.store.get(&key).unwrap();
    let placement = placement.unwrap();
    fixture.apply(vec![fleet_statemachine::Op::Delete { key: key.clone(), resource_version: None }], NOW);
    assert!(fixture.store.get(&key).unwrap().0.is_none());
    // Its Work is gone from the member; the binding's finalizer is not yet removed.
    let works = list(&fixture, FLEET_PLACEMENT_GROUP, "Work");
    let deletes =
        works.iter().map(|w| fleet_statemachine::Op::Delete { key: ObjectKey::of(w), resource_version: None });
    fixture.apply(deletes.collect(), NOW);

    let mut again = serde_json::to_value(&placement).unwrap();
    again["metadata"] = json!({"name": "web", "generation": 1});
    let again = fixture.create(again, NOW);
    assert_ne!(again.metadata.uid, placement.metadata.uid);
    settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);

    let bindings = list(&fixture, FLEET_PLACEMENT_GROUP, "ClusterResourceBinding");
    let owner = |b: &Object| b.metadata.owner_references.first().map(|o| o.uid.clone()).unwrap_or_default();
    let new: Vec<&Object> = bindings.iter().filter(|b| owner(b) == again.metadata.uid).collect();
    assert_eq!(new.len(), 1, "the new placement binds east itself: {bindings:?}");
    assert_eq!(new[0].rest["spec"]["targetCluster"], "east");
    assert!(new[0].metadata.deletion_timestamp.is_none());
    let old = bindings.iter().find(|b| b.metadata.name == old_binding.metadata.name).expect("the old binding waits");
    assert!(old.metadata.deletion_timestamp.is_some(), "still going, untouched by the new placement");
}

#[test]
fn a_placement_that_is_gone_is_done() {
    let (fixture, clusters, _) = hub();
    let key = ObjectKey::new(FLEET_PLACEMENT_GROUP, "ClusterResourcePlacement", "", "nothing");
    let pacer = StatusPacer::default();
    let next = next_step(&fixture.store, &clusters, &OverrideIndex::default(), &pacer, &key, NOW, UNIX_NOW).unwrap();
    assert!(matches!(next, Next::Done { recheck_after: None }));
}

/// The latest policy snapshot's `targetClusters`, as (cluster, selected).
fn decisions(fixture: &Fixture) -> Vec<(String, bool)> {
    let snapshots = list(fixture, FLEET_PLACEMENT_GROUP, "ClusterSchedulingPolicySnapshot");
    let latest = snapshots.iter().find(|s| fleet_api::snapshot::is_latest(s)).expect("a latest policy snapshot");
    let mut out: Vec<(String, bool)> = fleet_api::snapshot::policy_status_of(latest)
        .target_clusters
        .iter()
        .map(|d| (d.cluster_name.clone(), d.selected))
        .collect();
    out.sort();
    out
}

#[test]
fn a_pick_n_keeps_its_last_picking_report_until_the_placement_changes() {
    let (mut fixture, mut clusters, key) = hub();
    clusters.push(ClusterInfo::from_member(&member("north", json!({"env": "prod"}))));
    let (placement, _) = fixture.store.get(&key).unwrap();
    let mut placement = placement.unwrap();
    let pick_n = |n: i64| json!({"placementType": "PickN", "numberOfClusters": n});
    placement.rest["spec"]["policy"] = pick_n(2);
    fixture.apply(vec![fleet_statemachine::Op::Update { object: placement }], NOW);
    settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);
    let picked = decisions(&fixture);
    assert_eq!(picked.iter().filter(|d| d.1).count(), 2);
    assert_eq!(picked.len(), 3, "the pass that picked reports the cluster it left out: {picked:?}");
    // Passes with nothing to pick keep that report.
    assert_eq!(settle_placement(&mut fixture, &clusters, &key, UNIX_NOW), 0);

    // Scaled in: as KubeFleet's scheduler rerun for the change, the
    // decisions are the bindings' alone.
    let (placement, _) = fixture.store.get(&key).unwrap();
    let mut placement = placement.unwrap();
    placement.rest["spec"]["policy"] = pick_n(1);
    fixture.apply(vec![fleet_statemachine::Op::Update { object: placement }], NOW);
    settle_placement(&mut fixture, &clusters, &key, UNIX_NOW);
    let after = decisions(&fixture);
    assert_eq!(after.len(), 1, "{after:?}");
    assert!(after[0].1);
}
