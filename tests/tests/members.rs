//! Member agents: joining with tokens, what a member certificate may do,
//! Work delivery to the embedded target, heartbeats and health, leaving.

use std::time::{Duration, Instant};

use fleet_proto::fleet::{
    ApplyRequest, GetRequest, HeartbeatRequest, JoinRequest, KindRef, ListRequest, ReadOptions, UpdateStatusRequest,
};
use fleet_tests::hub::connect;
use fleet_tests::objects::{apply, condition, get, work};
use fleet_tests::{eventually, Hub, HubOptions};
use serde_json::json;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

const WAIT: Duration = Duration::from_secs(30);

fn member_tls(hub: &Hub, cluster: &str) -> ClientTlsConfig {
    let dir = hub.agent_dir(cluster).join("tls");
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_default();
    ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("ca.pem")))
        .identity(Identity::from_pem(read("agent.pem"), read("agent-key.pem")))
}

async fn wait_condition(
    hub: &Hub,
    kind: &str,
    ns: &str,
    name: &str,
    type_: &str,
    status: &str,
) -> (String, String, i64) {
    let admin = hub.client(hub.running()[0]).await;
    eventually(&format!("{kind} {ns}/{name} {type_}={status}"), WAIT, || {
        let mut admin = admin.clone();
        async move {
            let o = get(&mut admin, kind, ns, name).await.map_err(|e| e.to_string())?;
            match condition(&o, type_) {
                Some(c) if c.0 == status => Ok(c),
                other => Err(format!("{other:?} in {:?}", o.status())),
            }
        }
    })
    .await
}

/// Applies a MemberCluster heartbeating every second (the default is 60 s).
async fn fast_member(hub: &Hub, name: &str) {
    let mc = json!({"apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
        "metadata": {"name": name, "labels": {"region": name}}, "spec": {"heartbeatPeriodSeconds": 1}});
    let mut admin = hub.client(hub.running()[0]).await;
    apply(&mut admin, vec![serde_json::to_vec(&mc).unwrap_or_default()]).await.expect("member cluster");
}

