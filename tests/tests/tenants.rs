//! A hub shared by teams: a user certificate from `fleetctl pki
//! issue-user`, a Role and RoleBinding in the team's namespace, and what
//! the user can and cannot do through both APIs (fleetctl's gRPC and
//! kubectl's Kubernetes API): create ResourcePlacements and ConfigMaps in
//! its namespace; not read, list or watch another team's; no
//! ClusterResourcePlacement; `kubectl auth can-i` agreeing; no escalation
//! through Roles or RoleBindings.

use std::time::Duration;

use fleet_proto::fleet::{ClusterStatusRequest, GetRequest, KindRef, ListRequest, WatchRequest};
use fleet_tests::eventually;
use fleet_tests::kube::KubeHub;
use tonic::Code;

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
kind: ConfigMap
metadata: {name: secret-plans, namespace: team-b}
data: {plan: b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant, namespace: team-a}
rules:
  - apiGroups: [placement.kubernetes-fleet.io]
    resources: [resourceplacements]
    verbs: ['*']
  - apiGroups: ['']
    resources: [configmaps]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles, rolebindings]
    verbs: [get, list, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a}
";

fn placement(namespace: &str) -> String {
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {{name: web, namespace: \
         {namespace}}}\nspec:\n  resourceSelectors:\n    - {{group: \"\", version: v1, kind: ConfigMap, name: app}}\n  \
         policy: {{placementType: PickAll}}\n"
    )
}

const CRP: &str = "\
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: everything}
spec:
  resourceSelectors:
    - {group: '', version: v1, kind: Namespace, name: team-b}
  policy: {placementType: PickAll}
";

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn kind(kind: &str, api_version: &str) -> Option<KindRef> {
    Some(KindRef { kind: kind.into(), api_version: api_version.into() })
}

/// The output's text, as `Ok` when the command succeeded.
fn succeeded(out: &std::process::Output) -> Result<String, String> {
    if out.status.success() {
        Ok(text(out))
    } else {
        Err(text(out))
    }
}

/// Runs fleetctl as alice with `stdin`.
fn fleetctl_alice(kube: &KubeHub, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let args: Vec<&str> = ["--user", "alice"].iter().chain(args).copied().collect();
    kube.hub.fleetctl_with_stdin(&args, stdin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_works_in_its_namespace_only() {
    let kube = KubeHub::start().await;
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(SETUP));
    assert!(out.status.success(), "{}", text(&out));
    let alice = kube.onboard("alice", &["team-a"]);

    // Creating in team-a: kubectl (ConfigMap) and fleetctl (ResourcePlacement).
    let created = eventually("alice creates a ConfigMap in team-a", Duration::from_secs(20), || async {
        let out = kube.kubectl_with(&alice, &["create", "configmap", "app", "-n", "team-a", "--from-literal=a=1"]);
        succeeded(&out)
    })
    .await;
    assert!(created.contains("created"), "{created}");
    let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(&placement("team-a")));
    assert!(out.status.success(), "{}", text(&out));
    let out = kube.kubectl_with(&alice, &["get", "rp", "web", "-n", "team-a", "-o", "name"]);
    assert!(out.status.success(), "{}", text(&out));

    // team-b through kubectl: get, list, list everywhere, watch.
    for args in [
        &["get", "configmap", "secret-plans", "-n", "team-b"][..],
        &["get", "configmaps", "-n", "team-b"],
        &["get", "configmaps", "-A"],
        &["get", "--raw", "/api/v1/namespaces/team-b/configmaps?watch=true"],
        &["create", "configmap", "x", "-n", "team-b"],
    ] {
        let out = kube.kubectl_with(&alice, args);
        assert!(!out.status.success(), "kubectl {args:?} as alice succeeded: {}", text(&out));
        assert!(text(&out).contains("Forbidden") || text(&out).contains("forbidden"), "{args:?}: {}", text(&out));
    }
    // No cluster-scoped placement, through either API.
    let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(CRP));
    assert!(!out.status.success());
    assert!(text(&out).contains("cannot create resource \"clusterresourceplacements\""), "{}", text(&out));
    let crp = kube.hub.dir.path().join("crp.yaml");
    std::fs::write(&crp, CRP).expect("write");
    let out = kube.kubectl_with(&alice, &["create", "-f", crp.to_str().unwrap_or_default()]);
    assert!(!out.status.success() && text(&out).contains("Forbidden"), "{}", text(&out));

    // team-b through gRPC: get, list, watch; and the hub's own calls.
    let mut grpc = kube.hub.client_as(1, "alice").await;
    let cm = || kind("ConfigMap", "v1");
    let err = grpc
        .get(GetRequest { kind: cm(), namespace: "team-b".into(), name: "secret-plans".into(), read: None })
        .await
        .expect_err("get in team-b");
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    assert!(err.message().contains("cannot get resource \"configmaps\""), "{err}");
    let list = |namespace: &str, all: bool| ListRequest {
        kind: cm(),
        namespace: namespace.into(),
        all_namespaces: all,
        label_selector: String::new(),
        read: None,
    };
    assert_eq!(grpc.list(list("team-b", false)).await.expect_err("list").code(), Code::PermissionDenied);
    assert_eq!(grpc.list(list("", true)).await.expect_err("list all").code(), Code::PermissionDenied);
    let items = grpc.list(list("team-a", false)).await.expect("list in team-a").into_inner().items;
    assert_eq!(items.len(), 1);
    let watch = WatchRequest { kind: cm(), namespace: "team-b".into(), ..WatchRequest::default() };
    assert_eq!(grpc.watch(watch).await.expect_err("watch").code(), Code::PermissionDenied);
    let err = grpc.cluster_status(ClusterStatusRequest { digest: false }).await.expect_err("cluster status");
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");

    // kubectl auth can-i answers from the same rules.
    let can_i = |args: &[&str]| {
        let args: Vec<&str> = ["auth", "can-i"].iter().chain(args).copied().collect();
        String::from_utf8_lossy(&kube.kubectl_with(&alice, &args).stdout).trim().to_string()
    };
    assert_eq!(can_i(&["create", "resourceplacements", "-n", "team-a"]), "yes");
    assert_eq!(can_i(&["delete", "configmaps", "-n", "team-a"]), "yes");
    assert!(can_i(&["get", "configmaps", "-n", "team-b"]).starts_with("no"));
    assert!(can_i(&["create", "clusterresourceplacements"]).starts_with("no"));
    assert!(can_i(&["list", "secrets", "-n", "team-a"]).starts_with("no"));
    let rules = can_i(&["--list", "-n", "team-a"]);
    assert!(rules.contains("resourceplacements.placement.kubernetes-fleet.io"), "{rules}");
    assert!(rules.contains("configmaps"), "{rules}");
    let elsewhere = can_i(&["--list", "-n", "team-b"]);
    assert!(!elsewhere.contains("resourceplacements"), "{elsewhere}");

    // A binding written later is seen by the next decisions, and so is its deletion.
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: visitors, namespace: \
                   team-b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects:\n  \
                   - {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}\n";
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(binding));
    assert!(out.status.success(), "{}", text(&out));
    eventually("alice reads team-b once bound to view there", Duration::from_secs(10), || {
        let mut grpc = grpc.clone();
        async move {
            let reply = grpc.list(list("team-b", false)).await.map_err(|e| e.to_string())?;
            Ok(reply.into_inner().items.len())
        }
    })
    .await;
    let out = kube.hub.fleetctl(&["delete", "rolebinding", "visitors", "-n", "team-b"]);
    assert!(out.status.success(), "{}", text(&out));
    eventually("alice is refused again once unbound", Duration::from_secs(10), || {
        let mut grpc = grpc.clone();
        async move {
            match grpc.list(list("team-b", false)).await {
                Err(e) if e.code() == Code::PermissionDenied => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rbac_kinds_are_served_and_discovered() {
    let kube = KubeHub::start().await;
    let names = kube.kubectl_ok(&["api-resources", "--api-group=rbac.authorization.k8s.io", "-o", "name"]);
    for plural in ["roles", "rolebindings", "clusterroles", "clusterrolebindings"] {
        assert!(names.lines().any(|l| l == format!("{plural}.rbac.authorization.k8s.io")), "{names}");
    }
    // A malformed Role is refused by both APIs, naming the field.
    let bad = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: bad, namespace: default}\n\
               rules:\n  - {apiGroups: [''], resources: [pods], verbs: []}\n";
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(bad));
    assert!(!out.status.success());
    assert!(text(&out).contains("rules[0].verbs: Required value"), "{}", text(&out));
    let path = kube.hub.dir.path().join("bad.yaml");
    std::fs::write(&path, bad).expect("write");
    let out = kube.kubectl(&["apply", "-f", path.to_str().unwrap_or_default()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("rules[0].verbs: Required value"), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_cannot_grant_what_it_does_not_hold() {
    let kube = KubeHub::start().await;
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(SETUP));
    assert!(out.status.success(), "{}", text(&out));
    let alice = kube.onboard("alice", &["team-a"]);
    let write = |name: &str, yaml: &str| {
        let path = kube.hub.dir.path().join(name);
        std::fs::write(&path, yaml).expect("write");
        path.to_str().unwrap_or_default().to_string()
    };

    // A Role within what alice holds in team-a: allowed.
    let reader = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: cm-reader, namespace: \
                  team-a}\nrules:\n  - {apiGroups: [''], resources: [configmaps], verbs: [get, list]}\n";
    let out = kube.kubectl_with(&alice, &["apply", "-f", &write("reader.yaml", reader)]);
    assert!(out.status.success(), "{}", text(&out));

    // Secrets she cannot read: refused by both APIs, naming what is missing.
    let secrets = reader.replace("cm-reader", "secret-reader").replace("[configmaps]", "[configmaps, secrets]");
    let out = kube.kubectl_with(&alice, &["apply", "-f", &write("secrets.yaml", &secrets)]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(said.contains("attempting to grant RBAC permissions not currently held"), "{said}");
    assert!(said.contains("secrets"), "{said}");
    let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(&secrets));
    assert!(!out.status.success());
    assert!(text(&out).contains("attempting to grant RBAC permissions not currently held"), "{}", text(&out));

    // Binding cluster-admin in her namespace: refused; her own role to bob: allowed.
    let bind = |role_kind: &str, role: &str, name: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {name}, namespace: \
             team-a}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: {role_kind}, name: {role}}}\nsubjects:\n  \
             - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}}\n"
        )
    };
    let out = kube
        .kubectl_with(&alice, &["apply", "-f", &write("admin.yaml", &bind("ClusterRole", "cluster-admin", "root"))]);
    assert!(!out.status.success());
    assert!(text(&out).contains("attempting to grant RBAC permissions not currently held"), "{}", text(&out));
    let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(&bind("ClusterRole", "cluster-admin", "root")));
    assert!(!out.status.success(), "{}", text(&out));
    let out = kube.kubectl_with(&alice, &["apply", "-f", &write("bob.yaml", &bind("Role", "tenant", "bob"))]);
    assert!(out.status.success(), "{}", text(&out));
    // A binding's roleRef does not change.
    let out = kube.kubectl_with(&alice, &["apply", "-f", &write("bob2.yaml", &bind("Role", "cm-reader", "bob"))]);
    assert!(!out.status.success());
    assert!(text(&out).contains("cannot change roleRef"), "{}", text(&out));

    // Nothing refused was stored.
    let stored = kube.kubectl_ok(&["get", "roles,rolebindings", "-n", "team-a", "-o", "name"]);
    assert!(stored.contains("role.rbac.authorization.k8s.io/cm-reader"), "{stored}");
    assert!(!stored.contains("secret-reader") && !stored.contains("/root"), "{stored}");
}

