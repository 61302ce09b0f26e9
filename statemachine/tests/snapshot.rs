//! Snapshots on real redb files, through openraft's storage traits: building
//! one records the applied state without serializing it; the content is
//! serialized from the state when asked for, and installs elsewhere.

use std::io::Cursor;

use fleet_api::{Object, ObjectKey};
use fleet_statemachine::{Command, Op, Proposal, StateMachine};
use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, EntryPayload, LogId, RaftSnapshotBuilder};
use serde_json::json;

fn entry(index: u64, name: &str) -> openraft::Entry<fleet_statemachine::TypeConfig> {
    let object: Object = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "a"},
        "data": {"k": name},
    }))
    .expect("object");
    let op = Op::Apply { object, uid: format!("uid-{name}") };
    openraft::Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(
            Proposal::new(vec![Command { now: "2026-11-21T00:00:00Z".into(), ops: vec![op] }]).expect("encode"),
        ),
    }
}

fn names(sm: &StateMachine) -> Vec<String> {
    let query = fleet_statemachine::ListQuery {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: Some("a".into()),
        selector: None,
    };
    let (objects, _) = sm.store().list(&query).expect("list");
    objects.iter().map(|o| ObjectKey::of(o).name).collect()
}

#[tokio::test]
async fn a_snapshot_is_recorded_then_serialized_from_the_current_state_and_installs_elsewhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut leader = StateMachine::open(&dir.path().join("leader")).expect("open");
    assert!(leader.get_current_snapshot().await.expect("current").is_none(), "nothing built yet");

    leader.apply(vec![entry(1, "one"), entry(2, "two")]).await.expect("apply");
    let built = leader.get_snapshot_builder().await.build_snapshot().await.expect("build");
    assert_eq!(built.meta.last_log_id.map(|l| l.index), Some(2));
    assert!(built.snapshot.get_ref().is_empty(), "building serializes nothing");

    // Asked for right away: the state it recorded.
    let current = leader.get_current_snapshot().await.expect("current").expect("some");
    assert_eq!(current.meta, built.meta);

    // After more writes: the newer state, never one older than recorded.
    leader.apply(vec![entry(3, "three")]).await.expect("apply");
    let current = leader.get_current_snapshot().await.expect("current").expect("some");
    assert_eq!(current.meta.last_log_id.map(|l| l.index), Some(3));

    let mut follower = StateMachine::open(&dir.path().join("follower")).expect("open");
    follower.apply(vec![entry(1, "gone")]).await.expect("apply");
    let mut receiving = follower.begin_receiving_snapshot().await.expect("begin");
    *receiving = Cursor::new(current.snapshot.get_ref().clone());
    follower.install_snapshot(&current.meta, receiving).await.expect("install");
    assert_eq!(names(&follower), ["one", "three", "two"]);
    assert_eq!(follower.applied_state().await.expect("applied"), leader.applied_state().await.expect("applied"));
    // Replicas agree: the installed state has the leader's digest at its index.
    let (mine, theirs) = (follower.store().digest().expect("digest"), leader.store().digest().expect("digest"));
    assert_eq!((mine.index, mine.objects), (3, 3));
    assert_eq!(mine, theirs);
    let mut other = StateMachine::open(&dir.path().join("other")).expect("open");
    other.apply(vec![entry(1, "one"), entry(2, "two"), entry(3, "four")]).await.expect("apply");
    let different = other.store().digest().expect("digest");
    assert_eq!(different.index, 3);
    assert_ne!(different.sha256, theirs.sha256, "different objects at the same index, same digest");
    let installed = follower.get_current_snapshot().await.expect("current").expect("some");
    assert_eq!(installed.meta, current.meta);

    // The record survives a restart; a stale file of the eager design goes.
    drop(leader);
    std::fs::write(dir.path().join("leader/snapshot.bin"), b"old").expect("write");
    let mut reopened = StateMachine::open(&dir.path().join("leader")).expect("reopen");
    assert!(!dir.path().join("leader/snapshot.bin").exists());
    let after_restart = reopened.get_current_snapshot().await.expect("current").expect("some");
    assert_eq!(after_restart.meta.last_log_id.map(|l| l.index), Some(3));
}

#[tokio::test]
async fn content_at_another_index_than_its_metadata_is_refused_and_nothing_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut leader = StateMachine::open(&dir.path().join("leader")).expect("open");
    leader.apply(vec![entry(1, "one")]).await.expect("apply");
    let built = leader.get_snapshot_builder().await.build_snapshot().await.expect("build");
    leader.apply(vec![entry(2, "two")]).await.expect("apply");
    let current = leader.get_current_snapshot().await.expect("current").expect("some");

    let mut follower = StateMachine::open(&dir.path().join("follower")).expect("open");
    follower.apply(vec![entry(1, "kept")]).await.expect("apply");
    let mut receiving = follower.begin_receiving_snapshot().await.expect("begin");
    *receiving = Cursor::new(current.snapshot.get_ref().clone());
    let err = follower.install_snapshot(&built.meta, receiving).await.expect_err("mismatch");
    assert!(err.to_string().contains("its content is at"), "{err}");
    assert_eq!(names(&follower), ["kept"]);
    assert!(follower.get_current_snapshot().await.expect("current").is_none());
}

fn membership(index: u64, voters: &[u64]) -> openraft::Entry<fleet_statemachine::TypeConfig> {
    let nodes: std::collections::BTreeMap<u64, openraft::BasicNode> =
        voters.iter().map(|id| (*id, openraft::BasicNode::new(format!("127.0.0.1:{id}")))).collect();
    let voters: std::collections::BTreeSet<u64> = voters.iter().copied().collect();
    openraft::Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Membership(openraft::Membership::new(vec![voters], nodes)),
    }
}

#[tokio::test]
async fn removed_nodes_are_retired_durably_until_added_back_and_travel_in_snapshots() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("leader");
    let mut leader = StateMachine::open(&path).expect("open");
    leader.apply(vec![membership(1, &[1, 2, 3]), membership(2, &[1, 2, 3, 4])]).await.expect("apply");
    assert!((1..=4).all(|id| !leader.store().is_retired(id)));
    leader.apply(vec![membership(3, &[1, 3, 4])]).await.expect("remove 2");
    assert!(leader.store().is_retired(2));
    assert!(!leader.store().is_retired(4));
    leader.get_snapshot_builder().await.build_snapshot().await.expect("build");
    let snapshot = leader.get_current_snapshot().await.expect("current").expect("some");

    // A node that installs the snapshot knows; so does one that restarts.
    let mut follower = StateMachine::open(&dir.path().join("follower")).expect("open");
    follower.install_snapshot(&snapshot.meta, snapshot.snapshot).await.expect("install");
    assert!(follower.store().is_retired(2));
    drop(leader);
    let mut leader = StateMachine::open(&path).expect("reopen");
    assert!(leader.store().is_retired(2));

    // Added back, it is a member again.
    leader.apply(vec![membership(4, &[1, 2, 3, 4])]).await.expect("add 2 back");
    assert!(!leader.store().is_retired(2));
}
