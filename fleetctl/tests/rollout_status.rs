//! `rollout status`, `describe` and `get -o wide` of placements against an
//! in-process fake node.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{start_node, Shared};
use fleet_api::Object;
use fleetctl::pki::{self, parse_hosts};
use fleetctl::{error_text, Error, Io};
use serde_json::{json, Value};

const TYPES: [&str; 6] = ["Scheduled", "RolloutStarted", "Overridden", "WorkSynchronized", "Applied", "Available"];

fn make_pki() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    pki::init(dir.path(), None, 3, &parse_hosts("127.0.0.1,localhost"), false).unwrap();
    dir
}

/// Runs the CLI with `args` against `endpoint`: (result, stdout, stderr).
async fn cli(dir: PathBuf, endpoint: String, args: Vec<&'static str>) -> (fleetctl::Result<()>, String, String) {
    let tls_dir = dir.to_str().unwrap().to_string();
    let mut argv = vec!["fleetctl".to_string(), "--endpoints".into(), endpoint, "--tls-dir".into(), tls_dir];
    argv.extend(args.into_iter().map(String::from));
    let (mut io, captured) = Io::captured("");
    let result = fleetctl::run_args(argv, &mut io).await;
    (result, captured.stdout(), captured.stderr())
}

/// Conditions: the first `true_count` types True, then `last` (status, reason).
fn conditions(prefix: &str, true_count: usize, last: Option<(&str, &str)>, generation: i64) -> Value {
    let mut list: Vec<Value> = TYPES[..true_count]
        .iter()
        .map(|t| json!({"type": format!("{prefix}{t}"), "status": "True", "reason": t, "observedGeneration": generation}))
        .collect();
    if let Some((status, reason)) = last {
        list.push(json!({"type": format!("{prefix}{}", TYPES[true_count]), "status": status, "reason": reason,
                         "observedGeneration": generation}));
    }
    Value::Array(list)
}

/// CRP `web` at generation 2: `east-1` available, `west-1` as `west` says.
fn crp(placement_true: usize, west: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
        "metadata": {"name": "web", "generation": 2},
        "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}]},
        "status": {
            "observedResourceIndex": "1",
            "conditions": conditions("ClusterResourcePlacement", placement_true, None, 2),
            "placementStatuses": [
                {"clusterName": "east-1", "observedResourceIndex": "1", "conditions": conditions("", 6, None, 2)},
                west
            ]
        }
    }))
    .unwrap()
}

fn west_syncing() -> Value {
    json!({"clusterName": "west-1", "observedResourceIndex": "0", "conditions": conditions("", 3, None, 2)})
}

fn west_available() -> Value {
    json!({"clusterName": "west-1", "observedResourceIndex": "1", "conditions": conditions("", 6, None, 2)})
}

fn west_failed() -> Value {
    json!({"clusterName": "west-1", "observedResourceIndex": "1",
           "conditions": conditions("", 4, Some(("False", "ApplyFailed")), 2),
           "failedPlacements": [{"version": "v1", "kind": "ConfigMap", "namespace": "app", "name": "cfg",
                                 "condition": {"type": "Applied", "status": "False", "reason": "ApplyConflict",
                                               "message": "owned by another placement"}}]})
}

async fn fixture(initial: Object) -> (tempfile::TempDir, std::sync::Arc<Shared>, String) {
    let dir = make_pki();
    let shared = Shared::new();
    shared.put(initial);
    let (_node, addr) = start_node(dir.path(), 1, shared.clone()).await;
    (dir, shared, addr)
}

fn path(dir: &tempfile::TempDir) -> PathBuf {
    Path::to_path_buf(dir.path())
}

#[tokio::test]
async fn once_reports_pending_then_done() {
    let (dir, shared, addr) = fixture(crp(4, west_syncing())).await;
    let (r, out, _) = cli(path(&dir), addr.clone(), vec!["rollout", "status", "crp", "web"]).await;
    assert_eq!(
        out,
        "east-1: Available (resource index 1/1)\n\
         west-1: Overridden (resource index 0/1): waiting for WorkSynchronized\n\
         1/2 clusters available\n"
    );
    let err = r.unwrap_err();
    assert!(matches!(err, Error::RolloutIncomplete(_)), "{err:?}");
    assert_eq!(
        error_text(&err),
        "error: rollout of clusterresourceplacement \"web\" is not complete: 1/2 clusters available; \
         waiting for west-1 (Overridden); ClusterResourcePlacementApplied not reported yet"
    );

    shared.put(crp(6, west_available()));
    let (r, out, _) = cli(path(&dir), addr, vec!["rollout", "status", "crp/web"]).await;
    r.unwrap();
    assert!(
        out.ends_with("clusterresourceplacement \"web\" successfully rolled out (2/2 clusters available)\n"),
        "{out}"
    );
}

