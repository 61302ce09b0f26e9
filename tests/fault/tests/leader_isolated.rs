//! A real hub trio with a proxy on every peer link (each node dials its
//! peers through its own proxies, `--peer-dial`), and concurrent clients
//! writing, compare-and-setting, deleting and reading a few ConfigMaps
//! through random nodes while the leader is cut off from its peers and
//! healed. Clients still reach every node, the isolated leader included.
//! Two watchers follow every change throughout: one on a follower that is
//! never cut off, one moving to the next node whenever its stream breaks or
//! goes quiet. At the end a consistent read of every key.
//!
//! Afterwards: the history is linearizable (so no acknowledged write was
//! lost: the final reads would show it), also once the unanswered writes
//! are settled from what the watchers saw; each watch stream holds exactly
//! the other's changes, in order, without duplicates; and no client's reads
//! went back in time. Phases end on counts of completed operations and on
//! leadership observed, never on a fixed sleep.
//!
//! Needs the binaries: `cargo build --bins` first.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fleet_fault::monotonic::{monotonic_reads, read_your_writes};
use fleet_fault::resolve::resolve;
use fleet_fault::watch::{watch_stream_check, Change, EventKind, WatchStream};
use fleet_fault::watcher::{Watched, Watcher};
use fleet_fault::{check_linearizable, Client, Limits, Network, Outcome, Recorder, Response};
use fleet_tests::hub::admin_client;
use fleet_tests::{eventually, Hub, HubOptions};

const KEYS: [&str; 3] = ["k0", "k1", "k2"];
const CLIENTS: u64 = 4;
const NAMESPACE: &str = "fault";
/// After this, an unanswered operation is recorded as indeterminate.
const OP_TIMEOUT: Duration = Duration::from_secs(2);

