//! The ManifestWorkReplicaSet controller's step: for each referenced
//! Placement (in `placementRefs` order; a cluster decided by two goes with
//! the first), the decided clusters by decision group from its
//! PlacementDecision pages, each one's state from its ManifestWork, and the
//! rollout plan of `fleet_placement::ocm::rollout`. One command creates or
//! updates the ManifestWorks the plan starts (stamping when the rollout
//! started there) and deletes those of clusters no longer decided; once
//! nothing is to write, the status (summary, per-placement summary,
//! conditions) is written if it changed.
//!
//! The ManifestWork of a cluster is named after the replica set, in the
//! cluster's namespace, labelled `<namespace>.<name>` of the replica set
//! and with the placement it came from, and owned by the replica set unless
//! `cascadeDeletionPolicy` is `Orphan` (so deleting the replica set deletes
//! them, and their Works, unless told otherwise). Its spec is the template,
//! with per-cluster variables substituted ([`super::template_variables`]).

use std::collections::{BTreeMap, BTreeSet};

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::ocm::decision::{self, DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL};
use fleet_api::ocm::manifestwork;
use fleet_api::ocm::replicaset::{
    self as api, ManifestWorkReplicaSetStatus, PlacementSummary, CASCADE_ORPHAN, CONDITION_MANIFESTWORK_APPLIED,
    CONDITION_PLACEMENT_ROLLED_OUT, CONDITION_PLACEMENT_VERIFIED,
};
use fleet_api::ocm::{CLUSTER_GROUP, WORK_GROUP};
use fleet_api::typed::encode;
use fleet_api::{Object, ObjectKey, ObjectMeta, OwnerReference};
use fleet_placement::ocm::rollout::{self, ClusterState, RolloutCluster, RolloutPlan, ROLLOUT_STARTED_ANNOTATION};
use fleet_statemachine::{ListQuery, Op, Store};
use serde_json::Value;

use super::delay_until;
use super::placement::list_kind;
use super::template_variables::Templates;
use crate::controllers::events::EventNote;
use crate::controllers::placement::objects::{check, delete};
use crate::controllers::placement::{Next, Step};
use crate::controllers::ControllerError;
use fleet_placement::ocm::pages_of;

/// Label on a ManifestWork: the replica set it belongs to, `<namespace>.<name>`.
pub const REPLICASET_LABEL: &str = "work.open-cluster-management.io/manifestworkreplicaset";
/// Label on a ManifestWork: the Placement that decided its cluster.
pub const PLACEMENT_NAME_LABEL: &str = "work.open-cluster-management.io/placementname";
/// Most ManifestWork writes in one step.
const MAX_WRITES: usize = 100;

/// The label value naming a replica set.
pub fn replica_set_id(mwrs: &Object) -> String {
    format!("{}.{}", mwrs.metadata.namespace.as_deref().unwrap_or_default(), mwrs.metadata.name)
}

/// One referenced placement as read: whether it exists, its pages, its
/// clusters with their states, and the plan.
struct RefView {
    name: String,
    found: bool,
    pages: Vec<Object>,
    clusters: Vec<RolloutCluster>,
    plan: RolloutPlan,
}

/// The decided clusters of `pages`: (group index, group name, cluster), sorted.
fn decided(pages: &[Object]) -> Vec<(usize, String, String)> {
    let mut out: Vec<(usize, String, String)> = pages
        .iter()
        .flat_map(|p| {
            let index = p.metadata.labels.get(DECISION_GROUP_INDEX_LABEL).and_then(|i| i.parse().ok()).unwrap_or(0);
            let group = p.metadata.labels.get(DECISION_GROUP_NAME_LABEL).cloned().unwrap_or_default();
            decision::status_of(p).decisions.into_iter().map(move |d| (index, group.clone(), d.cluster_name))
        })
        .collect();
    out.sort();
    out
}

