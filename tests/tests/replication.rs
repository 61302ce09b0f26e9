//! Replication journeys of the hub trio: election, follower writes, leader
//! death under load, snapshot catch-up, full restart, membership changes.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_tests::objects::{apply, configmap, get_configmap, list_configmaps};
use fleet_tests::{eventually, Hub, HubOptions};

const NS: &str = "team-a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trio_forms_and_elects_one_leader() {
    // --init on node 1 only (the all-nodes form is what every other test uses).
    let hub = Hub::start(HubOptions { init_all: false, ..HubOptions::default() }).await;
    let leader = hub.wait_leader().await;
    let out = hub.fleetctl(&["cluster", "status", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cluster status json");
    assert_eq!(status["leader"], leader);
    let members = status["members"].as_array().expect("members");
    assert_eq!(members.len(), 3, "{status}");
    let leaders = members.iter().filter(|m| m["role"] == "Leader").count();
    assert_eq!(leaders, 1, "{status}");
    assert!(members.iter().all(|m| m["reachable"] == true), "{status}");
    // Each member's state digest and the index it covers; the table form
    // does not ask for them.
    for m in members {
        assert!(m["digest"].as_str().is_some_and(|d| d.starts_with("sha256:") && d.len() == 71), "{status}");
        assert!(m["digestIndex"].as_u64().is_some(), "{status}");
    }
    let (index, digest) = hub.replicas_agree().await;
    assert!(index > 0 && digest.starts_with("sha256:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_sent_to_a_follower_is_readable_from_every_node() {
    let hub = Hub::start(HubOptions::default()).await;
    let leader = hub.wait_leader().await;
    let follower = (1..=3).find(|id| *id != leader).unwrap_or(1);
    let mut client = hub.client(follower).await;
    let rv = apply(&mut client, vec![configmap(NS, "from-follower", "v1")]).await.expect("apply via follower");
    for id in 1..=3 {
        let mut c = hub.client(id).await;
        let obj = get_configmap(&mut c, NS, "from-follower", rv).await.unwrap_or_else(|e| panic!("node {id}: {e}"));
        assert_eq!(obj.rest["data"]["value"], "v1", "node {id}");
        assert_eq!(obj.metadata.resource_version_number(), Some(rv));
    }
}

/// Many writes at once through every node: the leader merges the batches
/// the followers forward with its own into shared entries, and every client
/// still gets the answer for its own object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_through_every_node_each_get_their_own_answer() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.wait_leader().await;
    let mut tasks = Vec::new();
    for i in 0..150u64 {
        let mut client = hub.client(1 + i % 3).await;
        tasks.push(tokio::spawn(async move {
            let name = format!("many-{i}");
            let reply = client
                .apply(fleet_proto::fleet::ApplyRequest {
                    documents: vec![configmap(NS, &name, &format!("value-{i}"))],
                    sources: vec![],
                })
                .await
                .map(|r| r.into_inner());
            (name, i, reply)
        }));
    }
    let mut versions = BTreeSet::new();
    for task in tasks {
        let (name, i, reply) = task.await.expect("task");
        let reply = reply.unwrap_or_else(|e| panic!("apply {name}: {e}"));
        assert_eq!(reply.results.len(), 1, "{name}");
        let object: fleet_api::Object = serde_json::from_slice(&reply.results[0].object).expect("object");
        assert_eq!(object.metadata.name, name, "the answer is for the object written");
        assert_eq!(object.rest["data"]["value"], format!("value-{i}"));
        let version = object.metadata.resource_version_number().expect("a resourceVersion");
        assert!(version <= reply.resource_version, "{name} at {version}, answered at {}", reply.resource_version);
        versions.insert(version);
    }
    // Shared entries: fewer versions than writes (150 at once cannot all go alone).
    assert!(versions.len() < 150, "{} versions for 150 writes", versions.len());
    for id in 1..=3 {
        let mut c = hub.client(id).await;
        let listed = list_configmaps(&mut c, NS, *versions.iter().last().unwrap_or(&0)).await.expect("list");
        assert_eq!(listed.len(), 150, "node {id}");
    }
}

/// Waits until node `id` lists every name in `acked`; returns what it lists.
async fn wait_for_all(hub: &Hub, id: u64, acked: &BTreeSet<String>) -> BTreeSet<String> {
    let client = hub.client(id).await;
    eventually(&format!("node {id} has every acknowledged write"), Duration::from_secs(20), || {
        let mut client = client.clone();
        async move {
            let names: BTreeSet<String> = list_configmaps(&mut client, NS, 0)
                .await
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|o| o.metadata.name)
                .collect();
            let missing: Vec<_> = acked.difference(&names).collect();
            if missing.is_empty() {
                Ok(names)
            } else {
                Err(format!("missing {}: {:?}", missing.len(), &missing[..missing.len().min(5)]))
            }
        }
    })
    .await
}

/// Writes `cm-<i>` through any reachable node until `count` are acknowledged,
/// recording each acknowledged name. Gives up after 120 s, with what each
/// failed attempt was told (node, seconds since the start, error) for the
/// test to print along with the nodes' logs. The writes go one at a time,
/// each fsync'd on two nodes: on a disk whose fsync takes 150 ms (measured
/// here with other processes fsyncing) 300 of them take 45 s, with a leader
/// change 1.5 s of it.
async fn write_until(
    hub_endpoints: Vec<fleet_proto::fleet::fleet_client::FleetClient<tonic::transport::Channel>>,
    prefix: &str,
    count: usize,
    acked: Arc<Mutex<Vec<String>>>,
) -> Result<(), String> {
    let mut clients = hub_endpoints;
    let mut i = 0usize;
    let mut turn = 0usize;
    let mut failures = Vec::new();
    let start = std::time::Instant::now();
    let (mut last_ack, mut longest_gap) = (Duration::ZERO, Duration::ZERO);
    while i < count {
        if start.elapsed() > Duration::from_secs(120) {
            let tail = &failures[failures.len().saturating_sub(20)..];
            return Err(format!("writes stalled at {i}/{count}; last failed attempts:\n{}", tail.join("\n")));
        }
        let name = format!("{prefix}-{i}");
        let n = clients.len();
        let client = &mut clients[turn % n];
        let sent = start.elapsed();
        match apply(client, vec![configmap(NS, &name, &i.to_string())]).await {
            Ok(_) => {
                acked.lock().unwrap_or_else(|p| p.into_inner()).push(name);
                i += 1;
                let now = start.elapsed();
                longest_gap = longest_gap.max(now - last_ack);
                last_ack = now;
            }
            Err(e) => {
                let node = turn % n + 1;
                let took = start.elapsed() - sent;
                failures.push(format!("  node {node} at {sent:.1?} (took {took:.1?}): {}", e.message()));
                turn += 1;
            }
        }
    }
    eprintln!(
        "{count} writes acknowledged in {:.1?}; longest wait between two: {longest_gap:.1?}; {} failed attempts",
        start.elapsed(),
        failures.len()
    );
    Ok(())
}

/// Panics with the writer's report and the tail of every node's log.
fn writer_stalled(hub: &Hub, report: String) -> ! {
    let logs: Vec<String> =
        hub.node_ids().into_iter().map(|id| format!("--- node {id} ---\n{}", hub.log_tail(id))).collect();
    panic!("{report}\n{}", logs.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_the_leader_being_killed() {
    let mut hub = Hub::start(HubOptions::default()).await;
    let leader = hub.wait_leader().await;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    for id in 1..=3 {
        clients.push(hub.client(id).await);
    }
    let writer = tokio::spawn(write_until(clients, "w", 300, acked.clone()));
    eventually("some writes before the kill", Duration::from_secs(20), || async {
        let n = acked.lock().unwrap_or_else(|p| p.into_inner()).len();
        if n >= 50 {
            Ok(())
        } else {
            Err(format!("{n} acknowledged"))
        }
    })
    .await;
    hub.kill(leader);
    if let Err(report) = writer.await.expect("writer") {
        writer_stalled(&hub, report);
    }
    let new_leader = hub.wait_leader().await;
    assert_ne!(new_leader, leader);
    let acked: BTreeSet<String> = acked.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
    assert_eq!(acked.len(), 300);
    for id in hub.running() {
        let present = wait_for_all(&hub, id, &acked).await;
        assert!(acked.is_subset(&present));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_node_catches_up_through_a_snapshot() {
    let mut hub = Hub::start(HubOptions { snapshot_logs: 200, keep_logs: 20, ..HubOptions::default() }).await;
    let leader = hub.wait_leader().await;
    let lagging = (1..=3).find(|id| *id != leader).unwrap_or(1);
    hub.stop(lagging);
    let live = hub.running();
    let mut client = hub.client(live[0]).await;
    // 3,000 objects in 600 commands (log entries) of 5: with a snapshot every
    // 200 entries and 20 kept behind it, the log the stopped node needs is purged.
    let batch_of = |batch: usize| (0..5).map(|j| configmap(NS, &format!("s-{batch}-{j}"), "x")).collect::<Vec<_>>();
    let mut last_rv = 0;
    for batch in 0..600 {
        last_rv = match apply(&mut client, batch_of(batch)).await {
            Ok(rv) => rv,
            Err(_) => {
                client = hub.client(live[1]).await;
                apply(&mut client, batch_of(batch)).await.expect("apply")
            }
        };
    }
    hub.start_node(lagging, false);
    let c = hub.client(lagging).await;
    eventually("the restarted node has all 3,000 objects", Duration::from_secs(30), || {
        let mut c = c.clone();
        async move {
            let n = list_configmaps(&mut c, NS, last_rv).await.map_err(|e| e.to_string())?.len();
            if n == 3000 {
                Ok(())
            } else {
                Err(format!("{n} objects"))
            }
        }
    })
    .await;
    let log = std::fs::read_to_string(hub.log_path(lagging)).unwrap_or_default();
    assert!(
        log.contains("installing snapshot from the leader"),
        "node {lagging} caught up without a snapshot:\n{}",
        hub.log_tail(lagging)
    );
    // The installed state is exactly the others'.
    hub.replicas_agree().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_is_intact_after_the_whole_trio_restarts() {
    let mut hub = Hub::start(HubOptions::default()).await;
    let leader = hub.wait_leader().await;
    let mut client = hub.client(leader).await;
    let mut docs = Vec::new();
    for i in 0..100 {
        docs.push(configmap(NS, &format!("keep-{i}"), &format!("value-{i}")));
    }
    let rv = apply(&mut client, docs).await.expect("apply");
    let before = list_configmaps(&mut client, NS, rv).await.expect("list");
    for id in 1..=3 {
        hub.stop(id);
    }
    // Restarts need no flag changes: --init is not given again.
    for id in 1..=3 {
        hub.start_node(id, false);
    }
    hub.wait_leader().await;
    for id in 1..=3 {
        let c = hub.client(id).await;
        let after = eventually(&format!("node {id} serves the restarted state"), Duration::from_secs(20), || {
            let mut c = c.clone();
            async move { list_configmaps(&mut c, NS, rv).await.map_err(|e| e.to_string()) }
        })
        .await;
        assert_eq!(after, before, "node {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fourth_node_joins_as_voter_and_a_node_is_removed_while_serving() {
    let mut hub = Hub::start(HubOptions { pki_nodes: 4, ..HubOptions::default() }).await;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    for id in 1..=3 {
        clients.push(hub.client(id).await);
    }
    let writer = tokio::spawn(write_until(clients, "m", 200, acked.clone()));

    hub.start_node(4, false);
    let out = hub.fleetctl(&["cluster", "add-node", "--id", "4", "--address", &hub.endpoint(4)]);
    assert!(out.status.success(), "add-node: {}", String::from_utf8_lossy(&out.stderr));
    eventually("node 4 is a voter", Duration::from_secs(20), || async {
        let s = hub.status(1).await?;
        let m = s.members.iter().find(|m| m.id == 4).ok_or("node 4 not a member")?;
        if s.members.len() == 4 && m.role != "Learner" && m.reachable {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;

    let leader = hub.wait_leader().await;
    let victim = (1..=3).find(|id| *id != leader).unwrap_or(1);
    let out = hub.fleetctl(&["cluster", "remove-node", "--id", &victim.to_string()]);
    assert!(out.status.success(), "remove-node: {}", String::from_utf8_lossy(&out.stderr));
    hub.stop(victim);
    if let Err(report) = writer.await.expect("writer") {
        writer_stalled(&hub, report);
    }
    // Node 4 reports the membership it has applied, which may trail the
    // leader's answer to remove-node by a moment.
    eventually("node 4 sees the node removed", Duration::from_secs(20), || async {
        let s = hub.status(4).await?;
        let ids: BTreeSet<u64> = s.members.iter().map(|m| m.id).collect();
        if !ids.contains(&victim) && ids.contains(&4) && ids.len() == 3 {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    let acked: BTreeSet<String> = acked.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
    let names = wait_for_all(&hub, 4, &acked).await;
    assert!(acked.is_subset(&names));
}
