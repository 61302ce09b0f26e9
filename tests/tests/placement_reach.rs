//! Placements cannot reach past their author: a tenant who may write
//! placements but not read Secrets cannot place a Secret — not its own
//! namespace's, not another team's — through a ResourcePlacement, a
//! ClusterResourcePlacement (by its selectors or a namespace's contents),
//! an override or an envelope, on either API; what it may read it places;
//! and the audit log records the refusals.

use std::time::Duration;

use fleet_tests::eventually;
use fleet_tests::kube::KubeHub;
use serde_json::Value;

const SETUP: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: Secret
metadata: {name: local, namespace: team-a}
data: {k: YQ==}
---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: team-b}
data: {password: Yg==}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: team-a}
data: {a: '1'}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant, namespace: team-a}
rules:
  - apiGroups: [placement.kubernetes-fleet.io]
    resources: [resourceplacements, resourceoverrides, resourceenvelopes]
    verbs: ['*']
  - apiGroups: ['']
    resources: [configmaps]
    verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a}
---
# Cluster placements and overrides, and reading namespaces: what remains
# between alice and team-b's Secret is the check of what she may read.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-placer}
rules:
  - apiGroups: [placement.kubernetes-fleet.io]
    resources: [clusterresourceplacements, clusterresourceoverrides]
    verbs: ['*']
  - apiGroups: ['']
    resources: [namespaces]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-cluster-placer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-placer}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
";

fn rp(name: &str, selector: &str) -> String {
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {{name: {name}, \
         namespace: team-a}}\nspec:\n  resourceSelectors:\n    - {selector}\n  policy: {{placementType: PickAll}}\n"
    )
}

fn crp(name: &str, selectors: &str) -> String {
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {{name: \
         {name}}}\nspec:\n  resourceSelectors:\n{selectors}  policy: {{placementType: PickAll}}\n"
    )
}

const RESOURCE_OVERRIDE: &str = "\
apiVersion: placement.kubernetes-fleet.io/v1alpha1
kind: ResourceOverride
metadata: {name: secret-override, namespace: team-a}
spec:
  placement: {name: web}
  resourceSelectors:
    - {group: '', version: v1, kind: Secret, name: local}
  policy:
    overrideRules:
      - overrideType: JSONPatch
        jsonPatchOverrides:
          - {op: add, path: /metadata/labels/x, value: y}
";

const CLUSTER_RESOURCE_OVERRIDE: &str = "\
apiVersion: placement.kubernetes-fleet.io/v1alpha1
kind: ClusterResourceOverride
metadata: {name: namespaces-override}
spec:
  clusterResourceSelectors:
    - {group: '', version: v1, kind: Namespace, name: team-b}
    - {group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole, name: cluster-placer}
  policy:
    overrideRules:
      - overrideType: JSONPatch
        jsonPatchOverrides:
          - {op: add, path: /metadata/labels/x, value: y}
";

/// A ResourceEnvelope in team-a that tries to carry a Secret into team-b.
const ENVELOPE_ACROSS: &str = "\
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceEnvelope
metadata: {name: smuggle, namespace: team-a}
data:
  db.yaml:
    apiVersion: v1
    kind: Secret
    metadata: {name: db, namespace: team-b}
    data: {password: Yg==}
