//! The client and the commands against in-process fake nodes over mutual TLS.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{closed_address, config_map, start_node, Shared};
use fleetctl::pki::{self, parse_hosts};
use fleetctl::watch::Watcher;
use fleetctl::{error_text, Client, ClientOptions, Error, EventType, Io, KindArg, ListQuery};

fn make_pki() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    pki::init(dir.path(), None, 3, &parse_hosts("127.0.0.1,localhost"), false).unwrap();
    dir
}

async fn client(endpoints: &[&str], dir: &Path, user: &str) -> Client {
    let options =
        ClientOptions { connect_timeout: Duration::from_secs(2), request_timeout: Some(Duration::from_secs(10)) };
    Client::connect_with(endpoints.iter().map(|e| e.to_string()).collect(), dir, user, options).await.unwrap()
}

/// Runs the CLI with `args` against `endpoints`, returning (result, stdout, stderr).
async fn cli(dir: &Path, endpoints: &[&str], args: &[&str], stdin: &str) -> (fleetctl::Result<()>, String, String) {
    let endpoints = endpoints.join(",");
    let tls_dir = dir.to_str().unwrap().to_string();
    let mut argv = vec!["fleetctl", "--endpoints", &endpoints, "--tls-dir", &tls_dir];
    argv.extend_from_slice(args);
    let (mut io, captured) = Io::captured(stdin);
    let result = fleetctl::run_args(argv, &mut io).await;
    (result, captured.stdout(), captured.stderr())
}

#[tokio::test]
async fn fails_over_past_dead_nodes_and_keeps_reads_monotonic() {
    let dir = make_pki();
    let shared = Shared::new();
    let (down_node, down_addr) = start_node(dir.path(), 1, shared.clone()).await;
    down_node.down.send_replace(true);
    let (_node, addr) = start_node(dir.path(), 2, shared.clone()).await;
    let closed = closed_address().await;
    let client = client(&[&closed, &down_addr, &addr], dir.path(), "admin").await;

    let outcome = client
        .apply(vec![("a.yaml".into(), config_map("a", "1")), ("a.yaml".into(), config_map("b", "2"))])
        .await
        .unwrap();
    let actions: Vec<_> = outcome.results.iter().map(|(a, o)| (a.as_str(), o.metadata.name.as_str())).collect();
    assert_eq!(actions, [("created", "a"), ("created", "b")]);
    assert_eq!(client.current_endpoint(), addr);
    assert_eq!(client.resource_version(), 2);

    let got = client.get(&KindArg::resolve("cm"), "default", "b", false).await.unwrap();
    assert_eq!(got.rest["data"]["value"], "2");
    assert_eq!(shared.store.lock().unwrap().min_rvs.last(), Some(&2));
    let callers = shared.store.lock().unwrap().callers.clone();
    assert!(callers.iter().all(|c| c == "admin"), "{callers:?}");
}

#[tokio::test]
async fn every_failed_endpoint_is_named() {
    let dir = make_pki();
    let (a, b) = (closed_address().await, closed_address().await);
    let client = client(&[&a, &b], dir.path(), "admin").await;
    let err = client.cluster_status(false).await.unwrap_err();
    assert!(matches!(&err, Error::Unreachable { failures } if failures.len() == 2), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&a) && text.contains(&b), "{text}");
}

#[tokio::test]
async fn server_errors_print_like_kubectl() {
    let dir = make_pki();
    let (_node, addr) = start_node(dir.path(), 1, Shared::new()).await;
    let (result, out, _) = cli(dir.path(), &[&addr], &["get", "cm", "missing"], "").await;
    assert_eq!(out, "");
    assert_eq!(error_text(&result.unwrap_err()), "Error from server (NotFound): configmaps \"missing\" not found");
}

#[tokio::test]
async fn the_viewer_certificate_is_used_for_user_viewer() {
    let dir = make_pki();
    let shared = Shared::new();
    let (_node, addr) = start_node(dir.path(), 1, shared.clone()).await;
    let viewer = client(&[&addr], dir.path(), "viewer").await;
    let err = viewer.apply(vec![("x".into(), config_map("a", "1"))]).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::PermissionDenied));
    assert_eq!(shared.store.lock().unwrap().callers, ["viewer"]);
}

