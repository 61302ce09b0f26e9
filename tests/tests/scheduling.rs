//! Placement scheduling journeys on a real trio with real agents on embedded
//! targets of different labels and sizes: KubeFleet YAML applied unchanged
//! with fleetctl, decisions read back as bindings and statuses.

use std::collections::BTreeMap;

use fleet_tests::fleet::{apply_yaml, bindings, fleet, fleet_with, list, member_yaml, wait_member, Member, WAIT};
use fleet_tests::objects::{condition, get};
use fleet_tests::{eventually, Hub};

/// Six clusters over three regions; available CPU = nodes × CPUs (as
/// allocatable) and differs for each, so sorters have a strict order:
/// central-1 (64) > west-1 (40) > east-2 (24) > east-1 (12) > west-2 (8) > central-2 (4).
const FLEET: &[Member] = &[
    Member { name: "east-1", labels: &[("region", "east"), ("env", "prod")], nodes: 3, cpu: 4 },
    Member { name: "east-2", labels: &[("region", "east"), ("env", "prod")], nodes: 6, cpu: 4 },
    Member { name: "west-1", labels: &[("region", "west"), ("env", "prod")], nodes: 5, cpu: 8 },
    Member { name: "west-2", labels: &[("region", "west"), ("env", "dev")], nodes: 2, cpu: 4 },
    Member { name: "central-1", labels: &[("region", "central"), ("env", "prod")], nodes: 8, cpu: 8 },
    Member { name: "central-2", labels: &[("region", "central"), ("env", "dev")], nodes: 1, cpu: 4 },
];

/// Waits until exactly `expected` clusters have active bindings and the
/// placement's Scheduled condition is `fulfilled`; returns the bindings.
async fn wait_chosen(
    hub: &Hub,
    placement: &str,
    expected: &[&str],
    fulfilled: bool,
) -> BTreeMap<String, (String, String)> {
    let want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    eventually(&format!("{placement} scheduled on {expected:?}"), WAIT, || async {
        let all = bindings(hub, placement).await?;
        let mut active: Vec<String> =
            all.iter().filter(|(_, (state, _))| state != "Unscheduled").map(|(c, _)| c.clone()).collect();
        active.sort();
        let mut want = want.clone();
        want.sort();
        let mut admin = hub.client(hub.running()[0]).await;
        let crp = get(&mut admin, "crp", "", placement).await.map_err(|e| e.to_string())?;
        let scheduled = condition(&crp, "ClusterResourcePlacementScheduled");
        let status_ok =
            scheduled.as_ref().is_some_and(|c| (c.0 == "True") == fulfilled && c.2 == crp.metadata.generation);
        if active == want && status_ok {
            Ok(all)
        } else {
            Err(format!("active {active:?}, condition {scheduled:?}"))
        }
    })
    .await
}

fn crp(name: &str, policy: &str) -> String {
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata:\n  name: {name}\nspec:\n  resourceSelectors:\n    - group: \"\"\n      version: v1\n      kind: Namespace\n      name: app\n  policy:\n{policy}"
    )
}

