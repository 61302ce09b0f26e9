//! Rollout journeys on a real trio with real agents on embedded targets:
//! resources reach the chosen clusters, changes roll out within
//! `maxUnavailable` (also across a leader kill), scale-out and replacement
//! bind only what is new, unselected clusters and deleted placements are
//! cleaned up (unless `Abandon`), and a failing cluster is reported and holds
//! the rollout.

use std::sync::atomic::Ordering;
use std::time::Duration;

use fleet_api::Object;
use fleet_tests::fleet::{
    apply_yaml, bindings, fleet, list, member_has, wait_member, watch_unavailable, work_available, Member, WAIT,
};
use fleet_tests::objects::{condition, get};
use fleet_tests::{eventually, Hub};

/// Four clusters, two regions; available CPU: west-1 (40) > east-2 (24) > east-1 (12) > west-2 (8).
const FOUR: &[Member] = &[
    Member { name: "east-1", labels: &[("region", "east"), ("env", "prod")], nodes: 3, cpu: 4 },
    Member { name: "east-2", labels: &[("region", "east"), ("env", "prod")], nodes: 6, cpu: 4 },
    Member { name: "west-1", labels: &[("region", "west"), ("env", "prod")], nodes: 5, cpu: 8 },
    Member { name: "west-2", labels: &[("region", "west"), ("env", "dev")], nodes: 2, cpu: 4 },
];

/// A namespace with a ConfigMap and a Deployment whose template carries `version`.
fn app(namespace: &str, version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: {namespace}\ndata:\n  version: \"{version}\"\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {namespace}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web, version: \"{version}\"}}\n    spec:\n      containers:\n        - name: web\n          image: nginx\n          resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}\n"
    )
}

