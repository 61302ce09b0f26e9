//! A ManifestWork being deleted: it stays, with OCM's condition `Deleting`
//! (True, `WorkDeleting`, "ManifestWork is being deleted"), until its
//! objects are removed from its cluster, held by OCM's finalizer
//! [`CLEANUP_FINALIZER`], which the controller adds to every ManifestWork.
//!
//! The objects go as the agent withdraws them: each mirrored Work whose
//! objects are deleted with the work is first emptied (no manifests), so
//! its agent removes what it placed and reports the Work `Applied` at that
//! generation; then the Work is deleted. A Work that leaves its objects
//! (orphaned manifests) or writes nothing (`ReadOnly`) is deleted at once.
//! With no Work left the finalizer is removed and the store deletes the
//! ManifestWork. A cluster that is gone or leaving has nothing to wait for:
//! its Works are deleted and the finalizer removed in one step. Every step
//! is decided from the stored objects, so a new leader carries on.

use fleet_api::conditions::{find, set_condition, Condition};
use fleet_api::kinds::{FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use fleet_api::member::member_namespace;
use fleet_api::ocm::manifestwork::{self, CLEANUP_FINALIZER, CONDITION_DELETING};
use fleet_api::work::{self, CONDITION_APPLIED};
use fleet_api::{Object, ObjectKey};
use fleet_placement::ocm::delivery::{MANIFESTWORK_LABEL, WORK_NAME_PREFIX};
use fleet_statemachine::{Op, Store};

use crate::controllers::placement::objects::{check, delete};
use crate::controllers::placement::{Next, Step};
use crate::controllers::ControllerError;

/// OCM's reason of `Deleting`.
pub const REASON_WORK_DELETING: &str = "WorkDeleting";

/// The write that adds the cleanup finalizer to a ManifestWork that is not
/// being deleted and lacks it.
pub fn hold(mw: &Object) -> Option<Next> {
    if mw.metadata.deletion_timestamp.is_some() || mw.metadata.finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        return None;
    }
    let mut held = mw.clone();
    held.metadata.finalizers.push(CLEANUP_FINALIZER.to_string());
    Some(write(mw, vec![Op::Update { object: held }]))
}

fn write(mw: &Object, ops: Vec<Op>) -> Next {
    Next::Write(Box::new(Step { ops, events: Vec::new(), placement: mw.clone() }))
}

/// Whether the agent reported the Work `Applied` at its current generation.
fn withdrawn(work: &Object) -> bool {
    let status = work::status_of(work);
    find(&status.conditions, CONDITION_APPLIED)
        .is_some_and(|c| c.is_true() && c.observed_generation == Some(work.metadata.generation))
}

/// The next step removing the deleted ManifestWork `mw` (see the module doc).
pub fn remove(store: &Store, mw: Object, now: &str) -> Result<Next, ControllerError> {
    if !mw.metadata.finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        return Ok(Next::Done { recheck_after: None });
    }
    let cluster = mw.metadata.namespace.clone().unwrap_or_default();
    let member = store.get(&ObjectKey::new(FLEET_CLUSTER_GROUP, "MemberCluster", "", &cluster))?.0;
    let reachable = member.as_ref().is_some_and(|m| m.metadata.deletion_timestamp.is_none());
    let namespace = member_namespace(&cluster);
    let prefix = format!("{WORK_NAME_PREFIX}{}", mw.metadata.name);
    let (stored, _) = store.list_named_prefix(FLEET_PLACEMENT_GROUP, "Work", &namespace, &prefix)?;
    let works: Vec<Object> =
        stored.into_iter().filter(|w| w.metadata.labels.get(MANIFESTWORK_LABEL) == Some(&mw.metadata.name)).collect();
    if works.is_empty() || !reachable {
        let mut released = mw.clone();
        released.metadata.finalizers.retain(|f| f != CLEANUP_FINALIZER);
        let mut ops: Vec<Op> = works.iter().map(delete).collect();
        ops.push(Op::Update { object: released });
        return Ok(write(&mw, ops));
    }
    let mut status = manifestwork::status_of(&mw);
    let deleting = Condition::new(CONDITION_DELETING, true, REASON_WORK_DELETING, "ManifestWork is being deleted")
        .observing(mw.metadata.generation);
    if !find(&status.conditions, CONDITION_DELETING).is_some_and(|c| c.is_true()) {
        set_condition(&mut status.conditions, deleting, now);
        let mut updated = mw.clone();
        manifestwork::set_status(&mut updated, &status);
        return Ok(write(&mw, vec![Op::UpdateStatus { object: updated }]));
    }
    let mut ops = Vec::new();
    for w in &works {
        let spec = work::spec_of(w);
        let writes_nothing = spec.apply_strategy.as_ref().is_some_and(|s| s.reports_diff());
        if spec.abandons_on_delete() || writes_nothing || (spec.workload.manifests.is_empty() && withdrawn(w)) {
            ops.push(delete(w));
        } else if !spec.workload.manifests.is_empty() {
            let mut emptied = w.clone();
            let mut spec = spec.clone();
            spec.workload.manifests.clear();
            emptied.rest.insert("spec".into(), fleet_api::typed::encode(&spec));
            ops.push(Op::Update { object: emptied });
        }
    }
    if ops.is_empty() {
        // Waiting for the agent's report on an emptied Work: its change wakes this key.
        return Ok(Next::Done { recheck_after: None });
    }
    ops.insert(0, check(&mw));
    Ok(write(&mw, ops))
}
