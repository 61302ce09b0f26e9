//! `plan`: what the hub's scheduler would decide for a placement, computed
//! here with the same scheduler (`fleet_placement`) over the hub's current
//! inventory, without writing anything. Pure: the command fetches the
//! [`Inventory`], this module decides and renders.
//!
//! A placement that already exists on the hub is planned as the hub would
//! reschedule it: a KubeFleet placement with its bindings, against its
//! latest policy snapshot when the policy is unchanged (so a PickN
//! placement keeps the clusters it uses while they stay eligible) or against
//! a new one when it changed, as the hub decides; an OCM Placement with the
//! clusters its PlacementDecisions name.

mod render;
#[cfg(test)]
mod tests;

use fleet_api::binding::binding_kind;
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::ocm::{self, placement as ocm_placement};
use fleet_api::placement::{CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT};
use fleet_api::snapshot::{snapshot_kinds, PARENT_PLACEMENT_LABEL};
use fleet_api::Object;
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::ocm::{OcmInputs, OcmObjects};
use fleet_placement::scheduler::{self, ExistingBinding, SchedulingRequest};
use fleet_placement::snapshot::{self, SnapshotChange};
use serde::Serialize;

use crate::error::{Error, Result};

pub use render::{render_json, render_text};

/// What the hub holds that scheduling reads.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// Every MemberCluster.
    pub members: Vec<Object>,
    /// Every ManagedClusterSet (OCM).
    pub cluster_sets: Vec<Object>,
    /// Every ManagedClusterSetBinding (OCM), any namespace.
    pub set_bindings: Vec<Object>,
    /// Every PlacementDecision (OCM; other placements' decisions for Balance).
    pub decisions: Vec<Object>,
    /// Every AddOnPlacementScore (OCM).
    pub addon_scores: Vec<Object>,
    /// The bindings of the planned KubeFleet placements that exist on the
    /// hub (labelled with their placement's name).
    pub bindings: Vec<Object>,
    /// Their scheduling policy snapshots.
    pub policy_snapshots: Vec<Object>,
}

/// Whether `object` is a placement the hub schedules, and which scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementKind {
    /// ClusterResourcePlacement or ResourcePlacement (KubeFleet scheduler).
    Fleet,
    /// OCM Placement.
    Ocm,
}

impl PlacementKind {
    /// The scheduler kind of `object`, if it is a placement.
    pub fn of(object: &Object) -> Option<PlacementKind> {
        match (object.group(), object.kind.as_str()) {
            (FLEET_PLACEMENT_GROUP, CLUSTER_RESOURCE_PLACEMENT | RESOURCE_PLACEMENT) => Some(PlacementKind::Fleet),
            (ocm::CLUSTER_GROUP, ocm_placement::KIND) => Some(PlacementKind::Ocm),
            _ => None,
        }
    }
}

/// One cluster's fate in a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPlan {
    /// The cluster.
    pub cluster: String,
    /// `Chosen`, `NotChosen` or `Filtered`.
    pub decision: Decision,
    /// Its scores, parallel to [`Plan::score_names`]; empty when it was not
    /// scored (filtered, or a policy that does not score).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<i64>,
    /// Why it was chosen or left out.
    pub reason: String,
}

/// What became of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Decision {
    Chosen,
    NotChosen,
    Filtered,
}

impl Decision {
    /// As the table shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Chosen => "chosen",
            Decision::NotChosen => "not chosen",
            Decision::Filtered => "filtered",
        }
    }
}

/// The plan of one placement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The placement's kind.
    pub kind: String,
    /// Its namespace (namespaced kinds only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Whether the policy would get every cluster it asks for.
    pub fulfilled: bool,
    /// The scheduler's summary (the condition message the hub would write).
    pub message: String,
    /// What each cluster's scores are.
    pub score_names: Vec<String>,
    /// Chosen clusters first (by name), then those not chosen (best
    /// first), then the filtered (by name).
    pub clusters: Vec<ClusterPlan>,
    /// Clusters not listed (the scheduler reports the 20 best not chosen
    /// and the first 1000 filtered), with why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
    /// The clusters the placement already uses on the hub (active bindings,
    /// or the clusters its decisions name), by name; empty for a new one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub current: Vec<String>,
}

/// Clusters a plan does not list one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Omitted {
    /// How many.
    pub count: usize,
    /// Why they are left out.
    pub reason: String,
}

