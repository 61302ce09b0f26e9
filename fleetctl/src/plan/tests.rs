use fleet_api::parse::parse_documents;

use super::*;

fn object(yaml: &str) -> Object {
    parse_documents("test", yaml).unwrap().remove(0)
}

fn member(name: &str, labels: &str, healthy: bool) -> Object {
    let healthy = if healthy { "True" } else { "False" };
    object(&format!(
        r#"
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: {name}
  labels: {{{labels}}}
spec:
  identity: {{kind: ServiceAccount, name: fleet, namespace: fleet-system}}
status:
  conditions:
  - {{type: Joined, status: "True", reason: Joined}}
  - {{type: Healthy, status: "{healthy}", reason: HeartbeatTimeout}}
"#
    ))
}

fn inventory() -> Inventory {
    Inventory {
        members: vec![
            member("east-1", "region: east, tier: gold", true),
            member("east-2", "region: east", true),
            member("west-1", "region: west, tier: gold", true),
            member("west-2", "region: west", false),
        ],
        ..Inventory::default()
    }
}

const PICK_TWO_PREFER_GOLD: &str = r#"
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: web}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: web}]
  policy:
    placementType: PickN
    numberOfClusters: 2
    affinity:
      clusterAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          clusterSelectorTerms: [{labelSelector: {matchLabels: {}}}]
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 20
          preference: {labelSelector: {matchLabels: {tier: gold}}}
"#;

#[test]
fn pick_n_lists_chosen_with_scores_then_the_rest_with_reasons() {
    let plan = plan(&object(PICK_TWO_PREFER_GOLD), &inventory(), 0).unwrap();
    assert_eq!(
        (plan.kind.as_str(), plan.name.as_str(), plan.namespace.as_deref()),
        ("ClusterResourcePlacement", "web", None)
    );
    assert!(plan.fulfilled, "{}", plan.message);
    let rows: Vec<(&str, Decision, Vec<i64>)> =
        plan.clusters.iter().map(|c| (c.cluster.as_str(), c.decision, c.scores.clone())).collect();
    assert_eq!(
        rows,
        vec![
            ("east-1", Decision::Chosen, vec![20, 0]),
            ("west-1", Decision::Chosen, vec![20, 0]),
            ("east-2", Decision::NotChosen, vec![0, 0]),
            ("west-2", Decision::Filtered, vec![]),
        ]
    );
    assert!(plan.clusters[2].reason.contains("does not score high enough"), "{}", plan.clusters[2].reason);
    assert!(plan.clusters[3].reason.contains("not healthy"), "{}", plan.clusters[3].reason);
    assert_eq!(plan.omitted, None);

    let text = render_text(std::slice::from_ref(&plan));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ClusterResourcePlacement web: 2 cluster(s) chosen, fulfilled: "), "{text}");
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["CLUSTER", "DECISION", "AFFINITY", "TOPOLOGY-SPREAD", "REASON"]
    );
    assert!(lines[2].starts_with("east-1") && lines[2].contains("chosen") && lines[2].contains("20"), "{text}");
    assert!(lines[5].starts_with("west-2") && lines[5].contains("filtered") && lines[5].contains(" - "), "{text}");

    let json: serde_json::Value = serde_json::from_str(&render_json(std::slice::from_ref(&plan)).unwrap()).unwrap();
    assert_eq!(
        json["clusters"][0],
        serde_json::json!({
            "cluster": "east-1", "decision": "Chosen", "scores": [20, 0],
            "reason": "Successfully scheduled resources for placement in \"east-1\" (affinity score: 20, topology spread score: 0): picked by scheduling policy"
        })
    );
    assert_eq!(json["scoreNames"], serde_json::json!(["affinity", "topologySpread"]));
}

#[test]
fn unfulfilled_pick_n_says_so() {
    let yaml = PICK_TWO_PREFER_GOLD.replace("numberOfClusters: 2", "numberOfClusters: 5");
    let plan = plan(&object(&yaml), &inventory(), 0).unwrap();
    assert!(!plan.fulfilled);
    assert_eq!(plan.clusters.iter().filter(|c| c.decision == Decision::Chosen).count(), 3);
    assert!(render_text(&[plan]).contains("not fulfilled"));
}

#[test]
fn resource_placement_is_namespaced() {
    let yaml = r#"
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourcePlacement
metadata: {name: app, namespace: team}
spec:
  resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: cfg}]
  policy: {placementType: PickFixed, clusterNames: [east-2, nowhere]}
"#;
    let plan = plan(&object(yaml), &inventory(), 0).unwrap();
    assert_eq!(plan.namespace.as_deref(), Some("team"));
    let chosen: Vec<&str> =
        plan.clusters.iter().filter(|c| c.decision == Decision::Chosen).map(|c| c.cluster.as_str()).collect();
    assert_eq!(chosen, ["east-2"]);
    assert!(plan.clusters.iter().any(|c| c.cluster == "nowhere" && c.decision == Decision::Filtered));
    assert!(render_text(&[plan]).starts_with("ResourcePlacement team/app: "));
}

#[test]
fn ocm_placement_scores_candidates_and_names_clusters_outside_the_sets() {
    let mut inventory = inventory();
    inventory.set_bindings.push(object(
        r#"
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: global, namespace: apps}
spec: {clusterSet: global}
"#,
    ));
    let yaml = r#"
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: apps}
spec:
  numberOfClusters: 1
  predicates:
  - requiredClusterSelector: {labelSelector: {matchLabels: {region: east}}}
