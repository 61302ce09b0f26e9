//! Open Cluster Management on a real trio with real agents (docs/spec/ocm.md),
//! driven with the OCM YAML of `deploy/examples/ocm/` applied unchanged:
//!
//! - Placements over a cluster set bound to their namespace pick what the
//!   prioritizers say on agents of different allocatable memory and CPU; a
//!   better cluster joining changes one Placement's decisions (with
//!   `DecisionUpdate` and a `ScoreUpdate` listing every total) but not the
//!   one where `Steady` is weighted to hold them; fleetctl shows it all.
//! - A KubeFleet CRP and an OCM Placement on the same clusters at once; a
//!   ManifestWorkReplicaSet rolled out `ProgressivePerGroup` reaches the
//!   canary group (seen on the members) before the rest, its ManifestWorks
//!   report back; a cluster relabelled out of the set through the
//!   ManagedCluster view loses its ManifestWork and what it placed. A
//!   replica set whose template names per-cluster variables (Fleet's
//!   extension) gives each cluster its own values, says which cluster lacks
//!   a label it names, and reaches that cluster once labelled.

use fleet_api::Object;
use fleet_tests::fleet::{
    apply_yaml, fleet_sized, list, member_has, member_object, start_member, wait_joined, wait_member, Member, WAIT,
};
use fleet_tests::objects::{condition, get};
use fleet_tests::{eventually, Hub};
use serde_json::Value;

const SETS: &str = include_str!("../../deploy/examples/ocm/sets.yaml");
const PLACEMENTS: &str = include_str!("../../deploy/examples/ocm/placements.yaml");
const ROLLOUT: &str = include_str!("../../deploy/examples/ocm/rollout.yaml");
const NS: &str = "ocm-demo";
const SET: (&str, &str) = ("cluster.open-cluster-management.io/clusterset", "prod");

/// The clusters a Placement's decision pages name, sorted.
async fn decided(hub: &Hub, placement: &str) -> Result<Vec<String>, String> {
    let selector = format!("cluster.open-cluster-management.io/placement={placement}");
    let pages = list(hub, "placementdecisions", &selector).await?;
    let mut clusters: Vec<String> = pages
        .iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(NS))
        .flat_map(|p| fleet_api::ocm::decision::status_of(p).decisions)
        .map(|d| d.cluster_name)
        .collect();
    clusters.sort();
    Ok(clusters)
}

/// Waits until the Placement decides exactly `want` and says so in its status.
async fn wait_decided(hub: &Hub, placement: &str, want: &[&str]) {
    eventually(&format!("{placement} decides {want:?}"), WAIT, || async {
        let got = decided(hub, placement).await?;
        let mut admin = hub.client(hub.running()[0]).await;
        let object = get(&mut admin, "placement", NS, placement).await.map_err(|e| e.to_string())?;
        let selected = object.status().and_then(|s| s["numberOfSelectedClusters"].as_u64());
        let satisfied = condition(&object, "PlacementSatisfied");
        if got == want && selected == Some(want.len() as u64) && satisfied.as_ref().is_some_and(|c| c.0 == "True") {
            Ok(())
        } else {
            Err(format!("decided {got:?}, selected {selected:?}, satisfied {satisfied:?}"))
        }
    })
    .await;
}

/// The (reason, message, count) of every Event about the Placement.
async fn events(hub: &Hub, placement: &str) -> Result<Vec<(String, String, i64)>, String> {
    let all = list(hub, "events", "").await?;
    Ok(all
        .iter()
        .filter(|e| e.rest["involvedObject"]["kind"] == "Placement" && e.rest["involvedObject"]["name"] == placement)
        .map(|e| {
            let text = |f: &str| e.rest[f].as_str().unwrap_or_default().to_string();
            (text("reason"), text("message"), e.rest["count"].as_i64().unwrap_or(1))
        })
        .collect())
}

/// Waits until the Placement has an Event of `reason` with `message`.
async fn wait_event(hub: &Hub, placement: &str, reason: &str, message: &str) {
    eventually(&format!("{placement}: event {reason} {message:?}"), WAIT, || async {
        let all = events(hub, placement).await?;
        if all.iter().any(|(r, m, _)| r == reason && m.contains(message)) {
            Ok(())
        } else {
            Err(format!("{all:?}"))
        }
    })
    .await;
}