/// A CRP selecting namespace `namespace`, with `policy` and `strategy` (YAML
/// lines under spec.policy / spec.strategy, already indented).
fn crp(name: &str, namespace: &str, policy: &str, strategy: &str) -> String {
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata:\n  name: {name}\nspec:\n  resourceSelectors:\n    - {{group: \"\", version: v1, kind: Namespace, name: {namespace}}}\n  policy:\n{policy}  strategy:\n{strategy}"
    )
}

const MAX_ONE_DOWN: &str =
    "    type: RollingUpdate\n    rollingUpdate: {maxUnavailable: 1, maxSurge: 1, unavailablePeriodSeconds: 0}\n";

/// The Works rendered for a placement.
async fn works(hub: &Hub, placement: &str) -> Result<Vec<Object>, String> {
    list(hub, "work", &format!("kubernetes-fleet.io/parent-CRP={placement}")).await
}

fn work_index(work: &Object) -> String {
    work.metadata.labels.get("kubernetes-fleet.io/parent-resource-snapshot-index").cloned().unwrap_or_default()
}

/// Waits until the placement is Available at its generation and every Work
/// is at resource index `index` and available; returns the Works.
async fn wait_rolled_out(hub: &Hub, placement: &str, clusters: usize, index: &str) -> Vec<Object> {
    eventually(&format!("{placement} rolled out at index {index} on {clusters} clusters"), WAIT * 4, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let crp = get(&mut admin, "crp", "", placement).await.map_err(|e| e.to_string())?;
        let available = condition(&crp, "ClusterResourcePlacementAvailable");
        let ws = works(hub, placement).await?;
        let done = ws.iter().filter(|w| work_index(w) == index && work_available(w)).count();
        if available.as_ref().is_some_and(|c| c.0 == "True" && c.2 == crp.metadata.generation) && done == clusters {
            Ok(ws)
        } else {
            Err(format!("available {available:?}, {done}/{} Works done of {clusters}", ws.len()))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_roll_out_within_max_unavailable_also_across_a_leader_kill() {
    let members: Vec<&Member> = FOUR.iter().collect();
    let mut hub = fleet(&members).await;
    apply_yaml(&hub, &app("shop", "1"));
    // One revision kept: a binding's snapshot is gone by the time it is
    // moved, and the rollout judges it by the Works it still has.
    let placement =
        format!("{}  revisionHistoryLimit: 1\n", crp("shop", "shop", "    placementType: PickAll\n", MAX_ONE_DOWN));
    apply_yaml(&hub, &placement);
    wait_rolled_out(&hub, "shop", 4, "0").await;
    for m in FOUR {
        assert!(member_has(&hub, m.name, "deployment", "shop", "web"), "{} has the app", m.name);
    }

    // An update: never more than one cluster unavailable.
    let (stop, worst, sampler) = watch_unavailable(&hub, "shop", hub.running()[0]);
    apply_yaml(&hub, &app("shop", "2"));
    wait_rolled_out(&hub, "shop", 4, "1").await;
    stop.store(true, Ordering::SeqCst);
    let _ = sampler.await;
    assert!(worst.load(Ordering::SeqCst) <= 1, "at most maxUnavailable=1 down, saw {}", worst.load(Ordering::SeqCst));
    assert!(worst.load(Ordering::SeqCst) >= 1, "the sampler saw the rollout happen");

    // Another update, with the leader killed once the rollout has begun.
    let leader = hub.wait_leader().await;
    let survivor = hub.running().into_iter().find(|id| *id != leader).expect("a follower");
    let (stop, worst, sampler) = watch_unavailable(&hub, "shop", survivor);
    apply_yaml(&hub, &app("shop", "3"));
    eventually("the rollout of index 2 began", WAIT, || async {
        let ws = works(&hub, "shop").await?;
        if ws.iter().any(|w| work_index(w) == "2") {
            Ok(())
        } else {
            Err("no Work at index 2 yet".into())
        }
    })
    .await;
    hub.kill(leader);
    hub.wait_leader().await;
    wait_rolled_out(&hub, "shop", 4, "2").await;
    stop.store(true, Ordering::SeqCst);
    let _ = sampler.await;
    assert!(worst.load(Ordering::SeqCst) <= 1, "at most one down across the leader change");
    let out = hub.fleetctl(&["rollout", "status", "crp", "shop"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // The apply strategy travels from the placement through the bindings to
    // the Works (and the agents apply with it).
    let ssa =
        format!("{MAX_ONE_DOWN}    applyStrategy: {{type: ServerSideApply, serverSideApplyConfig: {{force: true}}}}\n");
    apply_yaml(&hub, &crp("shop", "shop", "    placementType: PickAll\n", &ssa));
    eventually("every Work carries ServerSideApply", WAIT, || async {
        let ws = works(&hub, "shop").await?;
        let ssa = ws
            .iter()
            .filter(|w| w.spec().and_then(|s| s.pointer("/applyStrategy/type")).is_some_and(|t| t == "ServerSideApply"))
            .count();
        if ssa == 4 {
            Ok(())
        } else {
            Err(format!("{ssa}/4"))
        }
    })
    .await;
    wait_rolled_out(&hub, "shop", 4, "2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_out_replacement_unselection_deletion_and_abandon() {
    let members: Vec<&Member> = FOUR.iter().collect();
    let hub = fleet(&members).await;
    apply_yaml(&hub, &app("web", "1"));
    let pick = |n: u32| {
        format!("    placementType: PickN\n    numberOfClusters: {n}\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 20\n            preference:\n              propertySorter: {{name: resources.kubernetes-fleet.io/available-cpu, sortOrder: Descending}}\n")
    };
    apply_yaml(&hub, &crp("web", "web", &pick(2), MAX_ONE_DOWN));
    let before = wait_rolled_out(&hub, "web", 2, "0").await;
    wait_member(&hub, "west-1", "configmap", "web", "settings", true).await;
    wait_member(&hub, "east-2", "configmap", "web", "settings", true).await;

    // Scale-out binds only the new cluster: the existing Works keep their spec.
    apply_yaml(&hub, &crp("web", "web", &pick(3), MAX_ONE_DOWN));
    let after = wait_rolled_out(&hub, "web", 3, "0").await;
    for w in &before {
        let same = after.iter().find(|a| a.metadata.uid == w.metadata.uid).expect("kept Work");
        assert_eq!(
            same.metadata.generation,
            w.metadata.generation,
            "{} untouched",
            w.metadata.namespace.as_deref().unwrap_or("")
        );
    }
    wait_member(&hub, "east-1", "configmap", "web", "settings", true).await;

    // A chosen cluster leaves: the fourth replaces it and receives the resources.
    let out = hub.fleetctl(&["delete", "mc", "east-2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_rolled_out(&hub, "web", 3, "0").await;
    wait_member(&hub, "west-2", "configmap", "web", "settings", true).await;

    // A policy change that unselects a cluster removes the resources from it.
    apply_yaml(&hub, &app("sel", "1"));
    let prod = "    placementType: PickAll\n    affinity:\n      clusterAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          clusterSelectorTerms:\n            - labelSelector: {matchLabels: {region: west}}\n";
    apply_yaml(&hub, &crp("sel", "sel", prod, MAX_ONE_DOWN));
    wait_rolled_out(&hub, "sel", 2, "0").await;
    wait_member(&hub, "west-2", "configmap", "sel", "settings", true).await;
    let west_prod = prod.replace("{region: west}", "{region: west, env: prod}");
    apply_yaml(&hub, &crp("sel", "sel", &west_prod, MAX_ONE_DOWN));
    wait_member(&hub, "west-2", "configmap", "sel", "settings", false).await;
    wait_rolled_out(&hub, "sel", 1, "0").await;
    assert!(member_has(&hub, "west-1", "configmap", "sel", "settings"), "west-1 keeps it");

    // Deleting a placement removes everything from every member...
    let out = hub.fleetctl(&["delete", "crp", "web"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for cluster in ["west-1", "east-1", "west-2"] {
        wait_member(&hub, cluster, "configmap", "web", "settings", false).await;
        wait_member(&hub, cluster, "namespace", "", "web", false).await;
    }
    // ...unless its delete strategy is Abandon.
    apply_yaml(&hub, &app("keep", "1"));
    let abandon = format!("{MAX_ONE_DOWN}    deleteStrategy: {{propagationPolicy: Abandon}}\n");
    apply_yaml(&hub, &crp("keep", "keep", "    placementType: PickAll\n", &abandon));
    wait_rolled_out(&hub, "keep", 3, "0").await;
    let out = hub.fleetctl(&["delete", "crp", "keep"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eventually("keep's Works deleted", WAIT, || async {
        let ws = works(&hub, "keep").await?;
        if ws.is_empty() {
            Ok(())
        } else {
            Err(format!("{} Works left", ws.len()))
        }
    })
    .await;
    for cluster in ["west-1", "east-1", "west-2"] {
        assert!(member_has(&hub, cluster, "configmap", "keep", "settings"), "Abandon leaves {cluster}'s copy");
    }

    // A ResourcePlacement places namespaced objects of its own namespace
    // (the namespace itself comes from a CRP with NamespaceOnly).
    let team = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team}\ndata: {a: \"1\"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: team}\ndata: {b: \"2\"}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {name: team-ns}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: Namespace, name: team, selectionScope: NamespaceOnly}\n  policy: {placementType: PickAll}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {name: team-rp, namespace: team}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: ConfigMap, name: settings}\n  policy: {placementType: PickAll}\n";
    apply_yaml(&hub, team);
    eventually("team-rp rolled out", WAIT, || async {
        let out = hub.fleetctl(&["rollout", "status", "rp", "team-rp", "-n", "team"]);
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).to_string())
        }
    })
    .await;
    // The ResourcePlacement reaches each cluster once it reports the
    // namespace (namespace affinity), so its rollout may finish before.
    for cluster in ["west-1", "east-1", "west-2"] {
        wait_member(&hub, cluster, "configmap", "team", "settings", true).await;
        assert!(
            !member_has(&hub, cluster, "configmap", "team", "other"),
            "NamespaceOnly and the RP's selector bring nothing else"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_fails_to_apply_is_reported_and_holds_the_rollout() {
    let members: Vec<&Member> = FOUR[..3].iter().collect();
    let hub = fleet(&members).await;
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\nrules:\n  - {apiGroups: [\"\"], resources: [configmaps], verbs: [get]}\n";
    apply_yaml(&hub, role);
    apply_yaml(&hub, &app("app", "1"));
    // "first" places the ClusterRole on east-1 only.
    let first = "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata:\n  name: first\nspec:\n  resourceSelectors:\n    - {group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole, name: reader}\n  policy:\n    placementType: PickFixed\n    clusterNames: [east-1]\n";
    apply_yaml(&hub, first);
    wait_rolled_out(&hub, "first", 1, "0").await;
    // "second" selects the same ClusterRole everywhere: a conflict on east-1.
    let second = format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata:\n  name: second\nspec:\n  resourceSelectors:\n    - {{group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole, name: reader}}\n    - {{group: \"\", version: v1, kind: Namespace, name: app}}\n  policy:\n    placementType: PickAll\n  strategy:\n{MAX_ONE_DOWN}"
    );
    apply_yaml(&hub, &second);
    let admin = hub.client(hub.running()[0]).await;
    let failed = eventually("second reports the conflict on east-1", WAIT, || {
        let mut admin = admin.clone();
        async move {
            let crp = get(&mut admin, "crp", "", "second").await.map_err(|e| e.to_string())?;
            let applied = condition(&crp, "ClusterResourcePlacementApplied");
            let status = crp.status().cloned().unwrap_or_default();
            let east = status["placementStatuses"]
                .as_array()
                .and_then(|a| a.iter().find(|e| e["clusterName"] == "east-1"))
                .cloned()
                .unwrap_or_default();
            let named = east["failedPlacements"]
                .as_array()
                .is_some_and(|f| f.iter().any(|p| p["kind"] == "ClusterRole" && p["name"] == "reader"));
            // The two healthy clusters must be available first, or taking
            // them down would be free.
            let others_available = status["placementStatuses"].as_array().is_some_and(|a| {
                a.iter().filter(|e| e["clusterName"] != "east-1").all(|e| {
                    e["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "Available" && c["status"] == "True"))
                }) && a.len() == 3
            });
            if applied.as_ref().is_some_and(|c| c.0 == "False") && named && others_available {
                Ok(east)
            } else {
                Err(format!("applied {applied:?}, east-1 {east}"))
            }
        }
    })
    .await;
    assert!(failed.to_string().contains("ClusterRole"), "{failed}");
    let out = hub.fleetctl(&["rollout", "status", "crp", "second"]);
    assert!(!out.status.success(), "a failed rollout exits non-zero");
    assert!(String::from_utf8_lossy(&out.stderr).contains("east-1"), "{}", String::from_utf8_lossy(&out.stderr));

    // A resource change: the failed east-1 is updated at once, but with it
    // down the other two may not be taken down (maxUnavailable 1).
    apply_yaml(&hub, &app("app", "2"));
    let snapshot = |b: &Object| fleet_api::binding::spec_of(b).resource_snapshot_name;
    eventually("east-1's binding moved to the new snapshot", WAIT, || async {
        let bs = list(&hub, "crb", "kubernetes-fleet.io/parent-CRP=second").await?;
        let east = bs.iter().find(|b| fleet_api::binding::spec_of(b).target_cluster == "east-1");
        match east.map(snapshot) {
            Some(s) if s == "second-1-snapshot" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    // Give the controller time to (wrongly) go on; it must not.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        let bs = list(&hub, "crb", "kubernetes-fleet.io/parent-CRP=second").await.expect("bindings");
        for b in &bs {
            let spec = fleet_api::binding::spec_of(b);
            if spec.target_cluster != "east-1" {
                assert_eq!(snapshot(b), "second-0-snapshot", "{} must wait while east-1 is down", spec.target_cluster);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(bindings(&hub, "second").await.expect("bindings").len(), 3);

    // ReportDiff changes nothing on the member and reports what differs.
    apply_yaml(&hub, &app("probe", "1"));
    let report = "    type: RollingUpdate\n    applyStrategy: {type: ReportDiff}\n";
    apply_yaml(&hub, &crp("probe", "probe", "    placementType: PickFixed\n    clusterNames: [west-1]\n", report));
    let probe = eventually("probe reports its diffs", WAIT * 4, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let crp = get(&mut admin, "crp", "", "probe").await.map_err(|e| e.to_string())?;
        match condition(&crp, "ClusterResourcePlacementDiffReported") {
            Some(c) if c.0 == "True" && c.2 == crp.metadata.generation => Ok(crp),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let status = probe.status().cloned().unwrap_or_default();
    let diffed = status["placementStatuses"][0]["diffedPlacements"].as_array().cloned().unwrap_or_default();
    assert!(
        diffed.iter().any(|d| d["kind"] == "ConfigMap" && d["name"] == "settings"),
        "the missing ConfigMap is reported as a diff: {status}"
    );
    assert!(!member_has(&hub, "west-1", "configmap", "probe", "settings"), "ReportDiff applies nothing");
}
