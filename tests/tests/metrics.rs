//! `/metrics` on a real trio with a member agent and a placement: every
//! name docs/metrics.md documents is served, and scrapes after a write and
//! after the leader is killed show the counters moved (proposals committed,
//! requests, leader changes).

use std::time::Duration;

use fleet_tests::fleet::{apply_yaml, start_member, wait_joined, Member};
use fleet_tests::hub::free_port;
use fleet_tests::objects::{apply, configmap};
use fleet_tests::{eventually, Hub, HubOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(20);

/// `GET /metrics` over plain HTTP/1.1; the body.
async fn scrape(port: u16) -> Result<String, String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.map_err(|e| e.to_string())?;
    let (head, body) = response.split_once("\r\n\r\n").ok_or("no HTTP header end")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("not OK: {head}"));
    }
    if !body.trim_end().ends_with("# EOF") {
        return Err(format!("not a whole OpenMetrics exposition: {body}"));
    }
    Ok(body.to_string())
}

/// The value of the sample written exactly as `series` (name and labels), or 0.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .filter_map(|l| l.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix(' '))
        .find_map(|v| v.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// Waits until `series` on node `port` satisfies `ok`; returns the scrape.
async fn wait_for(port: u16, series: &str, ok: impl Fn(f64) -> bool) -> String {
    eventually(&format!("{series} on :{port}"), WAIT, || async {
        let text = scrape(port).await?;
        let v = value(&text, series);
        if ok(v) {
            Ok(text)
        } else {
            Err(format!("{series} = {v}"))
        }
    })
    .await
}

/// Every `fleet_...` name in a text, without histogram sample suffixes.
fn names_in(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("fleet_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_lowercase() || c == '_')).unwrap_or(tail.len());
        let name = &tail[..end];
        let name = ["_bucket", "_sum", "_count"].iter().fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
        if name.len() > "fleet_".len() {
            names.insert(name.to_string());
        }
        rest = &tail[end..];
    }
    names
}

/// The names docs/metrics.md documents are the names the nodes serve
/// (together: a watch is served by the node the agent picked), and the
/// Grafana dashboard uses only those.
fn check_documented_names(scraped: &str) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/metrics.md")).expect("docs/metrics.md");
    let dashboard = std::fs::read_to_string(root.join("deploy/grafana-dashboard.json")).expect("dashboard");
    let documented = names_in(&doc);
    for name in &documented {
        let family = name.strip_suffix("_total").unwrap_or(name);
        assert!(scraped.contains(&format!("# TYPE {family} ")), "docs/metrics.md names {name}, which is not served");
    }
    let served: std::collections::BTreeSet<String> = scraped
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    for family in &served {
        let counter = format!("{family}_total");
        assert!(
            documented.contains(family) || documented.contains(&counter),
            "{family} is served but not in docs/metrics.md"
        );
    }
    for name in names_in(&dashboard) {
        assert!(documented.contains(&name), "the dashboard uses {name}, not in docs/metrics.md");
    }
}

