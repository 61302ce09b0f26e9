//! The placement controller's reconcile: for one ClusterResourcePlacement or
//! ResourcePlacement, the next atomic step that brings the store closer to
//! what the `placement` crate says it should be, in this order:
//!
//! 1. policy snapshots (a new one when the policy changed; the
//!    number-of-clusters annotation when only the count changed);
//! 2. resource snapshots (a new group when the selected content changed;
//!    history pruned);
//! 3. scheduling: binding creates/updates/unschedules and the policy
//!    snapshot's status;
//! 4. rollout: bindings bound to (or moved onto) the latest resource
//!    snapshot, unscheduled ones deleted, within the strategy's limits;
//! 5. Work: each bound binding's Works rendered into its cluster's namespace
//!    through the override snapshots it records (envelopes unwrapped into
//!    Works of their own); a binding whose rendering fails keeps its Works;
//! 6. original resources: with `reportBackStrategy` `Mirror` to
//!    `OriginalResource` and a one-cluster policy, the member's statuses
//!    copied onto the hub's own objects;
//! 7. status: the placement's conditions and per-cluster entries, and a
//!    namespace-accessible ClusterResourcePlacement's status mirror.
//!
//! Before all of them, selectors that cannot be resolved (a
//! NamespaceWithResourceSelectors namespace missing, a namespace-accessible
//! placement's namespace changed) stop the reconcile with the reason on the
//! placement's `Scheduled` condition.
//!
//! Each step is one command carrying, besides its writes, a `Check` of the
//! objects it read and does not write, so a step computed on a stale view is
//! refused whole and recomputed. The steps run one after another until none
//! has anything to do.

mod deleting;
mod namespace_status;
pub(crate) mod objects;
mod original_status;
pub(crate) mod render;
mod rollout;
mod scheduling;
pub(crate) mod snapshots;
mod status;
mod works;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use fleet_api::placement::{self as placement_api, PlacementSpec};
use fleet_api::snapshot as snapshot_api;
use fleet_api::{binding, Object, ObjectKey};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::overrides::OverrideIndex;
use fleet_placement::rollout::Readiness;
use fleet_placement::selection;
use fleet_statemachine::{Op, Store};

use super::events::EventNote;
use super::status_pacer::StatusPacer;
use super::view::{self, StoreSource};
use super::ControllerError;

/// One atomic step of a placement's reconcile.
pub struct Step {
    /// The command's ops (writes and checks).
    pub ops: Vec<Op>,
    /// What to record about the placement once the step committed.
    pub events: Vec<EventNote>,
    /// The object the step is about (the events' involved object): the
    /// placement, or an override.
    pub placement: Object,
}

/// What the reconcile should do next.
pub enum Next {
    /// Commit this step, then look again.
    Write(Box<Step>),
    /// Commit this step, the last of the pass (the placement's status): a
    /// new pass follows, after a rest as long as this one if it was costly,
    /// for whatever changed meanwhile.
    WriteLast(Box<Step>),
    /// Commit these steps, each as its own command (the Work writes of one
    /// view, too many for one), in order with a few in flight at once; the
    /// first that fails ends the pass. Then look again.
    WriteEach(Vec<Step>),
    /// Up to date; look again after this long if time alone can change
    /// something (an unavailable period ending).
    Done { recheck_after: Option<Duration> },
}

/// Everything a pass reads about one placement.
pub struct View {
    pub placement: Object,
    pub spec: PlacementSpec,
    pub policy_snapshots: Vec<Object>,
    pub resource_snapshots: Vec<Object>,
    pub selected: Vec<Object>,
    pub bindings: Vec<Object>,
    /// A ClusterResourcePlacement's status mirror and selector problems.
    pub mirror: namespace_status::MirrorView,
}

impl View {
    /// Reads `placement`'s children and selects its resources.
    fn read(store: &Store, placement: Object) -> Result<View, ControllerError> {
        let mut view = View::children_of(store, placement)?;
        let source = StoreSource::new(store);
        let placement = &view.placement;
        let selection =
            selection::select(&placement.kind, placement.metadata.namespace.as_deref(), &view.spec, &source);
        view.selected = selection.resources;
        view.mirror = namespace_status::MirrorView::read(store, placement, &source, selection.problem)?;
        source.finish()?;
        Ok(view)
    }

    /// The placement's snapshots and bindings, without selecting its
    /// resources (for the controllers that only follow its bindings).
    fn children_of(store: &Store, placement: Object) -> Result<View, ControllerError> {
        let (resource_kind, policy_kind) = snapshot_api::snapshot_kinds(&placement.kind);
        Ok(View {
            policy_snapshots: view::children(store, &placement, policy_kind)?,
            resource_snapshots: view::children(store, &placement, resource_kind)?,
            bindings: view::children(store, &placement, binding::binding_kind(&placement.kind))?,
            selected: Vec::new(),
            mirror: Default::default(),
            spec: placement_api::spec_of(&placement),
            placement,
        })
    }

