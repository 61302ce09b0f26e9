//! Fairness between users: a tenant listing in a loop, as fast as it can
//! and ignoring Retry-After, gets 429s once its own seats and queue are
//! full; meanwhile another tenant's writes and the member agent's
//! heartbeats go on within a stated bound. The measured numbers are
//! printed (run with `--nocapture`); the bounds are generous, for a
//! loaded machine.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_proto::fleet::{ApplyRequest, KindRef, ListRequest, MemberHeartbeatsRequest, WatchRequest};
use fleet_tests::fleet::{apply_yaml, start_member, wait_joined, Member};
use fleet_tests::hub::{Hub, HubOptions};
use tonic::Code;

/// How long bob floods the node (several of the member's heartbeats).
const FLOOD: Duration = Duration::from_secs(6);
/// The longest one of alice's writes may take during bob's flood.
const WRITE_BOUND: Duration = Duration::from_secs(3);
/// The oldest a member's last heartbeat may get during the flood (it beats every second).
const HEARTBEAT_BOUND_MS: u64 = 4_000;

const SETUP: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: view, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
";

fn configmap(namespace: &str, name: &str) -> Vec<u8> {
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"v": "x".repeat(200)},
    });
    object.to_string().into_bytes()
}

fn apply(documents: Vec<Vec<u8>>) -> ApplyRequest {
    ApplyRequest { sources: vec!["test".into(); documents.len()], documents }
}

/// alice's writes, one after another, at least `count` of them and for at
/// least `lasting`: each one's latency.
async fn writes(hub: &Hub, prefix: &str, count: usize, lasting: Duration) -> Vec<Duration> {
    let mut alice = hub.client_as(1, "alice").await;
    let mut took = Vec::new();
    let began = Instant::now();
    for i in 0.. {
        if i >= count && began.elapsed() >= lasting {
            break;
        }
        let started = Instant::now();
        let reply = alice.apply(apply(vec![configmap("team-a", &format!("{prefix}-{i}"))])).await;
        took.push(started.elapsed());
        assert!(reply.is_ok(), "alice's write {i} failed: {reply:?}");
    }
    took
}

fn summary(took: &[Duration]) -> String {
    let mut sorted = took.to_vec();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    let max = sorted.last().copied().unwrap_or_default();
    format!("median {median:?}, max {max:?} over {}", took.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_tenant_does_not_starve_others_or_heartbeats() {
    let limits = [
        "--max-requests-per-user",
        "2",
        "--max-queued-per-user",
        "2",
        "--max-queue-wait",
        "1s",
        "--max-watches-per-user",
        "3",
    ];
    let options = HubOptions { node_args: limits.iter().map(|s| s.to_string()).collect(), ..HubOptions::default() };
    let mut hub = Hub::start(options).await;
    let member = Member { name: "m1", labels: &[], nodes: 1, cpu: 4 };
    start_member(&mut hub, &member, "16Gi");
    wait_joined(&hub, "m1").await;
    apply_yaml(&hub, SETUP);
    let pki = hub.pki_dir();
    for user in ["alice", "bob"] {
        let out = hub.fleetctl(&["pki", "issue-user", "--dir", pki.to_str().unwrap_or_default(), "--name", user]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Something for bob to list: 300 ConfigMaps in team-b.
    let mut admin = hub.client(1).await;
    let documents: Vec<Vec<u8>> = (0..300).map(|i| configmap("team-b", &format!("cm-{i}"))).collect();
    admin.apply(apply(documents)).await.expect("team-b's ConfigMaps");

    let quiet = writes(&hub, "quiet", 20, Duration::ZERO).await;

    // bob: 16 loops listing team-b as fast as they can, ignoring Retry-After.
    let stop = Arc::new(AtomicBool::new(false));
    let (served, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let bob = hub.client_as(1, "bob").await;
    let mut loops = Vec::new();
    for _ in 0..16 {
        let (mut bob, stop, served, refused) = (bob.clone(), stop.clone(), served.clone(), refused.clone());
        loops.push(tokio::spawn(async move {
            let mut retry_after = None;
            while !stop.load(Ordering::Relaxed) {
                let list = ListRequest {
                    kind: Some(KindRef { kind: "ConfigMap".into(), api_version: "v1".into() }),
                    namespace: "team-b".into(),
                    ..ListRequest::default()
                };
                match bob.list(list).await {
                    Ok(_) => served.fetch_add(1, Ordering::Relaxed),
                    Err(e) if e.code() == Code::ResourceExhausted => {
                        retry_after = e.metadata().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
                        refused.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(e) => panic!("bob's list failed otherwise: {e}"),
                };
            }
            retry_after
        }));
    }
    // Heartbeat ages, sampled through the flood.
    let sampler = {
        let (mut admin, stop) = (admin.clone(), stop.clone());
        tokio::spawn(async move {
            let mut oldest = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(reply) = admin.member_heartbeats(MemberHeartbeatsRequest {}).await {
                    oldest = reply.into_inner().age_millis.values().copied().fold(oldest, u64::max);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            oldest
        })
    };
    // Writes once bob is refused (the flood is on), measured.
    fleet_tests::eventually("bob's flood is refused", Duration::from_secs(20), || {
        let refused = refused.clone();
        async move {
            if refused.load(Ordering::Relaxed) > 0 {
                Ok(())
            } else {
                Err("no 429 yet".to_string())
            }
        }
    })
    .await;
    let flooded = writes(&hub, "flooded", 20, FLOOD).await;
    stop.store(true, Ordering::Relaxed);
    let mut retry_after = None;
    for l in loops {
        retry_after = retry_after.or(l.await.expect("bob's loop"));
    }
    let oldest_heartbeat = sampler.await.expect("sampler");
    let (served, refused) = (served.load(Ordering::Relaxed), refused.load(Ordering::Relaxed));
    println!(
        "alice's writes: quiet {}; during bob's flood {}; bob's lists: {served} served, {refused} refused with 429; \
         oldest member heartbeat during the flood: {oldest_heartbeat} ms",
        summary(&quiet),
        summary(&flooded)
    );
    assert_eq!(retry_after.as_deref(), Some("1"), "a 429 says when to retry");
    assert!(served > 0, "bob was served too");
    let slowest = flooded.iter().max().copied().unwrap_or_default();
    assert!(slowest < WRITE_BOUND, "alice's slowest write took {slowest:?} during bob's flood");
    assert!(oldest_heartbeat < HEARTBEAT_BOUND_MS, "a heartbeat was {oldest_heartbeat} ms old during bob's flood");
    // admin is not limited: its reads during all this were never refused (above), and it can still write.
    admin.apply(apply(vec![configmap("team-a", "after")])).await.expect("admin's write");

    // A storm of watches: bob keeps 3 open, the 4th is refused until one ends.
    let watch = || WatchRequest {
        kind: Some(KindRef { kind: "ConfigMap".into(), api_version: "v1".into() }),
        namespace: "team-b".into(),
        ..WatchRequest::default()
    };
    let mut bob = bob.clone();
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(bob.watch(watch()).await.expect("one of bob's 3 watches").into_inner());
    }
    let refused = bob.watch(watch()).await.expect_err("bob's 4th watch");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused}");
    assert!(refused.message().contains("3 open"), "{refused}");
    open.pop();
    fleet_tests::eventually("bob may watch again once one of his watches ended", Duration::from_secs(20), || {
        let mut bob = bob.clone();
        async move { bob.watch(watch()).await.map(|_| ()).map_err(|e| e.to_string()) }
    })
    .await;
}
