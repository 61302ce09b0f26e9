//! Resource and policy snapshots (docs/spec/placement.md "Snapshots"): their content,
//! hashes, splitting and names, and the changes ([`SnapshotChange`]) that keep
//! a placement's snapshots current. The snapshot controller reads the
//! placement and its snapshots, calls [`plan_resource_snapshots`] /
//! [`plan_policy_snapshots`] and writes the changes as one batch.
//!
//! Decisions beyond the spec's wording:
//! - hashes are computed over canonical JSON (object keys sorted at every
//!   level by this module, whatever map type `serde_json` was built with), so
//!   they never depend on field order;
//! - [`resource_hash`] is independent of the order of its input: the selection
//!   is a set, and a reordering must not make a new snapshot;
//! - [`policy_hash`] hashes the *defaulted* policy, so a stored placement
//!   whose defaults were filled in later does not reschedule;
//! - a snapshot whose index label is missing or unreadable (or whose
//!   parent label names another placement) is left alone: never latest,
//!   never updated, never pruned; new names step over it if it squats one;
//! - the latest group is the highest index labelled latest, else the highest
//!   index; the latest group is never pruned; an incomplete latest resource
//!   group (members missing) is replaced by a new one;
//! - changes come creates first, then updates, then deletes, so a reader
//!   between non-atomic writes always finds a latest snapshot.

use std::collections::BTreeMap;

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::placement::{apply_defaults, PlacementPolicy, PlacementSpec, DEFAULT_REVISION_HISTORY_LIMIT};
use fleet_api::snapshot::{IS_LATEST_LABEL, PARENT_PLACEMENT_LABEL};
use fleet_api::typed::encode;
use fleet_api::{Object, ObjectMeta, OwnerReference};
use serde_json::Value;
use sha2::{Digest, Sha256};

mod policy;
mod resource;
#[cfg(test)]
mod tests_policy;
#[cfg(test)]
mod tests_resource;

pub use policy::{latest_policy_snapshot, plan_policy_snapshots};
pub use resource::{latest_resource_index, plan_resource_snapshots, split_resources};

/// Most bytes of selected resources in one snapshot object before splitting (~800 KB).
pub const MAX_SNAPSHOT_BYTES: usize = 800 * 1024;

/// One change the snapshot controller must make.
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotChange {
    /// A new snapshot (no resourceVersion).
    Create(Object),
    /// The full object as it should be; its `metadata.resourceVersion` is the
    /// one read, the write's optimistic-concurrency precondition.
    Update(Object),
    /// A snapshot beyond the revision history, with the resourceVersion read.
    Delete {
        /// The snapshot's kind.
        kind: String,
        /// Its namespace (ResourcePlacement snapshots only).
        namespace: Option<String>,
        /// Its name.
        name: String,
        /// The resourceVersion read (precondition).
        resource_version: String,
    },
}

/// Writes `value` as compact JSON with object keys sorted at every level.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, inner)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push(':');
                write_canonical(inner, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, inner) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(inner, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&serde_json::to_string(scalar).unwrap_or_default()),
    }
}

/// The canonical JSON text of a value (keys sorted, compact).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

pub(crate) fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// sha256 (hex) of the resources' canonical JSON: tells whether the selection
/// changed since the latest resource snapshot. Independent of the order of
/// `resources` (each object's canonical JSON is sorted before hashing), so
/// callers may pass [`crate::selection::select_resources`] output or any
/// permutation of it.
pub fn resource_hash(resources: &[Object]) -> String {
    let mut texts: Vec<String> = resources.iter().map(|o| canonical_json(&encode(o))).collect();
    texts.sort();
    sha256_hex(&format!("[{}]", texts.join(",")))
}

/// Hex sha256 of the policy with numberOfClusters cleared (so scaling does not make a new policy snapshot).
/// None policy hashes like the default. The policy is defaulted first, so a
/// written default and an omitted one hash alike.
pub fn policy_hash(policy: Option<&PlacementPolicy>) -> String {
    let mut spec = PlacementSpec { policy: Some(policy.cloned().unwrap_or_default()), ..Default::default() };
    apply_defaults(&mut spec);
    let mut normalized = spec.policy.unwrap_or_default();
    normalized.number_of_clusters = None;
    sha256_hex(&canonical_json(&encode(&normalized)))
}

/// How many snapshot groups (of each sort) a placement keeps, from
/// `spec.revisionHistoryLimit` (default 10, at least 1).
pub fn revision_history_limit(spec: &PlacementSpec) -> usize {
    let limit = spec.revision_history_limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT).max(1);
    usize::try_from(limit).unwrap_or(usize::MAX)
}

/// A placement's snapshots of one sort, grouped by the index in `label`.
struct Indexed<'a> {
    /// Readable snapshots by index (a resource group may have several).
    groups: BTreeMap<u64, Vec<&'a Object>>,
    /// The latest group: the highest index labelled latest, else the highest.
    latest: Option<u64>,
}

