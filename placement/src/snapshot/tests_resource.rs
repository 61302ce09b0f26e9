use fleet_api::snapshot::{
    resource_spec_of, CLUSTER_RESOURCE_SNAPSHOT, NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION, RESOURCE_HASH_ANNOTATION,
    RESOURCE_INDEX_LABEL, RESOURCE_SNAPSHOT, SUBINDEX_ANNOTATION,
};
use proptest::prelude::*;
use serde_json::json;

use super::*;

pub(super) fn obj(v: Value) -> Object {
    serde_json::from_value(v).unwrap()
}

pub(super) fn crp(spec: Value) -> Object {
    obj(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web", "uid": "uid-1", "generation": 1, "resourceVersion": "5"}, "spec": spec}))
}

fn cm(name: &str, data: &str) -> Object {
    obj(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app"}, "data": {"k": data}}),
    )
}

/// A store the changes are applied to, checking preconditions.
#[derive(Default)]
pub(super) struct Store {
    pub objects: Vec<Object>,
    next_rv: u64,
}

impl Store {
    pub fn apply(&mut self, changes: Vec<SnapshotChange>) {
        for change in changes {
            self.next_rv += 1;
            match change {
                SnapshotChange::Create(mut o) => {
                    assert!(o.metadata.resource_version.is_empty());
                    assert!(self.objects.iter().all(|e| e.metadata.name != o.metadata.name), "name taken");
                    o.metadata.set_resource_version(self.next_rv);
                    self.objects.push(o);
                }
                SnapshotChange::Update(mut o) => {
                    let at = self.objects.iter().position(|e| e.metadata.name == o.metadata.name).unwrap();
                    assert_eq!(self.objects[at].metadata.resource_version, o.metadata.resource_version);
                    o.metadata.set_resource_version(self.next_rv);
                    self.objects[at] = o;
                }
                SnapshotChange::Delete { name, resource_version, .. } => {
                    let at = self.objects.iter().position(|e| e.metadata.name == name).unwrap();
                    assert_eq!(self.objects[at].metadata.resource_version, resource_version);
                    self.objects.remove(at);
                }
            }
        }
    }

    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.objects.iter().map(|o| o.metadata.name.clone()).collect();
        names.sort();
        names
    }

    pub fn get(&self, name: &str) -> &Object {
        self.objects.iter().find(|o| o.metadata.name == name).unwrap()
    }

    pub fn latest(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .objects
            .iter()
            .filter(|o| fleet_api::snapshot::is_latest(o))
            .map(|o| o.metadata.name.clone())
            .collect();
        names.sort();
        names
    }
}

