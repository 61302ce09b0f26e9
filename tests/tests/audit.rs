//! The audit log (`fleet-node --audit-log`): a tenant's writes and
//! refusals, through kubectl's Kubernetes API and fleetctl's gRPC alike,
//! are recorded as `audit.k8s.io/v1` Events with who, what, when, which
//! node and the outcome; reads that were allowed are not; a Secret's
//! contents are in no Event, even at the Request level.

use std::time::Duration;

use fleet_proto::fleet::{GetRequest, KindRef};
use fleet_tests::eventually;
use fleet_tests::kube::KubeHub;
use serde_json::Value;
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
metadata: {name: plans, namespace: team-b}
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
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a}
";

/// The Secret's value, in clear and base64: in no audit record.
const PASSWORD: &str = "hunter2-correct-horse";
const PASSWORD_BASE64: &str = "aHVudGVyMi1jb3JyZWN0LWhvcnNl";

const PLACEMENT: &str = "\
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourcePlacement
metadata: {name: web, namespace: team-a}
spec:
  resourceSelectors:
    - {group: '', version: v1, kind: ConfigMap, name: app}
  policy: {placementType: PickAll}
";

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Every Event of the three nodes' logs in `dir`, and the logs' whole text.
fn events(dir: &std::path::Path) -> (Vec<Value>, String) {
    let text: String =
        (1..=3).map(|id| std::fs::read_to_string(dir.join(format!("audit-{id}.log"))).unwrap_or_default()).collect();
    let events = text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    (events, text)
}

/// Whether `event` is `user`'s `verb` of `resource` `namespace/name` answered `code`.
fn is(event: &Value, user: &str, verb: &str, resource: &str, namespace: &str, name: &str, code: u64) -> bool {
    let r = &event["objectRef"];
    event["user"]["username"] == user
        && event["verb"] == verb
        && r["resource"] == resource
        && r["namespace"] == namespace
        && r["name"] == name
        && event["responseStatus"]["code"] == code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_and_refusals_are_audited_without_secret_contents() {
    let logs = tempfile::tempdir().expect("temp dir");
    let dir = logs.path().to_path_buf();
    let kube = KubeHub::start_with(|id| {
        let log = dir.join(format!("audit-{id}.log"));
        vec!["--audit-log".into(), log.display().to_string(), "--audit-level".into(), "Request".into()]
    })
    .await;
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(SETUP));
    assert!(out.status.success(), "{}", text(&out));
    // Secrets written by admin through both APIs, kubectl's with stringData.
    let out = kube.kubectl(&[
        "create",
        "secret",
        "generic",
        "db",
        "-n",
        "team-b",
        &format!("--from-literal=password={PASSWORD}"),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: api, namespace: team-b}}\nstringData: {{token: {PASSWORD}}}\n"
    );
    let out = kube.hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&secret));
    assert!(out.status.success(), "{}", text(&out));

    let alice = kube.onboard("alice", &["team-a"]);
    let created = eventually("alice creates a ConfigMap in team-a", Duration::from_secs(20), || async {
        let out = kube.kubectl_with(&alice, &["create", "configmap", "app", "-n", "team-a", "--from-literal=a=1"]);
        if out.status.success() {
            Ok(())
        } else {
            Err(text(&out))
        }
    });
    created.await;
    let out = kube.hub.fleetctl_with_stdin(&["--user", "alice", "apply", "-f", "-"], Some(PLACEMENT));
    assert!(out.status.success(), "{}", text(&out));
    // Allowed reads: not recorded.
    let out = kube.kubectl_with(&alice, &["get", "configmap", "app", "-n", "team-a"]);
    assert!(out.status.success(), "{}", text(&out));
    // Refused reads, through both APIs.
    let out = kube.kubectl_with(&alice, &["get", "configmap", "plans", "-n", "team-b"]);
    assert!(!out.status.success(), "{}", text(&out));
    let mut grpc = kube.hub.client_as(2, "alice").await;
    let kind = Some(KindRef { kind: "Secret".into(), api_version: "v1".into() });
    let err = grpc
        .get(GetRequest { kind, namespace: "team-b".into(), name: "db".into(), read: None })
        .await
        .expect_err("alice reads team-b's Secret");
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");

    let (events, all) = eventually("the audit log has every write and refusal", Duration::from_secs(20), || {
        let dir = dir.clone();
        async move {
            let (events, all) = events(&dir);
            let wanted = [
                ("admin", "create", "secrets", "team-b", "db", 201),
                ("admin", "create", "secrets", "team-b", "api", 200),
                ("alice", "create", "configmaps", "team-a", "app", 201),
                ("alice", "create", "resourceplacements", "team-a", "web", 200),
                ("alice", "get", "configmaps", "team-b", "plans", 403),
                ("alice", "get", "secrets", "team-b", "db", 403),
            ];
            let missing: Vec<_> =
                wanted.iter().filter(|(u, v, r, ns, n, c)| !events.iter().any(|e| is(e, u, v, r, ns, n, *c))).collect();
            if missing.is_empty() {
                Ok((events, all))
            } else {
                Err(format!("missing {missing:?} in\n{all}"))
            }
        }
    })
    .await;

    // Every line is a Kubernetes audit Event with when and which node.
    for event in &events {
        assert_eq!(
            (event["apiVersion"].as_str(), event["kind"].as_str()),
            (Some("audit.k8s.io/v1"), Some("Event")),
            "{event}"
        );
        assert_eq!(event["stage"], "ResponseComplete", "{event}");
        assert!(event["requestReceivedTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{event}");
        assert!(event["stageTimestamp"].is_string() && event["auditID"].is_string(), "{event}");
        let node = event["annotations"]["audit.kubernetes-fleet.io/node"].as_str().unwrap_or_default();
        assert!(["1", "2", "3"].contains(&node), "{event}");
    }
    // The refused gRPC read: on node 2, with the reason and the decision.
    let refused = events.iter().find(|e| is(e, "alice", "get", "secrets", "team-b", "db", 403)).expect("found above");
    assert_eq!(refused["annotations"]["audit.kubernetes-fleet.io/node"], "2", "{refused}");
    assert_eq!(refused["annotations"]["authorization.k8s.io/decision"], "forbid", "{refused}");
    assert_eq!(refused["requestURI"], "/fleet.v1.Fleet/Get", "{refused}");
    assert!(refused["user"]["groups"].as_array().is_some_and(|g| g.iter().any(|g| g == "team-a")), "{refused}");
    assert_eq!(refused["responseStatus"]["reason"], "Forbidden", "{refused}");
    // The kubectl create: the object at the Request level, the client's address.
    let create = events.iter().find(|e| is(e, "alice", "create", "configmaps", "team-a", "app", 201)).expect("found");
    assert_eq!(create["requestObject"]["data"]["a"], "1", "{create}");
    assert_eq!(create["sourceIPs"][0], "127.0.0.1", "{create}");
    assert!(create["userAgent"].as_str().is_some_and(|a| a.starts_with("kubectl")), "{create}");
    // Secrets: recorded, their keys but not their values.
    let secret = events.iter().find(|e| is(e, "admin", "create", "secrets", "team-b", "db", 201)).expect("found");
    assert_eq!(secret["requestObject"]["data"]["password"], "<redacted>", "{secret}");
    assert!(!all.contains(PASSWORD) && !all.contains(PASSWORD_BASE64), "a Secret's value is in the audit log:\n{all}");
    // Allowed reads are not recorded.
    let reads: Vec<_> = events.iter().filter(|e| e["verb"] == "get" && e["responseStatus"]["code"] == 200).collect();
    assert!(reads.is_empty(), "{reads:?}");
}