/// The next step for the ManifestWorkReplicaSet at `key`.
pub fn next_step(store: &Store, key: &ObjectKey, now: &str, unix_now: i64) -> Result<Next, ControllerError> {
    let Some(mwrs) = store.get(key)?.0 else { return Ok(Next::Done { recheck_after: None }) };
    if mwrs.metadata.deletion_timestamp.is_some() {
        return Ok(Next::Done { recheck_after: None });
    }
    let namespace = mwrs.metadata.namespace.clone().unwrap_or_default();
    let spec = api::spec_of(&mwrs);
    let id = replica_set_id(&mwrs);
    let mut templates = Templates::new(encode(&spec.manifest_work_template));
    let query =
        ListQuery { group: WORK_GROUP.into(), kind: manifestwork::KIND.into(), namespace: None, selector: None };
    let (mine, others): (Vec<Object>, Vec<Object>) =
        store.list(&query)?.0.into_iter().partition(|w| w.metadata.labels.get(REPLICASET_LABEL) == Some(&id));
    let works: BTreeMap<String, Object> =
        mine.into_iter().map(|w| (w.metadata.namespace.clone().unwrap_or_default(), w)).collect();
    // Clusters where a ManifestWork of this name belongs to someone else: never taken over.
    let foreign: BTreeSet<String> = others
        .into_iter()
        .filter(|w| w.metadata.name == mwrs.metadata.name)
        .filter_map(|w| w.metadata.namespace)
        .collect();
    for cluster in works.keys() {
        templates.prepare(store, cluster)?;
    }
    let all_pages = list_kind(store, decision::KIND, Some(&namespace))?;

    let mut taken = BTreeSet::new();
    let mut refs = Vec::new();
    for reference in &spec.placement_refs {
        let placement_key = ObjectKey::new(CLUSTER_GROUP, fleet_api::ocm::placement::KIND, &namespace, &reference.name);
        let found = store.get(&placement_key)?.0.is_some();
        let pages: Vec<Object> = pages_of(&all_pages, &namespace, &reference.name).into_iter().cloned().collect();
        let strategy = reference.rollout_strategy.clone().unwrap_or_default();
        let config = strategy.config();
        let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
        let mut clusters = Vec::new();
        for (group_index, group_name, name) in decided(&pages) {
            if !taken.insert(name.clone()) {
                continue;
            }
            *sizes.entry(group_index).or_default() += 1;
            templates.prepare(store, &name)?;
            // A cluster its template cannot be rendered for fails there.
            let state = match templates.of(&name) {
                Ok(template) => ClusterState::of(works.get(&name), template, &config, unix_now),
                Err(_) => ClusterState::Failed,
            };
            clusters.push(RolloutCluster { name, group_index, group_name, state });
        }
        let largest = sizes.values().copied().max().unwrap_or(1);
        let plan = rollout::plan(&strategy, &clusters, largest);
        refs.push(RefView { name: reference.name.clone(), found, pages, clusters, plan });
    }

    let mut ops = Vec::new();
    let mut started = Vec::new();
    let mut conflicts = Vec::new();
    for view in &refs {
        for cluster in &view.plan.apply {
            if foreign.contains(cluster) {
                conflicts.push(cluster.as_str());
                continue;
            }
            // Made again once the deleted one is gone (its removal wakes this).
            if works.get(cluster).is_some_and(|w| w.metadata.deletion_timestamp.is_some()) {
                continue;
            }
            if started.len() >= MAX_WRITES {
                break;
            }
            let Ok(template) = templates.of(cluster) else { continue };
            ops.push(write_work(
                &mwrs,
                &id,
                &view.name,
                cluster,
                works.get(cluster),
                template,
                &spec.cascade_deletion_policy,
                now,
            ));
            started.push(cluster.clone());
        }
    }
    // A ManifestWork already being deleted is removing its objects: left to it.
    let gone: Vec<&Object> = works
        .iter()
        .filter(|(cluster, w)| !taken.contains(*cluster) && w.metadata.deletion_timestamp.is_none())
        .map(|(_, w)| w)
        .collect();
    for work in gone.iter().take(MAX_WRITES) {
        ops.push(delete(work));
    }
    let recheck_after = refs.iter().filter_map(|r| r.plan.requeue_at).min().map(|at| delay_until(at, unix_now));
    if !ops.is_empty() {
        ops.push(check(&mwrs));
        ops.extend(refs.iter().flat_map(|r| &r.pages).map(check));
        let mut events = Vec::new();
        if !started.is_empty() {
            events.push(EventNote::normal("ManifestWorkApplied", format!("rolled out to {}", started.join(", "))));
        }
        if !gone.is_empty() {
            let names: Vec<&str> = gone.iter().filter_map(|w| w.metadata.namespace.as_deref()).collect();
            events.push(EventNote::normal("ManifestWorkDeleted", format!("no longer decided: {}", names.join(", "))));
        }
        return Ok(Next::Write(Box::new(Step { ops, events, placement: mwrs })));
    }

    let status = status(&mwrs, &refs, &works, &templates, now);
    if status == api::status_of(&mwrs) {
        return Ok(Next::Done { recheck_after });
    }
    let mut updated = mwrs.clone();
    api::set_status(&mut updated, &status);
    let mut ops: Vec<Op> = works.values().map(check).collect();
    ops.push(Op::UpdateStatus { object: updated });
    let events = if conflicts.is_empty() {
        Vec::new()
    } else {
        let message = format!(
            "a ManifestWork named {} that this replica set did not create exists on {}: left alone",
            mwrs.metadata.name,
            conflicts.join(", ")
        );
        vec![EventNote::warning("ManifestWorkConflict", message)]
    };
    Ok(Next::Write(Box::new(Step { ops, events, placement: mwrs })))
}

