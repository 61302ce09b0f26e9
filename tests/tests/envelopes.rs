//! Envelopes on a real trio with real agents (docs/spec/envelopes.md): the worked
//! example's four Works per cluster and what lands on each member; an
//! envelope entry removed and an envelope unselected taken off the members;
//! a cluster-scoped object in an envelope ConfigMap refused for an RP; a
//! CRD stored after an envelope declaring a wrapped kind's scope (EN-8).

use fleet_api::Object;
use fleet_tests::fleet::{apply_yaml, fleet, list, member_has, wait_member, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually, Hub};

const EAST: Member = Member { name: "east-1", labels: &[("region", "east")], nodes: 2, cpu: 4 };
const WEST: Member = Member { name: "west-1", labels: &[("region", "west")], nodes: 2, cpu: 4 };

const EXAMPLE: &str = include_str!("../../deploy/examples/envelopes/envelopes.yaml");

/// The names of the Works of placement `name` in `cluster`'s namespace.
async fn work_names(hub: &Hub, placement: &str, cluster: &str) -> Result<Vec<String>, String> {
    let works = list(hub, "work", &format!("kubernetes-fleet.io/parent-CRP={placement}")).await?;
    let mut names: Vec<String> = works
        .iter()
        .filter(|w| w.metadata.namespace.as_deref() == Some(&format!("fleet-member-{cluster}")))
        .map(|w| w.metadata.name.clone())
        .collect();
    names.sort();
    Ok(names)
}

async fn crp(hub: &Hub, name: &str) -> Object {
    let mut admin = hub.client(hub.running()[0]).await;
    get(&mut admin, "crp", "", name).await.expect("crp")
}