    /// Whether staged update runs roll the placement out (`strategy.type:
    /// External`).
    pub fn is_external(&self) -> bool {
        self.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some(fleet_api::placement::EXTERNAL)
    }

    /// The bindings by name, for the steps that look many of them up (a
    /// scan each would be quadratic in the clusters).
    pub fn bindings_by_name(&self) -> HashMap<&str, &Object> {
        self.bindings.iter().map(|b| (b.metadata.name.as_str(), b)).collect()
    }
}

/// A placement's snapshots and bindings, and how far each binding's
/// rollout got, read as the placement controller counts it: for the
/// controllers that drive or judge a placement's bindings from outside
/// (staged update runs, evictions).
pub struct Children {
    /// The placement and its children (no selected resources).
    pub view: View,
    /// Each binding's Works as stored, by binding name.
    pub works: works::BindingWorks,
    /// Each binding's readiness for the resources it is bound to (its Works
    /// exactly as rendering wants them), by binding name.
    pub readiness: BTreeMap<String, Readiness>,
}

impl Children {
    /// Reads `placement`'s children and judges its bindings against the
    /// fleet's `clusters` (their labels decide override rendering) and the
    /// leader's `overrides`.
    pub fn read(
        store: &Store,
        clusters: &[ClusterInfo],
        overrides: &OverrideIndex,
        placement: Object,
    ) -> Result<Children, ControllerError> {
        let view = View::children_of(store, placement)?;
        let works = works::read(store, &view)?;
        let rendered = render::render(store, clusters, overrides, &view, &works)?;
        let readiness = view
            .bindings
            .iter()
            .map(|b| (b.metadata.name.clone(), rollout::binding_readiness(&view, b, &works, &rendered)))
            .collect();
        Ok(Children { view, works, readiness })
    }

    /// The readiness of binding `name` (in progress when unknown).
    pub fn readiness_of(&self, name: &str) -> Readiness {
        self.readiness.get(name).copied().unwrap_or(Readiness::InProgress)
    }
}

/// The next step for the placement at `key`. `now` is RFC 3339 for
/// conditions; `unix_now` the same instant in seconds for rollout timing;
/// `pacer` spaces the placement's status writes by their size.
pub fn next_step(
    store: &Store,
    clusters: &[ClusterInfo],
    overrides: &OverrideIndex,
    pacer: &StatusPacer,
    key: &ObjectKey,
    now: &str,
    unix_now: i64,
) -> Result<Next, ControllerError> {
    let Some(placement) = store.get(key)?.0 else { return Ok(Next::Done { recheck_after: None }) };
    if placement.metadata.deletion_timestamp.is_some() {
        return deleting::withdraw(store, placement);
    }
    let view = View::read(store, placement)?;
    if let Some(next) = namespace_status::blocked(&view, now) {
        return Ok(next);
    }
    if let Some(step) = snapshots::policy_step(&view).or_else(|| snapshots::resource_step(&view)) {
        return Ok(Next::Write(Box::new(step)));
    }
    let Some(scheduled) = scheduling::schedule(clusters, &view, now) else {
        return Ok(Next::Done { recheck_after: None });
    };
    if let Some(step) = scheduled.step {
        return Ok(Next::Write(Box::new(step)));
    }
    let works = works::read(store, &view)?;
    let rendered = render::render(store, clusters, overrides, &view, &works)?;
    let rollout = rollout::plan(&view, &scheduled, &works, &rendered, unix_now);
    if let Some(step) = rollout.step {
        return Ok(Next::Write(Box::new(step)));
    }
    let work_steps = works::sync_steps(&view, &works, &rendered);
    if !work_steps.is_empty() {
        return Ok(Next::WriteEach(work_steps));
    }
    if let Some(step) = original_status::step(store, &view, &works)? {
        return Ok(Next::Write(Box::new(step)));
    }
    let recheck_after =
        rollout.recheck_at.map(|at| Duration::from_secs(u64::try_from(at - unix_now).unwrap_or(0).max(1)));
    // A status the pacer would hold back is not worth computing yet: the
    // pass it may be written in computes it then.
    let entries = scheduled.outcome.chosen.len();
    let paced = |wait: Duration| Next::Done { recheck_after: Some(recheck_after.map_or(wait, |r| r.min(wait))) };
    if let Some(wait) = pacer.wait(key, entries, std::time::Instant::now()) {
        return Ok(paced(wait));
    }
    if let Some(step) = status::step(&view, &scheduled, &works, &rendered, now) {
        match pacer.admit(key, entries, std::time::Instant::now()) {
            None => return Ok(Next::WriteLast(Box::new(step))),
            Some(wait) => return Ok(paced(wait)),
        }
    }
    Ok(Next::Done { recheck_after })
}

#[cfg(test)]
mod tests;
