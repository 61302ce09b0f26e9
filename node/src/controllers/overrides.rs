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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::controllers::testkit::{list, Fixture, NOW};

    fn settle(fixture: &mut Fixture, key: &ObjectKey) -> Vec<String> {
        let mut events = Vec::new();
        for _ in 0..10 {
            match next_step(&fixture.store, key).unwrap() {
                Next::Write(step) | Next::WriteLast(step) => {
                    events.extend(step.events.iter().map(|e| e.message.clone()));
                    fixture.apply(step.ops, NOW);
                }
                Next::WriteEach(_) => panic!("several steps"),
                Next::Done { .. } => return events,
            }
        }
        panic!("the override did not settle");
    }

    #[test]
    fn an_override_gets_a_snapshot_per_change_and_only_then() {
        let mut fixture = Fixture::new();
        let rule = |path: &str| {
            json!({"apiVersion": "placement.kubernetes-fleet.io/v1alpha1", "kind": "ClusterResourceOverride",
                   "metadata": {"name": "cro", "generation": 1},
                   "spec": {"clusterResourceSelectors": [
                                {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "name": "r"}],
                            "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
                                                          "jsonPatchOverrides": [{"op": "remove", "path": path}]}]}}})
        };
        let object = fixture.create(rule("/rules/0"), NOW);
        let key = ObjectKey::of(&object);
        assert_eq!(settle(&mut fixture, &key), ["created override snapshot cro-0"]);
        assert!(settle(&mut fixture, &key).is_empty(), "unchanged: nothing to write");

        let mut changed: fleet_api::Object = serde_json::from_value(rule("/rules/1")).unwrap();
        changed.metadata = fixture.store.get(&key).unwrap().0.unwrap().metadata;
        fixture.apply(vec![fleet_statemachine::Op::Update { object: changed }], NOW);
        assert_eq!(settle(&mut fixture, &key), ["created override snapshot cro-1"]);
        let snapshots = list(&fixture, FLEET_PLACEMENT_GROUP, overrides_api::snapshot_kind(&object.kind));
        let names: Vec<&str> = snapshots.iter().map(|s| s.metadata.name.as_str()).collect();
        assert_eq!(names, ["cro-0", "cro-1"]);
    }
}