/// The create or update giving `cluster` the current template.
#[allow(clippy::too_many_arguments)]
fn write_work(
    mwrs: &Object,
    id: &str,
    placement: &str,
    cluster: &str,
    existing: Option<&Object>,
    template: &Value,
    cascade: &Option<String>,
    now: &str,
) -> Op {
    let owners =
        if cascade.as_deref() == Some(CASCADE_ORPHAN) { Vec::new() } else { vec![OwnerReference::controller_of(mwrs)] };
    let mut object = existing.cloned().unwrap_or_else(|| Object {
        api_version: format!("{WORK_GROUP}/v1"),
        kind: manifestwork::KIND.into(),
        metadata: ObjectMeta {
            name: mwrs.metadata.name.clone(),
            namespace: Some(cluster.to_string()),
            uid: uuid::Uuid::new_v4().to_string(),
            ..ObjectMeta::default()
        },
        rest: Default::default(),
    });
    object.metadata.labels.insert(REPLICASET_LABEL.into(), id.to_string());
    object.metadata.labels.insert(PLACEMENT_NAME_LABEL.into(), placement.to_string());
    object.metadata.annotations.insert(ROLLOUT_STARTED_ANNOTATION.into(), now.to_string());
    object.metadata.owner_references = owners;
    object.rest.insert("spec".into(), template.clone());
    match existing {
        Some(_) => Op::Update { object },
        None => Op::Create { object },
    }
}

/// The replica set's status from what was read.
fn status(
    mwrs: &Object,
    refs: &[RefView],
    works: &BTreeMap<String, Object>,
    templates: &Templates,
    now: &str,
) -> ManifestWorkReplicaSetStatus {
    let generation = mwrs.metadata.generation;
    let mut status = api::status_of(mwrs);
    let desired: usize = refs.iter().map(|r| r.clusters.len()).sum();
    let is_current = |work: &Object| {
        let cluster = work.metadata.namespace.as_deref().unwrap_or_default();
        templates.of(cluster).is_ok_and(|t| work.spec() == Some(t))
    };
    status.summary = rollout::summary(works.values(), is_current, desired);
    status.placement_summary = refs
        .iter()
        .map(|r| {
            let mine = r.clusters.iter().filter_map(|c| works.get(&c.name));
            let mut groups: BTreeMap<usize, bool> = BTreeMap::new();
            for c in &r.clusters {
                *groups.entry(c.group_index).or_insert(true) &= c.state == ClusterState::Succeeded;
            }
            let applied = r.clusters.iter().filter(|c| c.state != ClusterState::ToApply).count();
            PlacementSummary {
                name: r.name.clone(),
                available_decision_groups: format!(
                    "{} ({} / {} clusters applied)",
                    groups.values().filter(|done| **done).count(),
                    applied,
                    r.clusters.len()
                ),
                summary: rollout::summary(mine, is_current, r.clusters.len()),
            }
        })
        .collect();
    let verified = match refs.iter().find(|r| !r.found || r.pages.is_empty()) {
        Some(r) if !r.found => Condition::new(
            CONDITION_PLACEMENT_VERIFIED,
            false,
            "PlacementDecisionNotFound",
            format!("Placement {} not found", r.name),
        ),
        Some(r) => Condition::new(
            CONDITION_PLACEMENT_VERIFIED,
            false,
            "PlacementDecisionNotFound",
            format!("Placement {} has no PlacementDecision yet", r.name),
        ),
        None if refs.iter().all(|r| r.clusters.is_empty()) => Condition::new(
            CONDITION_PLACEMENT_VERIFIED,
            false,
            "PlacementDecisionEmpty",
            "the placements decide no cluster",
        ),
        None => Condition::new(CONDITION_PLACEMENT_VERIFIED, true, "AsExpected", "every placement is verified"),
    };
    let rolled_out = match refs.iter().find_map(|r| r.plan.stopped.as_ref().map(|why| (r, why))) {
        Some((r, why)) => Condition::new(
            CONDITION_PLACEMENT_ROLLED_OUT,
            false,
            "RolloutStopped",
            format!("placement {}: {why}", r.name),
        ),
        None if refs.iter().all(|r| r.plan.rolled_out) => {
            Condition::new(CONDITION_PLACEMENT_ROLLED_OUT, true, "Complete", "rolled out to every decided cluster")
        }
        None => Condition::new(CONDITION_PLACEMENT_ROLLED_OUT, false, "Progressing", "the rollout is in progress"),
    };
    let s = status.summary;
    let unrendered: Vec<&str> =
        refs.iter().flat_map(|r| &r.clusters).filter_map(|c| templates.failure(&c.name)).collect();
    let applied = if s.total > 0 && s.applied == s.total && unrendered.is_empty() {
        Condition::new(CONDITION_MANIFESTWORK_APPLIED, true, "AsExpected", "every ManifestWork is applied")
    } else {
        let mut message = format!("{} of {} ManifestWorks applied", s.applied, s.total);
        for why in unrendered {
            message.push_str("; ");
            message.push_str(why);
        }
        Condition::new(CONDITION_MANIFESTWORK_APPLIED, false, "NotAsExpected", message)
    };
    for c in [verified, rolled_out, applied] {
        set_condition(&mut status.conditions, c.observing(generation), now);
    }
    status
}
