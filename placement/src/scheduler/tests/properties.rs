//! Property tests: PickN's invariants over random fleets and policies.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::json;

use super::*;

/// A generated cluster: region, zone, env=prod?, tainted?, eligible?, cpu.
#[derive(Debug, Clone)]
struct Gen {
    region: Option<u8>,
    zone: u8,
    prod: bool,
    tainted: bool,
    eligible: bool,
    cpu: u16,
}

fn gen_cluster() -> impl Strategy<Value = Gen> {
    (
        proptest::option::weighted(0.9, 0u8..4),
        0u8..6,
        any::<bool>(),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.85),
        0u16..64,
    )
        .prop_map(|(region, zone, prod, tainted, eligible, cpu)| Gen {
            region,
            zone,
            prod,
            tainted,
            eligible,
            cpu,
        })
}

fn build(gens: &[Gen]) -> Vec<ClusterInfo> {
    gens.iter()
        .enumerate()
        .map(|(i, g)| {
            let mut labels = vec![("env", if g.prod { "prod" } else { "dev" })];
            let region = g.region.map(|r| format!("r{r}"));
            let zone = format!("z{}", g.zone);
            if let Some(r) = &region {
                labels.push(("region", r.as_str()));
            }
            labels.push(("zone", zone.as_str()));
            let mut c = with_props(cluster(&format!("c{i:02}"), &labels), &[("cpu", &g.cpu.to_string())]);
            if g.tainted {
                c = with_taint(c, "maintenance", "true");
            }
            if !g.eligible {
                c = ineligible(c, "cluster is not healthy (HeartbeatTimeout)");
            }
            c
        })
        .collect()
}

