//! Criterion benchmark of Work generation with overrides: the
//! Works of a placement of 50 objects rendered for 1,000 clusters, with 3
//! override rules (a CRO on the namespace with a variable, an RO replacing
//! a field for one environment, an RO deleting an object for another)
//! against the same without overrides, in one run so the ratio is
//! meaningful. The group is prepared once, as the controller does per
//! pass. Beside them, the state machine's apply of one controller step's
//! Works, the floor of the Raft write that carries them; and what one
//! placement pass reads of 1,000 stored overrides, listed and decoded as
//! before against the leader's index. Run with `cargo bench -p fleet-bench --bench overrides`.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fleet_api::kinds::DeclaredScopes;
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::overrides::{CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, RESOURCE_OVERRIDE_SNAPSHOT};
use fleet_api::snapshot::IS_LATEST_LABEL;
use fleet_api::Object;
use fleet_placement::overrides::{OverrideIndex, OverrideSnapshot};
use fleet_placement::works::{desired_works_prepared, ClusterOverrides, PreparedGroup};
use fleet_statemachine::{Command, ListQuery, Op, Proposal, Store};
use openraft::{CommittedLeaderId, EntryPayload, LogId};
use serde_json::{json, Value};

const CLUSTERS: usize = 1_000;
const OBJECTS: usize = 50;
/// Most Work writes of one controller step.
const STEP_WORKS: usize = 100;
/// How often an apply is fsync'd (as in the state machine).
const DURABLE_EVERY: u64 = 64;

fn object(value: Value) -> Object {
    serde_json::from_value(value).expect("a valid object")
}

/// A resource snapshot of a namespace with 24 Deployments and 25 ConfigMaps.
fn group() -> Vec<Object> {
    let mut resources = vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}})];
    for i in 1..OBJECTS {
        resources.push(if i % 2 == 0 {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": format!("app-{i}"), "namespace": "web", "labels": {"app": format!("app-{i}")}},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": format!("app-{i}")}},
                         "template": {"metadata": {"labels": {"app": format!("app-{i}")}},
                                      "spec": {"containers": [{"name": "app", "image": "registry/app:1.4",
                                               "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}})
        } else {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("config-{i}"), "namespace": "web"},
                "data": {"settings.yaml": "a: 1\nb: two\nc: [3, 4, 5]\n".repeat(8)}})
        });
    }
    vec![object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceSnapshot",
        "metadata": {"name": "web-0-snapshot", "labels": {"kubernetes-fleet.io/resource-index": "0"}},
        "spec": {"selectedResources": resources}}))]
}

fn snapshot(cluster_scoped: bool, name: &str, spec: Value) -> OverrideSnapshot {
    OverrideSnapshot {
        cluster_scoped,
        name: name.into(),
        namespace: if cluster_scoped { String::new() } else { "web".into() },
        spec: serde_json::from_value(spec).expect("a valid override spec"),
    }
}

/// The three rules: every object of namespace web labelled with the
/// cluster's name; app-2's replicas set on prod; config-1 deleted on test.
fn overrides() -> Vec<OverrideSnapshot> {
    vec![
        snapshot(
            true,
            "label-all-0",
            json!({
            "clusterResourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "web"}],
            "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
                "jsonPatchOverrides": [{"op": "add", "path": "/metadata/annotations", "value": {"placed-on": "${MEMBER-CLUSTER-NAME}"}}]}]}}),
        ),
        snapshot(
            false,
            "scale-0",
            json!({
            "resourceSelectors": [{"group": "apps", "version": "v1", "kind": "Deployment", "name": "app-2"}],
            "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"env": "prod"}}}]},
                "jsonPatchOverrides": [{"op": "replace", "path": "/spec/replicas", "value": 5},
                    {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "registry-${MEMBER-CLUSTER-LABEL-KEY-region}/app:1.4"}]}]}}),
        ),
        snapshot(
            false,
            "drop-0",
            json!({
            "resourceSelectors": [{"group": "", "version": "v1", "kind": "ConfigMap", "name": "config-1"}],
            "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": [{"labelSelector": {"matchLabels": {"env": "test"}}}]},
                "overrideType": "Delete"}]}}),
        ),
    ]
}

