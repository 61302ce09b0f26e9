//! Each pass's rendering of the placement's bindings for their clusters:
//! which override snapshots apply now (OV-4, for the rollout to record),
//! and each Bound binding's Works through the snapshots it records, with
//! how that went (for the Work step, readiness and status).

use std::collections::BTreeMap;

use fleet_api::binding::{self, BindingSpec, STATE_BOUND};
use fleet_api::envelope::NUMBER_OF_ENVELOPED_OBJECT_ANNOTATION;
use fleet_api::kinds::{DeclaredScopes, FLEET_PLACEMENT_GROUP};
use fleet_api::overrides::{CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, RESOURCE_OVERRIDE_SNAPSHOT};
use fleet_api::snapshot::{resource_spec_of, IS_LATEST_LABEL, RESOURCE_INDEX_LABEL};
use fleet_api::Object;
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::overrides::{self, Applicable, NamespacedName, OverrideSnapshot};
use fleet_placement::snapshot;
use fleet_placement::status::Rendering;
use fleet_placement::works::{self as works_plan, ClusterOverrides, PreparedGroup, RenderError};
use fleet_statemachine::{ListQuery, Store};

use super::works::{bound_group, BindingWorks};
use super::View;
use crate::controllers::ControllerError;

/// Every override snapshot in the store, decoded, and which are latest.
pub struct OverrideSnapshots {
    all: Vec<OverrideSnapshot>,
    latest: Vec<OverrideSnapshot>,
}

impl OverrideSnapshots {
    /// Reads every CRO and RO snapshot.
    pub fn read(store: &Store) -> Result<OverrideSnapshots, ControllerError> {
        let mut all = Vec::new();
        let mut latest = Vec::new();
        for kind in [CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, RESOURCE_OVERRIDE_SNAPSHOT] {
            let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: kind.into(), ..Default::default() };
            for object in store.list(&query)?.0 {
                let Some(decoded) = OverrideSnapshot::from_object(&object) else { continue };
                if object.metadata.labels.get(IS_LATEST_LABEL).map(String::as_str) == Some("true") {
                    latest.push(decoded.clone());
                }
                all.push(decoded);
            }
        }
        Ok(OverrideSnapshots { all, latest })
    }

    /// The snapshots labelled latest (what applies to new rollouts).
    pub fn latest(&self) -> &[OverrideSnapshot] {
        &self.latest
    }

    /// The binding's recorded snapshots in OV-5 order, or `None` if one of
    /// them cannot be found.
    fn recorded(&self, spec: &BindingSpec) -> Option<Vec<OverrideSnapshot>> {
        let cro = spec
            .cluster_resource_override_snapshots
            .iter()
            .map(|name| self.all.iter().find(|s| s.cluster_scoped && &s.name == name).cloned());
        let ro = spec.resource_override_snapshots.iter().map(|value| {
            let wanted: NamespacedName = serde_json::from_value(value.clone()).ok()?;
            self.all
                .iter()
                .find(|s| !s.cluster_scoped && s.name == wanted.name && s.namespace == wanted.namespace)
                .cloned()
        });
        cro.chain(ro).collect()
    }
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

/// Renders every binding of the placement for this pass.
pub fn render(
    store: &Store,
    clusters: &[ClusterInfo],
    view: &View,
    works: &BindingWorks,
) -> Result<Rendered, ControllerError> {
    let overrides = OverrideSnapshots::read(store)?;
    let labels_of =
        |cluster: &str| clusters.iter().find(|c| c.name == cluster).map(|c| c.labels.to_map()).unwrap_or_default();
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
        let applicable = if overrides.latest.is_empty() {
            Applicable::default()
        } else {
            overrides::applicable(&view.placement, &latest_resources, &labels, &overrides.latest)
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
        let entry = match overrides.recorded(&spec) {
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
                    Err(e @ RenderError::Envelope(_)) => {
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