/// fleetctl's stdout, asserting success.
fn fleetctl(hub: &Hub, args: &[&str]) -> String {
    let out = hub.fleetctl(args);
    assert!(out.status.success(), "fleetctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether a line of `text` holds all of `cells` (in order, space-separated).
fn has_row(text: &str, cells: &[&str]) -> bool {
    text.lines().any(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.windows(cells.len()).any(|w| w == cells)
    })
}

const MEM_8: Member = Member { name: "mem-8", labels: &[SET], nodes: 1, cpu: 2 };
const MEM_16: Member = Member { name: "mem-16", labels: &[SET], nodes: 1, cpu: 4 };
const CPU_8: Member = Member { name: "cpu-8", labels: &[SET], nodes: 1, cpu: 8 };
const DEV: Member =
    Member { name: "dev-1", labels: &[("cluster.open-cluster-management.io/clusterset", "dev")], nodes: 1, cpu: 16 };
const MEM_32: Member = Member { name: "mem-32", labels: &[SET], nodes: 1, cpu: 2 };

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placements_follow_the_prioritizers_and_a_better_cluster_joining() {
    let mut hub = fleet_sized(&[(&MEM_8, "8Gi"), (&MEM_16, "16Gi"), (&CPU_8, "4Gi"), (&DEV, "64Gi")]).await;
    apply_yaml(&hub, SETS);
    apply_yaml(&hub, PLACEMENTS);

    // Memory 8/16/4 Gi: trunc(((a − 4) / 12 − 0.5) × 200) = −33, 100, −100; dev-1 is outside the set.
    wait_decided(&hub, "by-memory", &["mem-16", "mem-8"]).await;
    // CPU 2/4/8: −100, −33, 100.
    wait_decided(&hub, "by-cpu", &["cpu-8", "mem-16"]).await;
    wait_decided(&hub, "steady", &["mem-16", "mem-8"]).await;
    wait_event(&hub, "by-memory", "DecisionCreate", "by-memory-decision-1").await;
    wait_event(&hub, "by-memory", "ScoreUpdate", "cpu-8:-100 mem-16:100 mem-8:-33").await;
    wait_event(&hub, "by-cpu", "ScoreUpdate", "cpu-8:100 mem-16:-33 mem-8:-100").await;

    let wide = fleetctl(&hub, &["get", "placement", "-n", NS, "-o", "wide"]);
    assert!(has_row(&wide, &["by-memory", "True", "AllDecisionsScheduled", "2", "False", "1"]), "{wide}");
    let pages = fleetctl(&hub, &["get", "placementdecision", "-n", NS, "-o", "wide"]);
    assert!(has_row(&pages, &["by-cpu-decision-1", "by-cpu", "0", "2", "cpu-8,mem-16"]), "{pages}");
    let described = fleetctl(&hub, &["describe", "placement", "by-memory", "-n", NS]);
    assert!(has_row(&described, &["CLUSTER", "ResourceAllocatableMemory(1)", "TOTAL", "SELECTED"]), "{described}");
    assert!(has_row(&described, &["mem-8", "-33", "-33", "yes"]), "{described}");
    assert!(has_row(&described, &["cpu-8", "-100", "-100", "no"]), "{described}");
    assert!(described.contains("ScoreUpdate"), "{described}");
    let clusters = fleetctl(&hub, &["get", "managedcluster"]);
    assert!(has_row(&clusters, &["mem-8", "true", "True", "True"]), "{clusters}");

    // A cluster with more memory than any joins: by-memory takes it
    // (−71, −14, −100, 100 over 4..32 Gi); steady's weight 3 holds its two.
    start_member(&mut hub, &MEM_32, "32Gi");
    wait_joined(&hub, MEM_32.name).await;
    wait_decided(&hub, "by-memory", &["mem-16", "mem-32"]).await;
    wait_event(&hub, "by-memory", "DecisionUpdate", "by-memory-decision-1").await;
    wait_event(&hub, "by-memory", "ScoreUpdate", "cpu-8:-100 mem-16:-14 mem-32:100 mem-8:-71").await;
    eventually("steady scored mem-32", WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let object = get(&mut admin, "placement", NS, "steady").await.map_err(|e| e.to_string())?;
        let scores = object.status().map(|s| s["candidateScores"]["candidates"].clone()).unwrap_or_default();
        let seen = scores.as_array().into_iter().flatten().any(|c| c["clusterName"] == "mem-32");
        if seen {
            Ok(())
        } else {
            Err(scores.to_string())
        }
    })
    .await;
    assert_eq!(decided(&hub, "steady").await.unwrap(), ["mem-16", "mem-8"]);
    let steady = events(&hub, "steady").await.unwrap();
    assert!(!steady.iter().any(|(r, _, _)| r == "DecisionUpdate"), "{steady:?}");
    let score_updates: Vec<_> = steady.iter().filter(|(r, _, _)| r == "ScoreUpdate").collect();
    assert_eq!(score_updates.len(), 1, "only when the decisions changed: {steady:?}");
    assert_eq!(score_updates[0].2, 1, "{steady:?}");
    wait_decided(&hub, "by-cpu", &["cpu-8", "mem-16"]).await;
}

