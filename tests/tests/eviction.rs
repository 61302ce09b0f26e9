//! Evictions, disruption budgets and drain on a real trio with real agents
//! (docs/spec/eviction.md): the worked example — an eviction within the budget
//! executes and the scheduler replaces the cluster, one beyond it is not
//! executed (with the spec's message) and stays so (EV-1) until it is
//! re-created —; `fleetctl drain` of a cluster hosting three placements,
//! one protected by its budget, and `fleetctl uncordon`.

use fleet_api::Object;
use fleet_tests::fleet::{apply_yaml, bindings, fleet, member_has, member_yaml, wait_member, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually, Hub};

const BUDGET: &str = include_str!("../../deploy/examples/eviction/budget.yaml");
const EVICT_B: &str = include_str!("../../deploy/examples/eviction/evict-b.yaml");

/// A namespace `name` with a ConfigMap and a PickAll or PickN placement of it.
fn placed(name: &str, policy: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: {name}}}\ndata: {{version: \"1\"}}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {{name: {name}}}\nspec:\n  resourceSelectors: [{{group: \"\", version: v1, kind: Namespace, name: {name}}}]\n  policy:\n{policy}  strategy:\n    rollingUpdate: {{unavailablePeriodSeconds: 0}}\n"
    )
}

/// An eviction of `placement` from `cluster`.
fn eviction(name: &str, placement: &str, cluster: &str) -> String {
    EVICT_B
        .replace("name: evict-b", &format!("name: {name}"))
        .replace("placementName: web", &format!("placementName: {placement}"))
        .replace("clusterName: b", &format!("clusterName: {cluster}"))
}

/// The eviction's (Valid, Executed) statuses and Executed's message.
async fn judged(hub: &Hub, name: &str) -> Result<(String, String, String), String> {
    let mut admin = hub.client(hub.running()[0]).await;
    let e = get(&mut admin, "crpe", "", name).await.map_err(|e| e.to_string())?;
    let find = |t: &str| fleet_tests::objects::condition(&e, t).map(|c| c.0).unwrap_or_default();
    let message = e
        .status()
        .and_then(|s| s.get("conditions"))
        .and_then(|c| c.as_array())
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Executed"))
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string();
    let valid = find("Valid");
    if valid.is_empty() {
        return Err("not judged yet".into());
    }
    Ok((valid, find("Executed"), message))
}

/// Waits until the placement is Available at its generation on `clusters` clusters.
async fn wait_available(hub: &Hub, placement: &str, clusters: usize) {
    eventually(&format!("{placement} available on {clusters} clusters"), WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let crp: Object = get(&mut admin, "crp", "", placement).await.map_err(|e| e.to_string())?;
        let available = fleet_tests::objects::condition(&crp, "ClusterResourcePlacementAvailable");
        let entries =
            crp.status().and_then(|s| s.get("placementStatuses")).and_then(|p| p.as_array()).map_or(0, Vec::len);
        match available {
            Some((s, _, g)) if s == "True" && g == crp.metadata.generation && entries == clusters => Ok(()),
            other => Err(format!("{other:?}, {entries} entries")),
        }
    })
    .await;
}

