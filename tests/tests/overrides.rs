//! Overrides on a real trio with real agents (docs/spec/overrides.md): the worked
//! example, read back on each member with `fleet-agent inspect`; a failing
//! patch reported on its cluster and blocking nobody else; a relabelled
//! cluster getting the other rule's result; an override change rolled out
//! within `maxUnavailable`; and deleting the overrides rolling back.

use std::sync::atomic::Ordering;

use fleet_api::Object;
use fleet_tests::fleet::{apply_yaml, entry, fleet, list, member_object, member_yaml, watch_unavailable, Member, WAIT};
use fleet_tests::objects::{condition, get};
use fleet_tests::{eventually, Hub};
use serde_json::Value;

const EAST: Member = Member { name: "east-1", labels: &[("env", "prod"), ("region", "east")], nodes: 2, cpu: 4 };
const WEST: Member = Member { name: "west-1", labels: &[("env", "prod"), ("region", "west")], nodes: 2, cpu: 4 };
const TEST: Member = Member { name: "test-1", labels: &[("env", "test"), ("region", "east")], nodes: 2, cpu: 4 };

const WEB: &str = include_str!("../../deploy/examples/overrides/web.yaml");
const OVERRIDES: &str = include_str!("../../deploy/examples/overrides/overrides.yaml");

/// What one member holds of the example: (verbs, image, replicas, placed-on, prod-config present).
fn observed(hub: &Hub, cluster: &str) -> Option<(Value, Value, Value, Value, bool)> {
    let role = member_object(hub, cluster, "clusterrole", "", "web-reader")?;
    let deployment = member_object(hub, cluster, "deployment", "web", "frontend")?;
    Some((
        role["rules"][0]["verbs"].clone(),
        deployment["spec"]["template"]["spec"]["containers"][0]["image"].clone(),
        deployment["spec"]["replicas"].clone(),
        deployment["metadata"]["labels"]["placed-on"].clone(),
        member_object(hub, cluster, "configmap", "web", "prod-config").is_some(),
    ))
}