fn bench_work_generation(c: &mut Criterion) {
    let placement =
        object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web", "uid": "p"}, "spec": {"resourceSelectors": []}}));
    let group = PreparedGroup::new(&group(), &DeclaredScopes::default());
    let clusters: Vec<(Object, BTreeMap<String, String>)> = (0..CLUSTERS)
        .map(|i| {
            let name = format!("member-{i:04}");
            let binding =
                object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
                "metadata": {"name": format!("web-{name}"), "uid": "b"},
                "spec": {"state": "Bound", "targetCluster": name, "resourceSnapshotName": "web-0-snapshot"}}));
            let labels = BTreeMap::from([
                ("env".to_string(), if i % 4 == 0 { "test" } else { "prod" }.to_string()),
                ("region".to_string(), format!("r{}", i % 10)),
            ]);
            (binding, labels)
        })
        .collect();
    let snapshots = overrides();
    let mut g = c.benchmark_group("work_generation_50_objects_1000_clusters");
    g.throughput(Throughput::Elements(CLUSTERS as u64));
    g.sample_size(10);
    for (label, with) in [("no_overrides", false), ("three_override_rules", true)] {
        g.bench_function(label, |b| {
            b.iter(|| {
                let mut works = 0;
                for (binding, labels) in &clusters {
                    let cluster = fleet_api::binding::spec_of(binding).target_cluster;
                    let context = ClusterOverrides {
                        labels: labels.clone(),
                        snapshots: if with { snapshots.clone() } else { Vec::new() },
                        cluster,
                    };
                    works += desired_works_prepared(&placement, binding, &group, &context).map_or(0, |w| w.len());
                }
                black_box(works)
            })
        });
    }
    g.finish();
}

/// The state machine's apply of the Works of one controller step (100
/// clusters' Works in one entry, rendered with the three rules), on a real
/// redb file: a lower bound of what the Raft write that carries them costs
/// on every node, to set the rendering cost against.
fn bench_apply_works(c: &mut Criterion) {
    let placement =
        object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web", "uid": "p"}, "spec": {"resourceSelectors": []}}));
    let group = PreparedGroup::new(&group(), &DeclaredScopes::default());
    let snapshots = overrides();
    let works: Vec<Object> = (0..STEP_WORKS)
        .flat_map(|i| {
            let name = format!("member-{i:04}");
            let binding =
                object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
                "metadata": {"name": format!("web-{name}"), "uid": "b"},
                "spec": {"state": "Bound", "targetCluster": name.clone(), "resourceSnapshotName": "web-0-snapshot"}}));
            let labels =
                BTreeMap::from([("env".to_string(), "prod".to_string()), ("region".to_string(), "r1".to_string())]);
            let context = ClusterOverrides { labels, snapshots: snapshots.clone(), cluster: name };
            desired_works_prepared(&placement, &binding, &group, &context).expect("rendered")
        })
        .collect();
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Store::open(&dir.path().join("state.redb")).expect("a new store");
    let mut index = 0u64;
    let mut g = c.benchmark_group("apply_works_of_one_step");
    g.throughput(Throughput::Elements(STEP_WORKS as u64));
    g.sample_size(10);
    g.bench_function("100_works", |b| {
        b.iter_batched(
            || {
                index += 1;
                let ops = works
                    .iter()
                    .map(|w| {
                        let mut w = w.clone();
                        w.metadata.annotations.insert("bench/seq".into(), index.to_string());
                        let uid = format!("uid-{}", w.metadata.namespace.clone().unwrap_or_default());
                        Op::Apply { object: w, uid }
                    })
                    .collect();
                let command = Command { now: "2026-11-24T00:00:00Z".into(), ops };
                let entry = openraft::Entry {
                    log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
                    payload: EntryPayload::Normal(Proposal::new(vec![command]).expect("encodable")),
                };
                (entry, index.is_multiple_of(DURABLE_EVERY))
            },
            |(entry, durable)| store.apply_entries(vec![entry], durable).expect("apply"),
            criterion::BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// Overrides in the store for the per-pass read below, each with two
/// snapshots (one latest), each limited to its own placement.
const STORED_OVERRIDES: usize = 1_000;

/// A CRO snapshot `cro-<i>-<n>` limited to placement `web-<i>`.
fn stored_snapshot(i: usize, n: usize, latest: bool) -> Object {
    object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceOverrideSnapshot",
        "metadata": {"name": format!("cro-{i}-{n}"), "uid": format!("uid-{i}-{n}"),
            "labels": {"kubernetes-fleet.io/is-latest-snapshot": latest.to_string(),
                       "kubernetes-fleet.io/parent-resource-override": format!("cro-{i}")}},
        "spec": {"overrideSpec": {"placement": {"name": format!("web-{i}")},
            "clusterResourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": format!("web-{i}")}],
            "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
                "jsonPatchOverrides": [{"op": "add", "path": "/metadata/annotations", "value": {"placed-on": "${MEMBER-CLUSTER-NAME}"}}]}]}},
            "overrideHash": "h"}}))
}