const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_choose_clusters_by_name_label_property_sorter_and_spread() {
    let members: Vec<&Member> = FLEET.iter().collect();
    let hub = fleet(&members).await;
    apply_yaml(&hub, NAMESPACE);

    // PickFixed with a missing name: unfulfilled, the others placed.
    apply_yaml(&hub, &crp("fixed", "    placementType: PickFixed\n    clusterNames: [east-1, west-2, nowhere]\n"));
    wait_chosen(&hub, "fixed", &["east-1", "west-2"], false).await;
    let mut admin = hub.client(hub.running()[0]).await;
    let fixed = get(&mut admin, "crp", "", "fixed").await.expect("fixed");
    let text = serde_json::to_string(fixed.status().expect("status")).unwrap_or_default();
    assert!(text.contains("cluster \\\"nowhere\\\" is not found"), "{text}");
    let policy_snapshot = get(&mut admin, "csps", "", "fixed-0").await.expect("policy snapshot");
    assert_eq!(condition(&policy_snapshot, "Scheduled").map(|c| c.1), Some("SchedulingPolicyUnfulfilled".into()));

    // PickAll by label and by property.
    let by_label = "    placementType: PickAll\n    affinity:\n      clusterAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          clusterSelectorTerms:\n            - labelSelector:\n                matchLabels: {env: prod}\n";
    apply_yaml(&hub, &crp("all-prod", by_label));
    wait_chosen(&hub, "all-prod", &["central-1", "east-1", "east-2", "west-1"], true).await;
    let by_property = "    placementType: PickAll\n    affinity:\n      clusterAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          clusterSelectorTerms:\n            - propertySelector:\n                matchExpressions:\n                  - {name: kubernetes.azure.com/node-count, operator: Ge, values: [\"5\"]}\n";
    apply_yaml(&hub, &crp("all-big", by_property));
    wait_chosen(&hub, "all-big", &["central-1", "east-2", "west-1"], true).await;

    // PickN by sorter (KubeFleet's older spelling metricSorter accepted).
    let sorter = |n: u32| {
        format!("    placementType: PickN\n    numberOfClusters: {n}\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 20\n            preference:\n              metricSorter: {{name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}}\n")
    };
    apply_yaml(&hub, &crp("top", &sorter(2)));
    let before = wait_chosen(&hub, "top", &["central-1", "west-1"], true).await;

    // Scale-out only adds (and keeps the very same bindings).
    apply_yaml(&hub, &crp("top", &sorter(4)));
    let after = wait_chosen(&hub, "top", &["central-1", "east-1", "east-2", "west-1"], true).await;
    for (cluster, (_, uid)) in &before {
        assert_eq!(after.get(cluster).map(|b| &b.1), Some(uid), "scale-out must keep {cluster}'s binding");
    }
    let top_policy = list(&hub, "csps", "kubernetes-fleet.io/parent-CRP=top").await.expect("policy snapshots");
    assert_eq!(top_policy.len(), 1, "a numberOfClusters change makes no new policy snapshot");

    // Scale beyond the fleet: all chosen, unfulfilled.
    apply_yaml(&hub, &crp("top", &sorter(8)));
    wait_chosen(&hub, "top", &["central-1", "central-2", "east-1", "east-2", "west-1", "west-2"], false).await;

    // PickN with topology spread over regions: one per region.
    let spread = "    placementType: PickN\n    numberOfClusters: 3\n    topologySpreadConstraints:\n      - {maxSkew: 1, topologyKey: region, whenUnsatisfiable: DoNotSchedule}\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 50\n            preference:\n              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}\n";
    apply_yaml(&hub, &crp("spread", spread));
    wait_chosen(&hub, "spread", &["central-1", "east-2", "west-1"], true).await;

    // A policy change reschedules and keeps the clusters chosen again.
    let dev_first = "    placementType: PickN\n    numberOfClusters: 2\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 100\n            preference:\n              labelSelector:\n                matchLabels: {env: dev}\n          - weight: 20\n            preference:\n              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}\n";
    let old = bindings(&hub, "top").await.expect("top bindings");
    apply_yaml(&hub, &crp("top", dev_first));
    let new = wait_chosen(&hub, "top", &["central-2", "west-2"], true).await;
    for cluster in ["central-2", "west-2"] {
        assert_eq!(new[cluster].1, old[cluster].1, "{cluster} was chosen before and again: same binding");
    }
    let top_policy = list(&hub, "csps", "kubernetes-fleet.io/parent-CRP=top").await.expect("policy snapshots");
    assert_eq!(top_policy.len(), 2, "a policy change makes a new policy snapshot");

    // Changing only the resources makes a new resource snapshot and never reschedules.
    let before = bindings(&hub, "top").await.expect("top bindings");
    apply_yaml(&hub, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: app\ndata: {k: v}\n");
    let admin = hub.client(hub.running()[0]).await;
    eventually("a second resource snapshot for top", WAIT, || {
        let mut admin = admin.clone();
        async move {
            let crp = get(&mut admin, "crp", "", "top").await.map_err(|e| e.to_string())?;
            let index = crp.status().and_then(|s| s.get("observedResourceIndex")).cloned();
            let selected = crp.status().and_then(|s| s.get("selectedResources")).map(|v| v.to_string());
            match (index, selected) {
                (Some(i), Some(sel)) if i == "1" && sel.contains("extra") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    let uids = |b: BTreeMap<String, (String, String)>| b.into_iter().map(|(c, (_, uid))| (c, uid)).collect::<Vec<_>>();
    let after = bindings(&hub, "top").await.expect("top bindings");
    assert_eq!(uids(after), uids(before), "a resource change never reschedules");

    // describe shows the decision with its scores.
    let out = hub.fleetctl(&["describe", "crp", "top"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("affinity score: 100"), "{text}");
    // ...and the events the controllers recorded about it.
    let events = text.split("Events:").nth(1).unwrap_or_default();
    for reason in ["PolicySnapshotCreated", "ClusterScheduled", "ClusterUnscheduled"] {
        assert!(events.contains(reason), "{reason} in {events}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taints_repel_new_placements_only_and_a_cluster_that_leaves_is_replaced() {
    let members: Vec<&Member> = FLEET.iter().filter(|m| m.labels.contains(&("env", "prod"))).collect();
    let hub = fleet(&members).await;
    apply_yaml(&hub, NAMESPACE);
    let taint = "  taints:\n    - {key: maintenance, value: \"true\", effect: NoSchedule}\n";
    apply_yaml(&hub, &member_yaml(members[0], taint)); // east-1 tainted

    let all = "    placementType: PickAll\n";
    apply_yaml(&hub, &crp("plain", all));
    wait_chosen(&hub, "plain", &["central-1", "east-2", "west-1"], true).await;
    let tolerating = "    placementType: PickAll\n    tolerations:\n      - {key: maintenance, operator: Exists}\n";
    apply_yaml(&hub, &crp("tolerant", tolerating));
    wait_chosen(&hub, "tolerant", &["central-1", "east-1", "east-2", "west-1"], true).await;

    // Tainting a chosen cluster does not evict it.
    let west = members.iter().find(|m| m.name == "west-1").expect("west-1");
    apply_yaml(&hub, &member_yaml(west, taint));
    let n = "    placementType: PickN\n    numberOfClusters: 2\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 20\n            preference:\n              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}\n";
    apply_yaml(&hub, &crp("pair", n));
    // west-1 (tainted now) is not a candidate: central-1 and east-2.
    wait_chosen(&hub, "pair", &["central-1", "east-2"], true).await;
    // Tolerating the taint, smallest available CPU first: east-1 and east-2.
    let small = "    placementType: PickN\n    numberOfClusters: 2\n    tolerations:\n      - {key: maintenance, operator: Exists}\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 20\n            preference:\n              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Ascending}\n";
    apply_yaml(&hub, &crp("small", small));
    let small_before = wait_chosen(&hub, "small", &["east-1", "east-2"], true).await;
    // plain keeps west-1 although it is tainted now.
    wait_chosen(&hub, "plain", &["central-1", "east-2", "west-1"], true).await;

    // A chosen cluster leaves: PickN replaces it, PickAll drops it.
    let out = hub.fleetctl(&["delete", "mc", "east-2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The tolerant placement replaces east-2 with the next smallest at once
    // and keeps east-1 as it was.
    let small_after = wait_chosen(&hub, "small", &["east-1", "west-1"], true).await;
    assert_eq!(small_after["east-1"], small_before["east-1"], "the cluster that stayed keeps its binding");
    assert!(
        small_after.get("east-2").is_none_or(|b| b.0 == "Unscheduled"),
        "the binding of the cluster that left is unscheduled (then deleted by the rollout): {small_after:?}"
    );
    // east-1 is tainted and west-1 too: nothing can replace east-2 in pair.
    wait_chosen(&hub, "pair", &["central-1"], false).await;
    wait_chosen(&hub, "plain", &["central-1", "west-1"], true).await;
    // Lifting the taint on east-1 lets PickN fill the gap.
    apply_yaml(&hub, &member_yaml(members[0], ""));
    wait_chosen(&hub, "pair", &["central-1", "east-1"], true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_finishes_scheduling_with_the_same_result() {
    let members: Vec<&Member> = FLEET.iter().collect();
    let mut hub = fleet(&members).await;
    apply_yaml(&hub, NAMESPACE);
    let sorter = "    placementType: PickN\n    numberOfClusters: 3\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 20\n            preference:\n              propertySorter: {name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}\n";
    let many: String = (0..8).map(|i| crp(&format!("p{i}"), sorter)).collect::<Vec<_>>().join("\n---\n");
    let leader = hub.wait_leader().await;
    apply_yaml(&hub, &many);
    // Kill the leader while it is (most likely) in the middle of these.
    hub.kill(leader);
    hub.wait_leader().await;
    for i in 0..8 {
        wait_chosen(&hub, &format!("p{i}"), &["central-1", "east-2", "west-1"], true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pick_fixed_placement_scales_to_zero_and_back() {
    let hub = fleet(&[&FLEET[0], &FLEET[3]]).await;
    apply_yaml(&hub, NAMESPACE);
    apply_yaml(&hub, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: app\ndata: {k: v}\n");
    let fixed = |names: &str| crp("fixed", &format!("    placementType: PickFixed\n    clusterNames: [{names}]\n"));
    apply_yaml(&hub, &fixed("east-1, west-2"));
    wait_chosen(&hub, "fixed", &["east-1", "west-2"], true).await;
    for cluster in ["east-1", "west-2"] {
        wait_member(&hub, cluster, "configmap", "app", "settings", true).await;
    }

    // No names: the resources leave every cluster, the placement stays.
    apply_yaml(&hub, &fixed(""));
    wait_chosen(&hub, "fixed", &[], true).await;
    for cluster in ["east-1", "west-2"] {
        wait_member(&hub, cluster, "configmap", "app", "settings", false).await;
        wait_member(&hub, cluster, "namespace", "", "app", false).await;
    }
    // The placement stays, with only its Scheduled condition, as KubeFleet
    // keeps a placement that selects no cluster.
    let mut admin = hub.client(hub.running()[0]).await;
    let placement = get(&mut admin, "crp", "", "fixed").await.expect("the placement stays");
    assert!(placement.metadata.deletion_timestamp.is_none(), "{placement:?}");
    let types: Vec<String> = placement
        .status()
        .and_then(|s| s.get("conditions"))
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str().map(str::to_string))
        .collect();
    assert_eq!(types, ["ClusterResourcePlacementScheduled"], "{:?}", placement.status());
    let entries =
        placement.status().and_then(|s| s.get("placementStatuses")).and_then(|p| p.as_array()).map_or(0, Vec::len);
    assert_eq!(entries, 0, "no per-cluster entries: {:?}", placement.status());

    // A name again: placed there again, and only there.
    apply_yaml(&hub, &fixed("west-2"));
    wait_chosen(&hub, "fixed", &["west-2"], true).await;
    wait_member(&hub, "west-2", "configmap", "app", "settings", true).await;
    assert!(!fleet_tests::fleet::member_has(&hub, "east-1", "configmap", "app", "settings"));
}

/// The clusters of a ResourcePlacement's active bindings, sorted.
async fn rp_clusters(hub: &Hub, namespace: &str, placement: &str) -> Result<Vec<String>, String> {
    let objects = list(hub, "rb", &format!("kubernetes-fleet.io/parent-CRP={placement}")).await?;
    let mut clusters: Vec<String> = objects
        .iter()
        .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
        .map(fleet_api::binding::spec_of)
        .filter(|s| s.state != "Unscheduled")
        .map(|s| s.target_cluster)
        .collect();
    clusters.sort();
    Ok(clusters)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_placement_goes_only_where_its_namespace_is() {
    let hub = fleet_with(&[&FLEET[0], &FLEET[3]], &["--collect-namespaces"]).await;
    apply_yaml(
        &hub,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team}\ndata: {a: \"1\"}\n",
    );
    let namespace_on = |names: &str| {
        format!(
            "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {{name: team-ns}}\nspec:\n  resourceSelectors:\n    - {{group: \"\", version: v1, kind: Namespace, name: team, selectionScope: NamespaceOnly}}\n  policy: {{placementType: PickFixed, clusterNames: [{names}]}}\n"
        )
    };
    apply_yaml(&hub, &namespace_on("east-1"));
    apply_yaml(
        &hub,
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {name: team-rp, namespace: team}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: ConfigMap, name: settings}\n  policy: {placementType: PickAll}\n",
    );

    // Only east-1 has the namespace: the ResourcePlacement goes there alone,
    // and says why west-2 was left out.
    eventually("team-rp on east-1 only, west-2 filtered", WAIT, || async {
        let clusters = rp_clusters(&hub, "team", "team-rp").await?;
        let snapshots = list(&hub, "sps", "kubernetes-fleet.io/parent-CRP=team-rp").await?;
        let reasons =
            serde_json::to_string(&snapshots.iter().map(|s| s.status()).collect::<Vec<_>>()).unwrap_or_default();
        if clusters == ["east-1"] && reasons.contains("target namespace does not exist on cluster") {
            Ok(())
        } else {
            Err(format!("{clusters:?} {reasons}"))
        }
    })
    .await;
    wait_member(&hub, "east-1", "configmap", "team", "settings", true).await;
    assert!(!fleet_tests::fleet::member_has(&hub, "west-2", "configmap", "team", "settings"));

    // The member's status lists the namespace with the Work that placed it.
    let mc = fleet_tests::fleet::get_object(&hub, "mc", "", "east-1").await.expect("east-1");
    let work = mc.status().and_then(|s| s.pointer("/namespaces/team")).and_then(|v| v.as_str()).unwrap_or_default();
    assert_eq!(work, "team-ns-work", "{:?}", mc.status());
    let out = hub.fleetctl(&["describe", "mc", "east-1"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("team-ns-work"), "{}", String::from_utf8_lossy(&out.stdout));

    // Once the namespace reaches west-2, the ResourcePlacement follows.
    apply_yaml(&hub, &namespace_on("east-1, west-2"));
    eventually("team-rp on both", WAIT, || async {
        let clusters = rp_clusters(&hub, "team", "team-rp").await?;
        if clusters == ["east-1", "west-2"] {
            Ok(())
        } else {
            Err(format!("{clusters:?}"))
        }
    })
    .await;
    wait_member(&hub, "west-2", "configmap", "team", "settings", true).await;
}
