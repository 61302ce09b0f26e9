//! Step 5: each bound binding's Works, rendered into its cluster's hub
//! namespace from the resource snapshot group it is bound to.

use std::collections::BTreeMap;

use fleet_api::binding::{self, STATE_BOUND};
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use fleet_api::snapshot::{self as snapshot_api, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL};
use fleet_api::Object;
use fleet_placement::works::{self as works_plan, WorkChange, PARENT_BINDING_LABEL};
use fleet_statemachine::{Op, Store};

use super::objects::{check, placement_group_key, with_uid};
use super::render::Rendered;
use super::{Step, View};
use crate::controllers::events::EventNote;
use crate::controllers::ControllerError;

/// Most Work writes in one step (each carries manifests; the rest follow in
/// the next steps).
const MAX_WORK_WRITES: usize = 100;
/// Most manifest bytes written in one step.
const MAX_WORK_BYTES: usize = 8 * 1024 * 1024;

/// Each binding's Works as stored, by binding name.
pub type BindingWorks = BTreeMap<String, Vec<Object>>;

/// Reads the Works of every binding of the placement: a range read per
/// binding in its cluster's namespace, by the Works' name prefix
/// (`<prefix>-`, which covers `-work` parts and envelope Works alike).
pub fn read(store: &Store, view: &View) -> Result<BindingWorks, ControllerError> {
    let prefix = format!("{}-", works_plan::work_prefix(&view.placement));
    let mut out = BindingWorks::new();
    for b in &view.bindings {
        let spec = binding::spec_of(b);
        let namespace = member_namespace(&spec.target_cluster);
        let (objects, _) = store.list_named_prefix(FLEET_PLACEMENT_GROUP, "Work", &namespace, &prefix)?;
        let mine = objects
            .into_iter()
            .filter(|w| {
                w.metadata.labels.get(PARENT_PLACEMENT_LABEL) == Some(&view.placement.metadata.name)
                    && w.metadata.labels.get(PARENT_BINDING_LABEL) == Some(&b.metadata.name)
            })
            .collect();
        out.insert(b.metadata.name.clone(), mine);
    }
    Ok(out)
}

/// The resource snapshot group (first snapshot, then sub-snapshots) a
/// binding is bound to, if it still exists.
pub fn bound_group<'a>(view: &'a View, binding_spec: &binding::BindingSpec) -> Option<(u64, Vec<&'a Object>)> {
    let first = view.resource_snapshots.iter().find(|s| s.metadata.name == binding_spec.resource_snapshot_name)?;
    let index = snapshot_api::index_of(first, RESOURCE_INDEX_LABEL)?;
    let group = view
        .resource_snapshots
        .iter()
        .filter(|s| snapshot_api::index_of(s, RESOURCE_INDEX_LABEL) == Some(index))
        .collect();
    Some((index, group))
}

/// Creates, updates and deletes that bring bound bindings' Works up to date
/// (bindings whose rendering failed keep theirs).
pub fn sync_step(view: &View, works: &BindingWorks, rendered: &Rendered) -> Option<Step> {
    let mut ops = Vec::new();
    let mut writes = 0;
    let mut bytes = 0;
    let mut synced = Vec::new();
    for b in &view.bindings {
        let spec = binding::spec_of(b);
        if spec.state != STATE_BOUND {
            continue;
        }
        let Some(desired) = rendered.bound.get(&b.metadata.name).and_then(|r| r.works.as_ref()) else { continue };
        let existing = works.get(&b.metadata.name).map(Vec::as_slice).unwrap_or_default();
        let changes = works_plan::plan_works(desired, existing);
        if changes.is_empty() {
            continue;
        }
        ops.push(check(b));
        for change in changes {
            ops.push(match change {
                WorkChange::Create(object) => {
                    bytes += object.spec().map(|s| s.to_string().len()).unwrap_or(0);
                    Op::Create { object: with_uid(object) }
                }
                WorkChange::Update(object) => {
                    bytes += object.spec().map(|s| s.to_string().len()).unwrap_or(0);
                    Op::Update { object }
                }
                WorkChange::Delete { namespace, name, resource_version } => Op::Delete {
                    key: placement_group_key("Work", &namespace, &name),
                    resource_version: resource_version.parse().ok(),
                },
            });
            writes += 1;
        }
        synced.push(spec.target_cluster);
        if writes >= MAX_WORK_WRITES || bytes >= MAX_WORK_BYTES {
            break;
        }
    }
    if ops.is_empty() {
        return None;
    }
    ops.push(check(&view.placement));
    let events = vec![EventNote::normal("WorkSynchronized", format!("Work written for {}", synced.join(", ")))];
    Some(Step { ops, events, placement: view.placement.clone() })
}
