//! "Which placement put this object here": every object the agent applies
//! carries annotations naming its Work and its placement (kind, namespace,
//! name), also one it took over, and `fleet-agent inspect -o origin`
//! answers from them on the member; `fleetctl origin` answers on the hub. The annotations never count as drift.

use fleet_tests::eventually;
use fleet_tests::fleet::{apply_yaml, entry, fleet, get_object, member_object, wait_member, Member, WAIT};

const EAST: Member = Member { name: "east-1", labels: &[], nodes: 1, cpu: 2 };

/// The object's annotation `key` on east-1.
fn annotation(hub: &fleet_tests::Hub, kind: &str, namespace: &str, name: &str, key: &str) -> Option<String> {
    let object = member_object(hub, "east-1", kind, namespace, name)?;
    object["metadata"]["annotations"][key].as_str().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placed_objects_name_their_work_and_placement() {
    let hub = fleet(&[&EAST]).await;
    // The namespace exists on the member already: the placement takes it over.
    let out = hub.edit_member(
        "east-1",
        "apply",
        &["-f", "-"],
        Some("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    apply_yaml(
        &hub,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {a: \"1\"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: shop}\ndata: {b: \"2\"}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {name: shop}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: Namespace, name: shop, selectionScope: NamespaceOnly}\n  policy: {placementType: PickAll}\n  strategy:\n    applyStrategy: {whenToTakeOver: Always}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {name: web, namespace: shop}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: ConfigMap, name: settings}\n  policy: {placementType: PickAll}\n",
    );
    wait_member(&hub, "east-1", "configmap", "shop", "settings", true).await;
    eventually("the taken-over namespace annotated", WAIT, || async {
        match annotation(&hub, "namespace", "", "shop", "fleet.kubernetes-fleet.io/placement-name") {
            Some(name) if name == "shop" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    let ns = |key: &str| annotation(&hub, "namespace", "", "shop", key);
    assert_eq!(ns("fleet.kubernetes-fleet.io/placement-kind").as_deref(), Some("ClusterResourcePlacement"));
    assert_eq!(ns("fleet.kubernetes-fleet.io/placement-namespace"), None);
    assert_eq!(ns("fleet.kubernetes-fleet.io/owner-work").as_deref(), Some("fleet-member-east-1/shop-work"));
    let cm = |key: &str| annotation(&hub, "configmap", "shop", "settings", key);
    assert_eq!(cm("fleet.kubernetes-fleet.io/placement-kind").as_deref(), Some("ResourcePlacement"));
    assert_eq!(cm("fleet.kubernetes-fleet.io/placement-namespace").as_deref(), Some("shop"));
    assert_eq!(cm("fleet.kubernetes-fleet.io/placement-name").as_deref(), Some("web"));
    assert_eq!(cm("fleet.kubernetes-fleet.io/owner-work").as_deref(), Some("fleet-member-east-1/shop.web-work"));

    // Where did it come from: the member answers.
    let out = hub.inspect("east-1", &["cm", "settings", "-n", "shop", "-o", "origin"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        text,
        "ConfigMap shop/settings\n  Work:       fleet-member-east-1/shop.web-work\n  Placement:  ResourcePlacement shop/web\n"
    );
    let out = hub.inspect("east-1", &["ns", "kube-system", "-o", "origin"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("not placed by Fleet"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = hub.inspect("east-1", &["cm", "-n", "shop", "-o", "origin"]);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("-o origin needs a KIND and a NAME")
    );

    // The hub answers too, from its Works.
    let origin = eventually("fleetctl origin sees the manifest applied", WAIT, || async {
        let out = hub.fleetctl(&["origin", "cm", "settings", "-n", "shop"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        match out.status.success() && text.contains("True") {
            true => Ok(text),
            false => Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr))),
        }
    })
    .await;
    let row: Vec<&str> = origin.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row, ["east-1", "shop.web-work", "ResourcePlacement", "shop/web", "-", "True"], "{origin}");
    let out = hub.fleetctl(&["origin", "cm", "settings", "-n", "elsewhere", "--cluster", "east-1"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: no Work for cluster \"east-1\" on the hub places ConfigMap elsewhere/settings"
    );

    // The annotations are Fleet's: nothing reports them as drift.
    let crp = eventually("shop available", WAIT, || async {
        let crp = get_object(&hub, "crp", "", "shop").await?;
        match fleet_tests::objects::condition(&crp, "ClusterResourcePlacementAvailable") {
            Some((s, _, g)) if s == "True" && g == crp.metadata.generation => Ok(crp),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let e = entry(&crp, "east-1");
    assert!(e["driftedPlacements"].is_null() && e["failedPlacements"].is_null(), "{e}");
}
