//! A ClusterResourcePlacement's namespace-accessible status
//! (`spec.statusReportingScope: NamespaceAccessible`): the
//! ClusterResourcePlacementStatus mirror in the selected namespace, written
//! in the same command as the placement status it copies so the two never
//! disagree, and the placement's `ClusterResourcePlacementStatusSynced`
//! condition saying whether it could be written. Also the selector problems
//! that stop a ClusterResourcePlacement before any snapshot, which KubeFleet
//! reports on the `Scheduled` condition with reason `InvalidResourceSelectors`.

use fleet_api::conditions::{find, set_condition, Condition};
use fleet_api::placement::{
    self as placement_api, build_mirror, is_namespace_accessible, mirror_namespace, mirror_of,
    scheduled_condition_type, source_status, PlacementStatus, CLUSTER_RESOURCE_PLACEMENT,
    CLUSTER_RESOURCE_PLACEMENT_STATUS, REASON_STATUS_SYNC_FAILED, REASON_STATUS_SYNC_SUCCEEDED,
    STATUS_SYNCED_CONDITION,
};
use fleet_api::{Object, ObjectKey};
use fleet_placement::selection::{self, ResourceSource};
use fleet_statemachine::{Op, Store};

use super::{objects, Next, Step, View};
use crate::controllers::ControllerError;

/// Reason of a `Scheduled` condition for selectors that cannot be resolved.
const REASON_INVALID_RESOURCE_SELECTORS: &str = "InvalidResourceSelectors";

/// What the reconcile reads about a ClusterResourcePlacement's mirror.
#[derive(Debug, Default)]
pub struct MirrorView {
    /// The namespace the mirror belongs in (the one the placement's
    /// Namespace selector names), if any.
    pub namespace: Option<String>,
    /// Whether that namespace is on the hub and not being deleted.
    pub namespace_live: bool,
    /// The mirror stored there under the placement's name, if any.
    pub existing: Option<Object>,
    /// Why the placement's selectors cannot be resolved now, if they cannot.
    pub problem: Option<String>,
    /// Whether that problem is the namespace-accessible check's (no
    /// Namespace selector, or a moved one): as in KubeFleet, the placement
    /// then gets its `Scheduled` condition and nothing else, its mirror and
    /// `ClusterResourcePlacementStatusSynced` left as they were.
    pub namespace_problem: bool,
}

impl MirrorView {
    /// Reads the mirror of `placement` and checks its selectors
    /// (`selection_problem`: what selecting its resources found wrong).
    pub fn read(
        store: &Store,
        placement: &Object,
        source: &dyn ResourceSource,
        selection_problem: Option<String>,
    ) -> Result<MirrorView, ControllerError> {
        let invalid = |p: String| format!("The resource selectors are invalid: {p}");
        if placement.kind != CLUSTER_RESOURCE_PLACEMENT {
            return Ok(MirrorView { problem: selection_problem.map(invalid), ..Default::default() });
        }
        let spec = placement_api::spec_of(placement);
        let status = placement_api::status_of(placement);
        let name = &placement.metadata.name;
        let mut problem =
            selection::selector_problem(&placement.kind, name, &spec, source).or(selection_problem).map(invalid);
        let namespace = mirror_namespace(&spec).map(str::to_string);
        let mut from_namespace_check = false;
        if is_namespace_accessible(&placement.kind, &spec) {
            if let Some(p) = namespace_problem(namespace.as_deref(), &status) {
                problem = Some(p);
                from_namespace_check = true;
            }
        }
        let Some(ns) = namespace.clone() else {
            return Ok(MirrorView { problem, namespace_problem: from_namespace_check, ..Default::default() });
        };
        let ns_key = ObjectKey::new("", "Namespace", "", &ns);
        let namespace_live = store.get(&ns_key)?.0.is_some_and(|n| n.metadata.deletion_timestamp.is_none());
        let key = ObjectKey::new(fleet_api::kinds::FLEET_PLACEMENT_GROUP, CLUSTER_RESOURCE_PLACEMENT_STATUS, &ns, name);
        let existing = store.get(&key)?.0;
        Ok(MirrorView { namespace, namespace_live, existing, problem, namespace_problem: from_namespace_check })
    }
}

/// KubeFleet's checks of a namespace-accessible placement's namespace: its
/// Namespace selector must name one, and it may not move to another once
/// one was selected.
fn namespace_problem(namespace: Option<&str>, status: &PlacementStatus) -> Option<String> {
    let Some(wanted) = namespace else {
        return Some(
            "NamespaceAccessible ClusterResourcePlacement doesn't specify a resource selector which selects a namespace"
                .to_string(),
        );
    };
    let selected = status.selected_resources.iter().find(|r| r.group.is_empty() && r.kind == "Namespace")?;
    (selected.name != wanted).then(|| {
        format!(
            "namespace resource selector is choosing a different namespace '{wanted}' from what was originally picked \
             '{}'. This is not allowed for NamespaceAccessible ClusterResourcePlacement",
            selected.name
        )
    })
}

