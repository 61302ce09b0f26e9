//! Status feedback on a real trio with a real agent (docs/spec/ocm.md): a
//! ManifestWork's `WellKnownStatus` and `JSONPaths` feedback rules are read
//! on the member by its agent and show in the ManifestWork's
//! `resourceStatus.manifests[].statusFeedback`, following the Deployment
//! as it scales; a `ReadOnly` ManifestWork reads them without writing.

use fleet_tests::fleet::{apply_yaml, fleet, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually, eventually_equals, Hub};
use serde_json::Value;

const C: Member = Member { name: "fb-1", labels: &[], nodes: 2, cpu: 8 };

fn manifest_work(replicas: u32) -> String {
    format!(
        "apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {{name: web, namespace: fb-1}}
spec:
  workload:
    manifests:
      - apiVersion: v1
        kind: Namespace
        metadata: {{name: web}}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: web, namespace: web}}
        spec:
          replicas: {replicas}
          selector: {{matchLabels: {{app: web}}}}
          template:
            metadata: {{labels: {{app: web}}}}
            spec: {{containers: [{{name: web, image: nginx}}]}}
  manifestConfigs:
    - resourceIdentifier: {{group: apps, resource: deployments, name: web, namespace: web}}
      feedbackRules:
        - type: WellKnownStatus
        - type: JSONPaths
          jsonPaths:
            - {{name: available, path: '.status.conditions[?(@.type==\"Available\")].status'}}
            - {{name: image, path: '.spec.template.spec.containers[0].image'}}
"
    )
}

/// A second ManifestWork reading the same Deployment without writing it.
const READ_ONLY: &str = "\
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: web-status, namespace: fb-1}
spec:
  workload:
    manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: web}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: nginx}]}
  manifestConfigs:
    - resourceIdentifier: {group: apps, resource: deployments, name: web, namespace: web}
      updateStrategy: {type: ReadOnly}
      feedbackRules: [{type: WellKnownStatus}]
";

/// The Deployment manifest's feedback values as `name=value` texts, sorted.
async fn feedback(hub: &Hub) -> Result<Vec<String>, String> {
    let mut admin = hub.client(hub.running()[0]).await;
    let mw = get(&mut admin, "manifestwork", "fb-1", "web").await.map_err(|e| e.to_string())?;
    let manifests = mw.status().and_then(|s| s.pointer("/resourceStatus/manifests")).cloned().unwrap_or_default();
    let deployment = manifests.as_array().into_iter().flatten().find(|m| m["resourceMeta"]["kind"] == "Deployment");
    let values = deployment.map(|d| d["statusFeedback"]["values"].clone()).unwrap_or_default();
    let mut texts: Vec<String> = values
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let field = &v["fieldValue"];
            let shown = match field["type"].as_str() {
                Some("Integer") => field["integer"].to_string(),
                Some("String") => field["string"].as_str().unwrap_or_default().to_string(),
                _ => field.to_string(),
            };
            format!("{}={shown}", v["name"].as_str().unwrap_or_default())
        })
        .collect();
    texts.sort();
    Ok(texts)
}

async fn wait_feedback(hub: &Hub, want: &[&str]) {
    let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
    eventually_equals(&format!("feedback {want:?}"), WAIT, &want, || feedback(hub)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_rules_read_on_the_member_show_in_the_manifestwork() {
    let hub = fleet(&[&C]).await;
    apply_yaml(&hub, &manifest_work(2));
    wait_feedback(&hub, &["AvailableReplicas=2", "ReadyReplicas=2", "Replicas=2", "available=True", "image=nginx"])
        .await;

    apply_yaml(&hub, &manifest_work(3));
    wait_feedback(&hub, &["AvailableReplicas=3", "ReadyReplicas=3", "Replicas=3", "available=True", "image=nginx"])
        .await;

    // A ReadOnly manifest writes nothing and reads the feedback all the same.
    apply_yaml(&hub, READ_ONLY);
    eventually("the ReadOnly ManifestWork reads ReadyReplicas", WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let mw = get(&mut admin, "manifestwork", "fb-1", "web-status").await.map_err(|e| e.to_string())?;
        let values = mw.status().and_then(|s| s.pointer("/resourceStatus/manifests/0/statusFeedback/values")).cloned();
        let ready = values
            .as_ref()
            .and_then(Value::as_array)
            .and_then(|v| v.iter().find(|v| v["name"] == "ReadyReplicas"))
            .map(|v| v["fieldValue"]["integer"].clone());
        if ready == Some(Value::from(3)) {
            Ok(())
        } else {
            Err(format!("{values:?}"))
        }
    })
    .await;

    let mut admin = hub.client(hub.running()[0]).await;
    let mw = get(&mut admin, "manifestwork", "fb-1", "web").await.unwrap();
    let manifests = mw.status().and_then(|s| s.pointer("/resourceStatus/manifests")).cloned().unwrap_or(Value::Null);
    let synced =
        manifests[1]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "StatusFeedbackSynced");
    assert_eq!(synced.map(|c| c["status"].clone()), Some(Value::from("True")), "{manifests}");
}
