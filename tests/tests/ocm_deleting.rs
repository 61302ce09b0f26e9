//! A deleted ManifestWork on a real trio with a real agent (docs/spec/ocm.md):
//! it stays, with OCM's `Deleting` condition, while its objects are being
//! removed from the member (here: while the agent is paused), and goes with
//! them once the agent removed them; orphaned manifests stay.

use fleet_tests::fleet::{apply_yaml, fleet, member_has, wait_member, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually, Hub};

const C: Member = Member { name: "del-1", labels: &[], nodes: 1, cpu: 2 };

const WORK: &str = "\
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: web, namespace: del-1}
spec:
  deleteOption:
    propagationPolicy: SelectivelyOrphan
    selectivelyOrphans:
      orphaningRules:
        - {resource: namespaces, name: web}
        - {resource: configmaps, name: kept, namespace: web}
  workload:
    manifests:
      - {apiVersion: v1, kind: Namespace, metadata: {name: web}}
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: web}, data: {a: b}}
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: kept, namespace: web}, data: {a: b}}
";

/// The ManifestWork's `Deleting` condition (status, reason, message), or
/// `None` once the ManifestWork is gone.
async fn deleting(hub: &Hub) -> Result<Option<(String, String, String)>, String> {
    let mut admin = hub.client(hub.running()[0]).await;
    match get(&mut admin, "manifestwork", "del-1", "web").await {
        Ok(mw) => {
            let conditions = mw.status().and_then(|s| s.get("conditions")).cloned().unwrap_or_default();
            let c = conditions.as_array().into_iter().flatten().find(|c| c["type"] == "Deleting");
            let text = |c: &serde_json::Value, field: &str| c[field].as_str().unwrap_or_default().to_string();
            let c = c.ok_or("no Deleting condition yet")?;
            Ok(Some((text(c, "status"), text(c, "reason"), text(c, "message"))))
        }
        Err(e) if e.code() == tonic::Code::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_manifestwork_is_deleting_until_its_objects_are_gone() {
    let hub = fleet(&[&C]).await;
    apply_yaml(&hub, WORK);
    wait_member(&hub, "del-1", "configmap", "web", "settings", true).await;
    wait_member(&hub, "del-1", "configmap", "web", "kept", true).await;

    // The agent cannot remove anything while paused: the work stays, Deleting.
    hub.signal_agent("del-1", "STOP");
    let out = hub.fleetctl(&["delete", "manifestwork", "web", "-n", "del-1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want = ("True".to_string(), "WorkDeleting".to_string(), "ManifestWork is being deleted".to_string());
    eventually("the ManifestWork is Deleting", WAIT, || async {
        match deleting(&hub).await? {
            Some(c) if c == want => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(member_has(&hub, "del-1", "configmap", "web", "settings"), "removed while the agent is paused");

    hub.signal_agent("del-1", "CONT");
    eventually("the ManifestWork is gone", WAIT, || async {
        match deleting(&hub).await? {
            None => Ok(()),
            Some(c) => Err(format!("still there: {c:?}")),
        }
    })
    .await;
    assert!(!member_has(&hub, "del-1", "configmap", "web", "settings"), "its objects go before it does");
    assert!(member_has(&hub, "del-1", "configmap", "web", "kept"), "an orphaned manifest stays");
}