/// When the placement's selectors cannot be resolved: its `Scheduled`
/// condition says so (the rest of its status and what it placed stay as
/// they are) and nothing else is done until the selectors or the hub change.
pub fn blocked(view: &View, now: &str) -> Option<Next> {
    let problem = view.mirror.problem.as_ref()?;
    let placement = &view.placement;
    let current = placement_api::status_of(placement);
    let mut status = current.clone();
    let type_ = scheduled_condition_type(&placement.kind);
    let condition = Condition::new(&type_, false, REASON_INVALID_RESOURCE_SELECTORS, problem.clone())
        .observing(placement.metadata.generation);
    set_condition(&mut status.conditions, condition, now);
    let ops = if view.mirror.namespace_problem { Vec::new() } else { sync(view, &mut status, &current, now) };
    Some(match write(placement, &current, &status, ops) {
        Some(step) => Next::Write(Box::new(step)),
        None => Next::Done { recheck_after: None },
    })
}

/// The step writing `status` (when it changed) and the mirror `ops`, or
/// `None` when neither has anything to write.
pub fn write(
    placement: &Object,
    current: &PlacementStatus,
    status: &PlacementStatus,
    mut ops: Vec<Op>,
) -> Option<Step> {
    if status == current && ops.is_empty() {
        return None;
    }
    if status == current {
        // The mirror copies this status: refuse the write if it moved.
        ops.push(objects::check(placement));
    } else {
        let mut updated = placement.clone();
        placement_api::set_status(&mut updated, status);
        ops.insert(0, Op::UpdateStatus { object: updated });
    }
    Some(Step { ops, events: Vec::new(), placement: placement.clone() })
}

/// Brings the mirror in line with `status` (the placement's next status,
/// whose `ClusterResourcePlacementStatusSynced` condition this sets for a
/// namespace-accessible placement): the ops to write, none when the mirror
/// already carries it. A mirror the placement should not have (its scope
/// is `ClusterScopeOnly`) is deleted.
pub fn sync(view: &View, status: &mut PlacementStatus, current: &PlacementStatus, now: &str) -> Vec<Op> {
    let placement = &view.placement;
    let mirror = &view.mirror;
    if !is_namespace_accessible(&placement.kind, &view.spec) {
        return match &mirror.existing {
            Some(stale) if owned_by(stale, placement) => vec![objects::delete(stale)],
            _ => Vec::new(),
        };
    }
    let Some(namespace) = mirror.namespace.as_deref() else { return Vec::new() };
    let generation = placement.metadata.generation;
    // fold_placement rebuilt the conditions without this one: start from
    // the current one so its transition time carries over.
    status.conditions.retain(|c| c.type_ != STATUS_SYNCED_CONDITION);
    if let Some(previous) = find(&current.conditions, STATUS_SYNCED_CONDITION) {
        status.conditions.push(previous.clone());
    }
    if !mirror.namespace_live {
        let message =
            format!("Failed to create or update ClusterResourcePlacementStatus: namespaces {namespace:?} not found");
        let condition =
            Condition::new(STATUS_SYNCED_CONDITION, false, REASON_STATUS_SYNC_FAILED, message).observing(generation);
        set_condition(&mut status.conditions, condition, now);
        return Vec::new();
    }
    let message = format!("Successfully created or updated ClusterResourcePlacementStatus in namespace '{namespace}'");
    let condition =
        Condition::new(STATUS_SYNCED_CONDITION, true, REASON_STATUS_SYNC_SUCCEEDED, message).observing(generation);
    set_condition(&mut status.conditions, condition, now);
    let wanted = source_status(status);
    let mut desired = build_mirror(placement, namespace, status, now);
    match &mirror.existing {
        Some(stored) if owned_by(stored, placement) && mirror_of(stored).source_status == wanted => Vec::new(),
        Some(stored) => {
            desired.metadata.uid = stored.metadata.uid.clone();
            desired.metadata.resource_version = stored.metadata.resource_version.clone();
            vec![Op::Update { object: desired }]
        }
        None => vec![Op::Create { object: objects::with_uid(desired) }],
    }
}

/// Whether `mirror` was written for this very placement (not one of the
/// same name deleted since).
fn owned_by(mirror: &Object, placement: &Object) -> bool {
    mirror.metadata.owner_references.iter().any(|o| o.uid == placement.metadata.uid)
}

#[cfg(test)]
mod tests {
    use fleet_api::placement::ResourceIdentifier;

    use super::*;

    fn selected_namespace(name: &str) -> PlacementStatus {
        PlacementStatus {
            selected_resources: vec![ResourceIdentifier {
                version: "v1".into(),
                kind: "Namespace".into(),
                name: name.into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_namespace_accessible_placement_keeps_its_namespace() {
        assert_eq!(namespace_problem(Some("web"), &PlacementStatus::default()), None);
        assert_eq!(namespace_problem(Some("web"), &selected_namespace("web")), None);
        let moved = namespace_problem(Some("api"), &selected_namespace("web")).unwrap_or_default();
        assert!(moved.starts_with("namespace resource selector is choosing a different namespace 'api' from what was originally picked 'web'"), "{moved}");
        let unnamed = namespace_problem(None, &PlacementStatus::default()).unwrap_or_default();
        assert!(unnamed.contains("doesn't specify a resource selector which selects a namespace"), "{unnamed}");
    }
}