/// Waits until `cluster` holds exactly `want`.
async fn wait_observed(hub: &Hub, cluster: &str, want: (Value, Value, Value, Value, bool)) {
    eventually(&format!("{cluster} holds {want:?}"), WAIT * 2, || async {
        match observed(hub, cluster) {
            Some(got) if got == want => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

fn v(value: serde_json::Value) -> Value {
    value
}

async fn crp(hub: &Hub) -> Object {
    let mut admin = hub.client(hub.running()[0]).await;
    get(&mut admin, "crp", "", "web").await.expect("crp web")
}

fn cluster_condition(entry: &Value, type_: &str) -> (String, String, String) {
    let c =
        entry["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == type_).cloned().unwrap_or_default();
    let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    (text("status"), text("reason"), text("message"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_override_worked_example_relabels_failures_changes_and_removal() {
    let hub = fleet(&[&EAST, &WEST, &TEST]).await;
    let one_down = WEB.replace(
        "  policy: {placementType: PickAll}\n",
        "  policy: {placementType: PickAll}\n  strategy:\n    type: RollingUpdate\n    rollingUpdate: {maxUnavailable: 1, maxSurge: 1, unavailablePeriodSeconds: 0}\n",
    );
    apply_yaml(&hub, &format!("{one_down}---\n{OVERRIDES}"));

    // The worked example's table.
    let prod = |region: &str, name: &str| {
        (
            v(serde_json::json!(["get", "list"])),
            v(serde_json::json!(format!("registry-{region}.example.com/frontend:1.4"))),
            v(serde_json::json!(3)),
            v(serde_json::json!(name)),
            true,
        )
    };
    let test_row = (
        v(serde_json::json!(["get", "list", "watch"])),
        v(serde_json::json!("frontend:1.4")),
        v(serde_json::json!(1)),
        v(serde_json::json!("test-1")),
        false,
    );
    wait_observed(&hub, "east-1", prod("east", "east-1")).await;
    wait_observed(&hub, "west-1", prod("west", "west-1")).await;
    wait_observed(&hub, "test-1", test_row.clone()).await;
    eventually("the placement reports OverriddenSucceeded", WAIT, || async {
        let crp = crp(&hub).await;
        match condition(&crp, "ClusterResourcePlacementOverridden") {
            Some((status, reason, _)) if status == "True" && reason == "OverriddenSucceeded" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let status = crp(&hub).await;
    let test_entry = entry(&status, "test-1");
    assert_eq!(test_entry["applicableClusterResourceOverrides"], serde_json::json!(["reader-extra-verb-0"]));
    assert_eq!(
        test_entry["applicableResourceOverrides"],
        serde_json::json!([{"name": "frontend-0", "namespace": "web"}, {"name": "no-prod-config-0", "namespace": "web"}])
    );
    assert_eq!(
        entry(&status, "east-1")["applicableResourceOverrides"],
        serde_json::json!([{"name": "frontend-0", "namespace": "web"}])
    );
    assert!(entry(&status, "east-1").get("applicableClusterResourceOverrides").is_none());
    let overridden = cluster_condition(&test_entry, "Overridden");
    assert_eq!((overridden.0.as_str(), overridden.1.as_str()), ("True", "OverriddenSucceeded"));
    // fleetctl shows what test-1 receives, which overrides it went through, and the new kinds.
    let out = hub.fleetctl(&["render", "crp", "web", "--cluster", "test-1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rendered = fleet_api::parse::parse_documents("-", &String::from_utf8_lossy(&out.stdout)).expect("yaml");
    let frontend = rendered.iter().find(|o| o.kind == "Deployment").expect("the Deployment");
    assert_eq!(frontend.spec().and_then(|s| s.pointer("/replicas")), Some(&serde_json::json!(1)));
    assert!(!rendered.iter().any(|o| o.metadata.name == "prod-config"), "deleted for test-1");
    let out = hub.fleetctl(&["describe", "crp", "web"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Applied Overrides:        ClusterResourceOverrideSnapshot/reader-extra-verb-0, ResourceOverrideSnapshot/web/frontend-0, ResourceOverrideSnapshot/web/no-prod-config-0"),
        "{text}"
    );
    let out = hub.fleetctl(&["get", "ro", "-n", "web"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PLACEMENT") && text.contains("frontend         web"), "{text}");

    // The hub copy is unchanged.
    let mut admin = hub.client(hub.running()[0]).await;
    let hub_deployment = get(&mut admin, "deployment", "web", "frontend").await.expect("hub deployment");
    assert_eq!(hub_deployment.spec().and_then(|s| s.pointer("/replicas")), Some(&serde_json::json!(3)));
    assert!(!hub_deployment.metadata.labels.contains_key("placed-on"));
    let snapshots = list(&hub, "ros", "").await.expect("override snapshots");
    let mut names: Vec<_> = snapshots.iter().map(|s| s.metadata.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["frontend-0", "no-prod-config-0"]);

    // Removing label `region` from west-1 fails its override; its Work keeps
    // the registry-west image; a resource change still reaches the others.
    apply_yaml(&hub, &member_yaml(&Member { labels: &[("env", "prod")], ..WEST }, ""));
    eventually("west-1 reports OverriddenFailed", WAIT, || async {
        let crp = crp(&hub).await;
        let c = cluster_condition(&entry(&crp, "west-1"), "Overridden");
        let conditions = crp.status().and_then(|s| s.get("conditions")).cloned().unwrap_or_default();
        let placement = cluster_condition(&serde_json::json!({"conditions": conditions}), "ClusterResourcePlacementOverridden");
        let placement = Some(placement);
        let want = "Failed to apply the override rules on the resources: ResourceOverrideSnapshot \"frontend-0\" failed to apply on Deployment \"frontend\" in namespace \"web\": label key region not found on cluster west-1";
        match placement {
            Some((s, r, m)) if c.0 == "False" && c.1 == "OverriddenFailed" && c.2 == want && s == "False"
                && r == "OverriddenFailed" && m == "Failed to override resources in 1 cluster(s)" => Ok(()),
            other => Err(format!("cluster {c:?}, placement {other:?}")),
        }
    })
    .await;
    // A resource change meanwhile: west-1's Work keeps its content (its
    // render still fails); the others follow the rolling update.
    apply_yaml(&hub, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: added, namespace: web}\ndata: {a: b}\n");
    eventually("the change in a new snapshot", WAIT, || async {
        let crp = crp(&hub).await;
        let index = crp.status().and_then(|s| s.get("observedResourceIndex")).cloned();
        (index == Some(serde_json::json!("1"))).then_some(()).ok_or_else(|| format!("{index:?}"))
    })
    .await;
    assert!(member_object(&hub, "west-1", "configmap", "web", "added").is_none(), "west-1's Work kept its content");
    wait_observed(&hub, "west-1", prod("west", "west-1")).await;

    // Relabelled clusters get the other rule's result: west-1 back in a
    // region, test-1 now prod; the change then reaches every cluster.
    apply_yaml(&hub, &member_yaml(&WEST, ""));
    apply_yaml(&hub, &member_yaml(&Member { labels: &[("env", "prod"), ("region", "east")], ..TEST }, ""));
    wait_observed(&hub, "test-1", prod("east", "test-1")).await;
    for cluster in ["west-1", "east-1", "test-1"] {
        fleet_tests::fleet::wait_member(&hub, cluster, "configmap", "web", "added", true).await;
    }

    // Editing RO frontend makes frontend-1, rolled out at most one cluster down.
    let (stop, worst, sampler) = watch_unavailable(&hub, "web", hub.running()[0]);
    apply_yaml(
        &hub,
        &OVERRIDES.replace("value: 1}", "value: 2}").replace(
            "/metadata/labels/placed-on, value: \"${MEMBER-CLUSTER-NAME}\"",
            "/metadata/labels/placed-on, value: \"on-${MEMBER-CLUSTER-NAME}\"",
        ),
    );
    for (cluster, region) in [("east-1", "east"), ("west-1", "west"), ("test-1", "east")] {
        let mut row = prod(region, cluster);
        row.3 = serde_json::json!(format!("on-{cluster}"));
        wait_observed(&hub, cluster, row).await;
    }
    stop.store(true, Ordering::SeqCst);
    let _ = sampler.await;
    assert!(worst.load(Ordering::SeqCst) <= 1, "at most maxUnavailable=1 down, saw {}", worst.load(Ordering::SeqCst));
    let snapshots = list(&hub, "ros", "kubernetes-fleet.io/parent-resource-override=frontend").await.expect("list");
    assert_eq!(snapshots.len(), 2, "frontend-0 and frontend-1");

    // Deleting the overrides rolls every object back to the hub's form.
    let out = hub.fleetctl_with_stdin(&["delete", "-f", "-"], Some(OVERRIDES));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for cluster in ["east-1", "west-1", "test-1"] {
        let plain = (
            v(serde_json::json!(["get", "list"])),
            v(serde_json::json!("frontend:1.4")),
            v(serde_json::json!(3)),
            Value::Null,
            true,
        );
        wait_observed(&hub, cluster, plain).await;
    }
    assert!(list(&hub, "ros", "").await.expect("list").is_empty(), "snapshots go with their overrides");
}

/// A CRO selecting `kind`/`name` of group rbac.
fn cro(name: &str, role: &str) -> String {
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourceOverride\nmetadata: {{name: {name}}}\nspec:\n  clusterResourceSelectors:\n    - {{group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole, name: {role}}}\n  policy:\n    overrideRules:\n      - clusterSelector: {{clusterSelectorTerms: []}}\n        jsonPatchOverrides: [{{op: remove, path: /rules/0}}]\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_wide_override_rules_are_enforced_at_apply() {
    let hub = Hub::start(fleet_tests::HubOptions::default()).await;
    let hundred: Vec<String> = (0..100).map(|i| cro(&format!("cro-{i:03}"), &format!("role-{i:03}"))).collect();
    apply_yaml(&hub, &hundred.join("---\n"));

    // A second override of the same resource is refused, naming both.
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&cro("cro-001", "role-007")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("spec.clusterResourceSelectors[0]: Invalid value: \"rbac.authorization.k8s.io/ClusterRole role-007\": the resource has been selected by both cro-001 and cro-007, which is not supported"),
        "{stderr}"
    );
    // The 101st is refused; updating one of the hundred still works.
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&cro("cro-100", "role-100")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("at most 100 ClusterResourceOverrides may exist"), "{stderr}");
    apply_yaml(&hub, &cro("cro-000", "role-000").replace("path: /rules/0", "path: /rules/1"));
    // spec.placement cannot be added later.
    let with_placement = cro("cro-001", "role-001").replace("spec:\n", "spec:\n  placement: {name: web}\n");
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&with_placement));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("spec.placement: Invalid value: \"web\": The placement field is immutable"), "{stderr}");
    assert_eq!(list(&hub, "cro", "").await.expect("list").len(), 100);
}
