//! A real hub trio with a proxy on every peer link (each node dials its
//! peers through its own proxies, `--peer-dial`), and concurrent clients
//! writing, compare-and-setting, deleting and reading a few ConfigMaps
//! through random nodes while the leader is cut off from its peers and
//! healed. Clients still reach every node, the isolated leader included.
//! Afterwards: the history is linearizable, and no client's reads went back
//! in time. Phases end on counts of completed operations and on leadership
//! observed, never on a fixed sleep.
//!
//! Needs the binaries: `cargo build --bins` first.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fleet_fault::monotonic::{monotonic_reads, read_your_writes};
use fleet_fault::{check_linearizable, Client, Limits, Network, Outcome, Recorder};
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
    let mut hub = Hub::prepare(HubOptions::default());
    let targets: BTreeMap<u64, SocketAddr> =
        (1..=3).map(|id| (id, hub.endpoint(id).parse().expect("a node address"))).collect();
    let network = Network::start(&targets).await.expect("proxies between the nodes");
    for id in 1..=3 {
        hub.set_node_args(id, vec!["--peer-dial".into(), network.peers_for(id).expect("peers")]);
    }
    hub.launch().await;
    let leader = hub.wait_leader().await;

    let recorder = Arc::new(Recorder::new());
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for process in 1..=CLIENTS {
        let nodes = (1..=3).map(|id| admin_client(&hub.endpoint(id), &hub.pki_dir())).collect();
        let mut client = Client::new(process, NAMESPACE, nodes, recorder.clone(), OP_TIMEOUT);
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
    let others: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    let successor = eventually("a new leader on the majority side", Duration::from_secs(30), || async {
        let mut seen = Vec::new();
        for id in &others {
            seen.push(hub.status(*id).await?.leader);
        }
        match seen.as_slice() {
            [a, b] if a == b && *a != 0 && *a != leader => Ok(*a),
            _ => Err(format!("leaders seen by {others:?}: {seen:?}")),
        }
    })
    .await;
    operations(&done, 100, "with the old leader isolated").await;
    network.heal();
    let after_heal = hub.wait_leader().await;
    operations(&done, 150, "after healing").await;
    stop.store(true, Ordering::SeqCst);
    let mut unknown = 0;
    for client in clients {
        unknown += client.await.expect("client task");
    }

    let history = recorder.history();
    let report = check_linearizable(&history, Limits::default()).expect("a well-formed history");
    println!(
        "leader {leader} isolated, {successor} elected, {after_heal} after healing; {} operations, {unknown} \
         without an answer; {report}",
        history.ops.len()
    );
    assert!(report.is_linearizable(), "{report}");
    assert!(report.ops_checked() >= 200, "too few operations constrained the check: {report}");
    let regressions = monotonic_reads(&history);
    assert!(regressions.is_empty(), "reads went back in time: {regressions:?}");
    let regressions = read_your_writes(&history);
    assert!(regressions.is_empty(), "a client read older than its own write: {regressions:?}");
}
