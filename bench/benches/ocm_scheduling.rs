//! Criterion benchmark of the pure OCM scheduler (`fleet_placement::ocm`):
//! one pass choosing 100 clusters over 1,000 and 10,000 clusters — the same
//! fleet as the KubeFleet PickN pass of `benches/scheduling.rs`, with OCM's
//! extras (set labels, claims, allocatable CPU and memory, add-on scores,
//! other placements' decisions, previous decisions) — without and with a
//! spread constraint; and the same predicate (`env=prod` in sets 0-2, every
//! feasible cluster chosen) as a label selector and as a `celSelector`
//! expression, whose difference over 1,000 clusters is the per-cluster cost
//! of CEL. Run with
//! `cargo bench -p fleet-bench --bench ocm_scheduling` (add `-- --quick`
//! for a short run).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fleet_api::ocm::addon_score::AddOnPlacementScoreStatus;
use fleet_api::ocm::clusterset::CLUSTER_SET_LABEL;
use fleet_api::ocm::placement::{apply_defaults, PlacementSpec};
use fleet_api::quantity::Quantity;
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::ocm::{
    schedule, AddOnScores, ClusterSet, DecisionCounts, OcmRequest, RecordedScores, ALLOCATABLE_CPU, ALLOCATABLE_MEMORY,
};
use serde_json::json;

use common::fleet;

mod common;

/// Now, for toleration periods and score expiry.
const NOW: i64 = 1_714_557_600;

/// Everything a pass reads besides the spec.
struct Inputs {
    clusters: Vec<ClusterInfo>,
    sets: Vec<ClusterSet>,
    bound: Vec<String>,
    decided: Vec<String>,
    counts: DecisionCounts,
    addon: AddOnScores,
    recorded: RecordedScores,
}

/// The shared fleet with OCM's extras: 4 sets by label, a region claim,
/// allocatable CPU and memory, an add-on score per cluster, 3 decisions of
/// other placements on every 7th cluster, and 100 previous decisions.
fn inputs(count: usize) -> Inputs {
    let mut clusters = fleet(count);
    let mut addon = AddOnScores::default();
    let mut counts = DecisionCounts::default();
    for (i, c) in clusters.iter_mut().enumerate() {
        c.labels.insert(CLUSTER_SET_LABEL, &format!("set-{}", i % 4));
        c.claims.insert("region", &format!("r{}", i % 10));
        c.properties.insert(ALLOCATABLE_CPU, Quantity::from_units(4 + ((i * 31) % 60) as i64));
        c.properties.insert(ALLOCATABLE_MEMORY, Quantity::from_units(((16 + (i * 17) % 240) as i64) << 30));
        let status: AddOnPlacementScoreStatus =
            serde_json::from_value(json!({"scores": [{"name": "cpuratio", "value": (i * 13) % 201}]}))
                .unwrap_or_default();
        addon.insert(&c.name, "default", status);
        if i % 7 == 0 {
            for _ in 0..3 {
                counts.add(&c.name);
            }
        }
    }
    let decided = clusters.iter().step_by(count / 100).take(100).map(|c| c.name.clone()).collect();
    Inputs {
        clusters,
        sets: (0..4).map(|i| ClusterSet { name: format!("set-{i}"), spec: Default::default() }).collect(),
        bound: vec!["set-0".into(), "set-1".into(), "set-2".into(), "global".into()],
        decided,
        counts,
        addon,
        recorded: RecordedScores::default(),
    }
}