/// The clusters the placement has bindings on.
async fn bound_clusters(hub: &Hub, placement: &str) -> Vec<String> {
    bindings(hub, placement).await.map(|b| b.into_keys().collect()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_within_and_beyond_a_budget() {
    let gold = |name: &'static str| Member { name, labels: &[("tier", "gold")], nodes: 1, cpu: 2 };
    let (a, b, c) = (gold("a"), gold("b"), gold("c"));
    let d = Member { name: "d", labels: &[("tier", "silver")], nodes: 1, cpu: 2 };
    let hub = fleet(&[&a, &b, &c, &d]).await;
    // Heartbeats every 3 s: pausing d's agent for a few seconds leaves it healthy.
    for m in [&a, &b, &c, &d] {
        apply_yaml(&hub, &member_yaml(m, "").replace("heartbeatPeriodSeconds: 1", "heartbeatPeriodSeconds: 3"));
    }
    let pick_three = "    placementType: PickN\n    numberOfClusters: 3\n    affinity:\n      clusterAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 50\n            preference: {labelSelector: {matchLabels: {tier: gold}}}\n";
    apply_yaml(&hub, &placed("web", pick_three));
    wait_available(&hub, "web", 3).await;
    assert_eq!(bound_clusters(&hub, "web").await, ["a", "b", "c"]);
    apply_yaml(&hub, BUDGET);

    // 1. b tainted, then evicted: T=3, A=3, allowed 1. d replaces it (its
    // agent paused, so it does not become available yet).
    let taint = "  taints: [{key: maintenance, value: \"true\", effect: NoSchedule}]\n";
    apply_yaml(&hub, &member_yaml(&b, taint).replace("heartbeatPeriodSeconds: 1", "heartbeatPeriodSeconds: 3"));
    hub.signal_agent("d", "STOP");
    apply_yaml(&hub, EVICT_B);
    let b_judged = eventually("evict-b judged", WAIT, || judged(&hub, "evict-b")).await;
    assert_eq!(
        b_judged,
        (
            "True".into(),
            "True".into(),
            "Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3".into()
        )
    );
    wait_member(&hub, "b", "configmap", "web", "settings", false).await;
    eventually("d replaces b", WAIT, || async {
        match bound_clusters(&hub, "web").await {
            got if got == ["a", "c", "d"] => Ok(()),
            got => Err(format!("{got:?}")),
        }
    })
    .await;

    // 2. Before d is available: bindings a, c, d; T=3, A=2, allowed 0.
    apply_yaml(&hub, &eviction("evict-c", "web", "c"));
    let c_judged = eventually("evict-c judged", WAIT, || judged(&hub, "evict-c")).await;
    let blocked = "Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 2, totalPlacements: 3";
    assert_eq!(c_judged, ("True".into(), "False".into(), blocked.into()));
    assert!(member_has(&hub, "c", "configmap", "web", "settings"), "a blocked eviction changes nothing");

    // It stays so after d became available (EV-1).
    hub.signal_agent("d", "CONT");
    wait_member(&hub, "d", "configmap", "web", "settings", true).await;
    wait_available(&hub, "web", 3).await;
    assert_eq!(judged(&hub, "evict-c").await.expect("judged"), ("True".into(), "False".into(), blocked.into()));
    let out = hub.fleetctl(&["get", "crpe"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows,
        [vec!["NAME", "VALID", "EXECUTED"], vec!["evict-b", "True", "True"], vec!["evict-c", "True", "False"]]
    );

    // 3. Deleted and re-applied: T=3, A=3 → executed; the scheduler, short
    // of three, picks c again (the only untainted candidate, EV-7).
    let out = hub.fleetctl(&["delete", "crpe", "evict-c"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let before = bindings(&hub, "web").await.expect("bindings")["c"].1.clone();
    apply_yaml(&hub, &eviction("evict-c", "web", "c"));
    let again = eventually("evict-c judged again", WAIT, || judged(&hub, "evict-c")).await;
    assert_eq!(
        again,
        (
            "True".into(),
            "True".into(),
            "Eviction is allowed by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3".into()
        )
    );
    eventually("c's binding deleted and c picked again", WAIT, || async {
        let now = bindings(&hub, "web").await?;
        let clusters: Vec<&String> = now.keys().collect();
        match now.get("c") {
            Some((_, uid)) if *uid != before && clusters == ["a", "c", "d"] => Ok(()),
            other => Err(format!("{clusters:?}, c: {other:?}")),
        }
    })
    .await;
    wait_member(&hub, "c", "configmap", "web", "settings", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_evicts_what_budgets_allow_and_uncordon_lets_placements_back() {
    let member = |name: &'static str| Member { name, labels: &[("env", "prod")], nodes: 1, cpu: 2 };
    let (x, y, z) = (member("x"), member("y"), member("z"));
    let hub = fleet(&[&x, &y, &z]).await;
    let pick_all = "    placementType: PickAll\n";
    for p in ["p1", "p2", "p3"] {
        apply_yaml(&hub, &placed(p, pick_all));
    }
    // p3 keeps all three of its clusters: its budget allows no eviction.
    apply_yaml(&hub, &BUDGET.replace("name: web", "name: p3").replace("minAvailable: 2", "minAvailable: 3"));
    for p in ["p1", "p2", "p3"] {
        wait_available(&hub, p, 3).await;
    }

    let out = hub.fleetctl(&["drain", "x"]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "p3 could not be evicted: {stdout}");
    assert!(stdout.contains("membercluster/x cordoned"), "{stdout}");
    assert!(stdout.contains("evicted clusterresourceplacement/p1 from cluster x"), "{stdout}");
    assert!(stdout.contains("evicted clusterresourceplacement/p2 from cluster x"), "{stdout}");
    assert!(
        stdout.contains("cannot evict clusterresourceplacement/p3 from cluster x: Eviction is blocked by specified ClusterResourcePlacementDisruptionBudget, availablePlacements: 3, totalPlacements: 3"),
        "{stdout}"
    );
    assert!(stderr.contains("drain of cluster x incomplete: 1 of 3 placements could not be evicted (p3)"), "{stderr}");

    // p1 and p2 leave x and, x being tainted, are not placed there again.
    wait_member(&hub, "x", "configmap", "p1", "settings", false).await;
    wait_member(&hub, "x", "configmap", "p2", "settings", false).await;
    wait_available(&hub, "p1", 2).await;
    wait_available(&hub, "p2", 2).await;
    assert_eq!(bound_clusters(&hub, "p1").await, ["y", "z"]);
    assert!(member_has(&hub, "x", "configmap", "p3", "settings"), "p3 stays on x");
    let mut admin = hub.client(hub.running()[0]).await;
    let mc = get(&mut admin, "mc", "", "x").await.expect("mc x");
    let taints = fleet_api::member::spec_of(&mc).taints;
    assert!(taints.iter().any(|t| t.key == "cordon-key" && t.effect == "NoSchedule"), "{taints:?}");

    // Uncordon: the taint goes, and the PickAll placements come back to x.
    let out = hub.fleetctl(&["uncordon", "x"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("membercluster/x uncordoned"));
    wait_member(&hub, "x", "configmap", "p1", "settings", true).await;
    wait_member(&hub, "x", "configmap", "p2", "settings", true).await;
    wait_available(&hub, "p1", 3).await;
    let mc = get(&mut admin, "mc", "", "x").await.expect("mc x");
    assert!(fleet_api::member::spec_of(&mc).taints.is_empty());
}

/// A namespaced eviction's (Valid, Executed) statuses and Executed's message.
async fn judged_in(hub: &Hub, namespace: &str, name: &str) -> Result<(String, String, String), String> {
    let mut admin = hub.client(hub.running()[0]).await;
    let e = get(&mut admin, "rpe", namespace, name).await.map_err(|e| e.to_string())?;
    let find = |t: &str| fleet_tests::objects::condition(&e, t).map(|c| c.0).unwrap_or_default();
    let executed = e.status().and_then(|s| s.get("conditions")).and_then(|c| c.as_array()).and_then(|cs| {
        cs.iter().find(|c| c["type"] == "Executed").map(|c| (c["reason"].clone(), c["message"].clone()))
    });
    let Some((reason, message)) = executed else { return Err("not judged yet".into()) };
    let (reason, message) = (reason.as_str().unwrap_or_default(), message.as_str().unwrap_or_default());
    Ok((find("Valid"), reason.to_string(), message.to_string()))
}

/// The clusters a ResourcePlacement's bindings target, sorted.
async fn rp_clusters(hub: &Hub, namespace: &str, placement: &str) -> Vec<String> {
    let selector = format!("kubernetes-fleet.io/parent-CRP={placement}");
    let objects = fleet_tests::fleet::list(hub, "rb", &selector).await.unwrap_or_default();
    let mut clusters: Vec<String> = objects
        .iter()
        .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
        .map(|b| fleet_api::binding::spec_of(b).target_cluster)
        .collect();
    clusters.sort();
    clusters
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_eviction_is_blocked_and_allowed_by_its_namespaced_budget() {
    let member = |name: &'static str| Member { name, labels: &[], nodes: 1, cpu: 2 };
    let (a, b, c) = (member("a"), member("b"), member("c"));
    let hub = fleet(&[&a, &b, &c]).await;
    let team = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team}\ndata: {version: \"1\"}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {name: team-ns}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: Namespace, name: team, selectionScope: NamespaceOnly}\n  policy: {placementType: PickAll}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {name: web, namespace: team}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: ConfigMap, name: settings}\n  policy: {placementType: PickN, numberOfClusters: 2}\n  strategy:\n    rollingUpdate: {unavailablePeriodSeconds: 0}\n";
    apply_yaml(&hub, team);
    let chosen = eventually("web on two clusters, available", WAIT, || async {
        let out = hub.fleetctl(&["rollout", "status", "rp", "web", "-n", "team"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let clusters = rp_clusters(&hub, "team", "web").await;
        if out.status.success() && text.contains("(2/2 clusters available)") && clusters.len() == 2 {
            Ok(clusters)
        } else {
            Err(format!("{clusters:?} {text} {}", String::from_utf8_lossy(&out.stderr)))
        }
    })
    .await;
    let members = [&a, &b, &c];
    let victim = members.iter().find(|m| m.name == chosen[0]).expect("a chosen member");
    let kept = chosen[1].clone();
    let spare = members.iter().map(|m| m.name).find(|n| !chosen.iter().any(|c| c == n)).expect("an unchosen member");
    let budget = |min: u32| {
        format!(
            "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacementDisruptionBudget\nmetadata: {{name: web, namespace: team}}\nspec: {{minAvailable: {min}}}\n"
        )
    };
    let evict = |name: &str| {
        format!(
            "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacementEviction\nmetadata: {{name: {name}, namespace: team}}\nspec: {{placementName: web, clusterName: {}}}\n",
            victim.name
        )
    };
    // A cluster-scoped budget of the same name guards nothing here.
    apply_yaml(
        &hub,
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacementDisruptionBudget\nmetadata: {name: web}\nspec: {minAvailable: 0}\n",
    );
    apply_yaml(&hub, &budget(2));
    let taint = "  taints: [{key: maintenance, value: \"true\", effect: NoSchedule}]\n";
    apply_yaml(&hub, &member_yaml(victim, taint));

    // minAvailable 2 of 2 available: blocked, nothing moves.
    apply_yaml(&hub, &evict("evict-1"));
    let first = eventually("evict-1 judged", WAIT, || judged_in(&hub, "team", "evict-1")).await;
    let blocked = "Eviction is blocked by specified ResourcePlacementDisruptionBudget, availablePlacements: 2, totalPlacements: 2";
    assert_eq!(first, ("True".into(), "ResourcePlacementEvictionNotExecuted".into(), blocked.into()));
    assert!(member_has(&hub, victim.name, "configmap", "team", "settings"), "a blocked eviction changes nothing");
    let out = hub.fleetctl(&["get", "rpe", "-n", "team"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows, [vec!["NAME", "VALID", "EXECUTED"], vec!["evict-1", "True", "False"]], "{text}");

    // minAvailable 1: a new eviction executes; the victim's copy goes and
    // the scheduler replaces it with the spare cluster (the victim is tainted).
    apply_yaml(&hub, &budget(1));
    apply_yaml(&hub, &evict("evict-2"));
    let second = eventually("evict-2 judged", WAIT, || judged_in(&hub, "team", "evict-2")).await;
    let allowed = "Eviction is allowed by specified ResourcePlacementDisruptionBudget, availablePlacements: 2, totalPlacements: 2";
    assert_eq!(second, ("True".into(), "ResourcePlacementEvictionExecuted".into(), allowed.into()));
    wait_member(&hub, victim.name, "configmap", "team", "settings", false).await;
    wait_member(&hub, spare, "configmap", "team", "settings", true).await;
    let mut want = vec![kept, spare.to_string()];
    want.sort();
    assert_eq!(rp_clusters(&hub, "team", "web").await, want);
    assert!(member_has(&hub, victim.name, "namespace", "", "team"), "the ClusterResourcePlacement's namespace stays");
}

/// docs/spec/eviction.md: an eviction or budget is checked at apply against
/// the placement it names, when that placement exists; nothing is stored
/// when it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_and_budgets_are_checked_against_their_placement_at_apply() {
    let hub = fleet(&[]).await;
    apply_yaml(&hub, &placed("fixed", "    placementType: PickFixed\n    clusterNames: [a]\n"));
    apply_yaml(&hub, &placed("everywhere", "    placementType: PickAll\n"));
    let refused = |yaml: &str, want: &str| {
        let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(yaml));
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success() && stderr.contains(want), "want {want:?}, got: {stderr}");
    };
    refused(
        &eviction("evict-fixed", "fixed", "a"),
        "spec.placementName: Forbidden: cluster resource placement policy type PickFixed is not supported",
    );
    let budget = |spec: &str| {
        format!(
            "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacementDisruptionBudget\nmetadata: {{name: everywhere}}\nspec: {spec}\n"
        )
    };
    refused(
        &budget("{maxUnavailable: 1}"),
        "spec.maxUnavailable: Forbidden: cluster resource placement policy type PickAll is not supported with any specified max unavailable 1",
    );
    refused(
        &budget("{minAvailable: \"50%\"}"),
        "spec.minAvailable: Forbidden: cluster resource placement policy type PickAll is not supported with min available as a percentage 50%",
    );
    let mut admin = hub.client(hub.running()[0]).await;
    assert!(get(&mut admin, "crpe", "", "evict-fixed").await.is_err(), "a refused eviction is not stored");
    // What the placement allows is stored, and one naming no placement yet too.
    apply_yaml(&hub, &budget("{minAvailable: 1}"));
    apply_yaml(&hub, &eviction("evict-later", "not-yet", "a"));
}