/// Plans `placement` (validated and defaulted as the hub would) against
/// `inventory` at `now` (Unix seconds: OCM toleration periods and score
/// expiry).
pub fn plan(placement: &Object, inventory: &Inventory, now: i64) -> Result<Plan> {
    let mut placement = placement.clone();
    let invalid = |e: fleet_api::ValidationError| Error::Invalid(e.to_string());
    let clusters: Vec<ClusterInfo> = inventory.members.iter().map(ClusterInfo::from_member).collect();
    match PlacementKind::of(&placement) {
        Some(PlacementKind::Fleet) => {
            fleet_api::placement::prepare(&mut placement).map_err(invalid)?;
            Ok(plan_fleet(&placement, &clusters, inventory))
        }
        Some(PlacementKind::Ocm) => {
            ocm_placement::prepare(&mut placement).map_err(invalid)?;
            Ok(plan_ocm(&placement, &clusters, inventory, now))
        }
        None => Err(Error::Invalid(format!(
            "{} {:?} is not a placement: plan takes a ClusterResourcePlacement, ResourcePlacement ({FLEET_PLACEMENT_GROUP}) or Placement ({})",
            placement.kind,
            placement.metadata.name,
            ocm::CLUSTER_GROUP
        ))),
    }
}

fn header(placement: &Object) -> (String, Option<String>, String) {
    let namespace = match placement.kind.as_str() {
        CLUSTER_RESOURCE_PLACEMENT => None,
        _ => Some(placement.metadata.namespace.clone().unwrap_or_else(|| "default".to_string())),
    };
    (placement.kind.clone(), namespace, placement.metadata.name.clone())
}

/// The objects of `kind` among `objects` that belong to `placement`: its
/// namespace (for namespaced placements) and its name in the parent label.
fn owned_by(objects: &[Object], kind: &str, placement: &Object) -> Vec<Object> {
    let (_, namespace, _) = header(placement);
    objects
        .iter()
        .filter(|o| {
            o.kind == kind
                && o.metadata.namespace == namespace
                && o.metadata.labels.get(PARENT_PLACEMENT_LABEL) == Some(&placement.metadata.name)
        })
        .cloned()
        .collect()
}

/// The policy snapshot the hub would schedule `placement` against: its
/// latest one when the policy is unchanged, else the one it would create
/// (its bindings are then not current, as on the hub).
fn current_policy_snapshot(placement: &Object, snapshots: &[Object]) -> String {
    let changes = snapshot::plan_policy_snapshots(placement, snapshots);
    let created = changes.iter().find_map(|c| match c {
        SnapshotChange::Create(o) => Some(o.metadata.name.clone()),
        _ => None,
    });
    created.or_else(|| snapshot::latest_policy_snapshot(snapshots).map(|o| o.metadata.name.clone())).unwrap_or_default()
}

/// KubeFleet: one scheduling pass with the placement's existing bindings.
fn plan_fleet(placement: &Object, clusters: &[ClusterInfo], inventory: &Inventory) -> Plan {
    let spec = fleet_api::placement::spec_of(placement);
    let policy = spec.policy.clone().unwrap_or_default();
    let (_, policy_kind) = snapshot_kinds(&placement.kind);
    let snapshots = owned_by(&inventory.policy_snapshots, policy_kind, placement);
    let policy_snapshot = current_policy_snapshot(placement, &snapshots);
    let bindings: Vec<ExistingBinding> = owned_by(&inventory.bindings, binding_kind(&placement.kind), placement)
        .iter()
        .map(ExistingBinding::from_object)
        .collect();
    let mut current: Vec<String> = bindings.iter().filter(|b| b.is_active()).map(|b| b.cluster.clone()).collect();
    current.sort();
    current.dedup();
    let outcome = scheduler::schedule(&SchedulingRequest {
        policy: &policy,
        number_of_clusters: policy.number_of_clusters,
        policy_snapshot: &policy_snapshot,
        clusters,
        bindings: &bindings,
        namespace: placement.metadata.namespace.as_deref().filter(|n| !n.is_empty()),
    });
    let scores = |d: &fleet_api::binding::ClusterDecision| {
        d.cluster_score.map(|s| vec![s.affinity_score, s.topology_spread_score]).unwrap_or_default()
    };
    let row = |decision, d: &fleet_api::binding::ClusterDecision| ClusterPlan {
        cluster: d.cluster_name.clone(),
        decision,
        scores: scores(d),
        reason: d.reason.clone(),
    };
    let mut rows: Vec<ClusterPlan> = outcome.chosen.iter().map(|d| row(Decision::Chosen, d)).collect();
    rows.extend(outcome.not_chosen.iter().map(|d| row(Decision::NotChosen, d)));
    rows.extend(outcome.filtered.iter().map(|d| row(Decision::Filtered, d)));
    let listed: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.cluster.as_str()).collect();
    let unlisted = clusters.iter().map(|c| c.name.as_str()).collect::<std::collections::BTreeSet<_>>();
    let count = unlisted.difference(&listed).count();
    let omitted = (count > 0).then(|| Omitted {
        count,
        reason: "not chosen with lower scores than those listed, or filtered (the scheduler reports the best 20 not chosen and the first 1000 filtered)".to_string(),
    });
    let (kind, namespace, name) = header(placement);
    Plan {
        kind,
        namespace,
        name,
        fulfilled: outcome.fulfilled,
        message: outcome.message,
        score_names: vec!["affinity".to_string(), "topologySpread".to_string()],
        clusters: rows,
        omitted,
        current,
    }
}