#[tokio::test]
async fn watch_follows_changes_until_available() {
    let (dir, shared, addr) = fixture(crp(4, west_syncing())).await;
    let run = tokio::spawn(cli(path(&dir), addr, vec!["rollout", "status", "crp", "web", "-w", "--timeout", "20s"]));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut applied = west_available();
    applied["conditions"] = conditions("", 5, Some(("False", "ResourceNotAvailableYet")), 2);
    shared.put(crp(5, applied));
    tokio::time::sleep(Duration::from_millis(100)).await;
    shared.put(crp(6, west_available()));
    let (r, out, _) = tokio::time::timeout(Duration::from_secs(15), run).await.unwrap().unwrap();
    r.unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "east-1: Available (resource index 1/1)",
            "west-1: Overridden (resource index 0/1): waiting for WorkSynchronized",
            "1/2 clusters available"
        ],
        "{out}"
    );
    assert!(out.contains("west-1: Available (resource index 1/1)\n2/2 clusters available\n"), "{out}");
    assert!(out.ends_with("successfully rolled out (2/2 clusters available)\n"), "{out}");
}

#[tokio::test]
async fn watch_stops_at_a_failure_naming_cluster_and_object() {
    let (dir, shared, addr) = fixture(crp(4, west_syncing())).await;
    let run = tokio::spawn(cli(path(&dir), addr, vec!["rollout", "status", "crp", "web", "-w"]));
    tokio::time::sleep(Duration::from_millis(300)).await;
    shared.put(crp(4, west_failed()));
    let (r, out, _) = tokio::time::timeout(Duration::from_secs(15), run).await.unwrap().unwrap();
    let err = r.unwrap_err();
    assert!(matches!(err, Error::RolloutFailed(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "rollout of clusterresourceplacement \"web\" failed: cluster west-1: v1/ConfigMap app/cfg: \
         Applied=False (ApplyConflict): owned by another placement"
    );
    assert!(out.contains("west-1: Failed (resource index 1/1): v1/ConfigMap app/cfg"), "{out}");
}

#[tokio::test]
async fn watch_times_out_and_refuses_other_kinds() {
    let (dir, _shared, addr) = fixture(crp(4, west_syncing())).await;
    let args = vec!["rollout", "status", "crp", "web", "-w", "--timeout", "300ms"];
    let (r, _, _) = cli(path(&dir), addr.clone(), args).await;
    let text = r.unwrap_err().to_string();
    assert!(
        text.starts_with("timed out waiting for the rollout of clusterresourceplacement \"web\" after 300ms: 1/2"),
        "{text}"
    );
    let (r, _, _) = cli(path(&dir), addr.clone(), vec!["rollout", "status", "cm", "web"]).await;
    assert!(matches!(r, Err(Error::Usage(_))), "{r:?}");
    let (r, _, _) = cli(path(&dir), addr, vec!["rollout", "status", "crp", "missing"]).await;
    assert!(r.unwrap_err().is_not_found());
}

#[tokio::test]
async fn wide_and_describe_show_per_cluster_rollout() {
    let (dir, _shared, addr) = fixture(crp(4, west_failed())).await;
    let (r, out, _) = cli(path(&dir), addr.clone(), vec!["get", "crp", "-o", "wide"]).await;
    r.unwrap();
    let (header, row) = (out.lines().next().unwrap(), out.lines().nth(1).unwrap());
    // The cell under a header (cells may be empty, so not split on spaces).
    let at = |name: &str| {
        let start = header.find(&format!(" {name} ")).unwrap() + 1;
        row[start..].split_whitespace().next().unwrap_or("")
    };
    assert_eq!((at("CLUSTERS"), at("APPLIED-CLUSTERS"), at("AVAILABLE-CLUSTERS")), ("2", "1", "1"), "{out}");

    let (r, out, _) = cli(path(&dir), addr, vec!["describe", "crp", "web"]).await;
    r.unwrap();
    assert!(out.contains("    Cluster:                    west-1\n      Observed Resource Index:  1\n"), "{out}");
    assert!(out.contains("      Failed Placements:\n        KIND           NAMESPACE/NAME   CONDITION"), "{out}");
    assert!(
        out.contains(
            "        v1/ConfigMap   app/cfg          Applied=False   ApplyConflict   owned by another placement\n"
        ),
        "{out}"
    );
}
