//! Criterion benchmarks of the pure scheduler (`fleet-placement`): one PickN
//! pass over a large fleet, and a whole-fleet reschedule (1,000 placements
//! over 1,000 clusters). Clusters and policies are generated
//! deterministically; run with `cargo bench -p fleet-bench --bench scheduling`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fleet_api::placement::PlacementPolicy;
use fleet_placement::scheduler::{schedule, SchedulingRequest};
use serde_json::json;

use common::{fleet, CPU, NODES};

mod common;

/// PickN(n): two required terms (labels + properties), a preferred label
/// term and a property sorter, spread over region (hard) and zone (soft),
/// tolerating `dedicated`.
fn policy(n: i64, min_nodes: i64) -> PlacementPolicy {
    serde_json::from_value(json!({
        "placementType": "PickN",
        "numberOfClusters": n,
        "affinity": {"clusterAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": [
                {"labelSelector": {"matchLabels": {"env": "prod"}},
                 "propertySelector": {"matchExpressions": [{"name": NODES, "operator": "Ge", "values": [min_nodes.to_string()]}]}},
                {"labelSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1", "r2"]}]},
                 "propertySelector": {"matchExpressions": [{"name": CPU, "operator": "Gt", "values": ["100"]}]}}
            ]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 20, "preference": {"labelSelector": {"matchLabels": {"tier": "gold"}}}},
                {"weight": 30, "preference": {"propertySorter": {"name": CPU, "sortOrder": "Descending"}}}
            ]
        }},
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "region", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
        ],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}]
    }))
    .unwrap_or_default()
}

fn pick_n(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_pick_n_100");
    let p = policy(100, 3);
    for count in [1_000usize, 10_000] {
        let clusters = fleet(count);
        group.throughput(Throughput::Elements(count as u64));
        group.bench_with_input(BenchmarkId::from_parameter(count), &clusters, |b, clusters| {
            b.iter(|| {
                let request = SchedulingRequest {
                    policy: &p,
                    number_of_clusters: None,
                    policy_snapshot: "bench-0",
                    clusters,
                    bindings: &[],
                    namespace: None,
                };
                black_box(schedule(black_box(&request)))
            })
        });
    }
    group.finish();
}

fn fleet_reschedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("reschedule_fleet");
    group.sample_size(10);
    let clusters = fleet(1_000);
    let policies: Vec<PlacementPolicy> = (0..1_000).map(|i| policy(1 + i % 100, 1 + i % 10)).collect();
    group.throughput(Throughput::Elements(policies.len() as u64));
    group.bench_function("1000_placements_x_1000_clusters", |b| {
        b.iter(|| {
            for (i, p) in policies.iter().enumerate() {
                let snapshot = format!("placement-{i}-0");
                let request = SchedulingRequest {
                    policy: p,
                    number_of_clusters: None,
                    policy_snapshot: &snapshot,
                    clusters: &clusters,
                    bindings: &[],
                    namespace: None,
                };
                black_box(schedule(black_box(&request)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, pick_n, fleet_reschedule);
criterion_main!(benches);
