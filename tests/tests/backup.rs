//! Online backup and restore: `fleetctl snapshot save` on a hub taking
//! writes, `fleet-node restore` of the file into a new trio (new ids'
//! addresses, new certificates), which then holds exactly the objects of
//! the backup and takes writes of its own.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_tests::hub::binary;
use fleet_tests::objects::{apply, configmap, list_configmaps};
use fleet_tests::{eventually, Hub, HubOptions};

const NS: &str = "backup";

/// Creates `w-<writer>-<i>` through node `writer` until told to stop;
/// every acknowledged name with the version that wrote it.
async fn write_until(hub: &Hub, writer: u64, stop: Arc<AtomicBool>, acked: Arc<Mutex<BTreeMap<String, u64>>>) {
    let mut client = hub.client(writer).await;
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        let name = format!("w-{writer}-{i}");
        if let Ok(rv) = apply(&mut client, vec![configmap(NS, &name, "v")]).await {
            acked.lock().unwrap_or_else(|p| p.into_inner()).insert(name, rv);
        }
        i += 1;
    }
}

/// The configmaps of `NS` on node `id` (at least as new as `rv`), by name.
async fn objects(hub: &Hub, id: u64, rv: u64) -> BTreeMap<String, serde_json::Value> {
    let c = hub.client(id).await;
    let items = eventually(&format!("node {id} lists {NS}"), Duration::from_secs(30), || {
        let mut c = c.clone();
        async move { list_configmaps(&mut c, NS, rv).await.map_err(|e| e.to_string()) }
    })
    .await;
    items
        .into_iter()
        .map(|o| (o.metadata.name.clone(), serde_json::from_slice(&o.to_json()).unwrap_or_default()))
        .collect()
}

/// `fleet-node restore` of `file` for every node of `hub` (not started).
fn restore(hub: &Hub, file: &std::path::Path) -> Vec<String> {
    (1..=hub.options.nodes)
        .map(|id| {
            let out = Command::new(binary("fleet-node"))
                .arg("restore")
                .arg("--snapshot")
                .arg(file)
                .arg("--data-dir")
                .arg(hub.data_dir(id))
                .args(["--id", &id.to_string(), "--peers", &hub.peers_flag()])
                .output()
                .expect("fleet-node restore");
            assert!(out.status.success(), "restore of node {id}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_write_load_restores_to_a_new_trio_with_identical_objects() {
    let hub = Hub::start(HubOptions::default()).await;
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(BTreeMap::new()));
    let hub = Arc::new(hub);
    let writers: Vec<_> = (1..=3)
        .map(|id| {
            let (hub, stop, acked) = (hub.clone(), stop.clone(), acked.clone());
            tokio::spawn(async move { write_until(&hub, id, stop, acked).await })
        })
        .collect();
    eventually("writes before the backup", Duration::from_secs(30), || async {
        let n = acked.lock().unwrap_or_else(|p| p.into_inner()).len();
        if n >= 100 {
            Ok(())
        } else {
            Err(format!("{n} writes"))
        }
    })
    .await;
    let before: BTreeMap<String, u64> = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let file = hub.dir.path().join("hub.backup");
    let out = hub.fleetctl(&["snapshot", "save", file.to_str().unwrap_or("")]);
    assert!(out.status.success(), "snapshot save: {}", String::from_utf8_lossy(&out.stderr));
    let saved = String::from_utf8_lossy(&out.stdout).to_string();
    let index: u64 = saved
        .split(" at index ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no index in {saved:?}"));
    // Writes go on after the backup.
    eventually("writes after the backup", Duration::from_secs(30), || async {
        let newest = acked.lock().unwrap_or_else(|p| p.into_inner()).values().copied().max().unwrap_or(0);
        if newest > index + 20 {
            Ok(())
        } else {
            Err(format!("newest write at {newest}, backup at {index}"))
        }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.expect("writer");
    }
    assert!(std::path::Path::new(&file).exists() && !hub.dir.path().join("hub.backup.part").exists());

    // The old hub's objects as of the backup: objects are only created, so
    // those written at or before its index.
    let old = objects(&hub, 1, 0).await;
    let expected: BTreeMap<String, serde_json::Value> = old
        .into_iter()
        .filter(|(_, o)| o["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse::<u64>().ok()) <= Some(index))
        .collect();
    for (name, rv) in &before {
        assert!(expected.contains_key(name), "{name} (acknowledged at {rv} before the backup) missing at {index}");
    }

    // A new trio: other ports, other certificates.
    let mut fresh = Hub::prepare(HubOptions::default());
    let lines = restore(&fresh, &file);
    assert!(lines[0].contains(&format!("at index {index}")), "{lines:?}");
    fresh.launch().await;
    for id in 1..=3 {
        let restored = objects(&fresh, id, 0).await;
        assert_eq!(
            restored.len(),
            expected.len(),
            "node {id}: {} objects, expected {}",
            restored.len(),
            expected.len()
        );
        assert!(restored == expected, "node {id}: the restored objects differ from the hub's at index {index}");
    }
    fresh.replicas_agree().await;
    // The new hub writes after the backup's index, and a restore into a
    // data dir in use is refused.
    let mut client = fresh.client(2).await;
    let rv = apply(&mut client, vec![configmap(NS, "after-restore", "v")]).await.expect("a write on the new hub");
    assert!(rv > index, "new writes continue after the backup's index: {rv} <= {index}");
    let out = Command::new(binary("fleet-node"))
        .args(["restore", "--snapshot"])
        .arg(&file)
        .arg("--data-dir")
        .arg(fresh.data_dir(1))
        .args(["--id", "1", "--peers", &fresh.peers_flag()])
        .output()
        .expect("fleet-node restore");
    assert!(!out.status.success(), "a restore over a node's data was accepted");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already holds a node's data"));
}