const CANARY: Member = Member { name: "canary-1", labels: &[SET, ("tier", "canary")], nodes: 1, cpu: 4 };
const X1: Member = Member { name: "x-1", labels: &[SET], nodes: 1, cpu: 4 };
const X2: Member = Member { name: "x-2", labels: &[SET], nodes: 1, cpu: 4 };

const SHARED: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: shared}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shared-config, namespace: shared}
data: {from: kubefleet}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: shared}
spec:
  resourceSelectors: [{group: \"\", version: v1, kind: Namespace, name: shared}]
  policy: {placementType: PickAll}
";

/// A ManifestWork of the replica set `web`, if any.
async fn manifest_work(hub: &Hub, cluster: &str) -> Option<Object> {
    let mut admin = hub.client(hub.running()[0]).await;
    get(&mut admin, "manifestwork", cluster, "web").await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crp_and_ocm_side_by_side_a_canary_first_rollout_and_leaving_the_set() {
    let hub = fleet_sized(&[(&CANARY, "8Gi"), (&X1, "8Gi"), (&X2, "8Gi")]).await;
    apply_yaml(&hub, SETS);
    apply_yaml(&hub, SHARED);
    apply_yaml(&hub, ROLLOUT);

    wait_decided(&hub, "rollout", &["canary-1", "x-1", "x-2"]).await;
    // The canary group first: while it soaks (minSuccessTime 5s) nobody else has it.
    wait_member(&hub, "canary-1", "configmap", "ocm-web", "web-config", true).await;
    for rest in ["x-1", "x-2"] {
        assert!(!member_has(&hub, rest, "configmap", "ocm-web", "web-config"), "{rest} before the canary soaked");
        assert!(manifest_work(&hub, rest).await.is_none(), "{rest} has no ManifestWork yet");
    }
    for cluster in ["x-1", "x-2"] {
        wait_member(&hub, cluster, "configmap", "ocm-web", "web-config", true).await;
    }

    // The KubeFleet placement reached the same clusters meanwhile.
    for cluster in ["canary-1", "x-1", "x-2"] {
        wait_member(&hub, cluster, "configmap", "shared", "shared-config", true).await;
    }

    // ManifestWorks report back; the replica set sums them up.
    eventually("the ManifestWork of canary-1 reports applied manifests", WAIT, || async {
        let mw = manifest_work(&hub, "canary-1").await.ok_or("no ManifestWork")?;
        let applied = condition(&mw, "Applied");
        let manifests =
            mw.status().and_then(|s| s.pointer("/resourceStatus/manifests")).and_then(Value::as_array).map(Vec::len);
        if applied.as_ref().is_some_and(|c| c.0 == "True") && manifests == Some(2) {
            Ok(())
        } else {
            Err(format!("{:?}", mw.status()))
        }
    })
    .await;
    eventually("the replica set rolled out", WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let mwrs = get(&mut admin, "mwrs", NS, "web").await.map_err(|e| e.to_string())?;
        let summary = mwrs.status().map(|s| s["summary"].clone()).unwrap_or_default();
        let rolled = condition(&mwrs, "PlacementRolledOut");
        let counts = summary["total"] == 3 && summary["applied"] == 3;
        let desired = summary["desiredTotal"] == 3 && summary["updated"] == 3;
        if counts && desired && rolled.as_ref().is_some_and(|c| c.0 == "True") {
            Ok(())
        } else {
            Err(format!("{summary} {rolled:?}"))
        }
    })
    .await;
    let wide = fleetctl(&hub, &["get", "mwrs", "-n", NS, "-o", "wide"]);
    assert!(has_row(&wide, &["web", "rollout", "True", "True", "True", "3", "3", "3", "0", "0", "3", "3"]), "{wide}");

    // Relabelled out of the set through the ManagedCluster view: the same
    // MemberCluster changes, the Placement drops x-2, and its ManifestWork
    // (and what it placed) goes; the KubeFleet placement keeps it.
    apply_yaml(
        &hub,
        "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: x-2\n  labels: {cluster.open-cluster-management.io/clusterset: dev}\nspec: {hubAcceptsClient: true}\n",
    );
    let mut admin = hub.client(hub.running()[0]).await;
    let mc = get(&mut admin, "mc", "", "x-2").await.unwrap();
    assert_eq!(mc.metadata.labels.get(SET.0).map(String::as_str), Some("dev"), "one inventory");
    wait_decided(&hub, "rollout", &["canary-1", "x-1"]).await;
    eventually("x-2's ManifestWork and config gone", WAIT, || async {
        let gone = manifest_work(&hub, "x-2").await.is_none();
        let removed = !member_has(&hub, "x-2", "configmap", "ocm-web", "web-config");
        if gone && removed {
            Ok(())
        } else {
            Err(format!("ManifestWork gone {gone}, config removed {removed}"))
        }
    })
    .await;
    assert!(member_has(&hub, "x-2", "configmap", "shared", "shared-config"), "the CRP still places on x-2");
    assert!(member_has(&hub, "x-1", "configmap", "ocm-web", "web-config"));

    // Per-cluster variables: canary-1 has the label `tier`, x-1 not yet.
    apply_yaml(&hub, PER_CLUSTER);
    let hub = &hub;
    let values = |cluster: &'static str| async move {
        let cm = member_object(hub, cluster, "configmap", "ocm-web", "per-cluster").ok_or("not placed")?;
        Ok::<Value, String>(cm["data"].clone())
    };
    let canary = eventually("canary-1 gets its own values", WAIT, || values("canary-1")).await;
    assert_eq!(canary, serde_json::json!({"cluster": "canary-1", "tier": "canary"}));
    eventually("the replica set says why x-1 has none", WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let mwrs = get(&mut admin, "mwrs", NS, "per-cluster").await.map_err(|e| e.to_string())?;
        let conditions = mwrs.status().and_then(|s| s.get("conditions").cloned()).unwrap_or_default();
        let applied = conditions
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "ManifestworkApplied"))
            .map(|c| c["message"].to_string())
            .unwrap_or_default();
        if applied.contains("cannot render the template for x-1: label key tier not found on cluster x-1") {
            Ok(())
        } else {
            Err(applied)
        }
    })
    .await;
    assert!(!member_has(hub, "x-1", "configmap", "ocm-web", "per-cluster"));
    apply_yaml(
        hub,
        "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: x-1\n  labels: {cluster.open-cluster-management.io/clusterset: prod, tier: web}\nspec: {hubAcceptsClient: true}\n",
    );
    let x1 = eventually("x-1, labelled, gets its values", WAIT, || values("x-1")).await;
    assert_eq!(x1, serde_json::json!({"cluster": "x-1", "tier": "web"}));
}

/// A replica set on the same Placement whose template names per-cluster
/// variables.
const PER_CLUSTER: &str = "\
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: per-cluster, namespace: ocm-demo}
spec:
  placementRefs: [{name: rollout}]
  manifestWorkTemplate:
    workload:
      manifests:
        - apiVersion: v1
          kind: ConfigMap
          metadata: {name: per-cluster, namespace: ocm-web}
          data: {cluster: '${MEMBER-CLUSTER-NAME}', tier: '${MEMBER-CLUSTER-LABEL-KEY-tier}'}
";
