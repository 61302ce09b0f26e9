//! Work rendering (docs/spec/rollout.md "Work"): the Works a Bound binding needs in
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

mod envelopes;
mod render;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_render;

pub use envelopes::envelope_work_name;
pub use render::{desired_works, desired_works_prepared, ClusterOverrides, PreparedGroup, RenderError};

use std::collections::{BTreeMap, BTreeSet};

use fleet_api::placement::RESOURCE_PLACEMENT;
use fleet_api::Object;

/// Label: the binding a Work was rendered for.
pub const PARENT_BINDING_LABEL: &str = "kubernetes-fleet.io/parent-resource-binding";
/// Label: the resource snapshot index a Work was rendered from.
pub const PARENT_RESOURCE_INDEX_LABEL: &str = "kubernetes-fleet.io/parent-resource-snapshot-index";
pub use fleet_api::work::PARENT_NAMESPACE_LABEL;
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

/// The prefix of a placement's Work names: `<placement>` (RP:
/// `<namespace>.<placement>`).
pub fn work_prefix(placement: &Object) -> String {
    match (&placement.metadata.namespace, placement.kind == RESOURCE_PLACEMENT) {
        (Some(ns), true) => format!("{ns}.{}", placement.metadata.name),
        _ => placement.metadata.name.clone(),
    }
}

/// Work name for part `sub` (0 = first snapshot): `<placement>-work` (RP:
/// `<namespace>.<placement>-work`); `sub > 0`: `<...>-work-<sub>`.
pub fn work_name(placement: &Object, sub: usize) -> String {
    let base = format!("{}-work", work_prefix(placement));
    if sub == 0 {
        base
    } else {
        format!("{base}-{sub}")
    }
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
