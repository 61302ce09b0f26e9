//! A Work executor's permissions decided by a real API server (a `realkube`
//! cluster) through the agent's Kubernetes target: SubjectAccessReviews for
//! the service account refuse it until a RoleBinding grants it, and a Role
//! granting more than it holds is refused by the server's own escalation
//! check, asked with a dry run made as the service account.

use fleet_agent::targets::access::{Access, AccessRequest};
use fleet_agent::targets::kubernetes::KubernetesTarget;
use fleet_agent::targets::{ApplyMode, ApplyRequest, Target};
use fleet_api::ocm::manifestwork::ServiceAccountRef;
use fleet_api::Object;
use fleet_tests::realkube::{ClusterOptions, RealCluster};
use serde_json::{json, Value};

const VERBS: &[&str] = &["create", "update", "patch", "get", "delete"];

fn object(v: Value) -> Object {
    serde_json::from_value(v).expect("a valid object")
}

async fn place(target: &KubernetesTarget, manifest: Value) {
    let manifest = object(manifest);
    let request =
        ApplyRequest { manifest: &manifest, mode: ApplyMode::ClientSide, owner: "admin/setup", take_over: false };
    target.apply(request).await.expect("applied as the admin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_members_rbac_decides_what_an_executor_may_apply() {
    let options = ClusterOptions { nodes: 1, node_cpu: "2".into(), node_memory: "4Gi".into(), ..Default::default() };
    let cluster =
        tokio::task::spawn_blocking(move || RealCluster::start_with("executor", &options)).await.expect("start");
    let target = KubernetesTarget::connect(Some(&cluster.kubeconfig)).await.expect("connected");
    place(&target, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}})).await;
    let sa = ServiceAccountRef { namespace: "app".into(), name: "deployer".into() };
    let config_map =
        object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "app"}}));
    let ask = |manifest: &Object| {
        let (target, sa, manifest) = (target.clone(), sa.clone(), manifest.clone());
        async move { target.access(AccessRequest { subject: &sa, manifest: &manifest, verbs: VERBS }).await }
    };
    match ask(&config_map).await.expect("asked") {
        Access::Refused { resource, escalation: false, why } => {
            assert_eq!(resource, "configmaps");
            assert!(why.contains("system:serviceaccount:app:deployer may not create"), "{why}");
        }
        other => panic!("refused before any binding, got {other:?}"),
    }

    let rbac = "rbac.authorization.k8s.io";
    place(
        &target,
        json!({"apiVersion": format!("{rbac}/v1"), "kind": "Role", "metadata": {"name": "deployer", "namespace": "app"},
        "rules": [{"apiGroups": ["", rbac], "resources": ["configmaps", "roles"], "verbs": VERBS}]}),
    )
    .await;
    place(
        &target,
        json!({"apiVersion": format!("{rbac}/v1"), "kind": "RoleBinding",
        "metadata": {"name": "deployer", "namespace": "app"},
        "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "deployer"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "app"}]}),
    )
    .await;
    assert_eq!(ask(&config_map).await.expect("asked"), Access::Allowed);

    // It may write roles, but not one granting Secrets it cannot read.
    let role = object(
        json!({"apiVersion": format!("{rbac}/v1"), "kind": "Role", "metadata": {"name": "secrets", "namespace": "app"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}),
    );
    match ask(&role).await.expect("asked") {
        Access::Refused { resource, escalation: true, why } => {
            assert_eq!(resource, "roles");
            assert!(why.contains("attempting to grant RBAC permissions not currently held"), "{why}");
        }
        other => panic!("an escalation, got {other:?}"),
    }
    let modest = object(
        json!({"apiVersion": format!("{rbac}/v1"), "kind": "Role", "metadata": {"name": "cm", "namespace": "app"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    );
    assert_eq!(ask(&modest).await.expect("asked"), Access::Allowed);
}