#[tokio::test]
async fn get_describe_delete_and_cluster_status_output() {
    let dir = make_pki();
    let shared = Shared::new();
    shared.put(config_map("a", "1"));
    shared.put(config_map("bb", "2"));
    let (_node, addr) = start_node(dir.path(), 1, shared.clone()).await;
    let d = dir.path();

    let (r, out, _) = cli(d, &[&addr], &["get", "configmaps"], "").await;
    r.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("NAME   AGE"), "{out}");
    assert!(lines[1].starts_with("a      "), "{out}");

    let (r, out, _) = cli(d, &[&addr], &["get", "cm", "-A"], "").await;
    r.unwrap();
    assert!(out.starts_with("NAMESPACE   NAME   AGE\ndefault     a      "), "{out}");

    let (r, out, _) = cli(d, &[&addr], &["get", "cm", "-o", "name"], "").await;
    r.unwrap();
    assert_eq!(out, "configmap/a\nconfigmap/bb\n");

    let (r, out, _) = cli(d, &[&addr], &["get", "cm", "-o", "json"], "").await;
    r.unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["kind"].as_str(), v["items"].as_array().map(Vec::len)), (Some("List"), Some(2)));

    let (r, out, _) = cli(d, &[&addr], &["get", "cm/a", "-o", "json"], "").await;
    r.unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["kind"].as_str(), v["metadata"]["name"].as_str()), (Some("ConfigMap"), Some("a")));

    let (r, out, err) = cli(d, &[&addr], &["get", "cm", "-n", "empty"], "").await;
    r.unwrap();
    assert_eq!((out.as_str(), err.as_str()), ("", "No resources found in empty namespace.\n"));

    let (r, out, _) = cli(d, &[&addr], &["describe", "cm", "a"], "").await;
    r.unwrap();
    assert!(out.starts_with("Name:         a\nNamespace:    default\n"), "{out}");
    assert!(out.contains("Data:\n  Value:  1\n"), "{out}");
    assert!(out.ends_with("Events:  <none>\n"), "{out}");

    let (r, out, _) = cli(d, &[&addr], &["delete", "cm", "a"], "").await;
    r.unwrap();
    assert_eq!(out, "configmap \"a\" deleted\n");
    let (r, _, _) = cli(d, &[&addr], &["delete", "cm", "a", "--ignore-not-found"], "").await;
    r.unwrap();

    let (r, out, _) = cli(d, &[&addr], &["cluster", "status", "-o", "json"], "").await;
    r.unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["leader"], 1);
    assert_eq!(v["members"][0]["role"], "Leader");
    assert_eq!(v["members"][1]["role"], "Follower");
    let (r, out, _) = cli(d, &[&addr], &["cluster", "status"], "").await;
    r.unwrap();
    assert!(
        out.starts_with("ID   ADDRESS          ROLE       LAST-APPLIED   REACHABLE\n1    127.0.0.1:7001   Leader "),
        "{out}"
    );
}

#[tokio::test]
async fn apply_sends_every_document_of_every_file_at_once() {
    let dir = make_pki();
    let shared = Shared::new();
    let (_node, addr) = start_node(dir.path(), 1, shared.clone()).await;
    let manifests = tempfile::tempdir().unwrap();
    std::fs::write(
        manifests.path().join("b.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n",
    )
    .unwrap();
    std::fs::write(
        manifests.path().join("a.json"),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one"}}"#,
    )
    .unwrap();
    let stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: three\n";
    let mdir = manifests.path().to_str().unwrap();
    let (r, out, err) = cli(dir.path(), &[&addr], &["apply", "-f", mdir, "-f", "-"], stdin).await;
    r.unwrap_or_else(|e| panic!("{e}\n{err}"));
    assert_eq!(
        out,
        "configmap/one created\nconfigmap/two created\ndeployment.apps/web created\nconfigmap/three created\n"
    );
    assert_eq!(shared.store.lock().unwrap().rv, 4);

    std::fs::write(manifests.path().join("c.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n").unwrap();
    let (r, out, _) = cli(dir.path(), &[&addr], &["apply", "-f", mdir], "").await;
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Parse(_)), "{e:?}");
    assert!(e.to_string().contains("c.yaml"), "{e}");
    assert_eq!(out, "");
    assert_eq!(shared.store.lock().unwrap().rv, 4, "nothing is sent when a file does not parse");
}