/// 100 clusters of three sets: two predicates (labels and a claim; a
/// label), every prioritizer, tolerations, decision groups; optionally a
/// spread over the region claim.
fn placement(spread: bool) -> PlacementSpec {
    let mut v = json!({
        "numberOfClusters": 100,
        "clusterSets": ["set-0", "set-1", "set-2"],
        "predicates": [
            {"requiredClusterSelector": {
                "labelSelector": {"matchLabels": {"env": "prod"}},
                "claimSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1", "r2", "r3", "r5", "r8"]}]}}},
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}
        ],
        "prioritizerPolicy": {"mode": "Additive", "configurations": [
            {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2},
            {"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}},
            {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 3},
            {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "default", "scoreName": "cpuratio"}}}
        ]},
        "tolerations": [
            {"key": "dedicated", "operator": "Exists"},
            {"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}
        ],
        "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "25%", "decisionGroups": [
            {"groupName": "canary", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "z0"}}}}
        ]}}
    });
    if spread {
        v["spreadPolicy"] =
            json!({"spreadConstraints": [{"topologyKey": "region", "topologyKeyType": "Claim", "maxSkew": 2}]});
    }
    let mut spec: PlacementSpec = serde_json::from_value(v).unwrap_or_default();
    apply_defaults(&mut spec);
    spec
}

fn request<'a>(spec: &'a PlacementSpec, inputs: &'a Inputs) -> OcmRequest<'a> {
    OcmRequest {
        placement_name: "bench",
        spec,
        clusters: &inputs.clusters,
        cluster_sets: &inputs.sets,
        bound_sets: &inputs.bound,
        decided: &inputs.decided,
        other_decisions: &inputs.counts,
        addon_scores: &inputs.addon,
        recorded: &inputs.recorded,
        now: NOW,
    }
}

fn ocm_pass(c: &mut Criterion) {
    for (group_name, spread) in [("ocm_schedule_100", false), ("ocm_schedule_100_spread", true)] {
        let mut group = c.benchmark_group(group_name);
        let spec = placement(spread);
        for count in [1_000usize, 10_000] {
            let inputs = inputs(count);
            // Not a degenerate pass: it finds its 100 clusters among many candidates.
            let outcome = schedule(&request(&spec, &inputs));
            assert_eq!(outcome.chosen.len(), 100);
            assert!(outcome.candidates.len() > count / 10, "{} candidates", outcome.candidates.len());
            group.throughput(Throughput::Elements(count as u64));
            group.bench_with_input(BenchmarkId::from_parameter(count), &inputs, |b, inputs| {
                b.iter(|| black_box(schedule(black_box(&request(&spec, inputs)))))
            });
        }
        group.finish();
    }
}

/// A placement choosing every cluster of sets 0-2 labelled `env=prod`,
/// by a label selector or by the equivalent CEL expression.
fn env_prod(cel: bool) -> PlacementSpec {
    let selector = if cel {
        json!({"celSelector": {"celExpressions": ["managedCluster.metadata.labels['env'] == 'prod'"]}})
    } else {
        json!({"labelSelector": {"matchLabels": {"env": "prod"}}})
    };
    let v = json!({
        "clusterSets": ["set-0", "set-1", "set-2"],
        "predicates": [{"requiredClusterSelector": selector}],
    });
    let mut spec: PlacementSpec = serde_json::from_value(v).unwrap_or_default();
    apply_defaults(&mut spec);
    spec
}

fn cel_against_labels(c: &mut Criterion) {
    let count = 1_000usize;
    let inputs = inputs(count);
    let mut group = c.benchmark_group("ocm_select_env_prod");
    group.throughput(Throughput::Elements(count as u64));
    let by_labels = schedule(&request(&env_prod(false), &inputs));
    for (name, cel) in [("labels", false), ("cel", true)] {
        let spec = env_prod(cel);
        // Both select the same clusters, and many of them.
        let outcome = schedule(&request(&spec, &inputs));
        assert_eq!(outcome.chosen, by_labels.chosen);
        assert!(outcome.chosen.len() > count / 4, "{} chosen", outcome.chosen.len());
        group.bench_function(BenchmarkId::new(name, count), |b| {
            b.iter(|| black_box(schedule(black_box(&request(&spec, &inputs)))))
        });
    }
    group.finish();
}

criterion_group!(benches, ocm_pass, cel_against_labels);
criterion_main!(benches);
