//! One pass's compact view of the clusters: the label values (and OCM claim
//! values) and property values the pass's plugins read, pulled out of every
//! [`ClusterInfo`] once.
//!
//! Why: each plugin used to look labels and properties up in every cluster's
//! own maps, so a pass over 10,000 clusters walked scattered heap memory
//! several times (filters, scores, topology domains) and spent most of its
//! time comparing strings. Plugins now declare, when they are built, the
//! label keys, label values and property names they read (a
//! [`Vocabulary`]); the pass reads each cluster's maps once into flat
//! arrays ([`ClusterTable`]) and every later stage compares small integers.
//!
//! Label values are interned per key: a value a selector names gets its id
//! from the vocabulary, any other value is [`OTHER_VALUE`] — unless the key
//! is *open* (a topology key), where every distinct value gets its own id.

use std::collections::HashMap;

use fleet_api::quantity::Quantity;

use super::plugins::FnvBuild;
use crate::cluster::ClusterInfo;

/// A label value id: the cluster has no label with that key.
pub const NO_VALUE: u32 = u32::MAX;
/// A label value id: the cluster has the key, with a value no selector names
/// (only on keys that are not open).
pub const OTHER_VALUE: u32 = u32::MAX - 1;

/// One label (or claim) key a pass reads.
#[derive(Debug, Clone, Default)]
struct KeySlot<'a> {
    key: &'a str,
    /// The key names a cluster claim (OCM), not a label.
    claim: bool,
    /// Every distinct value gets an id (topology keys), not only named ones.
    open: bool,
    /// The values selectors name, by id.
    values: Vec<&'a str>,
}

/// The label keys, label values and property names a pass's plugins read,
/// each with the slot (or id) the plugins refer to it by.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary<'a> {
    keys: Vec<KeySlot<'a>>,
    properties: Vec<&'a str>,
}

impl<'a> Vocabulary<'a> {
    /// The slot of a label key (added on first use).
    pub fn label_key(&mut self, key: &'a str) -> usize {
        self.key_slot(key, false)
    }

    /// The slot of a cluster claim's name (OCM claim selectors and claim
    /// topology keys), read from [`ClusterInfo::claims`] like a label.
    pub fn claim_key(&mut self, key: &'a str) -> usize {
        self.key_slot(key, true)
    }

    fn key_slot(&mut self, key: &'a str, claim: bool) -> usize {
        if let Some(slot) = self.keys.iter().position(|k| k.key == key && k.claim == claim) {
            return slot;
        }
        self.keys.push(KeySlot { key, claim, ..KeySlot::default() });
        self.keys.len() - 1
    }

    /// The id of a label value under a key's slot (added on first use).
    pub fn label_value(&mut self, slot: usize, value: &'a str) -> u32 {
        let values = &mut self.keys[slot].values;
        let id = values.iter().position(|v| *v == value).unwrap_or_else(|| {
            values.push(value);
            values.len() - 1
        });
        id as u32
    }

    /// Makes every distinct value of a key's slot get its own id.
    pub fn open(&mut self, slot: usize) {
        self.keys[slot].open = true;
    }

    /// The slot of a property name (added on first use).
    pub fn property(&mut self, name: &'a str) -> usize {
        if let Some(slot) = self.properties.iter().position(|p| *p == name) {
            return slot;
        }
        self.properties.push(name);
        self.properties.len() - 1
    }
}

/// The clusters of a pass in name order, the first of two with the same
/// name kept: the order every pass's table is built in, so input order
/// never matters.
pub fn name_sorted(clusters: &[ClusterInfo]) -> Vec<&ClusterInfo> {
    let mut sorted: Vec<&ClusterInfo> = clusters.iter().collect();
    // Stores list clusters by name already: check (one pass) before sorting.
    if !sorted.is_sorted_by(|a, b| a.name < b.name) {
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        sorted.dedup_by(|a, b| a.name == b.name);
    }
    sorted
}

/// The id of `value` among a key slot's `known` values; a value not known
/// yet gets a new id on an open slot and [`OTHER_VALUE`] on the others.
#[inline(always)]
fn intern<'c>(known: &mut HashMap<&'c str, u32, FnvBuild>, open: bool, value: &'c str) -> u32 {
    match known.get(value) {
        Some(&id) => id,
        None if open => {
            let id = known.len() as u32;
            known.insert(value, id);
            id
        }
        None => OTHER_VALUE,
    }
}