impl<'a> Indexed<'a> {
    /// Groups `existing` by `label`; `parent` (when given) excludes snapshots
    /// whose parent label names another placement.
    fn new(existing: &'a [Object], label: &str, parent: Option<&str>) -> Indexed<'a> {
        let mut groups: BTreeMap<u64, Vec<&Object>> = BTreeMap::new();
        for object in existing {
            let own = match (parent, object.metadata.labels.get(PARENT_PLACEMENT_LABEL)) {
                (Some(p), Some(l)) => p == l,
                _ => true,
            };
            if let (true, Some(index)) = (own, fleet_api::snapshot::index_of(object, label)) {
                groups.entry(index).or_default().push(object);
            }
        }
        let labelled = groups.iter().filter(|(_, members)| members.iter().any(|o| fleet_api::snapshot::is_latest(o)));
        let latest = labelled.map(|(i, _)| *i).next_back().or_else(|| groups.keys().next_back().copied());
        Indexed { groups, latest }
    }

    /// The latest group's members.
    fn latest_members(&self) -> &[&'a Object] {
        self.latest.and_then(|i| self.groups.get(&i)).map_or(&[], Vec::as_slice)
    }

    /// The first index above every readable one whose `names` are all free
    /// among `existing` (garbage may squat a name).
    fn next_index(&self, existing: &[Object], names: impl Fn(u64) -> Vec<String>) -> u64 {
        let mut index = self.groups.keys().next_back().map_or(0, |i| i.saturating_add(1));
        while names(index).iter().any(|n| existing.iter().any(|o| o.metadata.name == *n)) && index < u64::MAX {
            index += 1;
        }
        index
    }

    /// The changes after deciding `latest` (an existing index, or the index
    /// of `creates`): creates, then label fixes and `patch_latest` on the
    /// latest group, then deletes beyond `limit` groups (oldest first, never
    /// the latest).
    fn finish(
        &self,
        latest: u64,
        creates: Vec<Object>,
        limit: usize,
        patch_latest: &dyn Fn(&mut Object),
    ) -> Vec<SnapshotChange> {
        let total = self.groups.len() + usize::from(!creates.is_empty());
        let excess = total.saturating_sub(limit);
        let pruned: Vec<u64> = self.groups.keys().copied().filter(|i| *i != latest).take(excess).collect();
        let mut changes: Vec<SnapshotChange> = creates.into_iter().map(SnapshotChange::Create).collect();
        let mut deletes = Vec::new();
        for (index, members) in &self.groups {
            for object in members {
                if pruned.contains(index) {
                    deletes.push(SnapshotChange::Delete {
                        kind: object.kind.clone(),
                        namespace: object.metadata.namespace.clone(),
                        name: object.metadata.name.clone(),
                        resource_version: object.metadata.resource_version.clone(),
                    });
                    continue;
                }
                let mut updated = (*object).clone();
                let is_latest = *index == latest;
                // A group's first snapshot speaks for it: sub-indexed ones
                // carry no latest label, as in KubeFleet, so listing by the
                // label finds one snapshot per placement.
                if object.metadata.annotations.contains_key(fleet_api::snapshot::SUBINDEX_ANNOTATION) {
                    updated.metadata.labels.remove(IS_LATEST_LABEL);
                } else {
                    updated.metadata.labels.insert(IS_LATEST_LABEL.into(), is_latest.to_string());
                }
                if is_latest {
                    patch_latest(&mut updated);
                }
                if updated != **object {
                    changes.push(SnapshotChange::Update(updated));
                }
            }
        }
        changes.extend(deletes);
        changes
    }
}

/// A new snapshot of `placement`: kind, name, labels, annotations and spec
/// as given; namespace (ResourcePlacement only) and the controlling owner
/// reference, so deleting the placement deletes its snapshots.
fn new_snapshot(
    placement: &Object,
    kind: &str,
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    spec: Value,
) -> Object {
    let namespace = if placement.kind == fleet_api::placement::RESOURCE_PLACEMENT {
        placement.metadata.namespace.clone()
    } else {
        None
    };
    let owner = OwnerReference::controller_of(placement);
    let metadata =
        ObjectMeta { name, namespace, labels, annotations, owner_references: vec![owner], ..Default::default() };
    let mut rest = serde_json::Map::new();
    rest.insert("spec".into(), spec);
    Object { api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"), kind: kind.to_string(), metadata, rest }
}

/// The labels every new snapshot of `placement` carries, with its index.
fn new_labels(placement: &Object, index_label: &str, index: u64) -> BTreeMap<String, String> {
    BTreeMap::from([
        (PARENT_PLACEMENT_LABEL.to_string(), placement.metadata.name.clone()),
        (index_label.to_string(), index.to_string()),
        (IS_LATEST_LABEL.to_string(), "true".to_string()),
    ])
}
