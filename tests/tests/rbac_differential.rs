//! The hub's RBAC against a real kube-apiserver's: the same Roles,
//! ClusterRoles (one aggregated) and bindings applied to both, then a grid
//! of `kubectl auth can-i` questions — verbs × resources (a subresource
//! among them) × namespaces, named objects, cluster scope, a non-resource
//! URL — asked as alice (group team-a) of the hub with her certificate, and
//! of the real cluster by its admin impersonating her; then Roles and
//! RoleBindings alice tries to create (server-side dry runs), some within
//! what she holds and some escalating. Every answer must agree.

use std::path::PathBuf;
use std::time::Duration;

use fleet_tests::eventually;
use fleet_tests::kube::KubeHub;
use fleet_tests::realkube::RealCluster;

const POLICY: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant, namespace: team-a}
rules:
  - {apiGroups: [''], resources: [configmaps], verbs: [get, list, watch, create]}
  - {apiGroups: [''], resources: [configmaps], resourceNames: [app], verbs: [update, delete]}
  - {apiGroups: [''], resources: ['*/status'], verbs: [get, update]}
  - {apiGroups: [apps], resources: ['*'], verbs: [list]}
  - {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: team-agg}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {team-agg: 'true'}}]
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: agg-secrets, labels: {team-agg: 'true'}}
rules: [{apiGroups: [''], resources: [secrets], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: agg-pods, labels: {team-agg: 'true'}}
rules: [{apiGroups: [''], resources: [pods], verbs: [delete, deletecollection]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: agg, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: team-agg}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-reader}
rules:
  - {apiGroups: [''], resources: [nodes], verbs: [get]}
  - {apiGroups: [''], resources: [configmaps], verbs: [watch]}
  - {nonResourceURLs: ['/custom/*'], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cluster-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a}]
";

/// Every question: `auth can-i` arguments.
fn questions() -> Vec<Vec<String>> {
    let mut all = Vec::new();
    let verbs = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];
    let resources: [&[&str]; 5] =
        [&["configmaps"], &["secrets"], &["pods"], &["pods", "--subresource=status"], &["deployments.apps"]];
    for verb in verbs {
        for resource in resources {
            for namespace in ["team-a", "team-b"] {
                let mut q = vec![verb.to_string()];
                q.extend(resource.iter().map(|s| s.to_string()));
                q.extend(["-n".to_string(), namespace.to_string()]);
                all.push(q);
            }
        }
    }
    for extra in [
        "update configmaps/app -n team-a",
        "update configmaps/other -n team-a",
        "delete configmaps/app -n team-b",
        "watch configmaps -A",
        "list configmaps -A",
        "get nodes",
        "list nodes",
        "get /custom/thing",
        "get /custom",
        "post /custom/thing",
    ] {
        all.push(extra.split(' ').map(str::to_string).collect());
    }
    all
}

fn answer(out: &std::process::Output) -> Result<bool, String> {
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if said.starts_with("yes") {
        Ok(true)
    } else if said.starts_with("no") {
        Ok(false)
    } else {
        Err(format!("{said}{}", String::from_utf8_lossy(&out.stderr)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_answers_can_i_as_a_real_api_server() {
    let real = RealCluster::start("rbac");
    let out = real.kubectl_as(&real.kubeconfig, &["apply", "-f", "-"], Some(POLICY));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let kube = KubeHub::start().await;
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(POLICY));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let alice: PathBuf = kube.onboard("alice", &["team-a"]);

    let impersonated = ["--as", "alice", "--as-group", "team-a", "--as-group", "system:authenticated"];
    let ask_real = |question: &[String]| {
        let args: Vec<&str> =
            ["auth", "can-i"].into_iter().chain(question.iter().map(String::as_str)).chain(impersonated).collect();
        answer(&real.kubectl(&args))
    };
    let ask_hub = |question: &[String]| {
        let args: Vec<&str> = ["auth", "can-i"].into_iter().chain(question.iter().map(String::as_str)).collect();
        answer(&kube.kubectl_with(&alice, &args))
    };
    // The real cluster's aggregation controller fills team-agg in its own time.
    let secrets = vec!["get".to_string(), "secrets".into(), "-n".into(), "team-b".into()];
    eventually("the real cluster aggregates team-agg", Duration::from_secs(60), || {
        let answer = ask_real(&secrets);
        async move {
            match answer {
                Ok(true) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;

    let mut disagreements = Vec::new();
    let mut allowed = 0;
    let questions = questions();
    for question in &questions {
        let real = ask_real(question).unwrap_or_else(|e| panic!("real can-i {question:?}: {e}"));
        let hub = ask_hub(question).unwrap_or_else(|e| panic!("hub can-i {question:?}: {e}"));
        allowed += usize::from(real);
        if real != hub {
            disagreements.push(format!("can-i {}: real {real}, hub {hub}", question.join(" ")));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} answers differ:\n{}",
        disagreements.len(),
        questions.len(),
        disagreements.join("\n")
    );
    // The grid is not trivially all-no or all-yes.
    assert!(allowed > 10 && allowed < questions.len() - 10, "{allowed} of {} allowed", questions.len());

    // Escalation: the same creates, accepted or refused alike.
    let mut refused = 0;
    for (name, yaml) in attempts() {
        let create = ["create", "--dry-run=server", "-o", "name", "-f", "-"];
        let args: Vec<&str> = create.into_iter().chain(impersonated).collect();
        let real = real.kubectl_as(&real.kubeconfig, &args, Some(&yaml));
        let kubectl = kube_create(&kube, &alice, &yaml);
        let said = |out: &std::process::Output| {
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
        };
        refused += usize::from(!real.status.success());
        assert_eq!(
            real.status.success(),
            kubectl.status.success(),
            "{name}: real {} hub {}",
            said(&real),
            said(&kubectl)
        );
    }
    assert!((1..attempts().len()).contains(&refused), "{refused} refused");
}

/// Runs `kubectl create --dry-run=server` of `yaml` on the hub as alice.
fn kube_create(kube: &KubeHub, alice: &PathBuf, yaml: &str) -> std::process::Output {
    let path = kube.hub.dir.path().join("attempt.yaml");
    std::fs::write(&path, yaml).expect("write");
    kube.kubectl_with(alice, &["create", "--dry-run=server", "-o", "name", "-f", path.to_str().unwrap_or_default()])
}

/// Roles and bindings alice tries to create in team-a.
fn attempts() -> Vec<(&'static str, String)> {
    let role = |name: &str, rule: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: {name}, namespace: team-a}}\nrules: [{rule}]\n"
        )
    };
    let binding = |name: &str, kind: &str, role: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {name}, namespace: team-a}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: {kind}, name: {role}}}\n\
             subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}}]\n"
        )
    };
    vec![
        ("held", role("held", "{apiGroups: [''], resources: [configmaps], verbs: [get, list]}")),
        ("secrets", role("secrets", "{apiGroups: [''], resources: [secrets], verbs: [get]}")),
        ("status", role("status", "{apiGroups: [''], resources: [pods/status], verbs: [get]}")),
        ("star", role("star", "{apiGroups: [''], resources: [configmaps], verbs: ['*']}")),
        ("named", role("named", "{apiGroups: [''], resources: [configmaps], resourceNames: [app], verbs: [delete]}")),
        ("unnamed", role("unnamed", "{apiGroups: [''], resources: [configmaps], verbs: [delete]}")),
        ("own-role", binding("own-role", "Role", "tenant")),
        ("elsewhere", binding("elsewhere", "ClusterRole", "team-agg")),
        ("cluster-admin", binding("cluster-admin", "ClusterRole", "cluster-admin")),
    ]
}