/// What one placement pass reads of the override snapshots, with 1,000
/// overrides (2,000 snapshots) stored: as before (list and decode every
/// CRO and RO snapshot from the store, keep the latest that may concern
/// the placement) against the leader's index (the latest that concern it,
/// and one recorded snapshot by name), in one run so the ratio is
/// meaningful.
fn bench_override_reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Store::open(&dir.path().join("state.redb")).expect("a new store");
    for (index, i) in (0..STORED_OVERRIDES).enumerate() {
        let ops = (0..2).map(|n| Op::Create { object: stored_snapshot(i, n, n == 1) }).collect();
        let command = Command { now: "2026-11-24T00:00:00Z".into(), ops };
        let entry = openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index as u64 + 1),
            payload: EntryPayload::Normal(Proposal::new(vec![command]).expect("encodable")),
        };
        store.apply_entries(vec![entry], false).expect("preload");
    }
    let list = |kind: &str| {
        let query = ListQuery { group: FLEET_PLACEMENT_GROUP.into(), kind: kind.into(), ..Default::default() };
        store.list(&query).expect("list").0
    };
    let every = [list(CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT), list(RESOURCE_OVERRIDE_SNAPSHOT)].concat();
    assert_eq!(every.len(), 2 * STORED_OVERRIDES);
    let index = OverrideIndex::from_objects(&every);
    let mut g = c.benchmark_group("override_snapshots_of_one_pass_1000_overrides");
    g.sample_size(20);
    g.bench_function("list_and_decode_all", |b| {
        b.iter(|| {
            let mut concerning = Vec::new();
            for kind in [CLUSTER_RESOURCE_OVERRIDE_SNAPSHOT, RESOURCE_OVERRIDE_SNAPSHOT] {
                for o in list(kind) {
                    let latest = o.metadata.labels.get(IS_LATEST_LABEL).map(String::as_str) == Some("true");
                    let Some(decoded) = OverrideSnapshot::from_object(&o) else { continue };
                    if latest && decoded.spec.placement.as_ref().is_none_or(|p| p.name == "web-7") {
                        concerning.push(decoded);
                    }
                }
            }
            black_box(concerning)
        })
    });
    g.bench_function("index", |b| {
        b.iter(|| black_box((index.latest_for("web-7"), index.recorded(&["cro-7-0".to_string()], &[]))))
    });
    g.finish();
}

criterion_group!(benches, bench_work_generation, bench_apply_works, bench_override_reads);
criterion_main!(benches);