/// The pass's clusters (name-sorted) and, per cluster, the value id of every
/// vocabulary key and the value of every vocabulary property.
#[derive(Debug)]
pub struct ClusterTable<'c> {
    clusters: Vec<&'c ClusterInfo>,
    /// `clusters.len() × key slots`, row-major.
    labels: Vec<u32>,
    /// `clusters.len() × property slots`, row-major.
    properties: Vec<Option<Quantity>>,
    key_slots: usize,
    property_slots: usize,
    /// Per key slot: how many value ids were handed out.
    value_counts: Vec<usize>,
}

impl<'c> ClusterTable<'c> {
    /// Reads each cluster's labels and properties once. `clusters` must be
    /// the pass's name-sorted, deduplicated list.
    pub fn build(vocabulary: &Vocabulary, clusters: Vec<&'c ClusterInfo>) -> ClusterTable<'c> {
        let key_slots = vocabulary.keys.len();
        let property_slots = vocabulary.properties.len();
        let mut ids: Vec<HashMap<&str, u32, FnvBuild>> = vocabulary
            .keys
            .iter()
            .map(|k| k.values.iter().enumerate().map(|(id, v)| (*v, id as u32)).collect())
            .collect();
        let mut labels = vec![NO_VALUE; clusters.len() * key_slots];
        let mut properties = vec![None; clusters.len() * property_slots];
        // Claim slots apart (claims are OCM's): a label named like a claim
        // (or the other way round) never fills the other's slot.
        let claim_slots: Vec<(usize, &str)> =
            vocabulary.keys.iter().enumerate().filter(|(_, k)| k.claim).map(|(i, k)| (i, k.key)).collect();
        for (row, cluster) in clusters.iter().enumerate() {
            if key_slots > 0 {
                let row_labels = &mut labels[row * key_slots..(row + 1) * key_slots];
                for (key, value) in cluster.labels.iter() {
                    // Lengths first: most keys are told apart without reading their bytes.
                    let found =
                        vocabulary.keys.iter().position(|k| k.key.len() == key.len() && k.key == key && !k.claim);
                    if let Some(slot) = found {
                        row_labels[slot] = intern(&mut ids[slot], vocabulary.keys[slot].open, value);
                    }
                }
                if !claim_slots.is_empty() {
                    for (key, value) in cluster.claims.iter() {
                        if let Some(&(slot, _)) = claim_slots.iter().find(|(_, k)| *k == key) {
                            row_labels[slot] = intern(&mut ids[slot], vocabulary.keys[slot].open, value);
                        }
                    }
                }
            }
            if property_slots > 0 {
                let row_properties = &mut properties[row * property_slots..(row + 1) * property_slots];
                for (name, value) in cluster.properties.iter() {
                    if let Some(slot) = vocabulary.properties.iter().position(|p| p.len() == name.len() && *p == name) {
                        row_properties[slot] = Some(value);
                    }
                }
            }
        }
        let value_counts = ids.iter().map(HashMap::len).collect();
        ClusterTable { clusters, labels, properties, key_slots, property_slots, value_counts }
    }

    /// The clusters, name-sorted.
    pub fn clusters(&self) -> &[&'c ClusterInfo] {
        &self.clusters
    }

    /// One cluster's full view.
    pub fn info(&self, cluster: usize) -> &'c ClusterInfo {
        self.clusters[cluster]
    }

    /// How many clusters the pass has.
    pub fn len(&self) -> usize {
        self.clusters.len()
    }

    /// Whether the pass has no clusters.
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
    }

    /// The id of a cluster's value for a key slot ([`NO_VALUE`], [`OTHER_VALUE`] or a vocabulary id).
    pub fn label(&self, cluster: usize, slot: usize) -> u32 {
        debug_assert!(slot < self.key_slots, "label slot {slot} is not in this pass's vocabulary");
        self.labels[cluster * self.key_slots + slot]
    }

    /// A cluster's value of a property slot.
    pub fn property(&self, cluster: usize, slot: usize) -> Option<Quantity> {
        debug_assert!(slot < self.property_slots, "property slot {slot} is not in this pass's vocabulary");
        self.properties[cluster * self.property_slots + slot]
    }

    /// How many distinct value ids a key slot has (ids are `0..count`).
    pub fn value_count(&self, slot: usize) -> usize {
        self.value_counts[slot]
    }
}
