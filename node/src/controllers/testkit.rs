//! A store on a temporary file that tests fill by applying commands as
//! committed entries (no Raft), for the controllers' reads and steps; and
//! what drives them there: member clusters, a placement reconciled to the
//! end, agents reporting their Works.

use std::sync::Arc;

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::{Object, ObjectKey};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::overrides::OverrideIndex;
use fleet_statemachine::{Command, ListQuery, Op, Proposal, Response, Store};
use openraft::{CommittedLeaderId, EntryPayload, LogId};
use serde_json::json;

use super::placement::{next_step, Next};
use super::status_pacer::StatusPacer;

/// The proposers' clock in these tests.
pub const NOW: &str = "2026-11-27T10:00:00Z";

/// A store, and the index of the next entry applied to it.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub store: Arc<Store>,
    next_index: u64,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("sm.redb")).unwrap();
        Fixture { _dir: dir, store, next_index: 1 }
    }

    /// Applies `ops` as one committed command proposed at `now`; panics if
    /// the state machine refuses it.
    pub fn apply(&mut self, ops: Vec<Op>, now: &str) {
        let command = Command { now: now.into(), ops };
        let entry = openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), self.next_index),
            payload: EntryPayload::Normal(Proposal::new(vec![command]).unwrap()),
        };
        self.next_index += 1;
        let responses = self.store.apply_entries(vec![entry], false).unwrap();
        assert!(matches!(responses[0][0], Response::Applied { .. }), "{responses:?}");
    }

    /// Creates `object` (given as JSON) at `now`.
    pub fn create(&mut self, object: serde_json::Value, now: &str) -> Object {
        let mut object: Object = serde_json::from_value(object).unwrap();
        object.metadata.uid = format!("uid-{}", self.next_index);
        self.apply(vec![Op::Create { object: object.clone() }], now);
        object
    }
}

/// A joined, healthy MemberCluster with `labels`.
pub fn member(name: &str, labels: serde_json::Value) -> Object {
    let condition = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": "R", "message": "", "lastTransitionTime": NOW,
               "observedGeneration": 1})
    };
    serde_json::from_value(json!({
        "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
        "metadata": {"name": name, "labels": labels, "generation": 1},
        "spec": {"identity": {"name": "a", "kind": "ServiceAccount", "namespace": "fleet-system"}},
        "status": {"conditions": [condition("Joined"), condition("Healthy")]}
    }))
    .unwrap()
}

/// Every object of `kind`.
pub fn list(fixture: &Fixture, group: &str, kind: &str) -> Vec<Object> {
    let query = ListQuery { group: group.into(), kind: kind.into(), ..Default::default() };
    fixture.store.list(&query).unwrap().0
}

/// Commits each step the placement controller decides for `key` until it
/// is done; the steps taken.
pub fn settle_placement(fixture: &mut Fixture, clusters: &[ClusterInfo], key: &ObjectKey, unix_now: i64) -> usize {
    let overrides = OverrideIndex::default();
    for taken in 0..50 {
        // A new pacer each time: pacing is tested on its own.
        let pacer = StatusPacer::default();
        let steps = match next_step(&fixture.store, clusters, &overrides, &pacer, key, NOW, unix_now).unwrap() {
            Next::Write(step) | Next::WriteLast(step) => vec![*step],
            Next::WriteEach(steps) => steps,
            Next::Done { .. } => return taken,
        };
        for step in steps {
            fixture.apply(step.ops, NOW);
        }
    }
    panic!("the placement did not settle in 50 steps");
}

/// Reports every Work applied and available at its generation, as member
/// agents would.
pub fn report_works_available(fixture: &mut Fixture) {
    for mut work in list(fixture, FLEET_PLACEMENT_GROUP, "Work") {
        let condition = |type_: &str| {
            json!({"type": type_, "status": "True", "reason": "R", "message": "", "lastTransitionTime": NOW,
                   "observedGeneration": work.metadata.generation})
        };
        let conditions = json!([condition("Applied"), condition("Available")]);
        work.rest.insert("status".into(), json!({"conditions": conditions}));
        fixture.apply(vec![Op::UpdateStatus { object: work }], NOW);
    }
}
