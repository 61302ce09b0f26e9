//! A small world for run tests: a placement, its clusters and bindings, the
//! approval requests; `step` plans a pass and applies its writes the way a
//! controller would (one atomic command), keeping every action in a log.

use std::collections::BTreeMap;

use fleet_api::conditions::{find, Condition};
use fleet_api::placement::{apply_defaults, PlacementSpec};
use fleet_api::staged::{
    ApprovalRequestSpec, StageUpdatingStatus, UpdateRunSpec, UpdateRunStatus, UpdateStrategySpec, PROGRESSING,
    SUCCEEDED,
};

use serde_json::json;

use super::*;
use crate::rollout::Readiness;

/// The strategy of docs/spec/staged-updates.md's example (`three-stage`).
pub(super) fn three_stage() -> UpdateStrategySpec {
    let by_env = |env: &str| json!({"matchLabels": {"environment": env}});
    strategy_json(json!([
        {"name": "staging", "labelSelector": by_env("staging"), "afterStageTasks": [{"type": "TimedWait", "waitTime": "1h"}]},
        {"name": "canary", "labelSelector": by_env("canary"), "sortingLabelKey": "order",
         "afterStageTasks": [{"type": "Approval"}]},
        {"name": "production", "labelSelector": by_env("production"), "sortingLabelKey": "order",
         "maxConcurrency": 2, "beforeStageTasks": [{"type": "Approval"}]}
    ]))
}

/// 2024-05-01T10:00:00Z.
pub(super) const T0: i64 = 1_714_557_600;

/// A strategy from its `spec.stages` JSON, admitted as the hub would.
pub(super) fn strategy_json(stages: serde_json::Value) -> UpdateStrategySpec {
    let mut object: fleet_api::Object = serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterStagedUpdateStrategy",
        "metadata": {"name": "s"}, "spec": {"stages": stages}
    }))
    .unwrap();
    fleet_api::typed::prepare(&mut object).unwrap_or_else(|e| panic!("{e}"));
    fleet_api::staged::strategy_spec_of(&object)
}

