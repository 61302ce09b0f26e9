//! What one pass of a run reads from the local store, kept as the objects
//! read (for the command's checks) and in the planner's terms.

use std::collections::BTreeMap;

use fleet_api::conditions::find;
use fleet_api::kinds::{FLEET_CLUSTER_GROUP, FLEET_PLACEMENT_GROUP};
use fleet_api::snapshot::{index_of, resource_spec_of, RESOURCE_INDEX_LABEL};
use fleet_api::staged::{
    approval_request_kind, placement_kind, run, run_spec_of, run_status_of, strategy_kind, strategy_spec_of,
    UpdateRunSpec, UpdateRunStatus, UpdateStrategySpec, INITIALIZED,
};
use fleet_api::{Object, ObjectKey};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::overrides::{self, OverrideIndex};
use fleet_placement::snapshot::latest_resource_index;
use fleet_placement::staged::{is_finished, ClusterLabels, ClusterOverrides, RunApproval, RunBinding, RunPlacement};
use fleet_statemachine::{ListQuery, Store};

use crate::controllers::placement::Children;
use crate::controllers::ControllerError;

/// Everything one pass of a run read.
pub struct RunRead {
    /// The run as stored.
    pub run: Object,
    /// Its spec, defaulted.
    pub spec: UpdateRunSpec,
    /// Its stored status.
    pub status: UpdateRunStatus,
    /// Its placement's children (`None` when the placement is missing or
    /// being deleted).
    pub children: Option<Children>,
    /// The placement in the planner's terms.
    pub placement: Option<RunPlacement>,
    /// The strategy object, read only before initialization.
    pub strategy_object: Option<Object>,
    /// Its spec.
    pub strategy: Option<UpdateStrategySpec>,
    /// MemberClusters read from the store (only before initialization).
    pub members: Vec<Object>,
    /// Every cluster's labels.
    pub cluster_labels: Vec<ClusterLabels>,
    /// The placement's bindings in the planner's terms.
    pub bindings: Vec<RunBinding>,
    /// The approval requests named `<run>-...`, as stored.
    pub approval_objects: Vec<Object>,
    /// The same in the planner's terms.
    pub approvals: Vec<RunApproval>,
    /// The override snapshots applying to each chosen cluster (only before
    /// initialization, which freezes them).
    pub overrides: BTreeMap<String, ClusterOverrides>,
}

/// Reads the run at `key` and what its pass needs; `None` when there is
/// nothing to do (gone, being deleted, or finished for good).
pub fn read(
    store: &Store,
    clusters: &[ClusterInfo],
    overrides: &OverrideIndex,
    key: &ObjectKey,
) -> Result<Option<RunRead>, ControllerError> {
    let Some(run) = store.get(key)?.0 else { return Ok(None) };
    let status = run_status_of(&run);
    if run.metadata.deletion_timestamp.is_some() || is_finished(&status) {
        return Ok(None);
    }
    let mut spec = run_spec_of(&run);
    run::apply_defaults(&mut spec);
    let namespace = run.metadata.namespace.clone().unwrap_or_default();
    let initialized = find(&status.conditions, INITIALIZED).is_some_and(|c| c.is_true());

    let placement_key =
        ObjectKey::new(FLEET_PLACEMENT_GROUP, placement_kind(&run.kind), &namespace, &spec.placement_name);
    let placement_object = store.get(&placement_key)?.0.filter(|p| p.metadata.deletion_timestamp.is_none());
    let children = placement_object.map(|p| Children::read(store, clusters, overrides, p)).transpose()?;
    let placement = children
        .as_ref()
        .and_then(|c| RunPlacement::read(&c.view.placement, &c.view.policy_snapshots, &c.view.resource_snapshots));
    let bindings = children
        .as_ref()
        .map(|c| c.view.bindings.iter().map(|b| RunBinding::of(b, c.readiness_of(&b.metadata.name))).collect())
        .unwrap_or_default();

    let (strategy_object, members) = if initialized {
        (None, Vec::new())
    } else {
        let strategy_key = ObjectKey::new(
            FLEET_PLACEMENT_GROUP,
            strategy_kind(&run.kind),
            &namespace,
            &spec.staged_rollout_strategy_name,
        );
        let query = ListQuery { group: FLEET_CLUSTER_GROUP.into(), kind: "MemberCluster".into(), ..Default::default() };
        (store.get(&strategy_key)?.0, store.list(&query)?.0)
    };
    let strategy = strategy_object.as_ref().map(strategy_spec_of);
    let cluster_labels: Vec<ClusterLabels> = if initialized {
        clusters.iter().map(|c| ClusterLabels { name: c.name.clone(), labels: c.labels.to_map() }).collect()
    } else {
        members.iter().map(ClusterLabels::of).collect()
    };

    let prefix = format!("{}-", run.metadata.name);
    let (approval_objects, _) =
        store.list_named_prefix(FLEET_PLACEMENT_GROUP, approval_request_kind(&run.kind), &namespace, &prefix)?;
    let approvals = approval_objects.iter().map(RunApproval::of).collect();

    let overrides = match (&children, initialized) {
        (Some(children), false) => frozen_overrides(overrides, children, &spec, &cluster_labels),
        _ => BTreeMap::new(),
    };
    Ok(Some(RunRead {
        run,
        spec,
        status,
        children,
        placement,
        strategy_object,
        strategy,
        members,
        cluster_labels,
        bindings,
        approval_objects,
        approvals,
        overrides,
    }))
}

/// The override snapshots that apply now to each cluster with an active
/// binding, against the resources of the snapshot the run will roll out
/// (the named index, else the latest), as initialization freezes them.
fn frozen_overrides(
    snapshots: &OverrideIndex,
    children: &Children,
    spec: &UpdateRunSpec,
    clusters: &[ClusterLabels],
) -> BTreeMap<String, ClusterOverrides> {
    let view = &children.view;
    let latest = snapshots.latest_for(&view.placement.metadata.name);
    let mut out = BTreeMap::new();
    if latest.is_empty() {
        return out;
    }
    let Some(index) = spec.resource_snapshot_index().or_else(|| latest_resource_index(&view.resource_snapshots)) else {
        return out;
    };
    let resources: Vec<Object> = view
        .resource_snapshots
        .iter()
        .filter(|s| index_of(s, RESOURCE_INDEX_LABEL) == Some(index))
        .flat_map(|s| resource_spec_of(s).selected_resources)
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect();
    for b in &view.bindings {
        let binding = fleet_api::binding::spec_of(b);
        if !binding.is_active() || b.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let labels =
            clusters.iter().find(|c| c.name == binding.target_cluster).map(|c| c.labels.clone()).unwrap_or_default();
        let applicable = overrides::applicable(&view.placement, &resources, &labels, &latest);
        out.insert(binding.target_cluster, ClusterOverrides::from(applicable));
    }
    out
}
