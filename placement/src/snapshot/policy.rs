//! Scheduling policy snapshots: one per distinct policy (ignoring
//! `numberOfClusters`), the latest one annotated with the current count and
//! placement generation.

use std::collections::BTreeMap;

use fleet_api::placement::{spec_of, PlacementPolicy, PICK_N};
use fleet_api::snapshot::{
    policy_snapshot_name, policy_spec_of, snapshot_kinds, PolicySnapshotSpec, NUMBER_OF_CLUSTERS_ANNOTATION,
    PLACEMENT_GENERATION_ANNOTATION, POLICY_INDEX_LABEL,
};
use fleet_api::typed::encode;
use fleet_api::Object;

use super::{new_labels, new_snapshot, policy_hash, revision_history_limit, Indexed, SnapshotChange};

/// The annotations a placement's latest policy snapshot must carry:
/// `number-of-clusters` (PickN with a count only) and the placement generation.
fn desired_annotations(placement: &Object, policy: Option<&PlacementPolicy>) -> BTreeMap<String, String> {
    let mut annotations =
        BTreeMap::from([(PLACEMENT_GENERATION_ANNOTATION.to_string(), placement.metadata.generation.to_string())]);
    if let Some(n) = policy.filter(|p| p.placement_type() == PICK_N).and_then(|p| p.number_of_clusters) {
        annotations.insert(NUMBER_OF_CLUSTERS_ANNOTATION.to_string(), n.to_string());
    }
    annotations
}

/// Changes that bring a placement's policy snapshots up to date with its spec.policy. `existing` = all its
/// policy snapshots.
///
/// A new snapshot only when [`policy_hash`] differs from the latest one's
/// `spec.policyHash`; otherwise the latest's `number-of-clusters` and
/// `CRP-generation` annotations follow the placement (its spec, immutable, is
/// left alone), so scaling keeps the clusters already chosen.
pub fn plan_policy_snapshots(placement: &Object, existing: &[Object]) -> Vec<SnapshotChange> {
    let name = placement.metadata.name.as_str();
    let spec = spec_of(placement);
    let policy = spec.policy.as_ref();
    let hash = policy_hash(policy);
    let indexed = Indexed::new(existing, POLICY_INDEX_LABEL, Some(name));
    let limit = revision_history_limit(&spec);
    let annotations = desired_annotations(placement, policy);
    if let Some(latest) = indexed.latest {
        if indexed.latest_members().iter().any(|o| policy_spec_of(o).policy_hash == hash) {
            let patch = |o: &mut Object| {
                o.metadata.annotations.remove(NUMBER_OF_CLUSTERS_ANNOTATION);
                o.metadata.annotations.extend(annotations.clone());
            };
            return indexed.finish(latest, Vec::new(), limit, &patch);
        }
    }
    let index = indexed.next_index(existing, |i| vec![policy_snapshot_name(name, i)]);
    let (_, kind) = snapshot_kinds(&placement.kind);
    let snapshot_spec = encode(&PolicySnapshotSpec { policy: spec.policy.clone(), policy_hash: hash });
    let create = new_snapshot(
        placement,
        kind,
        policy_snapshot_name(name, index),
        new_labels(placement, POLICY_INDEX_LABEL, index),
        annotations,
        snapshot_spec,
    );
    indexed.finish(index, vec![create], limit, &|_| {})
}

/// The latest policy snapshot (the highest index labelled latest, else the
/// highest readable index): what the scheduler schedules against.
pub fn latest_policy_snapshot(existing: &[Object]) -> Option<&Object> {
    let indexed = Indexed::new(existing, POLICY_INDEX_LABEL, None);
    indexed.latest_members().last().copied()
}
