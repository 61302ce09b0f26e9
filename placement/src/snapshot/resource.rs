//! Resource snapshot groups: splitting the selection into snapshot objects
//! and planning the group changes.

use std::collections::BTreeMap;

use fleet_api::envelope::{envelope_type, NUMBER_OF_ENVELOPED_OBJECT_ANNOTATION};
use fleet_api::placement::spec_of;
use fleet_api::snapshot::{
    resource_snapshot_name, resource_sub_snapshot_name, snapshot_kinds, ResourceSnapshotSpec, IS_LATEST_LABEL,
    NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION, RESOURCE_HASH_ANNOTATION, RESOURCE_INDEX_LABEL, SUBINDEX_ANNOTATION,
};
use fleet_api::typed::encode;
use fleet_api::Object;
use serde_json::Value;

use super::{new_labels, new_snapshot, resource_hash, revision_history_limit, Indexed, SnapshotChange};
use crate::snapshot::MAX_SNAPSHOT_BYTES;

/// Splits resources into consecutive chunks whose serialized size (compact
/// JSON plus one separator byte per object) stays within `limit`, greedily
/// and in order; an object larger than `limit` goes alone. No resources make
/// one empty chunk, so a group always has a first snapshot.
pub fn split_resources(resources: &[Object], limit: usize) -> Vec<Vec<Value>> {
    let mut chunks: Vec<Vec<Value>> = vec![Vec::new()];
    let mut size = 0usize;
    for object in resources {
        let value = encode(object);
        let len = serde_json::to_vec(&value).map_or(0, |b| b.len()).saturating_add(1);
        let current_empty = chunks.last().is_none_or(Vec::is_empty);
        if !current_empty && size.saturating_add(len) > limit {
            chunks.push(Vec::new());
            size = 0;
        }
        size = size.saturating_add(len);
        if let Some(last) = chunks.last_mut() {
            last.push(value);
        }
    }
    chunks
}

/// The hash of a group whose members are all present, `None` if the group
/// is incomplete or unreadable (then it is replaced rather than trusted).
fn complete_group_hash(members: &[&Object]) -> Option<String> {
    let first = members.iter().find(|o| !o.metadata.annotations.contains_key(SUBINDEX_ANNOTATION))?;
    let count: usize = first.metadata.annotations.get(NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION)?.parse().ok()?;
    let mut subs: Vec<usize> = members
        .iter()
        .filter_map(|o| o.metadata.annotations.get(SUBINDEX_ANNOTATION))
        .filter_map(|s| s.parse().ok())
        .collect();
    subs.sort_unstable();
    let expected: Vec<usize> = (1..count).collect();
    (members.len() == count && subs == expected)
        .then(|| first.metadata.annotations.get(RESOURCE_HASH_ANNOTATION).cloned())
        .flatten()
}

/// The names of group `index`'s snapshots when it has `count` of them.
fn group_names(placement: &str, index: u64, count: usize) -> Vec<String> {
    let mut names = vec![resource_snapshot_name(placement, index)];
    names.extend((1..count).map(|sub| resource_sub_snapshot_name(placement, index, sub)));
    names
}

/// Changes that bring a placement's resource snapshots up to date with `selected`. `existing` = all resource
/// snapshots of this placement (any order).
///
/// A new group (index latest + 1, or 0) is made only when the hash of
/// `selected` differs from the latest complete group's; the old latest is
/// then relabelled not-latest, and groups beyond `revisionHistoryLimit`
/// (counting the new one) are deleted oldest first.
pub fn plan_resource_snapshots(placement: &Object, existing: &[Object], selected: &[Object]) -> Vec<SnapshotChange> {
    let name = placement.metadata.name.as_str();
    let indexed = Indexed::new(existing, RESOURCE_INDEX_LABEL, Some(name));
    let limit = revision_history_limit(&spec_of(placement));
    let hash = resource_hash(selected);
    if let Some(latest) = indexed.latest {
        if complete_group_hash(indexed.latest_members()).as_deref() == Some(hash.as_str()) {
            return indexed.finish(latest, Vec::new(), limit, &|_| {});
        }
    }
    let chunks = split_resources(selected, MAX_SNAPSHOT_BYTES);
    let envelopes = selected.iter().filter(|o| envelope_type(o).is_some()).count();
    let count = chunks.len();
    let index = indexed.next_index(existing, |i| group_names(name, i, count));
    let (kind, _) = snapshot_kinds(&placement.kind);
    let creates = chunks
        .into_iter()
        .enumerate()
        .map(|(sub, chunk)| {
            let mut annotations = BTreeMap::from([(RESOURCE_HASH_ANNOTATION.to_string(), hash.clone())]);
            let mut labels = new_labels(placement, RESOURCE_INDEX_LABEL, index);
            let object_name = if sub == 0 {
                annotations.insert(NUMBER_OF_RESOURCE_SNAPSHOTS_ANNOTATION.into(), count.to_string());
                annotations.insert(NUMBER_OF_ENVELOPED_OBJECT_ANNOTATION.into(), envelopes.to_string());
                resource_snapshot_name(name, index)
            } else {
                annotations.insert(SUBINDEX_ANNOTATION.into(), sub.to_string());
                labels.remove(IS_LATEST_LABEL);
                resource_sub_snapshot_name(name, index, sub)
            };
            let spec = encode(&ResourceSnapshotSpec { selected_resources: chunk });
            new_snapshot(placement, kind, object_name, labels, annotations, spec)
        })
        .collect();
    indexed.finish(index, creates, limit, &|_| {})
}

/// The latest resource snapshot group's index (the highest index labelled
/// latest, else the highest readable index), for the controller to record
/// and roll out.
pub fn latest_resource_index(existing: &[Object]) -> Option<u64> {
    Indexed::new(existing, RESOURCE_INDEX_LABEL, None).latest
}
