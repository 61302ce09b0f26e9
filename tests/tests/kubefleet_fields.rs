//! KubeFleet's `spec.statusReportingScope: NamespaceAccessible` and
//! `selectionScope: NamespaceWithResourceSelectors` on a real trio with an
//! embedded-target member (docs/kubefleet-fields.md): the status mirror is
//! created, follows the placement, is read by the viewer with kubectl in its
//! namespace, cannot be written by users, comes back when deleted and goes
//! with its placement; a NamespaceWithResourceSelectors namespace is placed
//! with only the objects the other selectors pick.

use fleet_api::placement::STATUS_SYNCED_CONDITION;
use fleet_tests::eventually;
use fleet_tests::fleet::{apply_yaml, fleet, member_has, start_member, wait_joined, wait_member, Member, WAIT};
use fleet_tests::kube::KubeHub;
use fleet_tests::objects::{condition, get};
use serde_json::Value;

const EAST: Member = Member { name: "east-1", labels: &[("env", "prod")], nodes: 1, cpu: 4 };

const NAMESPACE_ACCESSIBLE: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {mode: blue}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: shop}
spec:
  resourceSelectors:
    - {group: \"\", version: v1, kind: Namespace, name: shop}
  statusReportingScope: NamespaceAccessible
";

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The mirror as the viewer reads it with kubectl, or why it cannot.
fn viewer_mirror(kube: &KubeHub) -> Result<Value, String> {
    let out = kube.kubectl_with(&kube.viewer, &["get", "crps", "shop", "-n", "shop", "-o", "json"]);
    if !out.status.success() {
        return Err(text(&out));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// The placement's status without its StatusSynced condition (what the
/// mirror must carry).
fn without_synced(status: &Value) -> Value {
    let mut status = status.clone();
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        conditions.retain(|c| c["type"] != STATUS_SYNCED_CONDITION);
    }
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_accessible_placement_keeps_its_status_in_the_namespace() {
    let mut kube = KubeHub::start().await;
    start_member(&mut kube.hub, &EAST, "16Gi");
    wait_joined(&kube.hub, EAST.name).await;
    let dir = kube.hub.dir.path().to_path_buf();
    let write = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, body).expect("write manifest");
        path.to_string_lossy().to_string()
    };
    kube.kubectl_ok(&["apply", "-f", &write("shop.yaml", NAMESPACE_ACCESSIBLE)]);
    wait_member(&kube.hub, EAST.name, "configmap", "shop", "settings", true).await;

    // Created, carrying the placement's status (without the condition about
    // itself), read by the viewer in the namespace; the placement says so.
    let admin = kube.hub.client(kube.hub.running()[0]).await;
    let first = eventually("the mirror carries the available placement's status", WAIT, || async {
        let mirror = viewer_mirror(&kube)?;
        let crp = get(&mut admin.clone(), "crp", "", "shop").await.map_err(|e| e.to_string())?;
        let synced = condition(&crp, STATUS_SYNCED_CONDITION).ok_or("no StatusSynced condition")?;
        let status = serde_json::to_value(crp.status()).unwrap_or_default();
        let available = condition(&crp, "ClusterResourcePlacementAvailable").is_some_and(|c| c.0 == "True");
        if available && synced.0 == "True" && mirror["sourceStatus"] == without_synced(&status) {
            Ok(mirror)
        } else {
            Err(format!("synced {synced:?}, mirror {mirror}, placement {status}"))
        }
    })
    .await;
    assert_eq!(first["metadata"]["ownerReferences"][0]["kind"], "ClusterResourcePlacement");
    assert!(first["lastUpdatedTime"].as_str().is_some_and(|t| t.ends_with('Z')), "{first}");
    let crp = get(&mut admin.clone(), "crp", "", "shop").await.expect("crp");
    let synced = crp.status().and_then(|s| s["conditions"].as_array().cloned()).unwrap_or_default();
    let synced = synced.iter().find(|c| c["type"] == STATUS_SYNCED_CONDITION).cloned().unwrap_or_default();
    assert_eq!(synced["reason"], "StatusSyncSucceeded");
    assert_eq!(synced["message"], "Successfully created or updated ClusterResourcePlacementStatus in namespace 'shop'");
    let table = kube.kubectl_with(&kube.viewer, &["get", "crps", "-n", "shop"]);
    let table = text(&table);
    assert!(table.contains("RESOURCE-INDEX") && table.contains("LAST-UPDATED"), "{table}");
    let listed = text(&kube.hub.fleetctl(&["get", "crps", "-n", "shop"]));
    assert!(listed.contains("RESOURCE-INDEX") && listed.contains("shop"), "{listed}");
    let described = text(&kube.hub.fleetctl(&["describe", "crps", "shop", "-n", "shop"]));
    assert!(described.contains("Source Status:") && described.contains("Last Updated Time:"), "{described}");
    let explained = kube.kubectl_ok(&["explain", "clusterresourceplacementstatus.sourceStatus"]);
    assert!(explained.contains("observedResourceIndex"), "{explained}");

    // Users cannot write it, not even the admin; the viewer cannot delete it.
    let forged = write(
        "forged.yaml",
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacementStatus\n\
         metadata: {name: forged, namespace: shop}\nlastUpdatedTime: \"2026-01-01T00:00:00Z\"\n",
    );
    let out = kube.kubectl(&["create", "-f", &forged]);
    assert!(!out.status.success(), "a user created a mirror");
    assert!(text(&out).contains("written only by the hub"), "{}", text(&out));
    let out = kube.kubectl(&["label", "crps", "shop", "-n", "shop", "x=y"]);
    assert!(!out.status.success(), "a user changed the mirror");
    let out = kube.kubectl_with(&kube.viewer, &["delete", "crps", "shop", "-n", "shop"]);
    assert!(!out.status.success(), "the viewer deleted the mirror");

    // Updated when the status changes: a new object in the namespace makes
    // a new resource snapshot.
    kube.kubectl_ok(&["create", "configmap", "extra", "-n", "shop", "--from-literal=k=v"]);
    eventually("the mirror follows the new resource index", WAIT, || async {
        let mirror = viewer_mirror(&kube)?;
        let index = &mirror["sourceStatus"]["observedResourceIndex"];
        if index == "1" {
            Ok(())
        } else {
            Err(format!("index {index}"))
        }
    })
    .await;

    // A deleted mirror is put back.
    let uid = viewer_mirror(&kube).map(|m| m["metadata"]["uid"].clone()).unwrap_or_default();
    kube.kubectl_ok(&["delete", "crps", "shop", "-n", "shop"]);
    eventually("the deleted mirror is recreated", WAIT, || async {
        let mirror = viewer_mirror(&kube)?;
        if mirror["metadata"]["uid"] != uid && mirror["sourceStatus"]["observedResourceIndex"] == "1" {
            Ok(())
        } else {
            Err(mirror.to_string())
        }
    })
    .await;

    // The scope is fixed once set, as KubeFleet's CEL rule says.
    let out = kube.kubectl(&[
        "patch",
        "crp",
        "shop",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"statusReportingScope":"ClusterScopeOnly"}}"#,
    ]);
    assert!(!out.status.success(), "the scope changed");
    assert!(text(&out).contains("statusReportingScope is immutable"), "{}", text(&out));

    // It goes with its placement.
    kube.kubectl_ok(&["delete", "crp", "shop"]);
    eventually("the mirror is gone with its placement", WAIT, || async {
        match viewer_mirror(&kube) {
            Err(e) if e.contains("NotFound") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

const SELECTED: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
data: {mode: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: app}
data: {mode: green}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: app}
data: {k: dg==}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: app}
spec:
  resourceSelectors:
    - {group: \"\", version: v1, kind: Namespace, name: app, selectionScope: NamespaceWithResourceSelectors}
    - {group: \"\", version: v1, kind: ConfigMap, name: settings}
";

/// A placement named `name` picking the ConfigMap `settings` in namespace
/// `namespace` by NamespaceWithResourceSelectors, with a second namespace
/// selector when `mixed`.
fn placement(name: &str, namespace: &str, mixed: bool) -> String {
    let second = if mixed { "    - {group: \"\", version: v1, kind: Namespace, name: web}\n" } else { "" };
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {{name: {name}}}\n\
         spec:\n  resourceSelectors:\n\
         \x20   - {{group: \"\", version: v1, kind: Namespace, name: {namespace}, selectionScope: NamespaceWithResourceSelectors}}\n\
         \x20   - {{group: \"\", version: v1, kind: ConfigMap, name: settings}}\n{second}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_with_resource_selectors_places_only_the_selected_objects() {
    let hub = fleet(&[&EAST]).await;
    apply_yaml(&hub, SELECTED);
    wait_member(&hub, EAST.name, "configmap", "app", "settings", true).await;
    let admin = hub.client(hub.running()[0]).await;
    eventually("the placement lists the namespace and its one ConfigMap", WAIT, || async {
        let crp = get(&mut admin.clone(), "crp", "", "app").await.map_err(|e| e.to_string())?;
        let selected = crp.status().map(|s| s["selectedResources"].clone()).unwrap_or_default();
        let names: Vec<String> = selected
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| format!("{}/{}", r["kind"].as_str().unwrap_or(""), r["name"].as_str().unwrap_or("")))
            .collect();
        let available = condition(&crp, "ClusterResourcePlacementAvailable").is_some_and(|c| c.0 == "True");
        if available && names == ["Namespace/app", "ConfigMap/settings"] {
            Ok(())
        } else {
            Err(format!("{names:?} available {available}"))
        }
    })
    .await;
    // The placement is available, so its one Work is applied: what it does
    // not list is not on the member.
    assert!(!member_has(&hub, EAST.name, "configmap", "app", "other"));
    assert!(!member_has(&hub, EAST.name, "secret", "app", "token"));

    // KubeFleet's rules, with its path and messages.
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&placement("mixed", "app", true)));
    assert!(!out.status.success(), "two namespace selectors were accepted");
    assert!(
        text(&out).contains(
            "spec: Invalid value: \"object\": when using NamespaceWithResourceSelectors mode, only one namespace selector \
             is allowed (cannot mix with other namespace selectors)"
        ),
        "{}",
        text(&out)
    );

    // A namespace the hub lacks stops the placement with KubeFleet's reason.
    apply_yaml(&hub, &placement("ghost", "ghost", false));
    eventually("the ghost placement reports its invalid selectors", WAIT, || async {
        let crp = get(&mut admin.clone(), "crp", "", "ghost").await.map_err(|e| e.to_string())?;
        match crp.status().and_then(|s| s["conditions"].as_array().cloned()).unwrap_or_default().first() {
            Some(c) if c["reason"] == "InvalidResourceSelectors" && c["status"] == "False" => {
                let message = c["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains("NamespaceWithResourceSelectors mode requires exactly one namespace"),
                    "{message}"
                );
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}