#[test]
fn first_snapshot_is_index_zero_with_labels_annotations_and_owner() {
    let placement = crp(json!({}));
    let selected = vec![cm("a", "1")];
    let changes = plan_resource_snapshots(&placement, &[], &selected);
    let [SnapshotChange::Create(s)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(s.metadata.name, "web-0-snapshot");
    assert_eq!(s.kind, CLUSTER_RESOURCE_SNAPSHOT);
    assert_eq!(s.api_version, "placement.kubernetes-fleet.io/v1beta1");
    assert_eq!(s.metadata.namespace, None);
    assert_eq!(s.metadata.labels[PARENT_PLACEMENT_LABEL], "web");
    assert_eq!(s.metadata.labels[RESOURCE_INDEX_LABEL], "0");
    assert_eq!(s.metadata.labels[IS_LATEST_LABEL], "true");
    assert_eq!(s.metadata.annotations[RESOURCE_HASH_ANNOTATION], resource_hash(&selected));
    assert_eq!(s.metadata.annotations[NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION], "1");
    let owner = &s.metadata.owner_references[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("ClusterResourcePlacement", "web", "uid-1")
    );
    assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
    assert_eq!(resource_spec_of(s).selected_resources, vec![encode(&selected[0])]);
}

#[test]
fn resource_placement_snapshots_are_namespaced_resource_snapshots() {
    let mut placement = crp(json!({}));
    placement.kind = "ResourcePlacement".into();
    placement.metadata.namespace = Some("app".into());
    let changes = plan_resource_snapshots(&placement, &[], &[]);
    let [SnapshotChange::Create(s)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!(s.kind, RESOURCE_SNAPSHOT);
    assert_eq!(s.metadata.namespace.as_deref(), Some("app"));
    assert!(resource_spec_of(s).selected_resources.is_empty());
}

#[test]
fn hash_is_stable_and_changes_with_content() {
    let a = vec![cm("a", "1"), cm("b", "2")];
    assert_eq!(resource_hash(&a), resource_hash(&a.clone()));
    assert_eq!(resource_hash(&a).len(), 64);
    assert_ne!(resource_hash(&a), resource_hash(&[cm("a", "1"), cm("b", "3")]));
    assert_ne!(resource_hash(&a), resource_hash(&a[..1]));
    assert_ne!(resource_hash(&[]), resource_hash(&a));
}

#[test]
fn canonical_json_sorts_keys_at_every_level() {
    let mut inner = serde_json::Map::new();
    inner.insert("z".into(), json!(1));
    inner.insert("a".into(), json!([{"y": 1, "b": 2}]));
    assert_eq!(canonical_json(&Value::Object(inner)), r#"{"a":[{"b":2,"y":1}],"z":1}"#);
}

#[test]
fn same_content_makes_no_change() {
    let placement = crp(json!({}));
    let selected = vec![cm("a", "1")];
    let mut store = Store::default();
    store.apply(plan_resource_snapshots(&placement, &[], &selected));
    assert!(plan_resource_snapshots(&placement, &store.objects, &selected).is_empty());
    // Also when the selection comes in another order.
    let two = vec![cm("a", "1"), cm("b", "2")];
    store.apply(plan_resource_snapshots(&placement, &store.objects, &two));
    let reversed: Vec<Object> = two.iter().rev().cloned().collect();
    assert!(plan_resource_snapshots(&placement, &store.objects, &reversed).is_empty());
}

#[test]
fn new_content_makes_a_new_group_and_the_old_one_not_latest() {
    let placement = crp(json!({}));
    let mut store = Store::default();
    store.apply(plan_resource_snapshots(&placement, &[], &[cm("a", "1")]));
    let changes = plan_resource_snapshots(&placement, &store.objects, &[cm("a", "2")]);
    assert!(matches!(&changes[0], SnapshotChange::Create(o) if o.metadata.name == "web-1-snapshot"));
    assert!(matches!(&changes[1], SnapshotChange::Update(o) if o.metadata.name == "web-0-snapshot"));
    assert_eq!(changes.len(), 2);
    store.apply(changes);
    assert_eq!(store.latest(), ["web-1-snapshot"]);
    assert_eq!(store.get("web-0-snapshot").metadata.labels[IS_LATEST_LABEL], "false");
    assert_eq!(latest_resource_index(&store.objects), Some(1));
}

#[test]
fn content_over_the_limit_is_split_into_sub_snapshots() {
    let placement = crp(json!({}));
    let big = "x".repeat(300 * 1024);
    let selected: Vec<Object> = (0..5).map(|i| cm(&format!("c{i}"), &big)).collect();
    let mut store = Store::default();
    store.apply(plan_resource_snapshots(&placement, &[], &selected));
    // 300 KB each, 800 KB per snapshot: 2 + 2 + 1.
    assert_eq!(store.names(), ["web-0-1", "web-0-2", "web-0-snapshot"]);
    let first = store.get("web-0-snapshot");
    assert_eq!(first.metadata.annotations[NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION], "3");
    assert_eq!(store.latest(), ["web-0-snapshot"], "only a group's first snapshot is labelled latest");
    for (sub, name) in [(1, "web-0-1"), (2, "web-0-2")] {
        let s = store.get(name);
        assert_eq!(s.metadata.annotations[SUBINDEX_ANNOTATION], sub.to_string());
        assert_eq!(s.metadata.labels[RESOURCE_INDEX_LABEL], "0");
        assert_eq!(s.metadata.labels[PARENT_PLACEMENT_LABEL], "web");
        assert!(!s.metadata.annotations.contains_key(NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION));
        assert!(!s.metadata.labels.contains_key(IS_LATEST_LABEL));
    }
    let all: Vec<Value> = ["web-0-snapshot", "web-0-1", "web-0-2"]
        .iter()
        .flat_map(|n| resource_spec_of(store.get(n)).selected_resources)
        .collect();
    assert_eq!(all, selected.iter().map(encode).collect::<Vec<_>>());
    // Same content again: nothing to do; a change marks every member not latest.
    assert!(plan_resource_snapshots(&placement, &store.objects, &selected).is_empty());
    store.apply(plan_resource_snapshots(&placement, &store.objects, &selected[..1]));
    assert_eq!(store.latest(), ["web-1-snapshot"]);
}

#[test]
fn an_incomplete_latest_group_is_replaced() {
    let placement = crp(json!({}));
    let big = "x".repeat(500 * 1024);
    let selected: Vec<Object> = (0..2).map(|i| cm(&format!("c{i}"), &big)).collect();
    let mut store = Store::default();
    store.apply(plan_resource_snapshots(&placement, &[], &selected));
    store.objects.retain(|o| o.metadata.name != "web-0-1");
    let changes = plan_resource_snapshots(&placement, &store.objects, &selected);
    assert!(matches!(&changes[0], SnapshotChange::Create(o) if o.metadata.name == "web-1-snapshot"));
}

#[test]
fn groups_beyond_revision_history_limit_are_pruned_oldest_first() {
    let placement = crp(json!({"revisionHistoryLimit": 3}));
    let mut store = Store::default();
    for i in 0..5 {
        store.apply(plan_resource_snapshots(&placement, &store.objects, &[cm("a", &i.to_string())]));
    }
    assert_eq!(store.names(), ["web-2-snapshot", "web-3-snapshot", "web-4-snapshot"]);
    assert_eq!(store.latest(), ["web-4-snapshot"]);
    // Lowering the limit prunes without a new snapshot.
    let lower = crp(json!({"revisionHistoryLimit": 1}));
    store.apply(plan_resource_snapshots(&lower, &store.objects, &[cm("a", "4")]));
    assert_eq!(store.names(), ["web-4-snapshot"]);
}

#[test]
fn default_revision_history_limit_is_ten() {
    let placement = crp(json!({}));
    let mut store = Store::default();
    for i in 0..12 {
        store.apply(plan_resource_snapshots(&placement, &store.objects, &[cm("a", &i.to_string())]));
    }
    assert_eq!(store.objects.len(), 10);
    assert_eq!(latest_resource_index(&store.objects), Some(11));
}

#[test]
fn garbage_snapshots_are_ignored_and_squatted_names_are_stepped_over() {
    let placement = crp(json!({}));
    let selected = vec![cm("a", "1")];
    let mut store = Store::default();
    store.apply(plan_resource_snapshots(&placement, &[], &selected));
    // A snapshot with no labels squatting the next name, and one with a bad
    // index labelled latest.
    let squatter =
        obj(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceSnapshot",
        "metadata": {"name": "web-1-snapshot", "resourceVersion": "100"}}));
    let bad = obj(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceSnapshot",
        "metadata": {"name": "junk", "resourceVersion": "101", "labels": {RESOURCE_INDEX_LABEL: "x", IS_LATEST_LABEL: "true"}}}));
    store.objects.extend([squatter, bad]);
    assert_eq!(latest_resource_index(&store.objects), Some(0));
    let changes = plan_resource_snapshots(&placement, &store.objects, &[cm("a", "2")]);
    // The squatted name is stepped over; garbage is neither updated nor deleted.
    assert!(matches!(&changes[0], SnapshotChange::Create(o) if o.metadata.name == "web-2-snapshot"));
    assert!(changes.iter().all(
        |c| !matches!(c, SnapshotChange::Update(o) if o.metadata.name == "junk" || o.metadata.name == "web-1-snapshot")
    ));
    store.apply(changes);
    assert_eq!(latest_resource_index(&store.objects), Some(2));
}

