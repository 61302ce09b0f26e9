//! A store on a temporary file that tests fill by applying commands as
//! committed entries (no Raft), for the controllers' reads and steps.

use std::sync::Arc;

use fleet_api::Object;
use fleet_statemachine::{Command, Op, Proposal, Response, Store};
use openraft::{CommittedLeaderId, EntryPayload, LogId};

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