/// A cluster with labels.
pub(super) fn cluster(name: &str, labels: &[(&str, &str)]) -> ClusterLabels {
    ClusterLabels {
        name: name.to_string(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

/// A Scheduled binding of placement `app` for `cluster` under policy snapshot `app-0`.
pub(super) fn binding(cluster: &str) -> RunBinding {
    RunBinding {
        name: format!("app-{cluster}"),
        cluster: cluster.to_string(),
        state: "Scheduled".into(),
        policy_snapshot: "app-0".into(),
        rolled_out_under: String::new(),
        resource_snapshot: String::new(),
        cluster_resource_override_snapshots: Vec::new(),
        resource_override_snapshots: Vec::new(),
        apply_strategy: None,
        deleting: false,
        readiness: Readiness::InProgress,
    }
}

/// Placement `app`, External, with `policy` (JSON), policy snapshot `app-0`
/// scheduled, resource snapshot groups `indexes`.
pub(super) fn placement(policy: serde_json::Value, indexes: &[u64]) -> RunPlacement {
    let mut spec: PlacementSpec = serde_json::from_value(serde_json::json!({
        "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
        "policy": policy, "strategy": {"type": "External"}
    }))
    .unwrap();
    apply_defaults(&mut spec);
    let n = spec.policy.as_ref().and_then(|p| p.number_of_clusters);
    RunPlacement {
        name: "app".into(),
        spec,
        latest_policy_snapshot: Some(PolicySnapshotFacts {
            name: "app-0".into(),
            index: Some(0),
            number_of_clusters: n,
            scheduled: Some(true),
        }),
        resource_indexes: indexes.to_vec(),
        latest_resource_index: indexes.iter().max().copied(),
    }
}

/// Everything a run pass reads, owned, and the log of what passes did.
#[derive(Debug, Clone)]
pub(super) struct World {
    pub run_name: String,
    pub generation: i64,
    pub spec: UpdateRunSpec,
    pub status: UpdateRunStatus,
    pub placement: Option<RunPlacement>,
    pub strategy: Option<UpdateStrategySpec>,
    pub clusters: Vec<ClusterLabels>,
    pub bindings: Vec<RunBinding>,
    pub approvals: Vec<RunApproval>,
    pub overrides: BTreeMap<String, ClusterOverrides>,
    pub now: i64,
    pub log: Vec<RunAction>,
}

impl World {
    /// The fleet of docs/spec/staged-updates.md's worked example, every cluster
    /// chosen (PickAll) and Scheduled, run `app-v1` at index 0.
    pub fn example() -> World {
        let clusters = vec![
            cluster("stg-1", &[("environment", "staging")]),
            cluster("can-1", &[("environment", "canary"), ("order", "2")]),
            cluster("can-2", &[("environment", "canary"), ("order", "1")]),
            cluster("prod-a", &[("environment", "production"), ("order", "1")]),
            cluster("prod-b", &[("environment", "production"), ("order", "1")]),
            cluster("prod-c", &[("environment", "production"), ("order", "3")]),
        ];
        World::new(clusters, three_stage())
    }

    /// A PickAll placement over every cluster given, with `strategy`.
    pub fn new(clusters: Vec<ClusterLabels>, strategy: UpdateStrategySpec) -> World {
        let bindings = clusters.iter().map(|c| binding(&c.name)).collect();
        World {
            run_name: "app-v1".into(),
            generation: 1,
            spec: UpdateRunSpec {
                placement_name: "app".into(),
                resource_snapshot_index: Some("0".into()),
                staged_rollout_strategy_name: "three-stage".into(),
                state: Some("Run".into()),
            },
            status: UpdateRunStatus::default(),
            placement: Some(placement(serde_json::json!({"placementType": "PickAll"}), &[0])),
            strategy: Some(strategy),
            clusters,
            bindings,
            approvals: Vec::new(),
            overrides: BTreeMap::new(),
            now: T0,
            log: Vec::new(),
        }
    }

    /// One pass over the current world, nothing applied.
    pub fn plan(&self) -> RunPlan {
        plan_run(&RunInput {
            run_name: &self.run_name,
            generation: self.generation,
            spec: &self.spec,
            status: &self.status,
            placement: self.placement.as_ref(),
            strategy: self.strategy.as_ref(),
            clusters: &self.clusters,
            bindings: &self.bindings,
            approvals: &self.approvals,
            overrides: &self.overrides,
            now: self.now,
        })
    }

    /// Applies a plan as the controller's atomic command would.
    pub fn apply(&mut self, plan: &RunPlan) {
        for action in &plan.actions {
            match action {
                RunAction::Bind {
                    binding,
                    resource_snapshot,
                    cluster_resource_override_snapshots,
                    resource_override_snapshots,
                    apply_strategy,
                    ..
                } => {
                    let b = self.bindings.iter_mut().find(|b| &b.name == binding).expect("bound binding exists");
                    b.state = "Bound".into();
                    b.rolled_out_under = b.policy_snapshot.clone();
                    b.resource_snapshot = resource_snapshot.clone();
                    b.cluster_resource_override_snapshots = cluster_resource_override_snapshots.clone();
                    b.resource_override_snapshots = resource_override_snapshots.clone();
                    b.apply_strategy = apply_strategy.clone();
                    b.readiness = Readiness::InProgress;
                }
                RunAction::DeleteBinding { binding, .. } => self.bindings.retain(|b| &b.name != binding),
                RunAction::CreateApprovalRequest { name, stage, .. } => self.approvals.push(RunApproval {
                    name: name.clone(),
                    spec: ApprovalRequestSpec {
                        parent_stage_rollout: self.run_name.clone(),
                        target_stage: stage.clone(),
                    },
                    approved: false,
                    accepted: false,
                }),
                RunAction::AcceptApproval { name } => {
                    if let Some(a) = self.approvals.iter_mut().find(|a| &a.name == name) {
                        a.accepted = true;
                    }
                }
                _ => {}
            }
        }
        self.status = plan.status.clone();
        self.log.extend(plan.actions.iter().cloned());
    }

    /// Plans and applies one pass.
    pub fn step(&mut self) -> RunPlan {
        let plan = self.plan();
        self.apply(&plan);
        plan
    }

    /// The cluster's Works report Available.
    pub fn ready(&mut self, cluster: &str) {
        for b in self.bindings.iter_mut().filter(|b| b.cluster == cluster) {
            b.readiness = Readiness::Ready;
        }
    }

    /// `fleetctl approve name`.
    pub fn approve(&mut self, name: &str) {
        let a = self.approvals.iter_mut().find(|a| a.name == name).unwrap_or_else(|| panic!("no request {name}"));
        a.approved = true;
    }

    /// Clusters whose binding is Bound to snapshot `app-<index>-snapshot`.
    pub fn bound_to(&self, index: u64) -> Vec<String> {
        let name = format!("app-{index}-snapshot");
        let mut out: Vec<String> = self
            .bindings
            .iter()
            .filter(|b| b.state == "Bound" && b.resource_snapshot == name)
            .map(|b| b.cluster.clone())
            .collect();
        out.sort();
        out
    }

    /// A stage's status by name.
    pub fn stage(&self, name: &str) -> &StageUpdatingStatus {
        self.status.stages_status.iter().find(|s| s.stage_name == name).unwrap_or_else(|| panic!("no stage {name}"))
    }

    /// The run's condition of `type_`.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        find(&self.status.conditions, type_)
    }

    /// (status, reason) of the run's Progressing.
    pub fn progressing(&self) -> (String, String) {
        self.condition(PROGRESSING).map(|c| (c.status.clone(), c.reason.clone())).unwrap_or_default()
    }

    /// Whether the run's Succeeded is True.
    pub fn succeeded(&self) -> bool {
        self.condition(SUCCEEDED).is_some_and(Condition::is_true)
    }

    /// The writes of a plan, by kind, compactly: `bind:x`, `delete:x`, `create:n`, `accept:n`.
    pub fn writes(plan: &RunPlan) -> Vec<String> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                RunAction::Bind { cluster, .. } => Some(format!("bind:{cluster}")),
                RunAction::DeleteBinding { cluster, .. } => Some(format!("delete:{cluster}")),
                RunAction::CreateApprovalRequest { name, .. } => Some(format!("create:{name}")),
                RunAction::AcceptApproval { name } => Some(format!("accept:{name}")),
                _ => None,
            })
            .collect()
    }
}