fn join_request(cluster: &str, token: &str) -> JoinRequest {
    let (_, csr_pem) = fleet_agent::identity::new_key_and_csr().expect("csr");
    JoinRequest { cluster: cluster.into(), token: token.into(), csr_pem }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_joins_with_a_single_use_expiring_token_bound_to_its_cluster() {
    let mut hub = Hub::start(HubOptions::default()).await;
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Joined", "True").await;
    wait_condition(&hub, "mc", "", "east", "Healthy", "True").await;

    let ca = std::fs::read(hub.pki_dir().join("ca.pem")).unwrap_or_default();
    let anonymous = connect(&hub.endpoint(2), ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca)));
    let (token, _) = hub.token("south", "10m");
    // Bound to its cluster.
    let err = anonymous.clone().join(join_request("north", &token)).await.expect_err("wrong cluster");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err}");
    assert!(err.message().contains("issued for cluster \"south\""), "{err}");
    // Single use.
    let cert = anonymous.clone().join(join_request("south", &token)).await.expect("first use").into_inner();
    assert!(cert.certificate_pem.contains("BEGIN CERTIFICATE"));
    let err = anonymous.clone().join(join_request("south", &token)).await.expect_err("second use");
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    assert!(err.message().contains("already used"), "{err}");
    // Expiring.
    let (short, _) = hub.token("west", "1s");
    let created = Instant::now();
    eventually("the 1 s token to expire", Duration::from_secs(5), || async move {
        if created.elapsed() > Duration::from_millis(1100) {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await;
    let err = anonymous.clone().join(join_request("west", &short)).await.expect_err("expired token");
    assert!(err.message().contains("expired"), "{err}");
    let mut admin = hub.client(1).await;
    assert!(get(&mut admin, "mc", "", "west").await.is_err(), "a refused join creates nothing");

    // The next token created collects the used and the expired one.
    let (fresh, _) = hub.token("north", "10m");
    let id = |token: &str| token.split('.').next().unwrap_or_default().to_string();
    let mut present = Vec::new();
    for token in [&token, &short, &fresh] {
        let request = GetRequest {
            kind: Some(KindRef { kind: "BootstrapToken".into(), api_version: "fleet.internal/v1".into() }),
            namespace: "fleet-system".into(),
            name: id(token),
            read: Some(ReadOptions { consistent: true, ..Default::default() }),
        };
        present.push(admin.get(request).await.is_ok());
    }
    assert_eq!(present, [false, false, true], "used, expired and fresh tokens stored");
    // Lifetimes are bounded, on the hub as in fleetctl.
    let out = hub.fleetctl(&["token", "create", "--cluster", "north", "--ttl", "30d"]);
    assert!(!out.status.success(), "a 30 day token was made");
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 24h"), "{}", String::from_utf8_lossy(&out.stderr));
    let request = fleet_proto::fleet::CreateTokenRequest { cluster: "north".into(), ttl_seconds: u64::MAX };
    let err = admin.create_token(request).await.expect_err("an endless token");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(err.message().contains("at most 1day"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_certificate_reaches_only_its_own_work_status_and_heartbeats() {
    let mut hub = Hub::start(HubOptions::default()).await;
    hub.start_agent("east", &[]);
    hub.start_agent("west", &[]);
    wait_condition(&hub, "mc", "", "east", "Joined", "True").await;
    wait_condition(&hub, "mc", "", "west", "Joined", "True").await;
    let mut admin = hub.client(1).await;
    apply(&mut admin, vec![work("west", "w", vec![])]).await.expect("west work");
    let mut east = connect(&hub.endpoint(3), member_tls(&hub, "east"));
    let list = |ns: &str, kind_name: &str, all: bool| ListRequest {
        kind: Some(KindRef { kind: kind_name.into(), api_version: String::new() }),
        namespace: ns.into(),
        all_namespaces: all,
        label_selector: String::new(),
        read: Some(ReadOptions::default()),
    };
    east.list(list("fleet-member-east", "works", false)).await.expect("own works");
    for (request, what) in [
        (list("fleet-member-west", "works", false), "another cluster's Work"),
        (list("", "works", true), "Work of every namespace"),
        (list("fleet-member-east", "configmaps", false), "anything but Work"),
    ] {
        let err = east.list(request).await.expect_err(what);
        assert_eq!(err.code(), tonic::Code::PermissionDenied, "{what}: {err}");
    }
    let err = east
        .get(GetRequest {
            kind: Some(KindRef { kind: "work".into(), api_version: String::new() }),
            namespace: "fleet-member-west".into(),
            name: "w".into(),
            read: None,
        })
        .await
        .expect_err("get west's work");
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    let err = east
        .apply(ApplyRequest { documents: vec![work("east", "x", vec![])], sources: vec![] })
        .await
        .expect_err("apply");
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    let west_work = get(&mut admin, "work", "fleet-member-west", "w").await.expect("west work");
    let err = east.update_status(UpdateStatusRequest { object: west_work.to_json() }).await.expect_err("west status");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err}");
    let err =
        east.heartbeat(HeartbeatRequest { cluster: "west".into(), report: b"{}".to_vec() }).await.expect_err("west hb");
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    assert!(err.message().contains("may not heartbeat for cluster \"west\""), "{err}");
}

fn app_manifests(config_value: &str, with_deployment: bool) -> Vec<serde_json::Value> {
    let mut manifests = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "demo"}, "data": {"v": config_value}}),
    ];
    if with_deployment {
        manifests.push(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}
            }}
        }));
    }
    manifests
}