/// OCM: one pass with the clusters the Placement's own decisions name.
fn plan_ocm(placement: &Object, clusters: &[ClusterInfo], inventory: &Inventory, now: i64) -> Plan {
    let (kind, namespace, name) = header(placement);
    let namespace_name = namespace.clone().unwrap_or_default();
    let spec = ocm_placement::spec_of(placement);
    let objects = OcmObjects {
        sets: &inventory.cluster_sets,
        set_bindings: &inventory.set_bindings,
        pages: &inventory.decisions,
        scores: &inventory.addon_scores,
    };
    let last_score_update =
        ocm_placement::status_of(placement).last_score_update_time.as_deref().and_then(fleet_api::time::unix_seconds);
    let inputs = OcmInputs::from_objects(&namespace_name, &name, objects).with_last_score_update(last_score_update);
    let outcome = fleet_placement::ocm::schedule(&inputs.request(&name, &spec, clusters, now));
    let mut score_names: Vec<String> = outcome.prioritizers.iter().map(|p| p.prioritizer.name()).collect();
    score_names.push("total".to_string());
    let candidate = |c: &fleet_placement::ocm::Candidate| {
        let mut scores = c.scores.clone();
        scores.push(c.total);
        let reason = match (&c.left_out, c.chosen) {
            (Some(why), _) => why.clone(),
            (None, true) => "selected".to_string(),
            (None, false) => "not selected".to_string(),
        };
        ClusterPlan {
            cluster: c.cluster.clone(),
            decision: if c.chosen { Decision::Chosen } else { Decision::NotChosen },
            scores,
            reason,
        }
    };
    let mut rows: Vec<ClusterPlan> = outcome.candidates.iter().filter(|c| c.chosen).map(candidate).collect();
    let mut others: Vec<&fleet_placement::ocm::Candidate> = outcome.candidates.iter().filter(|c| !c.chosen).collect();
    others.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.cluster.cmp(&b.cluster)));
    rows.extend(others.into_iter().map(candidate));
    rows.extend(outcome.excluded.iter().map(|e| ClusterPlan {
        cluster: e.cluster.clone(),
        decision: Decision::Filtered,
        scores: Vec::new(),
        reason: e.reason.clone(),
    }));
    let all_excluded_listed = outcome.excluded.len() == outcome.excluded_total;
    let listed: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.cluster.as_str()).collect();
    let eligible = if outcome.eligible_sets.is_empty() { "none".to_string() } else { outcome.eligible_sets.join(", ") };
    let outside = format!(
        "not in a ManagedClusterSet bound to namespace {namespace_name:?} and selected by the placement (eligible sets: {eligible})"
    );
    if all_excluded_listed {
        // Every other cluster is outside the eligible sets: list each.
        let mut outside_rows: Vec<ClusterPlan> = clusters
            .iter()
            .filter(|c| !listed.contains(c.name.as_str()))
            .map(|c| ClusterPlan {
                cluster: c.name.clone(),
                decision: Decision::Filtered,
                scores: Vec::new(),
                reason: outside.clone(),
            })
            .collect();
        outside_rows.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        rows.extend(outside_rows);
    }
    let count = clusters.len().saturating_sub(rows.len());
    let omitted = (count > 0).then(|| Omitted {
        count,
        reason: format!("filtered (the scheduler reports the first {} by name), or {outside}", outcome.excluded.len()),
    });
    let message = if outcome.satisfied.message.is_empty() {
        outcome.satisfied.reason.clone()
    } else {
        outcome.satisfied.message.clone()
    };
    Plan {
        kind,
        namespace,
        name,
        fulfilled: outcome.satisfied.status == "True",
        message,
        score_names,
        clusters: rows,
        omitted,
        current: {
            let mut current = inputs.decided().to_vec();
            current.sort();
            current.dedup();
            current
        },
    }
}
