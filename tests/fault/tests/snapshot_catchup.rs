//! A follower stopped while the others take many objects and compact their
//! logs behind them, then restarted: it must be caught up by a snapshot of
//! the whole store and end with the others' exact state (digest).
//!
//! `CATCHUP_OBJECTS=N` sets how many objects the store holds (default 3,000,
//! a CI-sized run); the README's figure comes from `CATCHUP_OBJECTS=100000`.
//! The test prints how long the catch-up took (a `FIGURES` line) and asserts
//! only on outcomes, never on that time.

use std::time::{Duration, Instant};

use fleet_tests::objects::{apply, configmap};
use fleet_tests::{Hub, HubOptions};

const NAMESPACE: &str = "catchup";
/// Objects per apply (one Raft entry each), well under the command limit.
const BATCH: usize = 500;
const INSTALLED: &str = "installing snapshot from the leader";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_stopped_past_compaction_of_a_large_store_catches_up_by_snapshot() {
    let objects: usize = std::env::var("CATCHUP_OBJECTS").ok().and_then(|s| s.parse().ok()).unwrap_or(3_000);
    // About four snapshots while loading, one entry kept behind each: the
    // stopped node's part of the log is purged.
    let entries = objects.div_ceil(BATCH) as u64;
    let options = HubOptions { snapshot_logs: (entries / 4).max(2), keep_logs: 1, ..HubOptions::default() };
    let mut hub = Hub::start(options).await;
    let leader = hub.wait_leader().await;
    let lagging = leader % 3 + 1;
    hub.stop(lagging);

    let loading = Instant::now();
    let mut client = hub.client(leader).await;
    let value = "v".repeat(100);
    for (batch, first) in (0..objects).step_by(BATCH).enumerate() {
        let documents: Vec<Vec<u8>> =
            (first..(first + BATCH).min(objects)).map(|i| configmap(NAMESPACE, &format!("o-{i:06}"), &value)).collect();
        // A write whose answer is lost (a busy machine) is applied again:
        // the same objects, so at most "unchanged".
        let deadline = Instant::now() + Duration::from_secs(120);
        while let Err(e) = apply(&mut client, documents.clone()).await {
            assert!(Instant::now() < deadline, "batch {batch}: no answer within 120 s: {e}");
        }
    }
    let loaded = loading.elapsed();
    let target = hub.status(leader).await.expect("leader status");
    let target = target.members.iter().map(|m| m.last_applied).max().unwrap_or(0);

    let restarted = Instant::now();
    hub.start_node(lagging, false);
    // Polled with a deadline; on failure, what both nodes logged.
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let status = hub.status(lagging).await;
        let applied =
            status.as_ref().ok().and_then(|s| s.members.iter().find(|m| m.id == lagging)).map(|m| m.last_applied);
        if applied.is_some_and(|a| a >= target) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node {lagging} applied {applied:?} of {target} after 900 s\n--- node {lagging}:\n{}\n--- leader {leader}:\n{}",
            hub.log_tail(lagging),
            hub.log_tail(leader)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let caught_up = restarted.elapsed();
    let log = std::fs::read_to_string(hub.log_path(lagging)).unwrap_or_default();
    assert!(log.contains(INSTALLED), "node {lagging} caught up without a snapshot:\n{}", hub.log_tail(lagging));
    let (index, digest) = hub.replicas_agree().await;
    println!(
        "FIGURES snapshot catch-up: {objects} objects loaded in {:.1} s; the follower restarted and applied up to \
         index {target} in {:.2} s (snapshot installed); replicas agree at {index} ({})",
        loaded.as_secs_f64(),
        caught_up.as_secs_f64(),
        &digest[..19.min(digest.len())]
    );
}
