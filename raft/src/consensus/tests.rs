//! The pure decisions of consensus: membership changes, the read index and
//! how a too-large write is named.

use fleet_api::{Object, ObjectKey};
use fleet_statemachine::Op;

use super::*;

fn set(ids: &[u64]) -> BTreeSet<u64> {
    ids.iter().copied().collect()
}

fn add(id: u64) -> MembershipChange {
    MembershipChange::Add { id, address: format!("127.0.0.1:70{id:02}") }
}

#[test]
fn adding_a_node_makes_it_a_learner_then_a_voter() {
    let plan = plan_membership(add(4), &set(&[1, 2, 3]), |_| false);
    let want = MembershipPlan::AddVoter { id: 4, address: "127.0.0.1:7004".into(), voters: set(&[1, 2, 3, 4]) };
    assert_eq!(plan, Ok(want));
    // A learner already (a join that stopped half-way) is added the same way.
    let plan = plan_membership(add(4), &set(&[1, 2, 3]), |id| id == 4);
    assert!(matches!(plan, Ok(MembershipPlan::AddVoter { id: 4, .. })));
}

#[test]
fn adding_a_voter_again_is_refused() {
    assert_eq!(plan_membership(add(2), &set(&[1, 2, 3]), |_| true), Err("node 2 is already a voter".into()));
}

#[test]
fn removing_a_voter_leaves_the_others_and_never_the_last() {
    let remove = |id| MembershipChange::Remove { id };
    assert_eq!(plan_membership(remove(2), &set(&[1, 2, 3]), |_| true), Ok(MembershipPlan::Voters(set(&[1, 3]))));
    assert_eq!(
        plan_membership(remove(1), &set(&[1]), |_| true),
        Err("node 1 is the last voter and cannot be removed".into())
    );
}

#[test]
fn removing_a_learner_or_a_stranger() {
    let remove = |id| MembershipChange::Remove { id };
    assert_eq!(plan_membership(remove(4), &set(&[1, 2, 3]), |id| id == 4), Ok(MembershipPlan::RemoveLearner(4)));
    assert_eq!(plan_membership(remove(9), &set(&[1, 2, 3]), |id| id == 4), Err("node 9 is not a member".into()));
}

#[test]
fn a_read_waits_for_the_leaders_last_entry_when_the_commit_index_lags_it() {
    // A leader restored with its vote after every node restarted: its saved
    // commit index (5) is behind entries it had acknowledged (up to 9).
    assert_eq!(read_index(Some(5), Some(9)), 9);
    assert_eq!(read_index(Some(9), Some(9)), 9);
    assert_eq!(read_index(Some(7), None), 7);
    assert_eq!(read_index(None, None), 0);
}

#[test]
fn a_refused_write_is_named_by_its_first_object_and_size() {
    let object: Object = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "app"}
    }))
    .unwrap();
    let create = Op::Create { object: object.clone() };
    let delete = Op::Delete { key: ObjectKey::of(&object), resource_version: None };
    let one = Command { now: String::new(), ops: vec![create.clone()] };
    assert_eq!(describe(&one), "the write of ConfigMap app/big");
    let two = Command { now: String::new(), ops: vec![delete, create] };
    assert_eq!(describe(&two), "a write of 2 objects (ConfigMap app/big first)");
    assert_eq!(describe(&Command { now: String::new(), ops: Vec::new() }), "an empty write");
}
