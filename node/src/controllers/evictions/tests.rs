//! The eviction controller's steps on a real store (no Raft): which
//! eviction is judged, what the judgement writes, and that a judged one is
//! never judged again.

use fleet_api::eviction::{MESSAGE_MISSING_PLACEMENT, VALID};
use serde_json::json;

use super::*;
use crate::controllers::testkit::Fixture;

fn eviction(fixture: &mut Fixture, name: &str, placement: &str, now: &str) -> fleet_api::Object {
    fixture.create(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": CLUSTER_RESOURCE_PLACEMENT_EVICTION,
               "metadata": {"name": name},
               "spec": {"placementName": placement, "clusterName": "east"}}),
        now,
    )
}

fn step(fixture: &Fixture) -> Option<Step> {
    match next_step(&fixture.store, &[], &OverrideIndex::default(), "2026-11-27T11:00:00Z").unwrap() {
        Next::Write(step) | Next::WriteLast(step) => Some(*step),
        Next::Done { recheck_after: None } => None,
        Next::Done { recheck_after: Some(after) } => panic!("a recheck after {after:?}"),
        Next::WriteEach(_) => panic!("several steps"),
    }
}

#[test]
fn nothing_pending_is_done() {
    assert!(step(&Fixture::new()).is_none());
}

#[test]
fn the_oldest_eviction_is_judged_first_once_and_finally() {
    let mut fixture = Fixture::new();
    eviction(&mut fixture, "newer", "gone", "2026-11-27T10:05:00Z");
    eviction(&mut fixture, "older", "gone", "2026-11-27T10:00:00Z");

    let first = step(&fixture).unwrap();
    assert_eq!(first.placement.metadata.name, "older");
    let Some(Op::UpdateStatus { object }) = first.ops.first() else { panic!("not a status write: {:?}", first.ops) };
    let valid = eviction_status_of(object).conditions.into_iter().find(|c| c.type_ == VALID).unwrap();
    assert!(!valid.is_true() && valid.message == MESSAGE_MISSING_PLACEMENT, "{valid:?}");
    assert!(first.events.iter().all(|e| e.warning && e.reason == "EvictionInvalid"));
    // With no placement there is nothing else to check: the eviction's own
    // status, conditional on the version judged.
    assert_eq!(first.ops.len(), 1);
    assert_eq!(object.metadata.resource_version, "2");

    fixture.apply(first.ops, "2026-11-27T11:00:00Z");
    let second = step(&fixture).unwrap();
    assert_eq!(second.placement.metadata.name, "newer");
    fixture.apply(second.ops, "2026-11-27T11:00:00Z");
    assert!(step(&fixture).is_none(), "a judged eviction is never judged again");
}
