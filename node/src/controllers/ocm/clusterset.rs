//! The cluster set controllers' steps (rules in
//! `fleet_placement::ocm::set_status`):
//!
//! - a ManagedClusterSet's `ClusterSetEmpty`, from the leader's cluster
//!   cache, written when it changes;
//! - a ManagedClusterSetBinding's `Bound`: whether its set exists (stored,
//!   or the built-in `default` and `global`);
//! - one key for every set's `spec.managedNamespaces`: the Work
//!   `mcs.managed-namespaces` of each cluster, created, updated or deleted
//!   to hold the namespaces of the sets the cluster is in.
//!
//! The feed wakes every set and the managed-namespaces key on any cluster
//! change, and a set's bindings when it is created or deleted, so each is
//! level-triggered like the Placement controller. A status write checks
//! the version read; a binding's also checks its set.

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use fleet_api::ocm::clusterset::{self, ManagedClusterSetSpec, SET_KIND};
use fleet_api::ocm::CLUSTER_GROUP;
use fleet_api::{Object, ObjectKey};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::ocm::set_status::{self, MANAGED_NAMESPACES_WORK};
use fleet_placement::works::{plan_works, WorkChange};
use fleet_statemachine::{Op, Store};

use super::placement::list_kind;
use crate::controllers::placement::objects::{check, with_uid};
use crate::controllers::placement::{Next, Step};
use crate::controllers::ControllerError;

/// Most clusters whose managed-namespaces Work one step writes (the rest
/// in the next steps), so one command stays small.
const MAX_WORK_WRITES_PER_STEP: usize = 100;

/// The one key of the managed-namespaces step (no set has an empty name).
pub fn managed_namespaces_key() -> ObjectKey {
    ObjectKey::new(CLUSTER_GROUP, SET_KIND, "", "")
}

/// Whether `key` is [`managed_namespaces_key`].
pub fn is_managed_namespaces_key(key: &ObjectKey) -> bool {
    *key == managed_namespaces_key()
}

/// The next step for the ManagedClusterSet at `key`: its `ClusterSetEmpty`.
pub fn set_step(store: &Store, clusters: &[ClusterInfo], key: &ObjectKey, now: &str) -> Result<Next, ControllerError> {
    let done = Next::Done { recheck_after: None };
    let Some(set) = store.get(key)?.0 else { return Ok(done) };
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(done);
    }
    let spec = clusterset::set_spec_of(&set);
    let count = set_status::members(&set.metadata.name, Some(&spec), clusters).len();
    let condition = set_status::empty_condition(count).observing(set.metadata.generation);
    Ok(status_step(&set, condition, Vec::new(), now).unwrap_or(done))
}

/// The next step for the ManagedClusterSetBinding at `key`: its `Bound`.
pub fn binding_step(store: &Store, key: &ObjectKey, now: &str) -> Result<Next, ControllerError> {
    let done = Next::Done { recheck_after: None };
    let Some(binding) = store.get(key)?.0 else { return Ok(done) };
    if binding.metadata.deletion_timestamp.is_some() {
        return Ok(done);
    }
    let name = clusterset::binding_spec_of(&binding).cluster_set;
    let stored = store.get(&ObjectKey::new(CLUSTER_GROUP, SET_KIND, "", &name))?.0;
    let exists = match &stored {
        Some(set) => set.metadata.deletion_timestamp.is_none(),
        None => set_status::set_exists(&name, &[]),
    };
    // The set as read must still be as read (or still absent: the feed
    // wakes the binding when it appears).
    let checks = stored.iter().map(check).collect();
    let condition = set_status::bound_condition(&name, exists).observing(binding.metadata.generation);
    Ok(status_step(&binding, condition, checks, now).unwrap_or(done))
}

/// The status write setting `condition`, if it changes anything.
fn status_step(object: &Object, condition: Condition, mut ops: Vec<Op>, now: &str) -> Option<Next> {
    let mut status = clusterset::status_of(object);
    let before = status.clone();
    set_condition(&mut status.conditions, condition, now);
    if status == before {
        return None;
    }
    let mut updated = object.clone();
    clusterset::set_status(&mut updated, &status);
    ops.push(Op::UpdateStatus { object: updated });
    Some(Next::Write(Box::new(Step { ops, events: Vec::new(), placement: object.clone() })))
}

/// The next step of the managed namespaces: the Work writes of up to
/// [`MAX_WORK_WRITES_PER_STEP`] clusters whose Work differs.
pub fn managed_namespaces_step(store: &Store, clusters: &[ClusterInfo]) -> Result<Next, ControllerError> {
    let set_objects = list_kind(store, SET_KIND, None)?;
    let sets: Vec<(String, ManagedClusterSetSpec)> = set_objects
        .iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .map(|s| (s.metadata.name.clone(), clusterset::set_spec_of(s)))
        .collect();
    let wanted = set_status::managed_namespaces(&sets, clusters);
    let mut ops: Vec<Op> = Vec::new();
    let mut written = 0;
    for cluster in clusters {
        if written == MAX_WORK_WRITES_PER_STEP {
            break;
        }
        let key =
            ObjectKey::new(FLEET_PLACEMENT_GROUP, "Work", &member_namespace(&cluster.name), MANAGED_NAMESPACES_WORK);
        let stored = store.get(&key)?.0;
        let desired: Vec<Object> = wanted
            .get(&cluster.name)
            .map(|ns| set_status::managed_namespaces_work(&cluster.name, ns))
            .into_iter()
            .collect();
        let changes = plan_works(&desired, stored.as_slice());
        written += usize::from(!changes.is_empty());
        ops.extend(changes.into_iter().map(|change| match change {
            WorkChange::Create(object) => Op::Create { object: with_uid(object) },
            WorkChange::Update(object) => Op::Update { object },
            WorkChange::Delete { namespace, name, resource_version } => Op::Delete {
                key: ObjectKey::new(FLEET_PLACEMENT_GROUP, "Work", &namespace, &name),
                resource_version: resource_version.parse().ok(),
            },
        }));
    }
    if ops.is_empty() {
        return Ok(Next::Done { recheck_after: None });
    }
    // Decided from these sets: a change to any of them redoes the step.
    ops.extend(set_objects.iter().map(check));
    let about = set_status::managed_namespaces_work("", &Default::default());
    Ok(Next::Write(Box::new(Step { ops, events: Vec::new(), placement: about })))
}
