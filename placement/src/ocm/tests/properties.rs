//! Property tests over random fleets and placements: decisions are
//! feasible, as many as asked (or feasible), ranked, deterministic, and
//! paged without loss.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::ocm::ALLOCATABLE_CPU;

/// A random cluster (its name is the map key): region, tier, CPU, maybe a
/// taint, maybe leaving.
type Traits = (u8, u8, Option<u8>, u8, bool);

fn arb_fleet() -> impl Strategy<Value = std::collections::BTreeMap<String, Traits>> {
    let traits = (0u8..3, 0u8..2, proptest::option::of(0u8..9), 0u8..4, proptest::bool::weighted(0.1));
    proptest::collection::btree_map("[a-f][0-9]{1,2}", traits, 0..40)
}

fn build((name, (region, tier, cpu, taint, leaving)): (&String, &Traits)) -> ClusterInfo {
    let mut c =
        cluster(name, &[("region", ["r0", "r1", "r2"][*region as usize]), ("tier", ["x", "y"][*tier as usize])]);
    if let Some(cpu) = cpu {
        c = with_property(c, ALLOCATABLE_CPU, &cpu.to_string());
    }
    match taint {
        1 => c = with_taint(c, "k", "NoSelect", None),
        2 => c = with_taint(c, "k", "PreferNoSelect", None),
        _ => {}
    }
    c.leaving = *leaving;
    c
}

fn arb_spec() -> impl Strategy<Value = serde_json::Value> {
    (proptest::option::of(0i64..40), -10i64..=10, -10i64..=10, -10i64..=10, any::<bool>(), any::<bool>(), 1i64..=5).prop_map(
        |(n, wb, ws, wc, tier_x, per_group, per)| {
            let mut spec = json!({
                "prioritizerPolicy": exact(&[("Balance", wb), ("Steady", ws), ("ResourceAllocatableCPU", wc)]),
                "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": if per_group { json!(per) } else { json!("100%") }}}
            });
            if let Some(n) = n {
                spec["numberOfClusters"] = json!(n);
            }
            if tier_x {
                spec["predicates"] = json!([{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "x"}}}}]);
            }
            spec
        },
    )
}

proptest! {
    #[test]
    fn decisions_are_feasible_ranked_deterministic_and_paged(
        fleet in arb_fleet(),
        placement in arb_spec(),
        decided in proptest::collection::vec("[a-f][0-9]{1,2}", 0..6),
        counts in proptest::collection::vec("[a-f][0-9]{1,2}", 0..10),
    ) {
        let clusters: Vec<ClusterInfo> = fleet.iter().map(build).collect();
        let mut f = Fixture::new(clusters.clone());
        f.decided = decided;
        for c in &counts {
            f.counts.add(c);
        }
        let spec = spec(placement);
        let outcome = f.run(&spec);

        // Chosen ⊆ feasible, flags agree, count = min(N, feasible).
        let feasible: Vec<&str> = outcome.candidates.iter().map(|c| c.cluster.as_str()).collect();
        let flagged: Vec<&str> = outcome.candidates.iter().filter(|c| c.chosen).map(|c| c.cluster.as_str()).collect();
        prop_assert_eq!(&flagged, &outcome.chosen.iter().map(String::as_str).collect::<Vec<_>>());
        let want = spec.number_of_clusters.map_or(feasible.len(), |n| n as usize);
        prop_assert_eq!(outcome.chosen.len(), want.min(feasible.len()));
        for name in &outcome.chosen {
            let info = clusters.iter().find(|c| &c.name == name).unwrap();
            prop_assert!(!info.leaving);
            prop_assert!(!info.taints.iter().any(|t| t.effect == "NoSelect"));
        }

        // Ranked: a chosen total beats every left-out one, ties by name.
        for c in outcome.candidates.iter().filter(|c| c.chosen) {
            for l in outcome.candidates.iter().filter(|c| !c.chosen) {
                prop_assert!(c.total > l.total || (c.total == l.total && c.cluster < l.cluster), "{:?} vs {:?}", c, l);
            }
        }

        // Deterministic, whatever the input order.
        let mut reversed = Fixture::new(clusters.iter().rev().cloned().collect());
        reversed.decided = f.decided.clone();
        reversed.counts = f.counts.clone();
        prop_assert_eq!(&reversed.run(&spec), &outcome);

        // Pages: at most 100 each, named in sequence, together exactly the chosen.
        let mut paged: Vec<&str> = Vec::new();
        for (i, page) in outcome.pages.iter().enumerate() {
            prop_assert!(page.decisions.len() <= 100);
            prop_assert_eq!(&page.name, &format!("demo-decision-{}", i + 1));
            paged.extend(page.decisions.iter().map(|d| d.cluster_name.as_str()));
        }
        paged.sort_unstable();
        prop_assert_eq!(paged, outcome.chosen.iter().map(String::as_str).collect::<Vec<_>>());
        let counted: i64 = outcome.group_statuses.iter().map(|g| g.cluster_count).sum();
        prop_assert_eq!(counted, outcome.chosen.len() as i64);
    }
}
