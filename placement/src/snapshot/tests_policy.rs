use fleet_api::placement::{apply_defaults, spec_of};
use fleet_api::snapshot::{
    number_of_clusters, policy_spec_of, CLUSTER_SCHEDULING_POLICY_SNAPSHOT, NUMBER_OF_CLUSTERS_ANNOTATION,
    PLACEMENT_GENERATION_ANNOTATION, POLICY_INDEX_LABEL, SCHEDULING_POLICY_SNAPSHOT,
};
use serde_json::json;

use super::tests_resource::{crp, Store};
use super::*;

fn pick_n(n: i64) -> Value {
    json!({"policy": {"placementType": "PickN", "numberOfClusters": n,
        "affinity": {"clusterAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"env": "prod"}}}]}}}}})
}

fn with_generation(mut placement: Object, generation: i64) -> Object {
    placement.metadata.generation = generation;
    placement
}

#[test]
fn first_policy_snapshot_is_index_zero_with_policy_and_hash() {
    let placement = crp(pick_n(3));
    let changes = plan_policy_snapshots(&placement, &[]);
    let [SnapshotChange::Create(s)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(s.metadata.name, "web-0");
    assert_eq!(s.kind, CLUSTER_SCHEDULING_POLICY_SNAPSHOT);
    assert_eq!(s.metadata.labels[POLICY_INDEX_LABEL], "0");
    assert_eq!(s.metadata.labels[IS_LATEST_LABEL], "true");
    assert_eq!(s.metadata.labels[PARENT_PLACEMENT_LABEL], "web");
    assert_eq!(s.metadata.annotations[NUMBER_OF_CLUSTERS_ANNOTATION], "3");
    assert_eq!(s.metadata.annotations[PLACEMENT_GENERATION_ANNOTATION], "1");
    assert_eq!(s.metadata.owner_references[0].uid, "uid-1");
    let spec = policy_spec_of(s);
    let policy = spec_of(&placement).policy;
    assert_eq!(spec.policy, policy);
    assert_eq!(spec.policy.and_then(|p| p.number_of_clusters), Some(3));
    assert_eq!(spec.policy_hash, policy_hash(policy.as_ref()));
    assert_eq!(latest_policy_snapshot(std::slice::from_ref(s)).map(|o| o.metadata.name.as_str()), Some("web-0"));
}

#[test]
fn resource_placement_policy_snapshots_are_namespaced() {
    let mut placement = crp(json!({}));
    placement.kind = "ResourcePlacement".into();
    placement.metadata.namespace = Some("app".into());
    let changes = plan_policy_snapshots(&placement, &[]);
    let [SnapshotChange::Create(s)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(s.kind, SCHEDULING_POLICY_SNAPSHOT);
    assert_eq!(s.metadata.namespace.as_deref(), Some("app"));
    // PickAll: no number-of-clusters annotation.
    assert!(!s.metadata.annotations.contains_key(NUMBER_OF_CLUSTERS_ANNOTATION));
}

#[test]
fn unchanged_policy_makes_no_change() {
    let placement = crp(pick_n(3));
    let mut store = Store::default();
    store.apply(plan_policy_snapshots(&placement, &[]));
    assert!(plan_policy_snapshots(&placement, &store.objects).is_empty());
}

#[test]
fn policy_change_makes_a_new_snapshot_and_the_old_one_not_latest() {
    let mut store = Store::default();
    store.apply(plan_policy_snapshots(&crp(pick_n(3)), &[]));
    let changed = with_generation(crp(json!({"policy": {"placementType": "PickN", "numberOfClusters": 3}})), 2);
    let changes = plan_policy_snapshots(&changed, &store.objects);
    assert!(matches!(&changes[0], SnapshotChange::Create(o) if o.metadata.name == "web-1"));
    assert!(matches!(&changes[1], SnapshotChange::Update(o) if o.metadata.name == "web-0"));
    store.apply(changes);
    assert_eq!(store.latest(), ["web-1"]);
    assert_eq!(latest_policy_snapshot(&store.objects).map(|o| o.metadata.name.as_str()), Some("web-1"));
    assert_eq!(store.get("web-1").metadata.annotations[PLACEMENT_GENERATION_ANNOTATION], "2");
}

#[test]
fn number_of_clusters_change_updates_the_annotation_only() {
    let mut store = Store::default();
    store.apply(plan_policy_snapshots(&crp(pick_n(3)), &[]));
    let before = store.get("web-0").clone();
    let scaled = with_generation(crp(pick_n(5)), 2);
    let changes = plan_policy_snapshots(&scaled, &store.objects);
    let [SnapshotChange::Update(o)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(o.metadata.name, "web-0");
    assert_eq!(o.metadata.resource_version, before.metadata.resource_version);
    assert_eq!(number_of_clusters(o), Some(5));
    assert_eq!(o.metadata.annotations[PLACEMENT_GENERATION_ANNOTATION], "2");
    // The spec (with its numberOfClusters of 3) is immutable.
    assert_eq!(o.rest, before.rest);
    assert_eq!(policy_hash(spec_of(&scaled).policy.as_ref()), policy_spec_of(o).policy_hash);
}

#[test]
fn generation_change_alone_updates_the_generation_annotation() {
    let mut store = Store::default();
    store.apply(plan_policy_snapshots(&crp(pick_n(3)), &[]));
    let changes = plan_policy_snapshots(&with_generation(crp(pick_n(3)), 7), &store.objects);
    let [SnapshotChange::Update(o)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(o.metadata.annotations[PLACEMENT_GENERATION_ANNOTATION], "7");
    store.apply(changes.clone());
    assert!(plan_policy_snapshots(&with_generation(crp(pick_n(3)), 7), &store.objects).is_empty());
}

#[test]
fn policy_hash_ignores_number_of_clusters_and_defaults() {
    let policy = |n| spec_of(&crp(pick_n(n))).policy;
    assert_eq!(policy_hash(policy(1).as_ref()), policy_hash(policy(9).as_ref()));
    assert_eq!(policy_hash(None), policy_hash(Some(&PlacementPolicy::default())));
    let mut defaulted = PlacementSpec::default();
    apply_defaults(&mut defaulted);
    assert_eq!(policy_hash(None), policy_hash(defaulted.policy.as_ref()));
    let pick_all = spec_of(&crp(json!({"policy": {"placementType": "PickAll"}}))).policy;
    assert_ne!(policy_hash(pick_all.as_ref()), policy_hash(policy(1).as_ref()));
}

#[test]
fn policy_snapshots_beyond_revision_history_limit_are_pruned() {
    let mut store = Store::default();
    for i in 0..4 {
        let placement = crp(
            json!({"revisionHistoryLimit": 2, "policy": {"placementType": "PickFixed", "clusterNames": [format!("c{i}")]}}),
        );
        store.apply(plan_policy_snapshots(&placement, &store.objects));
    }
    assert_eq!(store.names(), ["web-2", "web-3"]);
    assert_eq!(store.latest(), ["web-3"]);
}

#[test]
fn garbage_policy_snapshots_never_panic_and_are_left_alone() {
    let garbage = tests_resource::obj(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
        "kind": "ClusterSchedulingPolicySnapshot",
        "metadata": {"name": "web-0", "resourceVersion": "3", "labels": {IS_LATEST_LABEL: "true"}},
        "spec": "not an object"}));
    assert!(latest_policy_snapshot(std::slice::from_ref(&garbage)).is_none());
    let changes = plan_policy_snapshots(&crp(pick_n(2)), &[garbage]);
    let [SnapshotChange::Create(s)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(s.metadata.name, "web-1");
}
