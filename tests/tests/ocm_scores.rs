//! Decision scores on a real trio with real agents (docs/spec/ocm.md):
//! Placements weighting allocatable memory with `sortBy: Score` write their
//! decisions best first, each with its `score`, and set
//! `status.lastScoreUpdateTime`; when a smaller cluster joins, the scores of
//! the clusters already chosen move without changing the choice: the
//! Placement with `scoreRateLimit: 1h` keeps the scores it wrote (the new
//! ones only in `candidateScores`), the one with `0s` writes them at once.

use fleet_api::ocm::decision::{self, ClusterDecision};
use fleet_tests::fleet::{apply_yaml, fleet_sized, list, start_member, wait_joined, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually, Hub};

const SETS: &str = include_str!("../../deploy/examples/ocm/sets.yaml");
const NS: &str = "ocm-demo";
const SET: (&str, &str) = ("cluster.open-cluster-management.io/clusterset", "prod");

const M4: Member = Member { name: "m-4", labels: &[SET], nodes: 1, cpu: 2 };
const M8: Member = Member { name: "m-8", labels: &[SET], nodes: 1, cpu: 2 };
const M16: Member = Member { name: "m-16", labels: &[SET], nodes: 1, cpu: 2 };
const M2: Member = Member { name: "m-2", labels: &[SET], nodes: 1, cpu: 2 };

/// A Placement of the two clusters with the most allocatable memory.
fn placement(name: &str, sort_by: &str, rate_limit: &str) -> String {
    format!(
        "apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {{name: {name}, namespace: {NS}}}
spec:
  numberOfClusters: 2
  sortBy: {sort_by}
  scoreRateLimit: {rate_limit}
  prioritizerPolicy:
    mode: Exact
    configurations: [{{scoreCoordinate: {{builtIn: ResourceAllocatableMemory}}, weight: 1}}]
"
    )
}

/// The Placement's decisions as `name:score`, in page order.
async fn decisions(hub: &Hub, placement: &str) -> Result<Vec<String>, String> {
    let selector = format!("{}={placement}", decision::PLACEMENT_LABEL);
    let mut pages = list(hub, "placementdecisions", &selector).await?;
    pages.retain(|p| p.metadata.namespace.as_deref() == Some(NS));
    pages.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(pages
        .iter()
        .flat_map(|p| decision::status_of(p).decisions)
        .map(|ClusterDecision { cluster_name, score, .. }| format!("{cluster_name}:{score}"))
        .collect())
}

/// Waits until the Placement's decisions are `want`, in this order.
async fn wait_decisions(hub: &Hub, placement: &str, want: &[&str]) {
    eventually(&format!("{placement} decides {want:?}"), WAIT, || async {
        let got = decisions(hub, placement).await?;
        if got == want {
            Ok(())
        } else {
            Err(format!("decisions {got:?}"))
        }
    })
    .await;
}

/// The Placement's status field `field`.
async fn status_field(hub: &Hub, placement: &str, field: &str) -> serde_json::Value {
    let mut admin = hub.client(hub.running()[0]).await;
    let object = get(&mut admin, "placement", NS, placement).await.unwrap_or_else(|e| panic!("{placement}: {e}"));
    object.status().map(|s| s[field].clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_carry_scores_sorted_and_rate_limited() {
    let mut hub = fleet_sized(&[(&M4, "4Gi"), (&M8, "8Gi"), (&M16, "16Gi")]).await;
    apply_yaml(&hub, SETS);
    apply_yaml(&hub, &placement("held", "Score", "1h"));
    apply_yaml(&hub, &placement("prompt", "Score", "0s"));
    apply_yaml(&hub, &placement("by-name", "ClusterName", "1m"));

    // Memory 4/8/16 Gi: trunc(((a − 4) / 12 − 0.5) × 200) = −100, −33, 100.
    wait_decisions(&hub, "held", &["m-16:100", "m-8:-33"]).await;
    wait_decisions(&hub, "prompt", &["m-16:100", "m-8:-33"]).await;
    wait_decisions(&hub, "by-name", &["m-16:100", "m-8:-33"]).await;
    let written = status_field(&hub, "held", "lastScoreUpdateTime").await;
    assert!(written.as_str().is_some_and(|t| t.ends_with('Z')), "lastScoreUpdateTime {written}");

    // A 2 Gi cluster joins: min 2 Gi, so m-8 scores −14 and is still chosen.
    start_member(&mut hub, &M2, "2Gi");
    wait_joined(&hub, M2.name).await;
    wait_decisions(&hub, "prompt", &["m-16:100", "m-8:-14"]).await;
    eventually("held scored m-2", WAIT, || async {
        let scores = status_field(&hub, "held", "candidateScores").await;
        let m8 = scores["candidates"].as_array().into_iter().flatten().find(|c| c["clusterName"] == "m-8").cloned();
        let seen_m2 = scores["candidates"].as_array().into_iter().flatten().any(|c| c["clusterName"] == "m-2");
        match m8 {
            Some(c) if seen_m2 && c["total"] == -14 => Ok(()),
            _ => Err(scores.to_string()),
        }
    })
    .await;
    // Within its hour, `held` keeps the scores and the time it wrote.
    assert_eq!(decisions(&hub, "held").await.unwrap(), ["m-16:100", "m-8:-33"]);
    assert_eq!(status_field(&hub, "held", "lastScoreUpdateTime").await, written);

    let described = hub.fleetctl(&["describe", "placement", "held", "-n", NS]);
    let text = String::from_utf8_lossy(&described.stdout);
    assert!(described.status.success(), "{}", String::from_utf8_lossy(&described.stderr));
    assert!(text.contains("Last Score Update Time:"), "{text}");
    assert!(text.lines().any(|l| l.split_whitespace().eq(["held-decision-1", "0", "m-8", "-33"])), "{text}");
    let wide = hub.fleetctl(&["get", "placement", "-n", NS, "-o", "wide"]);
    let text = String::from_utf8_lossy(&wide.stdout);
    assert!(text.lines().any(|l| l.starts_with("held ") && l.contains(" Score ")), "{text}");
}