/// Waits until `done` has grown by `more` operations.
async fn operations(done: &AtomicU64, more: u64, phase: &str) {
    let target = done.load(Ordering::SeqCst) + more;
    eventually(&format!("{more} operations {phase}"), Duration::from_secs(60), || async {
        let now = done.load(Ordering::SeqCst);
        if now >= target {
            Ok(())
        } else {
            Err(format!("{now} of {target}"))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_isolated_and_healed_under_load_keeps_the_history_linearizable() {
    let (hub, network) = trio_behind_proxies().await;
    let leader = hub.wait_leader().await;
    let follower = leader % 3 + 1;

    let recorder = Arc::new(Recorder::new());
    let connect = |ids: &[u64]| ids.iter().map(|id| admin_client(&hub.endpoint(*id), &hub.pki_dir())).collect();
    let pinned = Watcher::spawn(connect(&[follower]), NAMESPACE, recorder.clone(), Duration::from_secs(30));
    let roaming = Watcher::spawn(connect(&[1, 2, 3]), NAMESPACE, recorder.clone(), Duration::from_secs(1));
    // The watchers follow once they have seen a first write: from then on
    // they miss nothing.
    let mut barrier =
        Client::new(0, NAMESPACE, connect(&[1, 2, 3]), Arc::new(Recorder::new()), OP_TIMEOUT).expect("a client");
    let start = barrier_write(&mut barrier).await;
    eventually("the watchers to follow", Duration::from_secs(30), || async {
        let seen = (pinned.seen(), roaming.seen());
        if seen.0 >= start && seen.1 >= start {
            Ok(())
        } else {
            Err(format!("seen {seen:?} of {start}"))
        }
    })
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for process in 1..=CLIENTS {
        let mut client =
            Client::new(process, NAMESPACE, connect(&[1, 2, 3]), recorder.clone(), OP_TIMEOUT).expect("a client");
        let (stop, done) = (stop.clone(), done.clone());
        clients.push(tokio::spawn(async move {
            let mut unknown = 0u64;
            while !stop.load(Ordering::SeqCst) {
                if client.random_op(&KEYS).await == Outcome::Unknown {
                    unknown += 1;
                }
                done.fetch_add(1, Ordering::SeqCst);
            }
            unknown
        }));
    }

    operations(&done, 150, "before the fault").await;
    network.isolate(leader).expect("isolate the leader");
    let successor = new_leader_without(&hub, leader).await;
    operations(&done, 100, "with the old leader isolated").await;
    network.heal();
    let after_heal = hub.wait_leader().await;
    operations(&done, 150, "after healing").await;
    stop.store(true, Ordering::SeqCst);
    let mut unknown = 0;
    for client in clients {
        unknown += client.await.expect("client task");
    }
    let mut last_reader =
        Client::new(CLIENTS + 1, NAMESPACE, connect(&[1, 2, 3]), recorder.clone(), OP_TIMEOUT).expect("a client");
    for key in KEYS {
        final_read(&mut last_reader, key).await;
    }

    // A write after everything else: once a watcher has seen it, it has
    // seen every change the clients made.
    let end = barrier_write(&mut barrier).await;
    let pinned = pinned.finish(end, Duration::from_secs(60)).await.expect("the pinned watcher to reach the end");
    let roaming = roaming.finish(end, Duration::from_secs(60)).await.expect("the roaming watcher to reach the end");
    assert!(pinned.complete && roaming.complete, "a watch expired: the record of commits is incomplete");

    let mut history = recorder.history();
    let report = check_linearizable(&history, Limits::default()).expect("a well-formed history");
    println!(
        "leader {leader} isolated, {successor} elected, {after_heal} after healing; {} operations, {unknown} \
         without an answer; {} changes watched on node {follower}, {} by the roaming watcher ({} reconnections, \
         {} redelivered); {report}",
        history.ops.len(),
        pinned.committed.len(),
        roaming.committed.len(),
        roaming.reconnects,
        roaming.redelivered,
    );
    assert!(report.is_linearizable(), "{report}");
    assert!(report.ops_checked() >= 200, "too few operations constrained the check: {report}");
    let regressions = monotonic_reads(&history);
    assert!(regressions.is_empty(), "reads went back in time: {regressions:?}");
    let regressions = read_your_writes(&history);
    let context: Vec<String> = regressions
        .iter()
        .flat_map(|r| {
            let ops = &history.ops;
            let from = ops[r.earlier].invoke.min(ops[r.op].invoke);
            let key = &ops[r.op].key;
            ops.iter()
                .enumerate()
                .filter(move |(_, o)| {
                    &o.key == key && o.complete.is_none_or(|c| c >= from) && o.invoke <= ops[r.op].invoke
                })
                .map(|(i, o)| format!("#{i} {o}"))
        })
        .collect();
    assert!(regressions.is_empty(), "a client read older than its own write: {regressions:?}\n{}", context.join("\n"));

    let problems = watch_stream_check(&roaming.stream, &changes(&pinned));
    assert!(problems.is_empty(), "the roaming watch against the pinned one: {problems:?}");
    let problems = watch_stream_check(&pinned.stream, &changes(&roaming));
    assert!(problems.is_empty(), "the pinned watch against the roaming one: {problems:?}");

    let settled = resolve(&mut history, &roaming.committed);
    let report = check_linearizable(&history, Limits::default()).expect("a well-formed history");
    println!("unanswered writes settled: {settled:?}; {report}");
    assert!(report.is_linearizable(), "once settled: {report}");
}

/// A trio whose nodes reach each other only through the proxies of a
/// [`Network`]; started and with a leader.
async fn trio_behind_proxies() -> (Hub, Network) {
    let mut hub = Hub::prepare(HubOptions::default());
    let targets: BTreeMap<u64, SocketAddr> =
        (1..=3).map(|id| (id, hub.endpoint(id).parse().expect("a node address"))).collect();
    let network = Network::start(&targets).await.expect("proxies between the nodes");
    for id in 1..=3 {
        hub.set_node_args(id, vec!["--peer-dial".into(), network.peers_for(id).expect("peers")]);
    }
    hub.launch().await;
    (hub, network)
}

/// Waits until both nodes other than `old` agree on a leader other than `old`.
async fn new_leader_without(hub: &Hub, old: u64) -> u64 {
    let others: Vec<u64> = (1..=3).filter(|id| *id != old).collect();
    eventually("a new leader on the majority side", Duration::from_secs(30), || async {
        let mut seen = Vec::new();
        for id in &others {
            seen.push(hub.status(*id).await?.leader);
        }
        match seen.as_slice() {
            [a, b] if a == b && *a != 0 && *a != old => Ok(*a),
            _ => Err(format!("leaders seen by {others:?}: {seen:?}")),
        }
    })
    .await
}

/// A consistent read of `key`, retried until it has a definite answer.
async fn final_read(client: &mut Client, key: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let outcome = client.read(key, true).await;
        if outcome != Outcome::Unknown {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no consistent read of {key} within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes the `barrier` key until a write is acknowledged; its version.
async fn barrier_write(client: &mut Client) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match client.write("barrier", None).await {
            Outcome::Ok(Response::Written { rv }) => return rv,
            other => assert!(std::time::Instant::now() < deadline, "no barrier write within 30 s: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The changes a watcher saw, as the reference for another stream.
fn changes(watched: &Watched) -> Vec<Change> {
    let WatchStream { events, .. } = &watched.stream;
    events.iter().map(|e| Change { rv: e.rv, key: e.key.clone(), deleted: e.kind == EventKind::Deleted }).collect()
}
