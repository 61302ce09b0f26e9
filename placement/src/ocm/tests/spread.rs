//! Spread constraints: KubeFleet's topology spread over label or claim
//! values, `DoNotSchedule` vs `ScheduleAnyway` (OCM's default).

use serde_json::json;

use super::*;
use crate::ocm::ALLOCATABLE_CPU;

fn regions() -> Fixture {
    Fixture::new(vec![
        cluster("e1", &[("region", "east")]),
        cluster("e2", &[("region", "east")]),
        cluster("e3", &[("region", "east")]),
        cluster("w1", &[("region", "west")]),
    ])
}

#[test]
fn do_not_schedule_stops_at_max_skew() {
    let outcome = regions().run_json(json!({"numberOfClusters": 4, "prioritizerPolicy": exact(&[]),
        "spreadPolicy": {"spreadConstraints": [{"topologyKey": "region", "topologyKeyType": "Label", "whenUnsatisfiable": "DoNotSchedule"}]}}));
    assert_eq!(outcome.chosen, ["e1", "e2", "w1"]);
    assert_eq!(outcome.satisfied.message, "1 cluster decisions unscheduled");
    let e3 = &outcome.candidates[2];
    assert!(!e3.chosen);
    assert_eq!(
        e3.left_out.as_deref(),
        Some("violated doNotSchedule topology spread constraint \"region\" (max skew 1)")
    );
}

#[test]
fn schedule_anyway_is_the_default_and_only_ranks_lower() {
    let outcome = regions().run_json(json!({"numberOfClusters": 4, "prioritizerPolicy": exact(&[]),
        "spreadPolicy": {"spreadConstraints": [{"topologyKey": "region", "topologyKeyType": "Label"}]}}));
    assert_eq!(outcome.chosen, ["e1", "e2", "e3", "w1"]);
    assert_eq!(outcome.candidates[2].spread_score, crate::scheduler::plugins::SCHEDULE_ANYWAY_PENALTY);
}

#[test]
fn claim_spread_beats_a_better_total() {
    let zone = |name: &str, z: &str, cpu: &str| {
        with_property(with_claims(cluster(name, &[]), &[("zone", z)]), ALLOCATABLE_CPU, cpu)
    };
    let f = Fixture::new(vec![zone("a1", "a", "8"), zone("a2", "a", "7"), zone("b1", "b", "1")]);
    let by_cpu = |spread: serde_json::Value| json!({"numberOfClusters": 2, "prioritizerPolicy": exact(&[("ResourceAllocatableCPU", 1)]), "spreadPolicy": spread});
    assert_eq!(f.run_json(by_cpu(json!({}))).chosen, ["a1", "a2"]);
    let claim = json!({"spreadConstraints": [{"topologyKey": "zone", "topologyKeyType": "Claim"}]});
    assert_eq!(f.run_json(by_cpu(claim)).chosen, ["a1", "b1"]);
    // The same key as a label: no cluster has it, so nothing is spread.
    let label = json!({"spreadConstraints": [{"topologyKey": "zone", "topologyKeyType": "Label"}]});
    assert_eq!(f.run_json(by_cpu(label)).chosen, ["a1", "a2"]);
}
