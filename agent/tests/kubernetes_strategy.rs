//! The apply strategy on the Kubernetes target, against the API double:
//! takeover of an object created by someone else, and ReportDiff writing
//! nothing.

// Shared with kubernetes_target.rs, which uses all of it.
#[allow(dead_code)]
mod apiserver_double;

use apiserver_double::ApiServerDouble;
use fleet_agent::target::kubernetes::KubernetesTarget;
use fleet_agent::target::OWNER_ANNOTATION;
use fleet_agent::works::apply::apply_work;
use fleet_api::work::{WorkStatus, CONDITION_APPLIED, CONDITION_DIFF_REPORTED, REASON_ALL_DIFF_REPORTED};
use fleet_api::Object;
use serde_json::{json, Value};

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "demo"}, "data": data})
}

fn work(strategy: Value, manifests: Vec<Value>) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
        "metadata": {"name": "web-work", "namespace": "fleet-member-east", "generation": 1},
        "spec": {"workload": {"manifests": manifests}, "applyStrategy": strategy}
    }))
    .expect("a Work")
}

async fn start() -> (ApiServerDouble, KubernetesTarget) {
    let double = ApiServerDouble::start().await;
    let target = KubernetesTarget::from_client(double.client());
    double.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}), "kubectl");
    double.create(config_map(json!({"owner": "kubectl"})), "kubectl");
    double.take_requests();
    (double, target)
}

fn applied(status: &WorkStatus) -> (String, String) {
    let c = status.manifest_conditions[0].conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).expect("Applied");
    (c.status.clone(), c.reason.clone())
}

fn patches(double: &ApiServerDouble) -> usize {
    double.requests().iter().filter(|r| r.method == "PATCH").count()
}

#[tokio::test]
async fn if_no_diff_refuses_a_different_object_and_always_takes_it_over() {
    let (double, target) = start().await;
    let manifests = vec![config_map(json!({"owner": "fleet"}))];
    let out =
        apply_work(&target, &work(json!({"whenToTakeOver": "IfNoDiff"}), manifests.clone()), None, true, "t").await;
    assert_eq!(applied(&out.status), ("False".into(), "FailedToTakeOver".into()));
    let diffs = &out.status.manifest_conditions[0].diff_details.as_ref().expect("diffDetails")["observedDiffs"];
    assert_eq!(diffs, &json!([{"path": "/data/owner", "valueInHub": "fleet", "valueInMember": "kubectl"}]));
    assert_eq!(patches(&double), 0, "not written");

    let out = apply_work(&target, &work(json!({}), manifests), None, true, "t").await;
    assert_eq!(applied(&out.status), ("True".into(), "ManifestApplied".into()));
    let live = double.object("", "configmaps", "demo", "web-config").expect("exists");
    assert_eq!(live["data"], json!({"owner": "fleet"}));
    assert_eq!(live["metadata"]["annotations"][OWNER_ANNOTATION], "fleet-member-east/web-work");
}

#[tokio::test]
async fn report_diff_writes_nothing() {
    let (double, target) = start().await;
    let missing = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new", "namespace": "demo"}});
    let w = work(json!({"type": "ReportDiff"}), vec![config_map(json!({"owner": "fleet"})), missing]);
    let out = apply_work(&target, &w, None, true, "t").await;
    assert!(double.requests().iter().all(|r| r.method == "GET"), "only reads");
    let c = out.status.conditions.iter().find(|c| c.type_ == CONDITION_DIFF_REPORTED).expect("DiffReported");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", REASON_ALL_DIFF_REPORTED));
    assert!(out.status.conditions.iter().all(|c| c.type_ != CONDITION_APPLIED), "nothing applied, nothing said to be");
    let diffs = |i: usize| {
        out.status.manifest_conditions[i].diff_details.as_ref().expect("diffDetails")["observedDiffs"].clone()
    };
    assert_eq!(diffs(0), json!([{"path": "/data/owner", "valueInHub": "fleet", "valueInMember": "kubectl"}]));
    assert_eq!(diffs(1), json!([{"path": "/", "valueInHub": "(the whole object)"}]));
    assert!(double.object("", "configmaps", "demo", "new").is_none());
}