#[test]
fn of_several_groups_labelled_latest_the_highest_wins() {
    let placement = crp(json!({}));
    let mut store = Store::default();
    store.apply(plan_resource_snapshots(&placement, &[], &[cm("a", "1")]));
    store.apply(plan_resource_snapshots(&placement, &store.objects, &[cm("a", "2")]));
    let at = store.objects.iter().position(|o| o.metadata.name == "web-0-snapshot").unwrap();
    store.objects[at].metadata.labels.insert(IS_LATEST_LABEL.into(), "true".into());
    assert_eq!(latest_resource_index(&store.objects), Some(1));
    let changes = plan_resource_snapshots(&placement, &store.objects, &[cm("a", "2")]);
    let [SnapshotChange::Update(o)] = changes.as_slice() else { panic!("{changes:?}") };
    assert_eq!((o.metadata.name.as_str(), o.metadata.labels[IS_LATEST_LABEL].as_str()), ("web-0-snapshot", "false"));
    assert_eq!(o.metadata.resource_version, store.objects[at].metadata.resource_version);
}

fn arb_objects() -> impl Strategy<Value = Vec<Object>> {
    proptest::collection::vec(("[a-z]{1,6}", 0usize..400), 0..30).prop_map(|items| {
        items.into_iter().enumerate().map(|(i, (name, len))| cm(&format!("{name}{i}"), &"d".repeat(len))).collect()
    })
}

proptest! {
    #[test]
    fn hash_is_independent_of_input_order(objects in arb_objects(), seed in any::<u64>()) {
        let mut shuffled = objects.clone();
        // A deterministic permutation from the seed.
        let n = shuffled.len();
        for i in (1..n).rev() {
            let j = ((seed.wrapping_mul(6364136223846793005).wrapping_add(i as u64)) % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        prop_assert_eq!(resource_hash(&objects), resource_hash(&shuffled));
    }

    #[test]
    fn splitting_keeps_every_object_in_order_within_the_limit(objects in arb_objects(), limit in 50usize..2000) {
        let chunks = split_resources(&objects, limit);
        prop_assert!(!chunks.is_empty());
        let flat: Vec<Value> = chunks.iter().flatten().cloned().collect();
        prop_assert_eq!(flat, objects.iter().map(encode).collect::<Vec<_>>());
        for chunk in &chunks {
            let size: usize = chunk.iter().map(|v| serde_json::to_vec(v).unwrap().len() + 1).sum();
            prop_assert!(size <= limit || chunk.len() == 1, "chunk of {} objects is {} bytes", chunk.len(), size);
        }
        if objects.is_empty() {
            prop_assert_eq!(chunks.len(), 1);
        } else {
            prop_assert!(chunks.iter().all(|c| !c.is_empty()));
        }
    }
}
