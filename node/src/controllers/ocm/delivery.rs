//! The ManifestWork controller's step: keep the Works a ManifestWork
//! mirrors into (`fleet_placement::ocm::delivery`) equal to what it says,
//! then fold the agent's reports on them into the ManifestWork's status.
//!
//! A ManifestWork with `deleteOption.ttlSecondsAfterFinished` is deleted
//! that long after its `Complete` condition turned True (the time is in
//! its status, so a new leader keeps the same deadline).
//!
//! A deleted ManifestWork goes through [`deleting`] (its objects are
//! removed from the cluster before it goes).
//!
//! A ManifestWork whose namespace names no MemberCluster gets no Work and
//! says so in `Applied`; the feed wakes it when that cluster appears. A
//! Work of the mirrored name that another controller owns is never
//! touched: the ManifestWork reports the conflict.

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::kinds::{FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use fleet_api::member::member_namespace;
use fleet_api::ocm::manifestwork::{self, CONDITION_APPLIED};
use fleet_api::{Object, ObjectKey};
use fleet_placement::ocm::delivery::{self, rules, MANIFESTWORK_LABEL, WORK_NAME_PREFIX};
use fleet_placement::works::{plan_works, WorkChange};
use fleet_statemachine::{Op, Store};

use super::{delay_until, deleting};
use crate::controllers::events::EventNote;
use crate::controllers::placement::objects::{check, delete, with_uid};
use crate::controllers::placement::{Next, Step};
use crate::controllers::ControllerError;

/// The next step for the ManifestWork at `key`: deleted once its
/// `ttlSecondsAfterFinished` ran out after it completed, else delivered
/// (looked at again when the TTL runs out).
pub fn next_step(store: &Store, key: &ObjectKey, now: &str, unix_now: i64) -> Result<Next, ControllerError> {
    let Some(mw) = store.get(key)?.0 else { return Ok(Next::Done { recheck_after: None }) };
    if mw.metadata.deletion_timestamp.is_some() {
        return deleting::remove(store, mw, now);
    }
    if let Some(next) = deleting::hold(&mw) {
        return Ok(next);
    }
    let ttl = manifestwork::spec_of(&mw).delete_option.and_then(|d| d.ttl_seconds_after_finished);
    let delete_at = rules::delete_at(ttl, &manifestwork::status_of(&mw).conditions);
    if delete_at.is_some_and(|at| unix_now >= at) {
        let message = format!("completed, and its ttlSecondsAfterFinished of {}s ran out", ttl.unwrap_or(0));
        let events = vec![EventNote::normal("ManifestWorkExpired", message)];
        return Ok(Next::Write(Box::new(Step { ops: vec![delete(&mw)], events, placement: mw })));
    }
    Ok(match deliver(store, mw, now)? {
        Next::Done { .. } => Next::Done { recheck_after: delete_at.map(|at| delay_until(at, unix_now)) },
        next => next,
    })
}

/// Keeps the ManifestWork's Works as it says and folds their reports.
fn deliver(store: &Store, mw: Object, now: &str) -> Result<Next, ControllerError> {
    let done = Next::Done { recheck_after: None };
    let cluster = mw.metadata.namespace.clone().unwrap_or_default();
    let member = store.get(&ObjectKey::new(FLEET_CLUSTER_GROUP, "MemberCluster", "", &cluster))?.0;
    let Some(member) = member else {
        let why = format!(
            "no member cluster is named {cluster:?}: a ManifestWork goes in the namespace named after its cluster"
        );
        return Ok(status_step(&mw, failed_applied(&mw, "ClusterNotFound", &why, now), vec![]).unwrap_or(done));
    };
    let namespace = member_namespace(&cluster);
    let prefix = format!("{WORK_NAME_PREFIX}{}", mw.metadata.name);
    let (stored, _) = store.list_named_prefix(FLEET_PLACEMENT_GROUP, "Work", &namespace, &prefix)?;
    let desired = delivery::mirror_works(&mw, &stored);
    // The prefix also lists Works of ManifestWorks whose names extend this one: the label tells.
    let (ours, theirs): (Vec<Object>, Vec<Object>) =
        stored.into_iter().partition(|w| w.metadata.labels.get(MANIFESTWORK_LABEL) == Some(&mw.metadata.name));
    if let Some(foreign) = theirs.iter().find(|w| desired.iter().any(|d| d.metadata.name == w.metadata.name)) {
        let why =
            format!("the Work {namespace}/{} exists and is not mirrored from this ManifestWork", foreign.metadata.name);
        return Ok(
            status_step(&mw, failed_applied(&mw, "WorkNameConflict", &why, now), vec![check(foreign)]).unwrap_or(done)
        );
    }
    let changes = plan_works(&desired, &ours);
    if !changes.is_empty() {
        let mut ops = vec![check(&mw), check(&member)];
        for change in changes {
            ops.push(match change {
                WorkChange::Create(object) => Op::Create { object: with_uid(object) },
                WorkChange::Update(object) => Op::Update { object },
                WorkChange::Delete { namespace, name, resource_version } => Op::Delete {
                    key: ObjectKey::new(FLEET_PLACEMENT_GROUP, "Work", &namespace, &name),
                    resource_version: resource_version.parse().ok(),
                },
            });
        }
        let events = vec![EventNote::normal("WorkSynchronized", format!("Work written for {cluster}"))];
        return Ok(Next::Write(Box::new(Step { ops, events, placement: mw })));
    }
    let status = delivery::fold_status(&mw, &ours, now);
    Ok(status_step(&mw, status, ours.iter().map(check).collect()).unwrap_or(done))
}

/// The ManifestWork's status with `Applied` False for `reason`.
fn failed_applied(mw: &Object, reason: &str, message: &str, now: &str) -> manifestwork::ManifestWorkStatus {
    let mut status = manifestwork::status_of(mw);
    let c = Condition::new(CONDITION_APPLIED, false, reason, message).observing(mw.metadata.generation);
    set_condition(&mut status.conditions, c, now);
    status
}

/// The status write, if the status changed, with `checks` of what it was folded from.
fn status_step(mw: &Object, status: manifestwork::ManifestWorkStatus, checks: Vec<Op>) -> Option<Next> {
    if status == manifestwork::status_of(mw) {
        return None;
    }
    let mut updated = mw.clone();
    manifestwork::set_status(&mut updated, &status);
    let mut ops = checks;
    ops.push(Op::UpdateStatus { object: updated });
    Some(Next::Write(Box::new(Step { ops, events: Vec::new(), placement: mw.clone() })))
}
