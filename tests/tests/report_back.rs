//! Status back-reporting (`strategy.reportBackStrategy`, KubeFleet's): with
//! `Mirror` to `WorkAPI` the member's status of each placed object shows in
//! its Work's manifest condition on the hub (`backReportedStatus`), and
//! follows the object (the 30 s bound on back-report-only writes is
//! unit-tested in the agent: a change here also changes the Work's
//! conditions, which the report rides along with).

use fleet_tests::eventually;
use fleet_tests::fleet::{apply_yaml, fleet, get_object, Member, WAIT};

const EAST: Member = Member { name: "east-1", labels: &[], nodes: 2, cpu: 4 };

fn app(replicas: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: app}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: app}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: web, image: nginx, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: app}}\ndata: {{a: \"1\"}}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {{name: app}}\nspec:\n  resourceSelectors: [{{group: \"\", version: v1, kind: Namespace, name: app}}]\n  policy: {{placementType: PickAll}}\n  strategy:\n    reportBackStrategy: {{type: Mirror, destination: WorkAPI}}\n"
    )
}

/// The Deployment's back-reported status in the Work on the hub, with its observation time.
async fn reported(hub: &fleet_tests::Hub) -> Result<(serde_json::Value, String), String> {
    let work = get_object(hub, "work", "fleet-member-east-1", "app-work").await?;
    let conditions = work.status().and_then(|s| s.get("manifestConditions")).cloned().unwrap_or_default();
    let deployment = conditions
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["identifier"]["kind"] == "Deployment")
        .cloned()
        .ok_or("no Deployment condition yet")?;
    let back = &deployment["backReportedStatus"];
    if back.is_null() {
        return Err(format!("no backReportedStatus: {deployment}"));
    }
    Ok((back["observedStatus"].clone(), back["observationTime"].as_str().unwrap_or_default().to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployments_member_status_is_reported_back_to_its_work() {
    let hub = fleet(&[&EAST]).await;
    apply_yaml(&hub, &app(2));
    let (first, at) = eventually("the Deployment's status reported back, 2 ready", WAIT, || async {
        let (observed, at) = reported(&hub).await?;
        if observed["status"]["readyReplicas"] == 2 {
            Ok((observed, at))
        } else {
            Err(format!("{observed}"))
        }
    })
    .await;
    assert_eq!(first["apiVersion"], "apps/v1");
    assert_eq!(first["kind"], "Deployment");
    assert!(!at.is_empty());

    // Objects without a status report nothing.
    let work = get_object(&hub, "work", "fleet-member-east-1", "app-work").await.expect("work");
    let text = serde_json::to_string(work.status().expect("status")).unwrap_or_default();
    assert_eq!(text.matches("backReportedStatus").count(), 2, "the Namespace and the Deployment: {text}");

    // The status follows a change on the hub.
    apply_yaml(&hub, &app(3));
    let moved = eventually("3 ready reported back", WAIT, || async {
        let (observed, _) = reported(&hub).await?;
        if observed["status"]["readyReplicas"] == 3 {
            Ok(observed)
        } else {
            Err(format!("{observed}"))
        }
    })
    .await;
    assert_eq!(moved["kind"], "Deployment");
}

/// With `Mirror` to `OriginalResource` and a policy of one cluster, the
/// hub's own Deployment gets its member's status; with two clusters it is
/// left alone (KubeFleet's rule: one hub object, one member).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clusters_status_is_mirrored_onto_the_hub_object() {
    const WEST: Member = Member { name: "west-1", labels: &[], nodes: 2, cpu: 4 };
    let hub = fleet(&[&EAST, &WEST]).await;
    let onto_original = |policy: &str| {
        app(2)
            .replace("destination: WorkAPI", "destination: OriginalResource")
            .replace("policy: {placementType: PickAll}", policy)
    };
    apply_yaml(&hub, &onto_original("policy: {placementType: PickFixed, clusterNames: [east-1]}"));
    let status = eventually("the hub Deployment shows 2 ready from east-1", WAIT, || async {
        let deployment = get_object(&hub, "deployment", "app", "web").await?;
        let status = deployment.status().cloned().unwrap_or_default();
        match status["readyReplicas"] == 2 {
            true => Ok(status),
            false => Err(format!("{status}")),
        }
    })
    .await;
    let (member, _) = reported(&hub).await.expect("reported in the Work too");
    assert_eq!(status, member["status"], "verbatim");
    let settings = get_object(&hub, "configmap", "app", "settings").await.expect("the ConfigMap");
    assert!(settings.status().is_none(), "an object without a member status gets none");

    // Two clusters: the hub object keeps what it had; a new member status
    // (3 replicas) is not copied.
    let both = "policy: {placementType: PickFixed, clusterNames: [east-1, west-1]}";
    apply_yaml(&hub, &onto_original(both).replace("replicas: 2", "replicas: 3"));
    eventually("west-1 has the Deployment with 3 ready", WAIT, || async {
        let work = get_object(&hub, "work", "fleet-member-west-1", "app-work").await?;
        match fleet_tests::fleet::work_available(&work) {
            true => Ok(()),
            false => Err("not yet available".to_string()),
        }
    })
    .await;
    eventually("east-1 reports 3 ready", WAIT, || async {
        let (observed, _) = reported(&hub).await?;
        match observed["status"]["readyReplicas"] == 3 {
            true => Ok(()),
            false => Err(format!("{observed}")),
        }
    })
    .await;
    let deployment = get_object(&hub, "deployment", "app", "web").await.expect("the Deployment");
    assert_eq!(deployment.status().map(|s| s["readyReplicas"].clone()), Some(serde_json::json!(2)));
}