/// A ManifestWork in team-a applied on its member as `app/<account>`, with
/// the ConfigMap's `mode`.
fn work_as(account: Option<&str>, mode: &str) -> String {
    let executor = account
        .map(|a| {
            format!(
                "  executor:\n    subject: {{type: ServiceAccount, serviceAccount: {{namespace: app, name: {a}}}}}\n"
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {{name: settings, namespace: \
         team-a}}\nspec:\n{executor}  workload:\n    manifests:\n      - {{apiVersion: v1, kind: ConfigMap, metadata: \
         {{name: settings, namespace: app}}, data: {{mode: {mode}}}}}\n"
    )
}

/// What lets team-a write ManifestWorks (its Role, then the binding).
const WORKS: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: works, namespace: team-a}
rules:
  - apiGroups: [work.open-cluster-management.io]
    resources: [manifestworks]
    verbs: [get, list, create, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: works, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: works}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a}
";

/// The rule that lets its holder name `app/deployer` as an executor.
const EXECUTE_AS_DEPLOYER: &str = r#"  - apiGroups: [work.open-cluster-management.io]
    resources: [manifestworks]
    verbs: [execute-as]
    resourceNames: ['system:serviceaccount:app:deployer']
"#;

/// team-a's ManifestWork Role with the execute-as rule added.
fn works_role_executing_as_deployer() -> String {
    let role = WORKS.split("---").next().unwrap_or_default();
    format!("{role}{EXECUTE_AS_DEPLOYER}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_names_only_executors_it_may_execute_as() {
    let kube = KubeHub::start().await;
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&format!("{SETUP}---\n{WORKS}")));
    assert!(out.status.success(), "{}", text(&out));
    let alice = kube.onboard("alice", &["team-a"]);
    let write = |name: &str, yaml: &str| {
        let path = kube.hub.dir.path().join(name);
        std::fs::write(&path, yaml).expect("write");
        path.to_str().unwrap_or_default().to_string()
    };
    let refusal = "user alice cannot manipulate the Manifestwork with executor app/deployer in namespace team-a";

    // Without execute-as: refused by both APIs, and nothing is stored.
    let out = kube.kubectl_with(&alice, &["apply", "-f", &write("as-deployer.yaml", &work_as(Some("deployer"), "on"))]);
    assert!(!out.status.success() && text(&out).contains(refusal), "{}", text(&out));
    let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(&work_as(Some("deployer"), "on")));
    assert!(!out.status.success() && text(&out).contains(refusal), "{}", text(&out));
    let out = kube.kubectl(&["get", "manifestwork", "settings", "-n", "team-a"]);
    assert!(!out.status.success(), "a refused ManifestWork was stored: {}", text(&out));

    // Without an executor there is nothing to check.
    let out = kube.kubectl_with(&alice, &["apply", "-f", &write("plain.yaml", &work_as(None, "on"))]);
    assert!(out.status.success(), "{}", text(&out));

    // Granted execute-as on app/deployer: that executor, and edits keeping it.
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&works_role_executing_as_deployer()));
    assert!(out.status.success(), "{}", text(&out));
    let applied = eventually("alice names app/deployer", Duration::from_secs(20), || async {
        let out =
            kube.kubectl_with(&alice, &["apply", "-f", &write("as-deployer.yaml", &work_as(Some("deployer"), "on"))]);
        succeeded(&out)
    })
    .await;
    assert!(applied.contains("configured"), "{applied}");
    let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(&work_as(Some("deployer"), "off")));
    assert!(out.status.success(), "{}", text(&out));
    // Another service account is still refused.
    let out = kube.kubectl_with(&alice, &["apply", "-f", &write("as-other.yaml", &work_as(Some("other"), "off"))]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("with executor app/other in namespace team-a"), "{}", text(&out));

    // A replica set's template executor is checked in its namespace too.
    let replica_set = |account: &str| {
        format!(
            "apiVersion: work.open-cluster-management.io/v1alpha1\nkind: ManifestWorkReplicaSet\nmetadata: {{name: \
             web, namespace: team-a}}\nspec:\n  placementRefs: [{{name: any}}]\n  manifestWorkTemplate:\n    \
             executor:\n      subject: {{type: ServiceAccount, serviceAccount: {{namespace: app, name: {account}}}}}\n    \
             workload:\n      manifests: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: web, namespace: \
             app}}}}]\n"
        )
    };
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(REPLICA_SETS));
    assert!(out.status.success(), "{}", text(&out));
    let refused = eventually("alice may write replica sets", Duration::from_secs(20), || async {
        let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(&replica_set("other")));
        let said = text(&out);
        if said.contains("cannot manipulate the ManifestWorkReplicaSet with executor app/other") {
            Ok(said)
        } else {
            Err(said)
        }
    })
    .await;
    assert!(refused.contains("namespace team-a"), "{refused}");
    let out = fleetctl_alice(&kube, &["apply", "-f", "-"], Some(&replica_set("deployer")));
    assert!(out.status.success(), "{}", text(&out));
}

const REPLICA_SETS: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: replica-sets, namespace: team-a}
rules:
  - apiGroups: [work.open-cluster-management.io]
    resources: [manifestworkreplicasets]
    verbs: [get, list, create, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: replica-sets, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: replica-sets}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a}
";