fn cm_query() -> ListQuery {
    ListQuery::new(KindArg::resolve("cm"), "default")
}

#[tokio::test]
async fn a_watch_resumes_on_another_node() {
    let dir = make_pki();
    let shared = Shared::new();
    shared.put(config_map("a", "1"));
    let (node1, addr1) = start_node(dir.path(), 1, shared.clone()).await;
    let (_node2, addr2) = start_node(dir.path(), 2, shared.clone()).await;
    let client = client(&[&addr1, &addr2], dir.path(), "admin").await;

    let (mut watcher, items) = Watcher::start(client.clone(), cm_query(), None).await.unwrap();
    assert_eq!(items.len(), 1);
    shared.put(config_map("b", "1"));
    let event = tokio::time::timeout(Duration::from_secs(10), watcher.next()).await.unwrap().unwrap();
    assert_eq!((event.event_type, event.object.unwrap().metadata.name.as_str()), (EventType::Added, "b"));

    node1.down.send_replace(true);
    shared.put(config_map("a", "2"));
    let event = tokio::time::timeout(Duration::from_secs(10), watcher.next()).await.unwrap().unwrap();
    let object = event.object.unwrap();
    assert_eq!((event.event_type, object.metadata.name.as_str()), (EventType::Modified, "a"));
    assert_eq!(object.rest["data"]["value"], "2");
    assert_eq!(client.current_endpoint(), addr2);
}

#[tokio::test]
async fn an_expired_watch_relists_and_reports_the_difference() {
    let dir = make_pki();
    let shared = Shared::new();
    shared.put(config_map("a", "1"));
    shared.put(config_map("keep", "1"));
    let (node1, addr1) = start_node(dir.path(), 1, shared.clone()).await;
    let (_node2, addr2) = start_node(dir.path(), 2, shared.clone()).await;
    let client = client(&[&addr1, &addr2], dir.path(), "admin").await;

    let (mut watcher, _) = Watcher::start(client, cm_query(), None).await.unwrap();
    node1.down.send_replace(true);
    shared.put(config_map("b", "1"));
    shared.remove("ConfigMap", "default", "a");
    shared.store.lock().unwrap().expired_below = 100;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let event = tokio::time::timeout(Duration::from_secs(10), watcher.next()).await.unwrap().unwrap();
        seen.push((event.event_type, event.object.unwrap().metadata.name));
    }
    seen.sort_by(|x, y| x.1.cmp(&y.1));
    assert_eq!(seen, [(EventType::Deleted, "a".to_string()), (EventType::Added, "b".to_string())]);
}

#[tokio::test]
async fn get_watch_prints_rows_as_changes_happen() {
    let dir = make_pki();
    let shared = Shared::new();
    shared.put(config_map("first", "1"));
    let (_node, addr) = start_node(dir.path(), 1, shared.clone()).await;
    let endpoints = addr.clone();
    let tls_dir = dir.path().to_str().unwrap().to_string();
    let (mut io, captured) = Io::captured("");
    let task = tokio::spawn(async move {
        let argv = ["fleetctl", "--endpoints", &endpoints, "--tls-dir", &tls_dir, "get", "cm", "-w"];
        fleetctl::run_args(argv, &mut io).await
    });
    wait_for(|| captured.stdout().contains("first")).await;
    shared.put(config_map("second", "1"));
    wait_for(|| captured.stdout().contains("second")).await;
    task.abort();
    let out = captured.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("NAME    AGE"), "{out}");
    assert!(lines[2].starts_with("second   "), "{out}");
}

