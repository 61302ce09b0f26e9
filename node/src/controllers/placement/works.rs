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
/// Most manifest bytes one pass writes (in steps of the sizes above); the
/// rest wait for the next pass.
const MAX_PASS_BYTES: usize = 64 * 1024 * 1024;

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
/// (bindings whose rendering failed keep theirs), as commands of at most
/// [`MAX_WORK_WRITES`] Works or [`MAX_WORK_BYTES`] each, up to
/// [`MAX_PASS_BYTES`] in all. They are all written from this one view,
/// several at once: each checks its bindings and the placement are as
/// read, so one computed before a change in between is refused, and the
/// next pass starts again. (A pass per command made a PickAll over 5,000
/// clusters read every binding and Work 50 times: quadratic.)
pub fn sync_steps(view: &View, works: &BindingWorks, rendered: &Rendered) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut chunk = Chunk::default();
    let mut pass_bytes = 0;
    for b in &view.bindings {
        let spec = binding::spec_of(b);
        if spec.state != STATE_BOUND {
            continue;
        }
        // Rendering compared them with what is stored already.
        let Some(rendering) = rendered.bound.get(&b.metadata.name).filter(|r| !r.in_sync) else { continue };
        let Some(desired) = rendering.works.as_ref() else { continue };
        let existing = works.get(&b.metadata.name).map(Vec::as_slice).unwrap_or_default();
        let changes = works_plan::plan_works(desired, existing);
        if changes.is_empty() {
            continue;
        }
        chunk.ops.push(check(b));
        for change in changes {
            chunk.ops.push(match change {
                WorkChange::Create(object) => {
                    chunk.bytes += object.spec().map(|s| s.to_string().len()).unwrap_or(0);
                    Op::Create { object: with_uid(object) }
                }
                WorkChange::Update(object) => {
                    chunk.bytes += object.spec().map(|s| s.to_string().len()).unwrap_or(0);
                    Op::Update { object }
                }
                WorkChange::Delete { namespace, name, resource_version } => Op::Delete {
                    key: placement_group_key("Work", &namespace, &name),
                    resource_version: resource_version.parse().ok(),
                },
            });
            chunk.writes += 1;
        }
        chunk.synced.push(spec.target_cluster);
        if chunk.writes >= MAX_WORK_WRITES || chunk.bytes >= MAX_WORK_BYTES {
            pass_bytes += chunk.bytes;
            steps.push(std::mem::take(&mut chunk).into_step(view));
            if pass_bytes >= MAX_PASS_BYTES {
                return steps;
            }
        }
    }
    if !chunk.ops.is_empty() {
        steps.push(chunk.into_step(view));
    }
    steps
}

/// One command's worth of Work writes being gathered.
#[derive(Default)]
struct Chunk {
    ops: Vec<Op>,
    writes: usize,
    bytes: usize,
    synced: Vec<String>,
}

impl Chunk {
    fn into_step(mut self, view: &View) -> Step {
        self.ops.push(check(&view.placement));
        let events =
            vec![EventNote::normal("WorkSynchronized", format!("Work written for {}", self.synced.join(", ")))];
        Step { ops: self.ops, events, placement: view.placement.clone() }
    }
}