fn inspect_json(hub: &Hub, cluster: &str, args: &[&str]) -> Result<serde_json::Value, String> {
    let out = hub.inspect(cluster, args);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn available_cpu_millis(mc: &fleet_api::Object) -> Option<i128> {
    let cpu = mc.status()?.get("resourceUsage")?.get("available")?.get("cpu")?.as_str()?;
    fleet_api::quantity::Quantity::parse(cpu).ok().map(|q| q.millis_ceil())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_is_applied_updated_pruned_and_removed_on_the_embedded_target() {
    let mut hub = Hub::start(HubOptions::default()).await;
    fast_member(&hub, "east").await;
    hub.start_agent("east", &["--sim-nodes", "2", "--sim-allocatable", "cpu=4,memory=8Gi"]);
    wait_condition(&hub, "mc", "", "east", "Joined", "True").await;
    let mut admin = hub.client(1).await;
    let idle = eventually("idle cpu reported", WAIT, || {
        let mut admin = admin.clone();
        async move {
            available_cpu_millis(&get(&mut admin, "mc", "", "east").await.map_err(|e| e.to_string())?)
                .ok_or("none".to_string())
        }
    })
    .await;

    apply(&mut admin, vec![work("east", "app", app_manifests("1", true))]).await.expect("work");
    wait_condition(&hub, "work", "fleet-member-east", "app", "Applied", "True").await;
    let available = wait_condition(&hub, "work", "fleet-member-east", "app", "Available", "True").await;
    assert_eq!(available.1, "AllManifestsAvailable");
    let cm = inspect_json(&hub, "east", &["cm", "cfg", "-n", "demo", "-o", "json"]).expect("inspect");
    assert_eq!(cm["data"]["v"], "1");
    eventually("available CPU to drop by 2 x 500m", WAIT, || {
        let mut admin = admin.clone();
        async move {
            let now = available_cpu_millis(&get(&mut admin, "mc", "", "east").await.map_err(|e| e.to_string())?);
            if now == Some(idle - 1000) {
                Ok(())
            } else {
                Err(format!("{now:?} (idle {idle})"))
            }
        }
    })
    .await;

    // A changed Work is re-applied.
    apply(&mut admin, vec![work("east", "app", app_manifests("2", true))]).await.expect("update");
    eventually("the new ConfigMap data on the member", WAIT, || async {
        let cm = inspect_json(&hub, "east", &["cm", "cfg", "-n", "demo", "-o", "json"])?;
        if cm["data"]["v"] == "2" {
            Ok(())
        } else {
            Err(cm.to_string())
        }
    })
    .await;
    eventually("Available at the Work's new generation", WAIT, || {
        let mut admin = admin.clone();
        async move {
            let w = get(&mut admin, "work", "fleet-member-east", "app").await.map_err(|e| e.to_string())?;
            match condition(&w, "Available") {
                Some((s, _, g)) if s == "True" && g == w.metadata.generation && g >= 2 => Ok(()),
                other => Err(format!("{other:?} at generation {}", w.metadata.generation)),
            }
        }
    })
    .await;

    // A manifest removed from the Work is deleted from the member, and its usage released.
    apply(&mut admin, vec![work("east", "app", app_manifests("2", false))]).await.expect("prune");
    eventually("the Deployment gone from the member", WAIT, || async {
        let out = hub.inspect("east", &["deploy", "-n", "demo", "-o", "json"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if !text.contains("\"web\"") {
            Ok(())
        } else {
            Err(text)
        }
    })
    .await;
    eventually("CPU released", WAIT, || {
        let mut admin = admin.clone();
        async move {
            let now = available_cpu_millis(&get(&mut admin, "mc", "", "east").await.map_err(|e| e.to_string())?);
            if now == Some(idle) {
                Ok(())
            } else {
                Err(format!("{now:?}"))
            }
        }
    })
    .await;

    // A deleted Work removes everything it placed.
    let out = hub.fleetctl(&["delete", "work", "app", "-n", "fleet-member-east"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eventually("the namespace gone from the member", WAIT, || async {
        let out = hub.inspect("east", &["ns", "-o", "json"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if !text.contains("\"demo\"") {
            Ok(())
        } else {
            Err(text)
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_keeps_flowing_when_the_leader_or_the_agents_node_dies() {
    let mut hub = Hub::start(HubOptions::default()).await;
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Joined", "True").await;
    // The agent starts on node 1: kill that one first.
    hub.kill(1);
    let leader = hub.wait_leader().await;
    let mut admin = hub.client(leader).await;
    apply(&mut admin, vec![work("east", "one", app_manifests("1", false))]).await.expect("work one");
    wait_condition(&hub, "work", "fleet-member-east", "one", "Available", "True").await;
    hub.start_node(1, false);
    hub.wait_leader().await;
    let leader = hub.wait_leader().await;
    hub.kill(leader);
    let leader = hub.wait_leader().await;
    let mut admin = hub.client(leader).await;
    // Its own namespace: two Works never share an object (that is a conflict).
    let mut manifests = app_manifests("1", false);
    manifests[0]["metadata"]["name"] = json!("demo-two");
    manifests[1]["metadata"]["namespace"] = json!("demo-two");
    apply(&mut admin, vec![work("east", "two", manifests)]).await.expect("work two");
    wait_condition(&hub, "work", "fleet-member-east", "two", "Available", "True").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_agent_turns_unhealthy_and_a_hub_restart_does_not() {
    let mut hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;
    fast_member(&hub, "east").await;
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Healthy", "True").await;
    hub.signal_agent("east", "STOP");
    let (_, reason, _) = wait_condition(&hub, "mc", "", "east", "Healthy", "Unknown").await;
    assert_eq!(reason, "HeartbeatTimeout");
    hub.signal_agent("east", "CONT");
    wait_condition(&hub, "mc", "", "east", "Healthy", "True").await;

    // The whole trio restarts: the new leader grants a fresh grace period.
    let before = get(&mut admin, "mc", "", "east").await.expect("mc");
    let since = |o: &fleet_api::Object| {
        o.status()
            .and_then(|s| s["conditions"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .find(|c| c["type"] == "Healthy")
            .map(|c| c["lastTransitionTime"].clone())
    };
    for id in 1..=3 {
        hub.stop(id);
    }
    for id in 1..=3 {
        hub.start_node(id, false);
    }
    hub.wait_leader().await;
    // Watch for four heartbeat periods past the grace period: Healthy never flips.
    let start = Instant::now();
    let admin = hub.client(2).await;
    eventually("an observation window after the restart", Duration::from_secs(20), || {
        let mut admin = admin.clone();
        let before = since(&before);
        async move {
            let now = get(&mut admin, "mc", "", "east").await.map_err(|e| e.to_string())?;
            assert_eq!(condition(&now, "Healthy").map(|c| c.0), Some("True".into()), "flipped: {:?}", now.status());
            assert_eq!(since(&now), before, "Healthy transitioned during the restart");
            if start.elapsed() > Duration::from_secs(5) {
                Ok(())
            } else {
                Err("watching".into())
            }
        }
    })
    .await;
    // Every node restarted under the agent's watch (resumed, or relisted if
    // its version left the history): new Work still arrives.
    let mut admin = hub.client(2).await;
    apply(&mut admin, vec![work("east", "after-restart", app_manifests("1", false))]).await.expect("work");
    wait_condition(&hub, "work", "fleet-member-east", "after-restart", "Available", "True").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_member_cluster_revokes_it_and_its_agent_stops() {
    let mut hub = Hub::start(HubOptions::default()).await;
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Joined", "True").await;
    let out = hub.fleetctl(&["delete", "mc", "east"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status = eventually("the agent to stop", WAIT, || {
        let exit = hub.agent_exit("east");
        async move { exit.ok_or_else(|| "still running".to_string()) }
    })
    .await;
    assert!(status.success(), "the agent leaves cleanly: {status}\n{}", hub.agent_log_tail("east"));
    let mut east = connect(&hub.endpoint(1), member_tls(&hub, "east"));
    let err =
        east.heartbeat(HeartbeatRequest { cluster: "east".into(), report: b"{}".to_vec() }).await.expect_err("revoked");
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    assert!(err.message().contains("has left the fleet"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_mc_wide_shows_health_target_size_usage_and_a_live_heartbeat_age() {
    let mut hub = Hub::start(HubOptions::default()).await;
    fast_member(&hub, "east").await;
    hub.start_agent("east", &["--sim-nodes", "4", "--sim-allocatable", "cpu=2,memory=4Gi"]);
    wait_condition(&hub, "mc", "", "east", "Healthy", "True").await;
    let out = eventually("a wide row with usage", WAIT, || async {
        let out = hub.fleetctl(&["get", "mc", "-o", "wide"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains("8000m/8000m") {
            Ok(text)
        } else {
            Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
        }
    })
    .await;
    let header = out.lines().next().unwrap_or_default();
    for column in ["NAME", "JOINED", "HEALTHY", "TARGET", "NODE-COUNT", "CPU (AVAIL/ALLOC)", "LAST-HEARTBEAT", "AGE"] {
        assert!(header.contains(column), "{column} missing: {out}");
    }
    let row = out.lines().nth(1).unwrap_or_default();
    assert!(row.contains("east") && row.contains("True") && row.contains("embedded") && row.contains(" 4 "), "{out}");
    // Heartbeats every second: the age shown is live, not the last status write.
    let age: String = row.split_whitespace().rev().nth(1).unwrap_or_default().to_string();
    assert!(
        age.ends_with('s') && age.trim_end_matches('s').parse::<u64>().is_ok_and(|s| s <= 3),
        "age {age:?} in {out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_renews_its_certificate_before_it_expires_and_keeps_working() {
    let options =
        HubOptions { node_args: vec!["--member-cert-validity".into(), "12s".into()], ..HubOptions::default() };
    let mut hub = Hub::start(options).await;
    fast_member(&hub, "east").await;
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Healthy", "True").await;
    let cert_path = hub.agent_dir("east").join("tls").join("agent.pem");
    let key_path = hub.agent_dir("east").join("tls").join("agent-key.pem");
    let first = std::fs::read_to_string(&cert_path).unwrap_or_default();
    let first_key = std::fs::read_to_string(&key_path).unwrap_or_default();
    // Renewal is due at two thirds of 12 s.
    eventually("a renewed certificate", WAIT, || {
        let path = cert_path.clone();
        let first = first.clone();
        async move {
            let now = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            if now != first {
                Ok(())
            } else {
                Err("unchanged".into())
            }
        }
    })
    .await;
    assert_ne!(std::fs::read_to_string(&key_path).unwrap_or_default(), first_key, "renewal uses a new key");
    // Past the first certificate's expiry, the agent still receives and applies Work.
    let started = Instant::now();
    eventually("the first certificate to expire", Duration::from_secs(20), || async move {
        if started.elapsed() > Duration::from_secs(12) {
            Ok(())
        } else {
            Err("not yet".to_string())
        }
    })
    .await;
    let mut admin = hub.client(1).await;
    apply(&mut admin, vec![work("east", "after", app_manifests("1", false))]).await.expect("work");
    wait_condition(&hub, "work", "fleet-member-east", "after", "Available", "True").await;
    wait_condition(&hub, "mc", "", "east", "Healthy", "True").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_agent_does_not_rewrite_what_is_already_applied() {
    let mut hub = Hub::start(HubOptions::default()).await;
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Joined", "True").await;
    let mut admin = hub.client(1).await;
    apply(&mut admin, vec![work("east", "app", app_manifests("1", true))]).await.expect("work");
    wait_condition(&hub, "work", "fleet-member-east", "app", "Available", "True").await;
    let versions = |hub: &Hub| -> Vec<(String, String)> {
        let list = inspect_json(hub, "east", &["-A", "-o", "json"]).unwrap_or_default();
        let mut v: Vec<(String, String)> = list["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|o| {
                let id = format!("{}/{}/{}", o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]);
                (id, o["metadata"]["resourceVersion"].to_string())
            })
            .collect();
        v.sort();
        v
    };
    let before = versions(&hub);
    assert!(before.iter().any(|(n, _)| n.ends_with("\"web\"")), "{before:?}");
    hub.kill_agent("east");
    hub.start_agent("east", &[]);
    // A second Work proves the restarted agent has worked through its queue.
    let mut manifests = app_manifests("1", false);
    manifests[0]["metadata"]["name"] = json!("other");
    manifests[1]["metadata"]["namespace"] = json!("other");
    apply(&mut admin, vec![work("east", "zz-after-restart", manifests)]).await.expect("second work");
    wait_condition(&hub, "work", "fleet-member-east", "zz-after-restart", "Available", "True").await;
    let after: Vec<(String, String)> =
        versions(&hub).into_iter().filter(|(n, _)| before.iter().any(|(b, _)| b == n)).collect();
    assert_eq!(after, before, "objects of the unchanged Work were rewritten after the restart");
}

/// The highest applied index any node reports.
async fn applied_index(hub: &Hub) -> u64 {
    let status = hub.status(1).await.expect("status");
    status.members.iter().map(|m| m.last_applied).max().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_member_heartbeats_without_writing_to_the_hub() {
    let mut hub = Hub::start(HubOptions::default()).await;
    fast_member(&hub, "east").await;
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Healthy", "True").await;
    // Let the first reports settle (joining, the first usage), then count.
    let settled = Instant::now();
    eventually("the first heartbeats", Duration::from_secs(10), || async move {
        if settled.elapsed() > Duration::from_secs(3) {
            Ok(())
        } else {
            Err("settling".to_string())
        }
    })
    .await;
    let before = applied_index(&hub).await;
    let window = Instant::now();
    eventually("five heartbeat periods", Duration::from_secs(10), || async move {
        if window.elapsed() > Duration::from_secs(5) {
            Ok(())
        } else {
            Err("watching".to_string())
        }
    })
    .await;
    let after = applied_index(&hub).await;
    assert!(after - before <= 1, "{} Raft entries from 5 heartbeats of an idle member", after - before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_options_are_validated_kept_shown_and_the_member_still_leaves() {
    let mut hub = Hub::start(HubOptions::default()).await;
    let mc = |mode: &str| {
        format!(
            "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {{name: east}}\n\
             spec:\n  heartbeatPeriodSeconds: 1\n  deleteOptions: {{validationMode: {mode}}}\n"
        )
    };
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&mc("Lenient")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an unknown mode was accepted");
    assert!(stderr.contains("MemberCluster") && stderr.contains("east"), "names the object: {stderr}");
    assert!(stderr.contains("spec.deleteOptions.validationMode"), "names the field: {stderr}");
    assert!(stderr.contains("\"Lenient\"") && stderr.contains("\"Skip\", \"Strict\""), "value and allowed: {stderr}");

    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&mc("Skip")));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    hub.start_agent("east", &[]);
    wait_condition(&hub, "mc", "", "east", "Joined", "True").await;
    let mut admin = hub.client(hub.running()[0]).await;
    let stored = get(&mut admin, "mc", "", "east").await.expect("member cluster");
    let mode = stored.spec().and_then(|s| s.pointer("/deleteOptions/validationMode")).cloned();
    assert_eq!(mode, Some(json!("Skip")), "kept as written: {:?}", stored.spec());

    let out = hub.fleetctl(&["describe", "mc", "east"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Delete Options") && text.contains("Validation Mode") && text.contains("Skip"), "{text}");

    // Fleet has no fleet-networking objects for Strict to wait on: either
    // mode deletes, and the member leaves as without deleteOptions.
    let out = hub.fleetctl(&["delete", "mc", "east"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status = eventually("the agent to stop", WAIT, || {
        let exit = hub.agent_exit("east");
        async move { exit.ok_or_else(|| "still running".to_string()) }
    })
    .await;
    assert!(status.success(), "the agent leaves cleanly: {status}\n{}", hub.agent_log_tail("east"));
}