";

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_place_what_it_cannot_read() {
    let logs = tempfile::tempdir().expect("temp dir");
    let dir = logs.path().to_path_buf();
    let kube =
        KubeHub::start_with(|id| vec!["--audit-log".into(), dir.join(format!("audit-{id}.log")).display().to_string()])
            .await;
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(SETUP));
    assert!(out.status.success(), "{}", text(&out));
    let alice = kube.onboard("alice", &["team-a"]);
    let as_alice = |yaml: &str| kube.hub.fleetctl_with_stdin(&["--user", "alice", "apply", "-f", "-"], Some(yaml));
    let kubectl_alice = |name: &str, yaml: &str| {
        let path = kube.hub.dir.path().join(name);
        std::fs::write(&path, yaml).expect("write");
        kube.kubectl_with(&alice, &["create", "-f", path.to_str().unwrap_or_default()])
    };

    // What she may read, she places (her certificate may take a moment to be usable).
    eventually("alice places her ConfigMap", Duration::from_secs(20), || async {
        let out = as_alice(&rp("web", "{group: '', version: v1, kind: ConfigMap, name: app}"));
        if out.status.success() {
            Ok(())
        } else {
            Err(text(&out))
        }
    })
    .await;

    // Every route to a Secret she cannot read: refused, on both APIs.
    let refusals = [
        ("secrets.yaml", rp("secrets", "{group: '', version: v1, kind: Secret}"), "what spec.resourceSelectors[0] selects", "list"),
        ("local.yaml", rp("local", "{group: '', version: v1, kind: Secret, name: local}"), "what spec.resourceSelectors[0] selects", "get"),
        (
            "team-b.yaml",
            crp("team-b", "    - {group: '', version: v1, kind: Namespace, name: team-b}\n"),
            "the Secret team-b/db it selects",
            "get",
        ),
        (
            "team-b-db.yaml",
            crp(
                "team-b-db",
                "    - {group: '', version: v1, kind: Namespace, name: team-b, selectionScope: NamespaceWithResourceSelectors}\n    \
                 - {group: '', version: v1, kind: Secret, name: db}\n",
            ),
            "what spec.resourceSelectors[1] selects",
            "get",
        ),
        ("override.yaml", RESOURCE_OVERRIDE.to_string(), "what spec.resourceSelectors[0] selects", "get"),
        ("cluster-override.yaml", CLUSTER_RESOURCE_OVERRIDE.to_string(), "what spec.clusterResourceSelectors[1] selects", "get"),
    ];
    for (file, yaml, because, verb) in &refusals {
        let out = as_alice(yaml);
        assert!(!out.status.success(), "fleetctl apply {file} as alice succeeded: {}", text(&out));
        let said = text(&out);
        assert!(said.contains(&format!("its author may not read {because}")), "{file}: {said}");
        assert!(said.contains(&format!("cannot {verb} resource")), "{file}: {said}");
        let out = kubectl_alice(file, yaml);
        assert!(!out.status.success(), "kubectl create {file} as alice succeeded: {}", text(&out));
        assert!(text(&out).contains("Forbidden") && text(&out).contains(because), "{file}: {}", text(&out));
    }
    // An envelope cannot carry an object out of its namespace.
    let out = as_alice(ENVELOPE_ACROSS);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("data[db.yaml].metadata.namespace"), "{}", text(&out));
    // Changing her placement to select Secrets: refused too; it stays as it was.
    let out = as_alice(&rp("web", "{group: '', version: v1, kind: Secret, name: local}"));
    assert!(!out.status.success() && text(&out).contains("its author may not read"), "{}", text(&out));
    let stored = kube.kubectl_ok(&["get", "resourceplacement", "web", "-n", "team-a", "-o", "json"]);
    let stored: Value = serde_json::from_str(&stored).expect("json");
    assert_eq!(stored["spec"]["resourceSelectors"][0]["kind"], "ConfigMap", "{stored}");
    // Nothing refused was stored.
    let crps = kube.kubectl_ok(&["get", "crp,cro", "-o", "name"]);
    assert!(crps.trim().is_empty(), "{crps}");
    let rps = kube.kubectl_ok(&["get", "rp,ro,resourceenvelopes", "-n", "team-a", "-o", "name"]);
    assert_eq!(rps.trim(), "resourceplacement.placement.kubernetes-fleet.io/web", "{rps}");

    // An admin may place team-b whole: the check is the author's rights, not a ban.
    let out = kube.hub.fleetctl_with_stdin(
        &["apply", "-f", "-"],
        Some(&crp("team-b", "    - {group: '', version: v1, kind: Namespace, name: team-b}\n")),
    );
    assert!(out.status.success(), "{}", text(&out));

    // The audit log has each refusal: alice's create, 403, and the read she lacked.
    let routes = refusals.len();
    let refused = eventually("the refusals are in the audit log", Duration::from_secs(20), || {
        let dir = dir.clone();
        async move {
            let all: String = (1..=3)
                .map(|id| std::fs::read_to_string(dir.join(format!("audit-{id}.log"))).unwrap_or_default())
                .collect();
            let events: Vec<Value> = all.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
            let refused: Vec<Value> = events
                .into_iter()
                .filter(|e| e["user"]["username"] == "alice" && e["responseStatus"]["code"] == 403)
                .filter(|e| {
                    let reason = e["annotations"]["authorization.k8s.io/reason"].as_str().unwrap_or_default();
                    reason.contains("its author may not read")
                })
                .collect();
            // Both APIs, every refused route, and the update of web.
            if refused.len() > 2 * routes {
                Ok(refused)
            } else {
                Err(format!("{} refusals:\n{all}", refused.len()))
            }
        }
    })
    .await;
    for event in &refused {
        assert!(matches!(event["verb"].as_str(), Some("create" | "update")), "{event}");
        assert_eq!(event["annotations"]["authorization.k8s.io/decision"], "forbid", "{event}");
    }
    let by_kubectl =
        refused.iter().filter(|e| e["requestURI"].as_str().is_some_and(|u| u.starts_with("/apis/"))).count();
    assert_eq!(by_kubectl, routes, "{refused:?}");
}
