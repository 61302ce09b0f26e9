//! The override controller (docs/spec/overrides.md OV-3): keeps each
//! ClusterResourceOverride's and ResourceOverride's snapshots current. The
//! placements pick a new snapshot up through the feed (an override snapshot
//! event wakes the placements it may concern).

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::overrides::{self as overrides_api, PARENT_OVERRIDE_LABEL};
use fleet_api::ObjectKey;
use fleet_placement::overrides::plan_override_snapshots;
use fleet_placement::snapshot::SnapshotChange;
use fleet_statemachine::Store;

use super::events::EventNote;
use super::placement::{snapshots::ops_of, Next, Step};
use super::ControllerError;

/// The next step for the override at `key`: its snapshot changes, if any.
pub fn next_step(store: &Store, key: &ObjectKey) -> Result<Next, ControllerError> {
    let Some(object) = store.get(key)?.0 else { return Ok(Next::Done { recheck_after: None }) };
    if object.metadata.deletion_timestamp.is_some() {
        return Ok(Next::Done { recheck_after: None });
    }
    let kind = overrides_api::snapshot_kind(&object.kind);
    let namespace = object.metadata.namespace.as_deref().unwrap_or("");
    let prefix = format!("{}-", object.metadata.name);
    let (existing, _) = store.list_named_prefix(FLEET_PLACEMENT_GROUP, kind, namespace, &prefix)?;
    let existing: Vec<_> = existing
        .into_iter()
        .filter(|s| s.metadata.labels.get(PARENT_OVERRIDE_LABEL) == Some(&object.metadata.name))
        .collect();
    let changes = plan_override_snapshots(&object, &existing);
    if changes.is_empty() {
        return Ok(Next::Done { recheck_after: None });
    }
    let events = changes
        .iter()
        .filter_map(|c| match c {
            SnapshotChange::Create(s) => Some(EventNote::normal(
                "OverrideSnapshotCreated",
                format!("created override snapshot {}", s.metadata.name),
            )),
            _ => None,
        })
        .collect();
    let ops = ops_of(&object, changes);
    Ok(Next::Write(Box::new(Step { ops, events, placement: object })))
}
