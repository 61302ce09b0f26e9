//! fleetctl's tools on a real trio: `version` lists every node, `plan`
//! decides what the hub's scheduler then decides (and writes nothing), and
//! `completion` prints scripts the shells accept.

use std::collections::BTreeSet;
use std::process::Command;

use fleet_tests::fleet::{apply_yaml, bindings, fleet, Member, WAIT};
use fleet_tests::hub::binary;
use fleet_tests::{eventually, Hub, HubOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_lists_the_client_and_every_node() {
    let hub = Hub::start(HubOptions::default()).await;
    let out = hub.fleetctl(&["version", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("version json");
    let client = v["clientVersion"].as_str().expect("clientVersion").to_string();
    assert!(!client.is_empty());
    let nodes = v["nodes"].as_array().expect("nodes");
    let ids: BTreeSet<u64> = nodes.iter().filter_map(|n| n["id"].as_u64()).collect();
    assert_eq!(ids, BTreeSet::from([1, 2, 3]), "{v}");
    // Same build: every node reports the client's version.
    assert!(nodes.iter().all(|n| n["version"] == client.as_str()), "{v}");

    let text = hub.fleetctl(&["version"]);
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.starts_with(&format!("Client Version: {client}\n")), "{text}");
    assert_eq!(text.lines().filter(|l| l.ends_with(&client)).count(), 4, "{text}");

    // --client needs no hub at all.
    let out = Command::new(binary("fleetctl")).args(["version", "--client"]).output().expect("fleetctl");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("Client Version: {client}\n"));
}

#[test]
fn completion_scripts_are_accepted_by_the_shells_present() {
    for (shell, check) in [("bash", "bash"), ("zsh", "zsh"), ("fish", "fish")] {
        let out = Command::new(binary("fleetctl")).args(["completion", shell]).output().expect("fleetctl");
        assert!(out.status.success(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
        let script = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(script.contains("fleetctl") && script.contains("plan"), "{shell}");
        // Where the shell is installed, it must at least parse the script.
        let Ok(status) = Command::new(check).arg("--version").output() else { continue };
        if !status.status.success() {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("fleetctl.completion");
        std::fs::write(&path, &script).expect("write script");
        let parsed = match shell {
            "fish" => Command::new("fish").arg("--no-execute").arg(&path).output(),
            other => Command::new(other).arg("-n").arg(&path).output(),
        }
        .expect("run shell");
        assert!(parsed.status.success(), "{shell} rejects the script: {}", String::from_utf8_lossy(&parsed.stderr));
    }
    let out = Command::new(binary("fleetctl")).args(["completion", "tcsh"]).output().expect("fleetctl");
    assert!(!out.status.success());
}

const MEMBERS: &[Member] = &[
    Member { name: "big", labels: &[("env", "prod")], nodes: 4, cpu: 8 },
    Member { name: "mid", labels: &[("env", "prod")], nodes: 2, cpu: 8 },
    Member { name: "small", labels: &[("env", "prod")], nodes: 1, cpu: 4 },
    Member { name: "lab", labels: &[("env", "dev")], nodes: 8, cpu: 8 },
];

const PLACEMENT: &str = "apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: planned
spec:
  resourceSelectors:
    - {group: \"\", version: v1, kind: Namespace, name: app}
  policy:
    placementType: PickN
    numberOfClusters: 2
    affinity:
      clusterAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          clusterSelectorTerms:
            - labelSelector: {matchLabels: {env: prod}}
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 20
            preference:
              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_predicts_the_hubs_decision_and_writes_nothing() {
    let members: Vec<&Member> = MEMBERS.iter().collect();
    let hub = fleet(&members).await;

    let out = hub.fleetctl_with_stdin(&["plan", "-f", "-", "-o", "json"], Some(PLACEMENT));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan json");
    assert_eq!(plan["fulfilled"], true, "{plan}");
    let rows = plan["clusters"].as_array().expect("clusters");
    let of = |decision: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r["decision"] == decision)
            .filter_map(|r| r["cluster"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(of("Chosen"), ["big", "mid"], "{plan}");
    assert_eq!(of("NotChosen"), ["small"], "{plan}");
    assert_eq!(of("Filtered"), ["lab"], "{plan}");
    // Scores: the sorter ranks big above mid above small.
    let affinity = |name: &str| rows.iter().find(|r| r["cluster"] == name).and_then(|r| r["scores"][0].as_i64());
    assert!(affinity("big") > affinity("mid") && affinity("mid") > affinity("small"), "{plan}");
    let lab = rows.iter().find(|r| r["cluster"] == "lab").expect("lab");
    assert!(lab["reason"].as_str().is_some_and(|r| !r.is_empty()), "{plan}");

    // The table form names the same clusters.
    let out = hub.fleetctl_with_stdin(&["plan", "-f", "-"], Some(PLACEMENT));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.starts_with("ClusterResourcePlacement planned: 2 cluster(s) chosen, fulfilled"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("lab ") && l.contains("filtered")), "{text}");

    // Nothing was written.
    let get = hub.fleetctl(&["get", "crp", "planned"]);
    assert!(!get.status.success(), "plan created the placement");

    // The hub, given the placement, decides the same.
    apply_yaml(&hub, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n");
    apply_yaml(&hub, PLACEMENT);
    eventually("the hub binds big and mid", WAIT, || async {
        let chosen: BTreeSet<String> = bindings(&hub, "planned")
            .await?
            .into_iter()
            .filter(|(_, (state, _))| state != "Unscheduled")
            .map(|(c, _)| c)
            .collect();
        if chosen == BTreeSet::from(["big".to_string(), "mid".to_string()]) {
            Ok(())
        } else {
            Err(format!("{chosen:?}"))
        }
    })
    .await;

    // Planned again, the placement is planned with its bindings: it is on
    // big and mid, and scaled to three it keeps them and adds small.
    let out = hub.fleetctl_with_stdin(&["plan", "-f", "-", "-o", "json"], Some(PLACEMENT));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan json");
    assert_eq!(plan["current"], serde_json::json!(["big", "mid"]), "{plan}");
    let scaled = PLACEMENT.replace("numberOfClusters: 2", "numberOfClusters: 3");
    let out = hub.fleetctl_with_stdin(&["plan", "-f", "-", "-o", "json"], Some(&scaled));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan json");
    let chosen: Vec<&str> = plan["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["decision"] == "Chosen")
        .filter_map(|c| c["cluster"].as_str())
        .collect();
    assert_eq!(chosen, ["big", "mid", "small"], "{plan}");

    // A file without a placement, and an invalid one, are refused clearly.
    let out =
        hub.fleetctl_with_stdin(&["plan", "-f", "-"], Some("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no placement found"));
    let invalid = PLACEMENT.replace("placementType: PickN", "placementType: PickMany");
    let out = hub.fleetctl_with_stdin(&["plan", "-f", "-"], Some(&invalid));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("placementType") && err.contains("PickMany"), "{err}");
}
