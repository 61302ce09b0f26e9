//! Work rendering (rollout.md "Work"): the Works a Bound binding needs in
//! its cluster's hub namespace, and the changes that make the stored Works
//! match.
//!
//! The work generator calls [`desired_works`] only for Bound bindings
//! (Scheduled ones have no Work; Unscheduled ones keep theirs until the
//! rollout deletes the binding, which cascades through the owner reference),
//! then [`plan_works`] against the binding's stored Works.
//!
//! Decisions beyond the spec's wording:
//! - Work part numbers are the snapshots' subindex annotations (the first
//!   snapshot is part 0), so a part keeps its Work name across groups;
//!   snapshots of the group are ordered first, then by subindex;
//! - the binding's `spec.applyStrategy`, when set and readable, wins over the
//!   placement's `strategy.applyStrategy`; with neither, the Work has none
//!   (the agent's defaults apply);
//! - `deleteOptions.propagationPolicy` is always written (`Delete` unless the
//!   placement says `Abandon`);
//! - an update keeps the stored Work's other labels, annotations, status and
//!   server fields, replacing only Fleet's labels, the owner references and
//!   the spec; nothing is written when those already match.

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use fleet_api::binding::spec_of as binding_spec_of;
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use fleet_api::placement::{spec_of as placement_spec_of, RESOURCE_PLACEMENT};
use fleet_api::snapshot::{resource_spec_of, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL, SUBINDEX_ANNOTATION};
use fleet_api::typed::{decode, encode};
use fleet_api::work::{ApplyStrategy, DeleteOptions, WorkSpec, Workload};
use fleet_api::{Object, ObjectMeta, OwnerReference};

/// Label: the binding a Work was rendered for.
pub const PARENT_BINDING_LABEL: &str = "kubernetes-fleet.io/parent-resource-binding";
/// Label: the resource snapshot index a Work was rendered from.
pub const PARENT_RESOURCE_INDEX_LABEL: &str = "kubernetes-fleet.io/parent-resource-snapshot-index";
/// Label: the namespace of the ResourcePlacement a Work belongs to (RP only).
pub const PARENT_NAMESPACE_LABEL: &str = "kubernetes-fleet.io/parent-placement-namespace";
/// Kind of a Work.
pub const WORK_KIND: &str = "Work";

/// One change the work generator must make.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkChange {
    /// A new Work (no resourceVersion).
    Create(Object),
    /// The full Work as it should be, carrying the resourceVersion read (the
    /// write's precondition).
    Update(Object),
    /// A Work no longer needed.
    Delete {
        /// Its namespace (`fleet-member-<cluster>`).
        namespace: String,
        /// Its name.
        name: String,
        /// The resourceVersion read (precondition).
        resource_version: String,
    },
}

/// Work name for part `sub` (0 = first snapshot): `<placement>-work` (RP:
/// `<namespace>.<placement>-work`); `sub > 0`: `<...>-work-<sub>`.
pub fn work_name(placement: &Object, sub: usize) -> String {
    let base = match (&placement.metadata.namespace, placement.kind == RESOURCE_PLACEMENT) {
        (Some(ns), true) => format!("{ns}.{}-work", placement.metadata.name),
        _ => format!("{}-work", placement.metadata.name),
    };
    if sub == 0 {
        base
    } else {
        format!("{base}-{sub}")
    }
}

