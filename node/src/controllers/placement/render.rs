//! Each pass's rendering of the placement's bindings for their clusters:
//! which override snapshots apply now (OV-4, for the rollout to record),
//! and each Bound binding's Works through the snapshots it records, with
//! how that went (for the Work step, readiness and status).

use std::collections::BTreeMap;

use fleet_api::binding::{self, BindingSpec, STATE_BOUND};
use fleet_api::envelope::NUMBER_OF_ENVELOPED_OBJECT_ANNOTATION;
use fleet_api::kinds::DeclaredScopes;
use fleet_api::snapshot::{resource_spec_of, RESOURCE_INDEX_LABEL};
use fleet_api::Object;
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::overrides::{self, Applicable, NamespacedName, OverrideIndex, OverrideSnapshot};
use fleet_placement::snapshot;
use fleet_placement::status::Rendering;
use fleet_placement::works::{self as works_plan, ClusterOverrides, PreparedGroup, RenderError};
use fleet_statemachine::Store;

use super::works::{bound_group, BindingWorks};
use super::View;
use crate::controllers::ControllerError;

/// The snapshots a binding records, in OV-5 order, or `None` if one of
/// them cannot be found.
fn recorded(overrides: &OverrideIndex, spec: &BindingSpec) -> Option<Vec<OverrideSnapshot>> {
    let ro: Option<Vec<NamespacedName>> =
        spec.resource_override_snapshots.iter().map(|v| serde_json::from_value(v.clone()).ok()).collect();
    overrides.recorded(&spec.cluster_resource_override_snapshots, &ro?)
}

/// How one Bound binding rendered.
pub struct RenderedBinding {
    /// The Works it needs (`None` when rendering failed or is pending: its
    /// stored Works are kept).
    pub works: Option<Vec<Object>>,
    /// What the status says about it.
    pub rendering: Rendering,
    /// Whether the stored Works are exactly the rendered ones.
    pub in_sync: bool,
}

/// This pass's rendering of every binding of the placement.
pub struct Rendered {
    /// Per Bound binding (by name).
    pub bound: BTreeMap<String, RenderedBinding>,
    /// The overrides that apply now, per binding name (active bindings).
    pub applicable: BTreeMap<String, Applicable>,
}

/// The overrides as a binding records them.
pub fn recorded_lists(applicable: &Applicable) -> (Vec<String>, Vec<serde_json::Value>) {
    let ro = applicable.resource.iter().map(fleet_api::typed::encode).collect();
    (applicable.cluster.clone(), ro)
}

/// Whether a binding records exactly `applicable`.
pub fn records(spec: &BindingSpec, applicable: &Applicable) -> bool {
    let (cro, ro) = recorded_lists(applicable);
    spec.cluster_resource_override_snapshots == cro && spec.resource_override_snapshots == ro
}

/// Renders every binding of the placement for this pass, through the
/// leader's override snapshots (only those that may concern it are read).
pub fn render(
    store: &Store,
    clusters: &[ClusterInfo],
    overrides: &OverrideIndex,
    view: &View,
    works: &BindingWorks,
) -> Result<Rendered, ControllerError> {
    let latest = overrides.latest_for(&view.placement.metadata.name);
    // The cache's list is name-sorted: a binary search per binding (a scan
    // each was quadratic for a placement on every cluster); the scan stays
    // for a list that is not sorted.
    let labels_of = |cluster: &str| {
        let found = match clusters.binary_search_by(|c| c.name.as_str().cmp(cluster)) {
            Ok(i) => clusters.get(i),
            Err(_) => clusters.iter().find(|c| c.name == cluster),
        };
        found.map(|c| c.labels.to_map()).unwrap_or_default()
    };
    let latest_resources: Vec<Object> = snapshot::latest_resource_index(&view.resource_snapshots)
        .map(|index| {
            view.resource_snapshots
                .iter()
                .filter(|s| fleet_api::snapshot::index_of(s, RESOURCE_INDEX_LABEL) == Some(index))
                .flat_map(|s| resource_spec_of(s).selected_resources)
                .filter_map(|v| serde_json::from_value(v).ok())
                .collect()
        })
        .unwrap_or_default();
    let mut rendered = Rendered { bound: BTreeMap::new(), applicable: BTreeMap::new() };
    // Wrapped objects are checked against the CRDs stored now (EN-8); only
    // snapshots that hold envelopes need them.
    let scopes = if view.resource_snapshots.iter().any(holds_envelopes) {
        crate::admission::declared_scopes(store)?
    } else {
        DeclaredScopes::default()
    };
    // Each bound group is read once for all its bindings.
    let mut prepared: BTreeMap<u64, PreparedGroup> = BTreeMap::new();
    for b in &view.bindings {
        let spec = binding::spec_of(b);
        if !spec.is_active() {
            continue;
        }
        let labels = labels_of(&spec.target_cluster);
        let applicable = if latest.is_empty() {
            Applicable::default()
        } else {
            overrides::applicable(&view.placement, &latest_resources, &labels, &latest)
        };
        rendered.applicable.insert(b.metadata.name.clone(), applicable);
        if spec.state != STATE_BOUND {
            continue;
        }
        let Some((index, group)) = bound_group(view, &spec) else { continue };
        let group = prepared.entry(index).or_insert_with(|| {
            let snapshots: Vec<Object> = group.into_iter().cloned().collect();
            PreparedGroup::new(&snapshots, &scopes)
        });
        let stored = works.get(&b.metadata.name).map(Vec::as_slice).unwrap_or_default();
        let entry = match recorded(overrides, &spec) {
            None => RenderedBinding { works: None, rendering: Rendering::OverridePending, in_sync: false },
            Some(snapshots) => {
                let any = !snapshots.is_empty();
                let context = ClusterOverrides { labels, snapshots, cluster: spec.target_cluster.clone() };
                match works_plan::desired_works_prepared(&view.placement, b, group, &context) {
                    Ok(desired) => {
                        let in_sync = works_plan::plan_works(&desired, stored).is_empty();
                        let rendering = if any { Rendering::Overridden } else { Rendering::NoOverrides };
                        RenderedBinding { works: Some(desired), rendering, in_sync }
                    }
                    Err(RenderError::Override(e)) => {
                        RenderedBinding { works: None, rendering: Rendering::OverrideFailed(e.message), in_sync: false }
                    }
                    Err(e @ (RenderError::Envelope(_) | RenderError::Invalid(_))) => {
                        RenderedBinding { works: None, rendering: Rendering::WorkFailed(e.to_string()), in_sync: false }
                    }
                }
            }
        };
        rendered.bound.insert(b.metadata.name.clone(), entry);
    }
    Ok(rendered)
}

/// Whether a resource snapshot counts any envelope (EN-2).
fn holds_envelopes(snapshot: &Object) -> bool {
    snapshot.metadata.annotations.get(NUMBER_OF_ENVELOPED_OBJECT_ANNOTATION).is_some_and(|n| n != "0")
}