const PLACEMENT: &str = "apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: app}
spec:
  resourceSelectors: [{group: \"\", version: v1, kind: Namespace, name: app}]
  policy: {placementType: PickAll}
";

const APPLY_CONFIGMAP_OK: &str =
    r#"fleet_apiserver_request_total{api="grpc",verb="APPLY",kind="ConfigMap",code="200"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_move_after_a_write_and_a_leader_change() {
    let mut hub = Hub::prepare(HubOptions::default());
    let ports: Vec<u16> = (1..=3).map(|_| free_port()).collect();
    for (i, port) in ports.iter().enumerate() {
        hub.set_node_args(i as u64 + 1, vec!["--http-listen".into(), format!("127.0.0.1:{port}")]);
    }
    hub.launch().await;
    let leader = hub.wait_leader().await;
    let port_of = |id: u64| ports[(id - 1) as usize];

    // A member and a placement, so that every family has a sample.
    let member = Member { name: "m1", labels: &[("env", "prod")], nodes: 1, cpu: 4 };
    start_member(&mut hub, &member, "4Gi");
    wait_joined(&hub, "m1").await;
    apply_yaml(&hub, PLACEMENT);
    let scheduled = r#"fleet_placements{kind="ClusterResourcePlacement",condition="ClusterResourcePlacementScheduled",status="True"}"#;
    wait_for(port_of(leader), scheduled, |v| v == 1.0).await;
    let joined = wait_for(port_of(leader), "fleet_member_clusters_healthy", |v| v == 1.0).await;
    assert_eq!(value(&joined, "fleet_member_clusters_joined"), 1.0, "{joined}");
    // The leader's heartbeat table has m1 once its first heartbeat after joining arrived.
    wait_for(port_of(leader), r#"fleet_member_heartbeat_age_seconds{cluster="m1"}"#, |v| v > 0.0).await;

    // Every node knows the leader; exactly one says it is the leader.
    let mut leaders = 0.0;
    for id in 1..=3 {
        let text = wait_for(port_of(id), "fleet_server_has_leader", |v| v == 1.0).await;
        leaders += value(&text, "fleet_server_is_leader");
        assert!(value(&text, "fleet_raft_term") >= 1.0, "{text}");
        for name in [
            "# TYPE fleet_server_proposals_committed counter",
            "# TYPE fleet_disk_wal_fsync_duration_seconds histogram",
            "# TYPE fleet_disk_backend_commit_duration_seconds histogram",
            "# TYPE fleet_server_proposal_commit_duration_seconds histogram",
            "# TYPE fleet_apiserver_request_duration_seconds histogram",
            "# TYPE fleet_workqueue_depth gauge",
            "# TYPE fleet_member_clusters gauge",
        ] {
            assert!(text.contains(name), "node {id} lacks {name:?}:\n{text}");
        }
        assert!(value(&text, r#"fleet_disk_size_bytes{file="raft_log"}"#) > 0.0, "{text}");
    }
    assert_eq!(leaders, 1.0);
    let mut all = String::new();
    for id in 1..=3 {
        all.push_str(&scrape(port_of(id)).await.unwrap_or_default());
    }
    check_documented_names(&all);

    // A write through a follower: its proposals and requests counters move.
    let follower = (1..=3).find(|id| *id != leader).unwrap_or(1);
    let before = scrape(port_of(follower)).await.unwrap_or_default();
    let committed_before = value(&before, "fleet_server_proposals_committed_total");
    let mut client = hub.client(follower).await;
    apply(&mut client, vec![configmap("metrics", "one", "v1")]).await.expect("apply");
    let after = wait_for(port_of(follower), APPLY_CONFIGMAP_OK, |v| v >= 1.0).await;
    assert!(value(&after, "fleet_server_proposals_committed_total") > committed_before, "{after}");
    assert!(
        value(&after, r#"fleet_apiserver_request_duration_seconds_count{api="grpc",verb="APPLY",kind="ConfigMap"}"#)
            >= 1.0
    );
    // Every node applied it.
    for id in 1..=3 {
        wait_for(port_of(id), "fleet_server_proposals_applied_total", |v| v >= 1.0).await;
    }
    // A read of a missing object is counted with its code.
    let missing = fleet_tests::objects::get(&mut client, "cm", "metrics", "absent").await;
    assert!(missing.is_err());
    wait_for(
        port_of(follower),
        r#"fleet_apiserver_request_total{api="grpc",verb="GET",kind="ConfigMap",code="404"}"#,
        |v| v >= 1.0,
    )
    .await;

    // Kill the leader: a survivor sees the change, and writes through it count.
    let survivor = follower;
    let changes_before = value(&after, "fleet_server_leader_changes_seen_total");
    assert!(changes_before >= 1.0, "the first election counts: {after}");
    hub.kill(leader);
    let new_leader = eventually("a new leader", WAIT, || async {
        match hub.status(survivor).await {
            Ok(s) if s.leader != 0 && s.leader != leader => Ok(s.leader),
            Ok(s) => Err(format!("leader {}", s.leader)),
            Err(e) => Err(e),
        }
    })
    .await;
    assert_ne!(new_leader, leader);
    let text = wait_for(port_of(survivor), "fleet_server_leader_changes_seen_total", |v| v > changes_before).await;
    let committed = value(&text, "fleet_server_proposals_committed_total");
    let mut client = hub.client(survivor).await;
    apply(&mut client, vec![configmap("metrics", "two", "v1")]).await.expect("apply after the leader change");
    wait_for(port_of(survivor), "fleet_server_proposals_committed_total", |v| v > committed).await;
    wait_for(port_of(survivor), APPLY_CONFIGMAP_OK, |v| v >= 2.0).await;
    wait_for(port_of(new_leader), "fleet_server_is_leader", |v| v == 1.0).await;
}