/// A PickN policy: maybe a required env=prod term, a preferred label term and
/// a cpu sorter, maybe a region spread constraint.
fn build_policy(n: i64, required: bool, spread: Option<(i64, bool)>) -> PlacementPolicy {
    let mut p = json!({"placementType": "PickN", "numberOfClusters": n, "affinity": {"clusterAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"labelSelector": {"matchLabels": {"zone": "z1"}}}},
        {"weight": 20, "preference": {"propertySorter": {"name": "cpu", "sortOrder": "Descending"}}}
    ]}}});
    if required {
        p["affinity"]["clusterAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
            json!({"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"env": "prod"}}}]});
    }
    if let Some((max_skew, hard)) = spread {
        let when = if hard { "DoNotSchedule" } else { "ScheduleAnyway" };
        p["topologySpreadConstraints"] =
            json!([{"maxSkew": max_skew, "topologyKey": "region", "whenUnsatisfiable": when}]);
    }
    policy(p)
}

/// Whether a generated cluster passes eligibility and the filters.
fn candidate(g: &Gen, required: bool) -> bool {
    g.eligible && !g.tainted && (!required || g.prod)
}

/// Random existing bindings over the fleet.
fn gen_bindings(count: usize) -> impl Strategy<Value = Vec<(usize, u8, bool)>> {
    prop::collection::vec((0..count.max(1), 0u8..3, any::<bool>()), 0..count.min(8) + 1)
}

fn to_bindings(raw: &[(usize, u8, bool)], clusters: &[ClusterInfo]) -> Vec<ExistingBinding> {
    let mut seen = BTreeSet::new();
    raw.iter()
        .filter(|(i, _, _)| *i < clusters.len() && seen.insert(*i))
        .map(|&(i, state, current)| {
            let state = [STATE_SCHEDULED, STATE_BOUND, STATE_UNSCHEDULED][state as usize];
            binding(&clusters[i].name, state, if current { SNAP } else { OLD_SNAP }, score(0, 0))
        })
        .collect()
}

fn scenario() -> impl Strategy<Value = (Vec<Gen>, i64, bool, Option<(i64, bool)>)> {
    (
        prop::collection::vec(gen_cluster(), 0..30),
        0i64..12,
        any::<bool>(),
        proptest::option::of((1i64..3, any::<bool>())),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pick_n_chooses_at_most_n_never_filtered_never_twice(
        (gens, n, required, spread) in scenario(),
        raw in gen_bindings(30),
    ) {
        let clusters = build(&gens);
        let bindings = to_bindings(&raw, &clusters);
        let out = run(&build_policy(n, required, spread), None, &clusters, &bindings);
        prop_assert!(out.chosen.len() as i64 <= n);
        let chosen: BTreeSet<&str> = names(&out.chosen).into_iter().collect();
        prop_assert_eq!(chosen.len(), out.chosen.len(), "a cluster chosen twice");
        for d in &out.filtered {
            prop_assert!(!chosen.contains(d.cluster_name.as_str()), "{} chosen and filtered", d.cluster_name);
        }
        // Without bindings, every chosen cluster is a candidate.
        let fresh = run(&build_policy(n, required, spread), None, &clusters, &[]);
        for d in &fresh.chosen {
            let i: usize = d.cluster_name[1..].parse().unwrap();
            prop_assert!(candidate(&gens[i], required), "{} is not a candidate", d.cluster_name);
        }
        // No cluster appears twice in the status lists; only not-chosen ones beyond the reported few are left out
        // (and every unchosen one when there is nothing to pick: nothing is judged).
        let listed: BTreeSet<&str> =
            out.chosen.iter().chain(&out.not_chosen).chain(&out.filtered).map(|d| d.cluster_name.as_str()).collect();
        prop_assert_eq!(listed.len(), out.chosen.len() + out.not_chosen.len() + out.filtered.len());
        prop_assert!(out.not_chosen.len() <= crate::scheduler::MAX_NOT_CHOSEN_REPORTED);
        if n == 0 || out.settled {
            prop_assert_eq!(listed.len(), out.chosen.len());
        } else if out.not_chosen.len() < crate::scheduler::MAX_NOT_CHOSEN_REPORTED {
            prop_assert_eq!(listed.len(), clusters.len());
        }
    }

    #[test]
    fn do_not_schedule_spread_never_exceeds_max_skew((gens, n, required, _) in scenario(), max_skew in 1i64..3) {
        let clusters = build(&gens);
        let out = run(&build_policy(n, required, Some((max_skew, true))), None, &clusters, &[]);
        let mut counts: BTreeMap<u8, i64> = BTreeMap::new();
        for g in gens.iter().filter(|g| candidate(g, required)) {
            if let Some(r) = g.region {
                counts.insert(r, 0);
            }
        }
        for d in &out.chosen {
            let i: usize = d.cluster_name[1..].parse().unwrap();
            if let Some(r) = gens[i].region {
                *counts.get_mut(&r).unwrap() += 1;
            }
        }
        if let (Some(max), Some(min)) = (counts.values().max(), counts.values().min()) {
            prop_assert!(max - min <= max_skew, "counts {:?}", counts);
        }
    }

    #[test]
    fn scale_out_keeps_every_previous_choice((gens, n, required, spread) in scenario(), more in 0i64..6, bound in any::<bool>()) {
        let clusters = build(&gens);
        let p = build_policy(n, required, spread);
        let first = run(&p, None, &clusters, &[]);
        let mut bindings = apply(&[], &first.actions, SNAP);
        if bound {
            bind_all(&mut bindings);
        }
        let second = run(&p, Some(n + more), &clusters, &bindings);
        let now: BTreeSet<&str> = names(&second.chosen).into_iter().collect();
        for d in &first.chosen {
            prop_assert!(now.contains(d.cluster_name.as_str()), "{} was dropped", d.cluster_name);
        }
        let only_creates = second.actions.iter().all(|a| matches!(a, BindingAction::Create { .. }));
        prop_assert!(only_creates, "{:?}", second.actions);
        prop_assert_eq!(active_clusters(&apply(&bindings, &second.actions, SNAP)).len(), second.chosen.len());
    }

    #[test]
    fn result_does_not_depend_on_input_order(
        (gens, n, required, spread) in scenario(),
        raw in gen_bindings(30),
        seed in any::<u64>(),
    ) {
        let clusters = build(&gens);
        let bindings = to_bindings(&raw, &clusters);
        let p = build_policy(n, required, spread);
        let out = run(&p, None, &clusters, &bindings);
        let mut shuffled = clusters.clone();
        let mut shuffled_bindings = bindings.clone();
        shuffle(&mut shuffled, seed);
        shuffle(&mut shuffled_bindings, seed.rotate_left(17));
        prop_assert_eq!(out, run(&p, None, &shuffled, &shuffled_bindings));
    }
}

/// A deterministic Fisher–Yates shuffle (splitmix64).
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        items.swap(i, (z % (i as u64 + 1)) as usize);
    }
}
