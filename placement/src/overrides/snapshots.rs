//! OV-3: an immutable snapshot `<override>-<index>` for each spec change of
//! an override, the latest one labelled, at most
//! [`OVERRIDE_HISTORY_LIMIT`] kept, owned by the override (deleting it
//! deletes them).

use std::collections::BTreeMap;

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::overrides::{
    self as overrides_api, OverrideSnapshotSpec, OVERRIDE_HISTORY_LIMIT, OVERRIDE_INDEX_LABEL, PARENT_OVERRIDE_LABEL,
};
use fleet_api::snapshot::IS_LATEST_LABEL;
use fleet_api::typed::encode;
use fleet_api::{Object, ObjectMeta, OwnerReference};

use crate::snapshot::{canonical_json, sha256_hex, SnapshotChange};

/// Hex sha256 of an override's spec (canonical JSON).
pub fn override_hash(spec: &overrides_api::OverrideSpec) -> String {
    sha256_hex(&canonical_json(&encode(spec)))
}

/// A snapshot's index, if it is one of `name`'s.
fn index_of(snapshot: &Object, name: &str) -> Option<u64> {
    if snapshot.metadata.labels.get(PARENT_OVERRIDE_LABEL).map(String::as_str) != Some(name) {
        return None;
    }
    snapshot.metadata.labels.get(OVERRIDE_INDEX_LABEL)?.parse().ok()
}

/// The latest of an override's snapshots (highest index), if any.
pub fn latest_override_snapshot<'a>(name: &str, snapshots: &'a [Object]) -> Option<&'a Object> {
    snapshots.iter().filter_map(|s| Some((index_of(s, name)?, s))).max_by_key(|(i, _)| *i).map(|(_, s)| s)
}

/// The changes that keep `override_object`'s snapshots current: a new
/// snapshot when the spec's hash differs from the latest's, the previous
/// latest relabelled, and the oldest beyond the history limit deleted.
/// Snapshots of other overrides in `existing` are ignored.
pub fn plan_override_snapshots(override_object: &Object, existing: &[Object]) -> Vec<SnapshotChange> {
    let name = &override_object.metadata.name;
    let spec = overrides_api::spec_of(override_object);
    let hash = override_hash(&spec);
    let mine: BTreeMap<u64, &Object> = existing.iter().filter_map(|s| Some((index_of(s, name)?, s))).collect();
    let latest = mine.iter().next_back();
    let mut changes = Vec::new();
    let up_to_date = latest.is_some_and(|(_, s)| overrides_api::snapshot_spec_of(s).override_hash == hash);
    let mut kept: Vec<u64> = mine.keys().copied().collect();
    if !up_to_date {
        let index = latest.map_or(0, |(i, _)| i + 1);
        changes.push(SnapshotChange::Create(new_snapshot(override_object, index, spec, hash)));
        kept.push(index);
    }
    let newest = kept.iter().max().copied();
    for (index, snapshot) in &mine {
        let want = if Some(*index) == newest { "true" } else { "false" };
        if snapshot.metadata.labels.get(IS_LATEST_LABEL).map(String::as_str) != Some(want) {
            let mut updated = (*snapshot).clone();
            updated.metadata.labels.insert(IS_LATEST_LABEL.into(), want.into());
            changes.push(SnapshotChange::Update(updated));
        }
    }
    kept.sort_unstable();
    let excess = kept.len().saturating_sub(OVERRIDE_HISTORY_LIMIT);
    for index in kept.into_iter().take(excess) {
        if let Some(snapshot) = mine.get(&index) {
            changes.retain(|c| !matches!(c, SnapshotChange::Update(o) if o.metadata.name == snapshot.metadata.name));
            changes.push(SnapshotChange::Delete {
                kind: snapshot.kind.clone(),
                namespace: snapshot.metadata.namespace.clone(),
                name: snapshot.metadata.name.clone(),
                resource_version: snapshot.metadata.resource_version.clone(),
            });
        }
    }
    changes
}

fn new_snapshot(owner: &Object, index: u64, spec: overrides_api::OverrideSpec, hash: String) -> Object {
    let name = &owner.metadata.name;
    let labels = BTreeMap::from([
        (PARENT_OVERRIDE_LABEL.to_string(), name.clone()),
        (OVERRIDE_INDEX_LABEL.to_string(), index.to_string()),
        (IS_LATEST_LABEL.to_string(), "true".to_string()),
    ]);
    let metadata = ObjectMeta {
        name: overrides_api::snapshot_name(name, index),
        namespace: owner.metadata.namespace.clone(),
        labels,
        owner_references: vec![OwnerReference::controller_of(owner)],
        ..Default::default()
    };
    let mut rest = serde_json::Map::new();
    rest.insert("spec".into(), encode(&OverrideSnapshotSpec { override_spec: spec, override_hash: hash }));
    Object {
        api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"),
        kind: overrides_api::snapshot_kind(&owner.kind).to_string(),
        metadata,
        rest,
    }
}