/// Ok when the placement's first cluster has `WorkSynchronized` False
/// `SyncWorkFailed` with `message`, and the placement
/// `WorkNotSynchronizedYet` (EN-8).
async fn work_sync_failed(hub: &Hub, kind: &str, namespace: &str, name: &str, message: &str) -> Result<(), String> {
    let mut admin = hub.client(hub.running()[0]).await;
    let placement = get(&mut admin, kind, namespace, name).await.map_err(|e| e.to_string())?;
    let status = placement.status().cloned().unwrap_or_default();
    let condition = |conditions: &serde_json::Value, type_suffix: &str| {
        let list = conditions.as_array().cloned().unwrap_or_default();
        list.into_iter().find(|c| c["type"].as_str().is_some_and(|t| t.ends_with(type_suffix))).unwrap_or_default()
    };
    let cluster = condition(&status["placementStatuses"][0]["conditions"], "WorkSynchronized");
    let whole = condition(&status["conditions"], "PlacementWorkSynchronized");
    if cluster["status"] == "False"
        && cluster["reason"] == "SyncWorkFailed"
        && cluster["message"] == message
        && whole["status"] == "False"
        && whole["reason"] == "WorkNotSynchronizedYet"
    {
        Ok(())
    } else {
        Err(format!("{cluster} / {whole}"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelopes_are_unwrapped_on_members_and_follow_their_contents() {
    let hub = fleet(&[&EAST, &WEST]).await;
    apply_yaml(&hub, EXAMPLE);
    for cluster in ["east-1", "west-1"] {
        eventually(&format!("four Works for {cluster}"), WAIT, || async {
            let names = work_names(&hub, "ops", cluster).await?;
            let want = [
                "ops-configmap-f04560b583227939",
                "ops-envelope-a3f995da6aee5302",
                "ops-envelope-b1a37da808567140",
                "ops-work",
            ];
            if names == want {
                Ok(())
            } else {
                Err(format!("{names:?}"))
            }
        })
        .await;
        for (kind, namespace, name) in [
            ("namespace", "", "ops"),
            ("configmap", "ops", "settings"),
            ("resourcequota", "ops", "ops-quota"),
            ("role", "ops", "ops-reader"),
            ("limitrange", "ops", "ops-limits"),
            ("clusterrole", "", "pod-reader"),
            ("validatingwebhookconfiguration", "", "guard"),
        ] {
            wait_member(&hub, cluster, kind, namespace, name, true).await;
        }
        assert!(!member_has(&hub, cluster, "configmap", "ops", "legacy"), "the envelope ConfigMap stays on the hub");
        assert!(!member_has(&hub, cluster, "resourceenvelope", "ops", "quota"));
        assert!(!member_has(&hub, cluster, "clusterresourceenvelope", "", "guard"));
    }
    eventually("the placement is Available", WAIT, || async {
        let crp = crp(&hub, "ops").await;
        match fleet_tests::objects::condition(&crp, "ClusterResourcePlacementAvailable") {
            Some((s, _, _)) if s == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let status = crp(&hub, "ops").await;
    let selected: Vec<String> = status
        .status()
        .and_then(|s| s.get("selectedResources"))
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .map(|r| format!("{}/{}", r["kind"].as_str().unwrap_or(""), r["name"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        selected,
        [
            "Namespace/ops",
            "ConfigMap/legacy",
            "ConfigMap/settings",
            "ClusterResourceEnvelope/guard",
            "ResourceEnvelope/quota"
        ]
    );
    let snapshot = list(&hub, "crs", "kubernetes-fleet.io/parent-CRP=ops").await.expect("snapshots");
    assert_eq!(
        snapshot[0].metadata.annotations.get("kubernetes-fleet.io/number-of-enveloped-object").map(String::as_str),
        Some("3")
    );

    // A bad entry is refused at apply with the spec's message.
    let bad = EXAMPLE.replace(
        "    metadata: {name: ops-reader, namespace: ops}\n",
        "    metadata: {name: ops-reader, namespace: ops}\n    rules: []\n  \"role2.yaml\":\n    apiVersion: rbac.authorization.k8s.io/v1\n    kind: Role\n    metadata: {name: other, namespace: app}\n",
    );
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&bad));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(r#"ResourceEnvelope "quota" is invalid:"#)
            && stderr.contains(
                r#"data[role2.yaml].metadata.namespace: Invalid value: "app": must be "ops", the envelope's namespace"#
            ),
        "{stderr}"
    );

    // Removing role.yaml deletes Role ops-reader from the members; the other Works stay.
    let without_role = EXAMPLE.replace(
        "  \"role.yaml\":\n    apiVersion: rbac.authorization.k8s.io/v1\n    kind: Role\n    metadata: {name: ops-reader, namespace: ops}\n    rules: [{apiGroups: [\"\"], resources: [pods], verbs: [get, list]}]\n",
        "",
    );
    assert_ne!(without_role, EXAMPLE);
    apply_yaml(&hub, &without_role);
    for cluster in ["east-1", "west-1"] {
        wait_member(&hub, cluster, "role", "ops", "ops-reader", false).await;
        assert!(member_has(&hub, cluster, "resourcequota", "ops", "ops-quota"));
    }

    // Unselecting the ClusterResourceEnvelope deletes its Work and its objects.
    let unselected = without_role.replace(
        "    - {group: placement.kubernetes-fleet.io, version: v1beta1, kind: ClusterResourceEnvelope, name: guard}\n",
        "",
    );
    apply_yaml(&hub, &unselected);
    for cluster in ["east-1", "west-1"] {
        wait_member(&hub, cluster, "clusterrole", "", "pod-reader", false).await;
        wait_member(&hub, cluster, "validatingwebhookconfiguration", "", "guard", false).await;
        let names = work_names(&hub, "ops", cluster).await.expect("works");
        assert!(!names.contains(&"ops-envelope-a3f995da6aee5302".to_string()), "{names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rp_cannot_place_a_cluster_scoped_object_from_an_envelope_configmap() {
    let hub = fleet(&[&EAST]).await;
    let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\n  namespace: team\n  annotations: {kubernetes-fleet.io/envelope-configmap: \"true\"}\ndata:\n  clusterrole.yaml: |\n    apiVersion: rbac.authorization.k8s.io/v1\n    kind: ClusterRole\n    metadata: {name: pod-reader}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {name: team-ns}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: Namespace, name: team, selectionScope: NamespaceOnly}\n  policy: {placementType: PickAll}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {name: team, namespace: team}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: ConfigMap, name: legacy}\n  policy: {placementType: PickAll}\n";
    apply_yaml(&hub, text);
    let want = "Failed to synchronize the work to the latest: cluster-scoped object clusterrole.yaml (ClusterRole pod-reader) in envelope ConfigMap team/legacy can only be placed by a ClusterResourcePlacement";
    eventually("WorkSynchronized False with SyncWorkFailed", WAIT, || {
        work_sync_failed(&hub, "rp", "team", "team", want)
    })
    .await;
    assert!(!member_has(&hub, "east-1", "clusterrole", "", "pod-reader"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_declared_after_the_envelope_stops_its_work_until_the_crd_goes() {
    let hub = fleet(&[&EAST]).await;
    let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourceEnvelope\nmetadata: {name: widgets, namespace: team}\ndata:\n  w.yaml: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: team}}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {name: team}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: Namespace, name: team}\n  policy: {placementType: PickAll}\n";
    apply_yaml(&hub, text);
    // Widget is unknown: its namespace makes it namespaced, and it lands.
    wait_member(&hub, "east-1", "widget", "team", "w", true).await;

    // A CRD stored now declares Widget cluster-scoped: Work generation stops.
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets, singular: widget}\n  scope: Cluster\n  versions: [{name: v1, served: true, storage: true}]\n";
    apply_yaml(&hub, crd);
    let want = "Failed to synchronize the work to the latest: envelope ResourceEnvelope team/widgets is invalid: data[w.yaml].metadata.namespace: Invalid value: \"team\": Widget is cluster-scoped";
    eventually("WorkSynchronized False with SyncWorkFailed", WAIT, || work_sync_failed(&hub, "crp", "", "team", want))
        .await;

    // With the CRD stored, such an envelope is refused at apply.
    let late = "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourceEnvelope\nmetadata: {name: more, namespace: team}\ndata:\n  w.yaml: {apiVersion: example.com/v1, kind: Widget, metadata: {name: w2, namespace: team}}\n";
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(late));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("data[w.yaml].metadata.namespace: Invalid value: \"team\": Widget is cluster-scoped"),
        "{stderr}"
    );

    // The CRD goes: the Work is synchronized again.
    let out = hub.fleetctl(&["delete", "crd", "widgets.example.com"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eventually("WorkSynchronized True again", WAIT, || async {
        let status = crp(&hub, "team").await.status().cloned().unwrap_or_default();
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        match conditions.iter().find(|c| c["type"] == "ClusterResourcePlacementWorkSynchronized") {
            Some(c) if c["status"] == "True" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}
