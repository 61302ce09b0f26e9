//! A ManifestWork's `executor` on a real trio with a real agent (docs/spec/ocm.md):
//! the agent applies a manifest only if the executor's service account may,
//! by the RBAC objects placed on the (embedded) member; refused, the
//! manifest is `Applied=False` with OCM's reason, and it is applied once a
//! RoleBinding grants the service account what it needs.

use fleet_tests::fleet::{apply_yaml, fleet, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually_equals, Hub};

const C: Member = Member { name: "ex-1", labels: &[], nodes: 1, cpu: 4 };

/// The namespace the executor works in, placed without an executor.
const NAMESPACE: &str = "\
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: app-namespace, namespace: ex-1}
spec:
  workload:
    manifests:
      - {apiVersion: v1, kind: Namespace, metadata: {name: app}}
";

/// A ConfigMap applied as service account `app/deployer`.
const AS_DEPLOYER: &str = "\
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: settings, namespace: ex-1}
spec:
  executor:
    subject: {type: ServiceAccount, serviceAccount: {namespace: app, name: deployer}}
  workload:
    manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: app}, data: {mode: on}}
";

/// What lets `app/deployer` manage ConfigMaps in `app`.
const GRANT: &str = "\
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: deployer-rbac, namespace: ex-1}
spec:
  workload:
    manifests:
      - apiVersion: rbac.authorization.k8s.io/v1
        kind: Role
        metadata: {name: configmaps, namespace: app}
        rules: [{apiGroups: [''], resources: [configmaps], verbs: [create, update, patch, get, delete]}]
      - apiVersion: rbac.authorization.k8s.io/v1
        kind: RoleBinding
        metadata: {name: deployer-configmaps, namespace: app}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmaps}
        subjects: [{kind: ServiceAccount, name: deployer, namespace: app}]
";

/// The `Applied` condition of the ManifestWork `name`'s first manifest and
/// of the work, as `status reason` texts, and the manifest's message.
async fn applied(hub: &Hub, name: &str) -> Result<(String, String, bool), String> {
    let mut admin = hub.client(hub.running()[0]).await;
    let mw = get(&mut admin, "manifestwork", "ex-1", name).await.map_err(|e| e.to_string())?;
    let status = mw.status().cloned().unwrap_or_default();
    let find = |conditions: &serde_json::Value| {
        conditions.as_array().into_iter().flatten().find(|c| c["type"] == "Applied").map(|c| {
            (format!("{} {}", c["status"].as_str().unwrap_or(""), c["reason"].as_str().unwrap_or("")), c.clone())
        })
    };
    let (manifest, condition) =
        find(&status["resourceStatus"]["manifests"][0]["conditions"]).ok_or("no manifest Applied")?;
    let (work, _) = find(&status["conditions"]).ok_or("no Applied")?;
    let message = condition["message"].as_str().unwrap_or_default();
    let says_why = message
        .starts_with("Failed to apply manifest: not allowed to apply the resource  configmaps, app settings")
        && message.contains("system:serviceaccount:app:deployer");
    Ok((manifest, work, says_why))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executor_applies_only_what_the_members_rbac_allows() {
    let hub = fleet(&[&C]).await;
    apply_yaml(&hub, NAMESPACE);
    apply_yaml(&hub, AS_DEPLOYER);
    let refused = ("False AppliedManifestFailed".to_string(), "False AppliedManifestWorkFailed".to_string(), true);
    eventually_equals("the executor refused", WAIT, &refused, || applied(&hub, "settings")).await;

    apply_yaml(&hub, GRANT);
    let done = ("True ManifestApplied".to_string(), "True AppliedManifestWorkComplete".to_string(), false);
    eventually_equals("the executor allowed", WAIT, &done, || applied(&hub, "settings")).await;
}
