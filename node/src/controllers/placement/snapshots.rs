//! Steps 1 and 2: policy and resource snapshots.

use fleet_api::Object;
use fleet_placement::snapshot::{self, SnapshotChange};
use fleet_statemachine::Op;

use super::objects::{check, placement_group_key, with_uid};
use super::{Step, View};
use crate::controllers::events::EventNote;

/// A new policy snapshot, or the annotations of the latest, when the policy changed.
pub fn policy_step(view: &View) -> Option<Step> {
    let changes = snapshot::plan_policy_snapshots(&view.placement, &view.policy_snapshots);
    if changes.is_empty() {
        return None;
    }
    let events = created_names(&changes)
        .map(|n| EventNote::normal("PolicySnapshotCreated", format!("created scheduling policy snapshot {n}")))
        .collect();
    Some(Step { ops: ops_of(&view.placement, changes), events, placement: view.placement.clone() })
}

/// A new resource snapshot group when the selected content changed; pruning.
pub fn resource_step(view: &View) -> Option<Step> {
    let changes = snapshot::plan_resource_snapshots(&view.placement, &view.resource_snapshots, &view.selected);
    if changes.is_empty() {
        return None;
    }
    let count = view.selected.len();
    let mut events: Vec<EventNote> = created_names(&changes)
        .filter(|n| n.ends_with("-snapshot"))
        .map(|n| {
            EventNote::normal("ResourceSnapshotCreated", format!("created resource snapshot {n} ({count} resources)"))
        })
        .collect();
    if count == 0 && !events.is_empty() {
        events.push(EventNote::warning("NoResourcesSelected", "the resource selectors match no resources"));
    }
    Some(Step { ops: ops_of(&view.placement, changes), events, placement: view.placement.clone() })
}

/// A check of the owner (placement or override), then the changes as ops.
pub(crate) fn ops_of(owner: &Object, changes: Vec<SnapshotChange>) -> Vec<Op> {
    let mut ops = vec![check(owner)];
    for change in changes {
        ops.push(match change {
            SnapshotChange::Create(object) => Op::Create { object: with_uid(object) },
            SnapshotChange::Update(object) => Op::Update { object },
            SnapshotChange::Delete { kind, namespace, name, resource_version } => Op::Delete {
                key: placement_group_key(&kind, namespace.as_deref().unwrap_or(""), &name),
                resource_version: resource_version.parse().ok(),
            },
        });
    }
    ops
}

fn created_names(changes: &[SnapshotChange]) -> impl Iterator<Item = &str> {
    changes.iter().filter_map(|c| match c {
        SnapshotChange::Create(object) => Some(object.metadata.name.as_str()),
        _ => None,
    })
}
