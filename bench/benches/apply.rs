//! Criterion benchmark of the state machine's apply (`fleet-statemachine`):
//! entries of a batch of ConfigMap writes (1 KiB of data each, the load of
//! `fleet-bench put`) applied to a real redb file that already holds objects.
//! Every node of the hub runs this for every write, so its cost per write
//! bounds the hub's throughput. Also: deleting a Namespace in stores of
//! two sizes (the cascade reads only that namespace's keys). Run with
//! `cargo bench -p fleet-bench --bench apply` (`-- namespace_delete` for
//! the latter alone).

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fleet_api::Object;
use fleet_statemachine::{Command, Op, Proposal, Store};
use openraft::{CommittedLeaderId, EntryPayload, LogId};
use serde_json::json;

/// How often an apply is fsync'd (as `DURABLE_EVERY` in the state machine).
const DURABLE_EVERY: u64 = 64;

/// Objects in the store before measuring.
const PRELOAD: u64 = 20_000;

fn config_map(client: u64, key: u64, seq: u64) -> Object {
    let mut data = format!("{seq:016x}");
    data.extend(std::iter::repeat_n('x', 1024 - data.len()));
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": format!("bench-{client}-{key}"), "namespace": "default"},
        "data": {"v": data},
    }))
    .expect("a valid ConfigMap")
}

/// One entry of `batch` Apply commands, spread over 256 clients' keys as
/// the load tool spreads them; `seq` makes every value new.
fn entry(index: u64, batch: u64, seq: &mut u64, keys: u64) -> openraft::Entry<fleet_statemachine::TypeConfig> {
    let commands = (0..batch)
        .map(|_| {
            *seq += 1;
            let (client, key) = (*seq % 256, (*seq / 256) % keys);
            let object = config_map(client, key, *seq);
            Command {
                now: "2026-11-21T00:00:00Z".into(),
                ops: vec![Op::Apply { object, uid: format!("uid-{client}-{key}") }],
            }
        })
        .collect();
    openraft::Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Proposal::new(commands).expect("encodable commands")),
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    index: u64,
    seq: u64,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Store::open(&dir.path().join("state.redb")).expect("a new store");
    let mut f = Fixture { _dir: dir, store, index: 0, seq: 0 };
    while f.seq < PRELOAD {
        f.index += 1;
        let e = entry(f.index, 500, &mut f.seq, u64::MAX);
        f.store.apply_entries(vec![e], true).expect("preload");
    }
    f
}

/// Creates (new keys) and updates (a small key space, so objects exist),
/// with 32 and 96 writes per entry (the batch sizes the hub sees).
fn apply(c: &mut Criterion) {
    let mut group = c.benchmark_group("apply");
    for (name, keys) in [("create", u64::MAX), ("update", 8)] {
        for batch in [32u64, 96] {
            let Fixture { _dir, store, mut index, mut seq } = fixture();
            group.throughput(Throughput::Elements(batch));
            group.bench_with_input(BenchmarkId::new(name, batch), &batch, |b, &batch| {
                b.iter_batched(
                    || {
                        index += 1;
                        // Every 64th apply is fsync'd, as the state machine does.
                        (entry(index, batch, &mut seq, keys), index.is_multiple_of(DURABLE_EVERY))
                    },
                    |(e, durable)| store.apply_entries(vec![e], durable).expect("apply"),
                    criterion::BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

/// One entry of one command (the ops of a namespace's life).
fn single(index: u64, ops: Vec<Op>) -> openraft::Entry<fleet_statemachine::TypeConfig> {
    let command = Command { now: "2026-11-21T00:00:00Z".into(), ops };
    openraft::Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Proposal::new(vec![command]).expect("encodable commands")),
    }
}

/// Deleting a Namespace of 10 ConfigMaps, in a store of 2,000 and of
/// 20,000 objects in another namespace: the cascade reads the namespace
/// index, so the ratio of the two should stay near 1 (a scan of every key,
/// as before, grows with the store).
fn namespace_delete(c: &mut Criterion) {
    let mut group = c.benchmark_group("namespace_delete");
    group.sample_size(20);
    for preload in [2_000u64, 20_000] {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = Store::open(&dir.path().join("state.redb")).expect("a new store");
        let (mut index, mut seq) = (0, 0);
        while seq < preload {
            index += 1;
            store.apply_entries(vec![entry(index, 500, &mut seq, u64::MAX)], true).expect("preload");
        }
        let namespace: Object =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}))
                .expect("a valid Namespace");
        group.bench_with_input(BenchmarkId::new("objects_in_store", preload), &preload, |b, _| {
            b.iter_batched(
                || {
                    let mut ops = vec![Op::Apply { object: namespace.clone(), uid: "uid-ns".into() }];
                    for i in 0..10 {
                        let mut object = config_map(0, i, i);
                        object.metadata.namespace = Some("doomed".into());
                        ops.push(Op::Apply { object, uid: format!("uid-doomed-{i}") });
                    }
                    index += 1;
                    store.apply_entries(vec![single(index, ops)], false).expect("create the namespace");
                    index += 1;
                    let delete = Op::Delete { key: fleet_api::ObjectKey::of(&namespace), resource_version: None };
                    single(index, vec![delete])
                },
                |e| store.apply_entries(vec![e], false).expect("delete the namespace"),
                criterion::BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, apply, namespace_delete);
criterion_main!(benches);
