//! A staged update run driven to the end on a real store without Raft: the
//! placement controller and the run controller take turns, as the leader's
//! workers would, and agents report their Works available in between.

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::staged::{run_status_of, SUCCEEDED};
use fleet_api::Object;
use serde_json::json;

use super::*;
use crate::controllers::testkit::{list, member, report_works_available, settle_placement, Fixture, NOW};

const UNIX_NOW: i64 = 1_795_773_600;

/// Commits each step of the run at `key` until it is done.
fn settle_run(fixture: &mut Fixture, clusters: &[ClusterInfo], key: &ObjectKey) {
    for _ in 0..50 {
        match next_step(&fixture.store, clusters, &OverrideIndex::default(), key, UNIX_NOW * 1000).unwrap() {
            Next::Write(step) | Next::WriteLast(step) => fixture.apply(step.ops, NOW),
            Next::WriteEach(steps) => steps.into_iter().for_each(|s| fixture.apply(s.ops, NOW)),
            Next::Done { .. } => return,
        }
    }
    panic!("the run did not settle in 50 steps");
}

fn condition(object: &Object, type_: &str) -> Option<String> {
    fleet_api::conditions::find(&run_status_of(object).conditions, type_).map(|c| c.status.clone())
}

#[test]
fn a_run_rolls_a_placement_out_stage_by_stage_to_success() {
    let mut fixture = Fixture::new();
    for ns in ["app", "fleet-member-canary", "fleet-member-prod"] {
        fixture.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}), NOW);
    }
    let placement = fixture.create(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
               "metadata": {"name": "web", "generation": 1},
               "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
                        "policy": {"placementType": "PickAll"},
                        "strategy": {"type": "External"}}}),
        NOW,
    );
    fixture.create(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterStagedUpdateStrategy",
        "metadata": {"name": "rings"},
        "spec": {"stages": [
            {"name": "first", "labelSelector": {"matchLabels": {"ring": "canary"}}},
            {"name": "second", "labelSelector": {"matchLabels": {"ring": "prod"}}}
        ]}}),
        NOW,
    );
    // The run reads the stored clusters' labels, the scheduler the cache.
    let members = [member("canary", json!({"ring": "canary"})), member("prod", json!({"ring": "prod"}))];
    for m in &members {
        fixture.create(serde_json::to_value(m).unwrap(), NOW);
    }
    let clusters: Vec<ClusterInfo> = members.iter().map(ClusterInfo::from_member).collect();
    let placement_key = ObjectKey::of(&placement);
    settle_placement(&mut fixture, &clusters, &placement_key, UNIX_NOW);
    assert!(list(&fixture, FLEET_PLACEMENT_GROUP, "Work").is_empty(), "an external strategy waits for a run");

    let run = fixture.create(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterStagedUpdateRun",
               "metadata": {"name": "v1", "generation": 1},
               "spec": {"placementName": "web", "resourceSnapshotIndex": "0", "stagedRolloutStrategyName": "rings"}}),
        NOW,
    );
    let run_key = ObjectKey::of(&run);
    let mut reached = Vec::new();
    for _ in 0..10 {
        settle_run(&mut fixture, &clusters, &run_key);
        settle_placement(&mut fixture, &clusters, &placement_key, UNIX_NOW);
        let works = list(&fixture, FLEET_PLACEMENT_GROUP, "Work");
        let namespaces: Vec<String> = works.iter().filter_map(|w| w.metadata.namespace.clone()).collect();
        if reached.last() != Some(&namespaces) {
            reached.push(namespaces);
        }
        report_works_available(&mut fixture);
        let (run, _) = fixture.store.get(&run_key).unwrap();
        if run.as_ref().and_then(|r| condition(r, SUCCEEDED)).as_deref() == Some("True") {
            break;
        }
    }
    let (run, _) = fixture.store.get(&run_key).unwrap();
    let run = run.unwrap();
    assert_eq!(condition(&run, SUCCEEDED).as_deref(), Some("True"), "{:?}", run.rest.get("status"));
    // The canary stage's cluster first, then the production one beside it.
    assert_eq!(
        reached,
        [vec!["fleet-member-canary".to_string()], vec!["fleet-member-canary".into(), "fleet-member-prod".into()]]
    );
}