/// The part number of a snapshot in its group (0 for the first).
fn part_of(snapshot: &Object) -> usize {
    snapshot.metadata.annotations.get(SUBINDEX_ANNOTATION).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// The apply strategy a Work carries: the binding's if set and readable,
/// else the placement's.
fn apply_strategy(placement: &Object, binding: &Object) -> Option<ApplyStrategy> {
    let from_binding = binding_spec_of(binding).apply_strategy.and_then(|v| decode::<ApplyStrategy>(&v, "").ok());
    from_binding.or_else(|| placement_spec_of(placement).strategy.and_then(|s| s.apply_strategy))
}

/// The Works a Bound binding needs: one per snapshot of its bound `group`
/// (first snapshot, then sub-snapshots by subindex), in namespace
/// `fleet-member-<cluster>`, labelled with the placement
/// (`kubernetes-fleet.io/parent-CRP`), [`PARENT_BINDING_LABEL`],
/// [`PARENT_RESOURCE_INDEX_LABEL`] (and [`PARENT_NAMESPACE_LABEL`] for an
/// RP), controlled by the binding (so deleting the binding deletes them),
/// with the snapshot's selected resources as manifests, the apply strategy
/// and the delete options.
pub fn desired_works(placement: &Object, binding: &Object, group: &[Object]) -> Vec<Object> {
    let cluster = binding_spec_of(binding).target_cluster;
    let namespace = member_namespace(&cluster);
    let strategy = apply_strategy(placement, binding);
    let propagation = placement_spec_of(placement)
        .strategy
        .and_then(|s| s.delete_strategy)
        .and_then(|d| d.propagation_policy)
        .unwrap_or_else(|| "Delete".to_string());
    let owner = OwnerReference::controller_of(binding);
    let mut parts: Vec<&Object> = group.iter().collect();
    parts.sort_by_key(|s| part_of(s));
    parts
        .into_iter()
        .map(|snapshot| {
            let mut labels = BTreeMap::from([
                (PARENT_PLACEMENT_LABEL.to_string(), placement.metadata.name.clone()),
                (PARENT_BINDING_LABEL.to_string(), binding.metadata.name.clone()),
            ]);
            if let Some(index) = snapshot.metadata.labels.get(RESOURCE_INDEX_LABEL) {
                labels.insert(PARENT_RESOURCE_INDEX_LABEL.to_string(), index.clone());
            }
            if let (true, Some(ns)) = (placement.kind == RESOURCE_PLACEMENT, &placement.metadata.namespace) {
                labels.insert(PARENT_NAMESPACE_LABEL.to_string(), ns.clone());
            }
            let spec = WorkSpec {
                workload: Workload { manifests: resource_spec_of(snapshot).selected_resources },
                apply_strategy: strategy.clone(),
                delete_options: Some(DeleteOptions { propagation_policy: Some(propagation.clone()) }),
            };
            let metadata = ObjectMeta {
                name: work_name(placement, part_of(snapshot)),
                namespace: Some(namespace.clone()),
                labels,
                owner_references: vec![owner.clone()],
                ..Default::default()
            };
            let mut rest = serde_json::Map::new();
            rest.insert("spec".into(), encode(&spec));
            Object { api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"), kind: WORK_KIND.into(), metadata, rest }
        })
        .collect()
}

/// Changes turning `existing` (this binding's Works as stored) into
/// `desired`: creates for missing names, updates where Fleet's labels, the
/// owner references or the spec differ (keeping the stored Work's uid,
/// resourceVersion, status and other metadata), deletes for stored Works no
/// longer desired (e.g. fewer sub-snapshots now). Creates, then updates,
/// then deletes, each by name.
pub fn plan_works(desired: &[Object], existing: &[Object]) -> Vec<WorkChange> {
    let by_name: BTreeMap<&str, &Object> = existing.iter().map(|w| (w.metadata.name.as_str(), w)).collect();
    let wanted: BTreeSet<&str> = desired.iter().map(|w| w.metadata.name.as_str()).collect();
    let mut sorted: Vec<&Object> = desired.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let (mut creates, mut updates) = (Vec::new(), Vec::new());
    for want in sorted {
        match by_name.get(want.metadata.name.as_str()) {
            None => creates.push(WorkChange::Create(want.clone())),
            Some(stored) => {
                let mut updated = (*stored).clone();
                updated.metadata.labels.extend(want.metadata.labels.clone());
                updated.metadata.owner_references = want.metadata.owner_references.clone();
                if let Some(spec) = want.spec() {
                    updated.rest.insert("spec".into(), spec.clone());
                }
                if updated != **stored {
                    updates.push(WorkChange::Update(updated));
                }
            }
        }
    }
    let deletes = by_name.iter().filter(|(name, _)| !wanted.contains(*name)).map(|(_, w)| WorkChange::Delete {
        namespace: w.metadata.namespace.clone().unwrap_or_default(),
        name: w.metadata.name.clone(),
        resource_version: w.metadata.resource_version.clone(),
    });
    creates.into_iter().chain(updates).chain(deletes).collect()
}
