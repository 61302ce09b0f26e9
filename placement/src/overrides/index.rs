//! The override snapshots of the store, decoded once and indexed for the
//! placements' passes. The hub's controllers keep one up to date from the
//! watch feed, so a pass reads the snapshots that concern its placement
//! (latest ones whose override names it or no placement: OV-2) and finds
//! the ones a binding records by name, instead of listing and decoding
//! every snapshot of the store.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::overrides::{CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, RESOURCE_OVERRIDE_SNAPSHOT};
use fleet_api::snapshot::IS_LATEST_LABEL;
use fleet_api::{Object, ObjectKey};

use super::{NamespacedName, OverrideSnapshot};

/// One indexed snapshot: decoded, and whether it is labelled latest.
#[derive(Debug, Clone)]
struct Entry {
    snapshot: Arc<OverrideSnapshot>,
    latest: bool,
}

impl Entry {
    /// The placement name its override is limited to (`None`: any).
    fn reference(&self) -> Option<String> {
        self.snapshot.spec.placement.as_ref().map(|p| p.name.clone())
    }
}

/// Every CRO and RO snapshot, by key, with the latest ones indexed by the
/// placement name their override references.
#[derive(Debug, Clone, Default)]
pub struct OverrideIndex {
    all: BTreeMap<ObjectKey, Entry>,
    /// The latest snapshots' keys by referenced placement name (`None`:
    /// the override names no placement, so it may concern every one).
    latest: BTreeMap<Option<String>, BTreeSet<ObjectKey>>,
}

impl OverrideIndex {
    /// An index of `objects` (other kinds are skipped).
    pub fn from_objects<'o>(objects: impl IntoIterator<Item = &'o Object>) -> OverrideIndex {
        let mut index = OverrideIndex::default();
        for object in objects {
            index.upsert(object);
        }
        index
    }

    /// Records a created or changed snapshot (other kinds are ignored).
    pub fn upsert(&mut self, object: &Object) {
        let Some(decoded) = OverrideSnapshot::from_object(object) else { return };
        let key = ObjectKey::of(object);
        self.remove(&key);
        let latest = object.metadata.labels.get(IS_LATEST_LABEL).map(String::as_str) == Some("true");
        let entry = Entry { snapshot: Arc::new(decoded), latest };
        if latest {
            self.latest.entry(entry.reference()).or_default().insert(key.clone());
        }
        self.all.insert(key, entry);
    }

    /// Forgets a deleted snapshot.
    pub fn remove(&mut self, key: &ObjectKey) {
        let Some(old) = self.all.remove(key) else { return };
        if !old.latest {
            return;
        }
        let reference = old.reference();
        if let Some(keys) = self.latest.get_mut(&reference) {
            keys.remove(key);
            if keys.is_empty() {
                self.latest.remove(&reference);
            }
        }
    }

    /// How many snapshots it holds.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// The latest snapshots that may concern the placement named
    /// `placement`: those whose override names it or names none, in key
    /// order. [`super::applicable`] decides which of them apply.
    pub fn latest_for(&self, placement: &str) -> Vec<OverrideSnapshot> {
        let any = self.latest.get(&None).into_iter().flatten();
        let named = self.latest.get(&Some(placement.to_string())).into_iter().flatten();
        let keys: BTreeSet<&ObjectKey> = any.chain(named).collect();
        keys.into_iter().filter_map(|k| self.all.get(k)).map(|e| OverrideSnapshot::clone(&e.snapshot)).collect()
    }

    /// The snapshots a binding records (CRO snapshot names, RO snapshots
    /// by namespace and name) in that order, or `None` if one of them is
    /// not stored.
    pub fn recorded(&self, cluster: &[String], resource: &[NamespacedName]) -> Option<Vec<OverrideSnapshot>> {
        let find = |kind: &str, namespace: &str, name: &str| {
            let key = ObjectKey::new(FLEET_PLACEMENT_GROUP, kind, namespace, name);
            self.all.get(&key).map(|e| OverrideSnapshot::clone(&e.snapshot))
        };
        let cro = cluster.iter().map(|name| find(CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, "", name));
        let ro = resource.iter().map(|r| find(RESOURCE_OVERRIDE_SNAPSHOT, &r.namespace, &r.name));
        cro.chain(ro).collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// A CRO (or RO, in `ns`) snapshot `o<n>-<i>` naming placement
    /// `p<placement>` (or none), labelled latest or not.
    fn snapshot(ro: bool, n: u8, i: u8, placement: Option<u8>, latest: bool) -> Object {
        let kind = if ro { RESOURCE_OVERRIDE_SNAPSHOT } else { CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT };
        let mut spec = json!({"policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []}}]}});
        if let Some(p) = placement {
            spec["placement"] = json!({"name": format!("p{p}")});
        }
        let mut metadata = json!({"name": format!("o{n}-{i}"),
            "labels": {IS_LATEST_LABEL: latest.to_string()}});
        if ro {
            metadata["namespace"] = json!("ns");
        }
        serde_json::from_value(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
            "metadata": metadata, "spec": {"overrideSpec": spec}}))
        .unwrap()
    }

    /// The old path: decode every stored snapshot, keep the latest that
    /// may concern `placement`.
    fn full_list(stored: &BTreeMap<ObjectKey, Object>, placement: &str) -> Vec<OverrideSnapshot> {
        stored
            .values()
            .filter(|o| o.metadata.labels.get(IS_LATEST_LABEL).map(String::as_str) == Some("true"))
            .filter_map(OverrideSnapshot::from_object)
            .filter(|s| s.spec.placement.as_ref().is_none_or(|p| p.name == placement))
            .collect()
    }

    proptest! {
        /// After any sequence of snapshot writes (relabelled, re-pointed)
        /// and deletes, what the index gives each placement is what a full
        /// list of the stored snapshots gives, and every stored snapshot
        /// (only those) is found by name.
        #[test]
        fn the_index_agrees_with_a_full_list(
            steps in prop::collection::vec(
                (any::<bool>(), 0u8..3, 0u8..2, prop::option::of(0u8..3), any::<bool>(), any::<bool>()), 1..40)
        ) {
            let mut index = OverrideIndex::default();
            let mut stored: BTreeMap<ObjectKey, Object> = BTreeMap::new();
            for (ro, n, i, placement, latest, delete) in steps {
                let object = snapshot(ro, n, i, placement, latest);
                let key = ObjectKey::of(&object);
                if delete {
                    stored.remove(&key);
                    index.remove(&key);
                } else {
                    stored.insert(key, object.clone());
                    index.upsert(&object);
                }
                for p in ["p0", "p1", "p2", "p3"] {
                    prop_assert_eq!(index.latest_for(p), full_list(&stored, p));
                }
                prop_assert_eq!(index.len(), stored.len());
                for n in 0..3u8 {
                    for i in 0..2u8 {
                        let name = format!("o{n}-{i}");
                        let ns = NamespacedName { namespace: "ns".into(), name: name.clone() };
                        for ro in [false, true] {
                            let found = if ro { index.recorded(&[], std::slice::from_ref(&ns)) } else { index.recorded(std::slice::from_ref(&name), &[]) };
                            let want = stored.get(&ObjectKey::of(&snapshot(ro, n, i, None, false)))
                                .and_then(OverrideSnapshot::from_object);
                            prop_assert_eq!(found, want.map(|s| vec![s]));
                        }
                    }
                }
            }
            let rebuilt = OverrideIndex::from_objects(stored.values());
            prop_assert_eq!(rebuilt.latest_for("p0"), index.latest_for("p0"));
            prop_assert_eq!(rebuilt.latest, index.latest);
        }
    }
}
