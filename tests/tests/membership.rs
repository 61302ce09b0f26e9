//! Changing the hub's membership while clients write: a trio grown to five,
//! then a dead node replaced by a new one. No acknowledged write is lost
//! and every replica ends identical.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_tests::objects::{apply, configmap, list_configmaps};
use fleet_tests::{eventually, Hub, HubOptions};

const NS: &str = "members";
const WAIT: Duration = Duration::from_secs(60);

/// Writes `w-<writer>-<i>` through `endpoints` in turn, moving on from one
/// that fails, until told to stop; records every acknowledged name.
async fn write_until(
    writer: u64,
    endpoints: Vec<String>,
    pki: std::path::PathBuf,
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<BTreeSet<String>>>,
) {
    let mut clients: Vec<_> = endpoints.iter().map(|e| fleet_tests::hub::admin_client(e, &pki)).collect();
    let (mut i, mut turn) = (0usize, 0usize);
    while !stop.load(Ordering::SeqCst) {
        let name = format!("w-{writer}-{i}");
        let n = clients.len();
        match tokio::time::timeout(
            Duration::from_secs(5),
            apply(&mut clients[turn % n], vec![configmap(NS, &name, "v")]),
        )
        .await
        {
            Ok(Ok(_)) => {
                acked.lock().unwrap_or_else(|p| p.into_inner()).insert(name);
                i += 1;
            }
            _ => turn += 1,
        }
    }
}

/// Waits until node `id` reports exactly `members`, every one reachable and
/// none a learner.
async fn wait_members(hub: &Hub, id: u64, members: &[u64]) {
    eventually(&format!("node {id} to report voters {members:?}"), WAIT, || async {
        let s = hub.status(id).await?;
        let ids: Vec<u64> = s.members.iter().map(|m| m.id).collect();
        if ids == members && s.members.iter().all(|m| m.reachable && m.role != "Learner") {
            Ok(())
        } else {
            Err(format!("{:?}", s.members.iter().map(|m| (m.id, m.role.clone(), m.reachable)).collect::<Vec<_>>()))
        }
    })
    .await;
}

/// How many writes are acknowledged; waits for `more` beyond `from`.
async fn more_writes(acked: &Arc<Mutex<BTreeSet<String>>>, more: usize, phase: &str) {
    let from = acked.lock().unwrap_or_else(|p| p.into_inner()).len();
    eventually(&format!("{more} writes {phase}"), WAIT, || async {
        let n = acked.lock().unwrap_or_else(|p| p.into_inner()).len();
        if n >= from + more {
            Ok(())
        } else {
            Err(format!("{} of {more}", n - from))
        }
    })
    .await;
}

fn fleetctl_ok(hub: &Hub, args: &[&str]) {
    let out = hub.fleetctl(args);
    assert!(out.status.success(), "fleetctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trio_grows_to_five_and_a_dead_node_is_replaced_while_clients_write() {
    let mut hub = Hub::start(HubOptions { pki_nodes: 6, ..HubOptions::default() }).await;
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    // Writers through nodes 1 and 3 (node 2 dies below), one through each.
    let writers: Vec<_> = [1u64, 3]
        .iter()
        .map(|id| {
            let endpoints = vec![hub.endpoint(*id), hub.endpoint(4 - id)];
            tokio::spawn(write_until(*id, endpoints, hub.pki_dir(), stop.clone(), acked.clone()))
        })
        .collect();
    more_writes(&acked, 50, "on the trio").await;

    // Grow to five, one node at a time.
    for id in [4u64, 5] {
        hub.start_node(id, false);
        fleetctl_ok(&hub, &["cluster", "add-node", "--id", &id.to_string(), "--address", &hub.endpoint(id)]);
        more_writes(&acked, 20, &format!("after adding node {id}")).await;
    }
    wait_members(&hub, 1, &[1, 2, 3, 4, 5]).await;

    // Node 2 dies; it is removed and node 6 takes its place.
    hub.kill(2);
    more_writes(&acked, 20, "with node 2 dead").await;
    fleetctl_ok(&hub, &["cluster", "remove-node", "--id", "2"]);
    hub.start_node(6, false);
    fleetctl_ok(&hub, &["cluster", "add-node", "--id", "6", "--address", &hub.endpoint(6)]);
    more_writes(&acked, 50, "after the replacement").await;
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.expect("writer");
    }

    let acked = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for id in [1u64, 3, 4, 5, 6] {
        wait_members(&hub, id, &[1, 3, 4, 5, 6]).await;
        let c = hub.client(id).await;
        eventually(&format!("node {id} to hold every acknowledged write"), WAIT, || {
            let mut c = c.clone();
            let acked = &acked;
            async move {
                let names: BTreeSet<String> = list_configmaps(&mut c, NS, 0)
                    .await
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .map(|o| o.metadata.name)
                    .collect();
                let missing = acked.difference(&names).count();
                if missing == 0 {
                    Ok(())
                } else {
                    Err(format!("{missing} acknowledged writes missing"))
                }
            }
        })
        .await;
    }
    hub.replicas_agree().await;
}