async fn wait_for(condition: impl Fn() -> bool) {
    for _ in 0..100 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("condition not met within 5s");
}

#[tokio::test]
async fn a_server_from_another_ca_is_not_trusted() {
    let ours = make_pki();
    let theirs = make_pki();
    let (_node, addr) = start_node(theirs.path(), 1, Shared::new()).await;
    let client = client(&[&addr], ours.path(), "admin").await;
    let err = client.cluster_status(false).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert!(text.contains(&addr) && text.to_lowercase().contains("certificate"), "{text}");
}

fn placement_object(value: serde_json::Value) -> fleet_api::Object {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn placements_show_their_scheduling_in_get_wide_and_describe() {
    let dir = make_pki();
    let shared = Shared::new();
    let group = "placement.kubernetes-fleet.io/v1beta1";
    shared.put(placement_object(serde_json::json!({
        "apiVersion": group, "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web", "generation": 2},
        "spec": {"policy": {"placementType": "PickN", "numberOfClusters": 1}},
        "status": {
            "observedResourceIndex": "0",
            "selectedResources": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "conditions": [{"type": "ClusterResourcePlacementScheduled", "status": "True",
                            "reason": "SchedulingPolicyFulfilled", "observedGeneration": 2}],
            "placementStatuses": [{"clusterName": "east-1", "conditions": [{"type": "Scheduled", "status": "True",
                "message": "Successfully scheduled resources for placement in east-1 (affinity score: 0, topology spread score: 0): picked by scheduling policy"}]}]
        }
    })));
    for (index, latest) in [(0, false), (1, true)] {
        shared.put(placement_object(serde_json::json!({
            "apiVersion": group, "kind": "ClusterSchedulingPolicySnapshot",
            "metadata": {"name": format!("web-{index}"), "labels": {
                "kubernetes-fleet.io/parent-CRP": "web", "kubernetes-fleet.io/policy-index": index.to_string(),
                "kubernetes-fleet.io/is-latest-snapshot": latest.to_string()}},
            "status": {"targetClusters": [{"clusterName": format!("cluster-of-{index}"), "selected": true,
                                           "clusterScore": {"affinityScore": 0, "topologySpreadScore": 0}}]}
        })));
    }
    let (_node, addr) = start_node(dir.path(), 1, shared.clone()).await;
    let d = dir.path();

    let (r, out, _) = cli(d, &[&addr], &["get", "crp", "-o", "wide"], "").await;
    r.unwrap();
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0][..4], ["NAME", "GEN", "SCHEDULED", "SCHEDULED-GEN"], "{out}");
    let header = out.lines().next().unwrap();
    let policy_at = header.find("POLICY-INDEX").unwrap();
    let row = out.lines().nth(1).unwrap();
    assert!(row.starts_with("web    2     True        2 "), "{out}");
    assert_eq!(row[policy_at..].split_whitespace().next(), Some("1"), "{out}");

    let (r, out, _) = cli(d, &[&addr], &["get", "crp", "web", "-o", "wide"], "").await;
    r.unwrap();
    assert_eq!(out.lines().nth(1).unwrap()[policy_at..].split_whitespace().next(), Some("1"), "{out}");

    let (r, out, _) = cli(d, &[&addr], &["get", "csps"], "").await;
    r.unwrap();
    assert!(
        out.starts_with("NAME    INDEX   LATEST   CLUSTERS-FOR   SCHEDULED   AGE\nweb-0   0       false    -"),
        "{out}"
    );

    let (r, out, _) = cli(d, &[&addr], &["describe", "crp", "web"], "").await;
    r.unwrap();
    assert!(out.contains("  Selected Resources:\n    v1/Namespace   app\n"), "{out}");
    assert!(out.contains("Latest Policy Snapshot:\n  Name: ") && out.contains(" web-1\n  Index: "), "{out}");
    assert!(out.contains("    cluster-of-1   true "), "{out}");
    assert!(!out.contains("cluster-of-0"), "{out}");
    assert!(out.ends_with("Events:  <none>\n"), "{out}");
}