"#;
    let plan = plan(&object(yaml), &inventory, 1_700_000_000).unwrap();
    assert_eq!(plan.score_names.last().map(String::as_str), Some("total"));
    let chosen: Vec<&str> =
        plan.clusters.iter().filter(|c| c.decision == Decision::Chosen).map(|c| c.cluster.as_str()).collect();
    assert_eq!(chosen.len(), 1, "{plan:?}");
    assert!(chosen[0].starts_with("east-"));
    let west: Vec<&ClusterPlan> = plan.clusters.iter().filter(|c| c.cluster.starts_with("west")).collect();
    assert_eq!(west.len(), 2, "{plan:?}");
    assert!(west.iter().all(|c| c.decision == Decision::Filtered && !c.reason.is_empty()), "{west:?}");

    // Without a set binding in its namespace, every cluster is outside.
    let plan = plan_without_bindings(yaml);
    assert!(!plan.fulfilled);
    assert!(plan.clusters.iter().all(|c| c.decision == Decision::Filtered && c.reason.contains("apps")), "{plan:?}");
    assert_eq!(plan.clusters.len(), 4);
}

fn plan_without_bindings(yaml: &str) -> Plan {
    plan(&object(yaml), &inventory(), 1_700_000_000).unwrap()
}

#[test]
fn invalid_placement_and_other_kinds_are_refused_with_the_field() {
    let bad = PICK_TWO_PREFER_GOLD.replace("placementType: PickN", "placementType: PickSome");
    let err = plan(&object(&bad), &inventory(), 0).unwrap_err().to_string();
    assert!(err.contains("placementType") && err.contains("PickSome"), "{err}");
    let cm = object("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
    let err = plan(&cm, &inventory(), 0).unwrap_err().to_string();
    assert!(err.contains("ConfigMap") && err.contains("not a placement"), "{err}");
}

#[test]
fn score_headers_are_kebab_upper_case() {
    assert_eq!(render::score_header_for_test("topologySpread"), "TOPOLOGY-SPREAD");
    assert_eq!(render::score_header_for_test("Balance"), "BALANCE");
    assert_eq!(render::score_header_for_test("total"), "TOTAL");
    assert_eq!(render::score_header_for_test("ResourceAllocatableCPU"), "RESOURCE-ALLOCATABLE-CPU");
}

/// A binding of `placement` to `cluster` under policy snapshot `snapshot`.
fn binding(placement: &str, cluster: &str, snapshot: &str) -> Object {
    object(&format!(
        r#"
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourceBinding
metadata:
  name: {placement}-{cluster}
  labels: {{kubernetes-fleet.io/parent-CRP: {placement}}}
spec:
  targetCluster: {cluster}
  state: Bound
  schedulingPolicySnapshotName: {snapshot}
  clusterDecision: {{clusterName: {cluster}, selected: true, reason: picked}}
"#
    ))
}

/// The inventory of a hub where `yaml`'s placement exists with its policy
/// snapshot and bindings to east-1 and east-2 (east-2 is not gold, so a new
/// placement would not choose it).
fn inventory_with_existing(yaml: &str) -> Inventory {
    let mut placement = object(yaml);
    fleet_api::placement::prepare(&mut placement).unwrap();
    let snapshot = match fleet_placement::snapshot::plan_policy_snapshots(&placement, &[]).remove(0) {
        SnapshotChange::Create(o) => o,
        other => panic!("expected a new policy snapshot, got {other:?}"),
    };
    let name = snapshot.metadata.name.clone();
    Inventory {
        bindings: vec![binding("web", "east-1", &name), binding("web", "east-2", &name)],
        policy_snapshots: vec![snapshot],
        ..inventory()
    }
}

#[test]
fn an_existing_pick_n_placement_keeps_its_clusters_while_its_policy_is_unchanged() {
    let inventory = inventory_with_existing(PICK_TWO_PREFER_GOLD);
    let plan = plan(&object(PICK_TWO_PREFER_GOLD), &inventory, 0).unwrap();
    let chosen: Vec<&str> =
        plan.clusters.iter().filter(|c| c.decision == Decision::Chosen).map(|c| c.cluster.as_str()).collect();
    assert_eq!(chosen, ["east-1", "east-2"], "{plan:?}");
    assert_eq!(plan.current, ["east-1", "east-2"]);
    assert!(render_text(std::slice::from_ref(&plan)).contains("currently on 2 cluster(s): east-1, east-2"));

    // A changed policy gets a new snapshot on the hub: the bindings are no
    // longer current and the clusters are chosen again by score.
    let changed = PICK_TWO_PREFER_GOLD.replace("weight: 20", "weight: 30");
    let replanned = super::plan(&object(&changed), &inventory, 0).unwrap();
    let chosen: Vec<&str> =
        replanned.clusters.iter().filter(|c| c.decision == Decision::Chosen).map(|c| c.cluster.as_str()).collect();
    assert_eq!(chosen, ["east-1", "west-1"], "{replanned:?}");
    assert_eq!(replanned.current, ["east-1", "east-2"]);
}

#[test]
fn bindings_of_another_placement_are_not_taken_as_this_ones() {
    let mut inventory = inventory_with_existing(PICK_TWO_PREFER_GOLD);
    for b in &mut inventory.bindings {
        b.metadata.labels.insert("kubernetes-fleet.io/parent-CRP".into(), "other".into());
    }
    let plan = plan(&object(PICK_TWO_PREFER_GOLD), &inventory, 0).unwrap();
    assert!(plan.current.is_empty());
    let chosen: Vec<&str> =
        plan.clusters.iter().filter(|c| c.decision == Decision::Chosen).map(|c| c.cluster.as_str()).collect();
    assert_eq!(chosen, ["east-1", "west-1"]);
}
