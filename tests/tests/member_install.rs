//! Installing the agent on a member cluster with `deploy/member/`, on a real
//! Kubernetes control plane (`realkube`): the Namespace, ServiceAccount,
//! ClusterRoles, bindings and join Secret are applied as shipped; the
//! Deployment is checked by the API server (`--dry-run=server`) and run the
//! way the kubelet would run it, except as a local process: its arguments
//! and Secret-backed environment are taken from the shipped Deployment, and
//! `--in-cluster` becomes `--kubeconfig` with a token of the ServiceAccount
//! from the TokenRequest API. So every call the agent makes goes through
//! the shipped roles, and the test then shows what those roles refuse.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use fleet_tests::fleet::{apply_yaml, get_object, list, wait_joined};
use fleet_tests::hub::binary;
use fleet_tests::objects::condition;
use fleet_tests::realkube::RealCluster;
use fleet_tests::{eventually, Hub, HubOptions};
use serde_json::Value;

/// Waits on a real cluster: Pods go through the scheduler and KWOK.
const REAL_WAIT: Duration = Duration::from_secs(120);

/// The ServiceAccount the shipped roles are bound to.
const SERVICE_ACCOUNT: &str = "system:serviceaccount:fleet-system:fleet-agent";

fn member_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/member")
}

/// The agent process, killed when the test ends (also on a failure).
struct AgentProcess(Child);

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The shipped Deployment and PersistentVolumeClaim as the API server
/// accepts them (validated and defaulted, not created).
fn dry_run_deployment(cluster: &RealCluster) -> Value {
    let path = member_dir().join("50-deployment.yaml");
    let out = cluster.kubectl_ok(&["apply", "--dry-run=server", "-o", "json", "-f", path.to_str().unwrap_or("")]);
    let list: Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert_eq!(kinds, ["PersistentVolumeClaim", "Deployment"], "{out}");
    items[1].clone()
}

/// The value of a Secret's key, read as the kubelet would for the pod.
fn secret_value(cluster: &RealCluster, name: &str, key: &str) -> String {
    let template = format!("{{{{index .data \"{key}\" | base64decode}}}}");
    cluster.kubectl_ok(&["get", "secret", name, "-n", "fleet-system", "-o", &format!("go-template={template}")])
}

/// The agent's environment and command line from the Deployment's
/// container, as the kubelet makes them (Secret keys read, `$(VAR)`
/// expanded), with what differs outside a pod replaced: the hub's
/// endpoints, a local data dir, and the ServiceAccount's kubeconfig for
/// `--in-cluster`.
fn agent_process(
    cluster: &RealCluster,
    container: &Value,
    hub: &str,
    data_dir: &Path,
    kubeconfig: &Path,
) -> (Vec<(String, String)>, Vec<String>) {
    let mut env = Vec::new();
    for var in container["env"].as_array().into_iter().flatten() {
        let name = var["name"].as_str().unwrap_or_default().to_string();
        let value = match &var["valueFrom"]["secretKeyRef"] {
            Value::Null => var["value"].as_str().unwrap_or_default().to_string(),
            secret => secret_value(
                cluster,
                secret["name"].as_str().unwrap_or_default(),
                secret["key"].as_str().unwrap_or_default(),
            ),
        };
        env.push((name, value));
    }
    let mut args = Vec::new();
    for arg in container["args"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        let mut arg = arg.to_string();
        for (name, value) in &env {
            arg = arg.replace(&format!("$({name})"), value);
        }
        if arg == "--in-cluster" {
            args.extend(["--kubeconfig".to_string(), kubeconfig.display().to_string()]);
        } else if arg.starts_with("--hub=") {
            args.push(format!("--hub={hub}"));
        } else if arg.starts_with("--data-dir=") {
            args.push(format!("--data-dir={}", data_dir.display()));
        } else {
            args.push(arg);
        }
    }
    (env, args)
}

/// A kubeconfig acting as the ServiceAccount: a bound token from the
/// TokenRequest API, the cluster's server and CA.
fn service_account_kubeconfig(cluster: &RealCluster, path: &Path) {
    let token = cluster.kubectl_ok(&["create", "token", "fleet-agent", "-n", "fleet-system", "--duration", "1h"]);
    let ca = cluster.kubectl_ok(&[
        "config",
        "view",
        "--raw",
        "-o",
        "jsonpath={.clusters[0].cluster.certificate-authority-data}",
    ]);
    assert!(!ca.is_empty(), "the admin kubeconfig has the cluster's CA");
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: agent\n\
         clusters:\n- name: member\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n\
         users:\n- name: fleet-agent\n  user:\n    token: {}\n\
         contexts:\n- name: agent\n  context:\n    cluster: member\n    user: fleet-agent\n",
        cluster.server,
        ca.trim(),
        token.trim()
    );
    std::fs::write(path, kubeconfig).expect("write the ServiceAccount's kubeconfig");
}

/// `kubectl auth can-i` as the ServiceAccount.
fn can_i(cluster: &RealCluster, kubeconfig: &Path, args: &[&str]) -> bool {
    let out = cluster.kubectl_as(kubeconfig, &[&["auth", "can-i"][..], args].concat(), None);
    let answer = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(answer == "yes" || answer == "no", "kubectl auth can-i {}: {}", args.join(" "), text(&out));
    answer == "yes"
}

/// Runs kubectl as the ServiceAccount and checks that the API server refused with Forbidden.
fn refused(cluster: &RealCluster, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = cluster.kubectl_as(kubeconfig, args, stdin);
    let said = text(&out);
    assert!(!out.status.success(), "kubectl {} as the agent should be refused: {said}", args.join(" "));
    // "Error from server (Forbidden): ... is forbidden: User ..." (some
    // subcommands print only the server's message).
    assert!(said.contains(" is forbidden: "), "kubectl {} as the agent: {said}", args.join(" "));
    assert!(said.contains(SERVICE_ACCOUNT), "the refusal names the agent's ServiceAccount: {said}");
    said
}

const APP: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: install-demo}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: install-demo}
data: {greeting: placed by an agent with the member install's roles}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: install-demo}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          resources: {requests: {cpu: 250m, memory: 64Mi}}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: install-demo}
spec:
  resourceSelectors:
    - {group: "", version: v1, kind: Namespace, name: install-demo}
  policy: {placementType: PickAll}
"#;

/// A kind the narrowed placing role leaves out, in the placed namespace.
const SECRET: &str = r#"
apiVersion: v1
kind: Secret
metadata: {name: api-key, namespace: install-demo}
stringData: {key: not for this member}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_member_install_runs_the_agent_with_no_more_than_its_roles() {
    let starting = tokio::task::spawn_blocking(|| RealCluster::start("member-install"));
    let hub = Hub::start(HubOptions::default()).await;
    let cluster = starting.await.expect("start the real cluster");
    let scratch = tempfile::tempdir().expect("temp dir");

    // Install everything but the Deployment (there is no image to run).
    let mut files: Vec<PathBuf> = std::fs::read_dir(member_dir())
        .expect("deploy/member/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let names: Vec<String> =
        files.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().to_string()).collect();
    assert!(names.contains(&"50-deployment.yaml".to_string()), "{names:?}");
    for file in files.iter().filter(|p| !p.ends_with("50-deployment.yaml")) {
        cluster.kubectl_ok(&["apply", "-f", file.to_str().unwrap_or("")]);
    }
    let deployment = dry_run_deployment(&cluster);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "fleet-agent", "{pod}");
    let container = &pod["containers"][0];
    assert_eq!(container["command"], serde_json::json!(["fleet-agent"]), "{container}");
    let args: Vec<&str> = container["args"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(args.contains(&"--in-cluster"), "the pod uses its ServiceAccount: {args:?}");
    let member = args.iter().find_map(|a| a.strip_prefix("--cluster=")).expect("--cluster in the Deployment");

    // The join token and the CA fingerprint go into the Secret the way
    // deploy/member/README.md says.
    apply_yaml(
        &hub,
        &format!(
            "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata:\n  name: {member}\n  \
             labels: {{env: real}}\nspec:\n  heartbeatPeriodSeconds: 1\n"
        ),
    );
    let (token, fingerprint) = hub.token(member, "10m");
    let secret = cluster.kubectl_ok(&[
        "-n",
        "fleet-system",
        "create",
        "secret",
        "generic",
        "fleet-agent-join",
        &format!("--from-literal=token={token}"),
        &format!("--from-literal=caFingerprint={fingerprint}"),
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    cluster.apply(&secret);

    let kubeconfig = scratch.path().join("fleet-agent.kubeconfig");
    service_account_kubeconfig(&cluster, &kubeconfig);
    let (agent_env, agent_args) =
        agent_process(&cluster, container, &hub.endpoints(), &scratch.path().join("data"), &kubeconfig);
    assert!(agent_args.contains(&format!("--token={token}")), "the token comes from the Secret: {agent_args:?}");
    let log = scratch.path().join("agent.log");
    let _agent = AgentProcess(
        Command::new(binary("fleet-agent"))
            .args(&agent_args)
            .envs(agent_env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("agent log"))
            .spawn()
            .expect("spawn fleet-agent"),
    );
    let agent_log = || std::fs::read_to_string(&log).unwrap_or_default();

    // It joins and reports the real Nodes (listing Nodes and Pods is all
    // its own role allows it to read).
    wait_joined(&hub, member).await;
    let mc = get_object(&hub, "mc", "", member).await.expect("member cluster");
    let status = mc.status().cloned().unwrap_or_default();
    let property = |name: &str| status["properties"][name]["value"].as_str().unwrap_or_default().to_string();
    assert_eq!(property("kubernetes-fleet.io/node-count"), "2", "{status}");
    assert_eq!(property("fleet.kubernetes-fleet.io/target"), "kubernetes", "{status}");
    assert_eq!(status["resourceUsage"]["capacity"]["cpu"], "16", "{status}");

    // A Namespace with a ConfigMap and a Deployment arrives and becomes
    // Available, written with get, patch and delete only.
    apply_yaml(&hub, APP);
    eventually("install-demo Available", REAL_WAIT, || async {
        let crp = get_object(&hub, "crp", "", "install-demo").await?;
        match condition(&crp, "ClusterResourcePlacementAvailable") {
            Some(c) if c.0 == "True" && c.2 == crp.metadata.generation => Ok(()),
            other => {
                let failed = crp.status().map(|s| s["placementStatuses"][0]["failedPlacements"].clone());
                Err(format!("{other:?}; failed placements: {failed:?}\nagent log:\n{}", agent_log()))
            }
        }
    })
    .await;
    let web = cluster.get("deployment", "install-demo", "web").expect("the Deployment is on the member");
    assert_eq!(web["status"]["readyReplicas"], 2, "{web}");
    let settings = cluster.kubectl_ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "install-demo",
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    let settings: Value = serde_json::from_str(&settings).expect("the ConfigMap is on the member");
    let managers: Vec<&str> = settings["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"work-api-agent"), "written by server-side apply as work-api-agent: {settings}");

    // An edit on the cluster is undone through the agent's watch of the
    // kinds it placed (list and watch in its role): its periodic check
    // comes only every 5 minutes on a Kubernetes cluster.
    cluster.kubectl_ok(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "install-demo",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"greeting":"changed on the member"}}"#,
    ]);
    eventually("the edit undone well before the periodic check", Duration::from_secs(60), || async {
        let settings = cluster.get("configmap", "install-demo", "settings").ok_or("the ConfigMap is gone")?;
        match settings["data"]["greeting"].as_str() {
            Some(g) if g.starts_with("placed by") => Ok(()),
            other => Err(format!("greeting {other:?}")),
        }
    })
    .await;
    let log = agent_log();
    assert!(!log.contains("cannot watch placed objects"), "the role lets the agent watch what it placed:\n{log}");

    // What the roles grant, and nothing around it.
    let sa = kubeconfig.as_path();
    for allowed in [
        &["list", "nodes"][..],
        &["list", "pods", "--all-namespaces"],
        &["get", "/apis/apps/v1"],
        &["get", "/version"],
        &["create", "configmaps", "-n", "any"],
        &["patch", "deployments.apps", "-n", "any"],
        &["delete", "configmaps", "-n", "any"],
        &["watch", "configmaps", "--all-namespaces"],
        &["get", "widgets.example.com", "-n", "any"],
    ] {
        assert!(can_i(&cluster, sa, allowed), "the agent may {allowed:?}");
    }
    for denied in [
        &["update", "deployments.apps", "-n", "any"][..],
        &["update", "namespaces"],
        &["deletecollection", "pods", "-n", "any"],
        &["bind", "clusterroles"],
        &["escalate", "clusterroles"],
        &["impersonate", "users"],
        &["impersonate", "serviceaccounts", "-n", "kube-system"],
        &["get", "/metrics"],
    ] {
        assert!(!can_i(&cluster, sa, denied), "the agent may not {denied:?}");
    }
    // Real requests outside the roles fail: binding itself to cluster-admin
    // (create and patch on ClusterRoleBindings are not bind: the escalation
    // check refuses), replacing an object (update), acting as someone else.
    let escalate =
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: fleet-agent-admin}\n\
                    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n\
                    subjects: [{kind: ServiceAccount, name: fleet-agent, namespace: fleet-system}]\n";
    let said = refused(&cluster, sa, &["apply", "--server-side", "-f", "-"], Some(escalate));
    assert!(said.contains("not currently held"), "{said}");
    assert!(cluster.get("clusterrolebinding", "", "fleet-agent-admin").is_none());
    let replace =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: install-demo}\ndata: {greeting: replaced}\n";
    refused(&cluster, sa, &["replace", "-f", "-"], Some(replace));
    refused(&cluster, sa, &["get", "namespaces", "--as", "someone-else"], None);

    // Narrowed to the kinds it places (the README's example), the agent
    // keeps its placement, and a kind outside the role fails visibly.
    let narrow = member_dir().join("optional/placer-narrow-example.yaml");
    cluster.kubectl_ok(&["apply", "-f", narrow.to_str().unwrap_or("")]);
    eventually("the narrowed role is in force", REAL_WAIT, || async {
        match can_i(&cluster, sa, &["patch", "secrets", "-n", "install-demo"]) {
            false => Ok(()),
            true => Err("the agent may still patch Secrets".to_string()),
        }
    })
    .await;
    assert!(can_i(&cluster, sa, &["patch", "deployments.apps", "-n", "install-demo"]));
    // The broad role's indirect paths are closed: no subresources, no Secrets.
    assert!(!can_i(&cluster, sa, &["create", "serviceaccounts/token", "-n", "kube-system"]));
    assert!(!can_i(&cluster, sa, &["create", "pods/exec", "-n", "install-demo"]));
    refused(&cluster, sa, &["create", "token", "default", "-n", "kube-system"], None);
    refused(&cluster, sa, &["get", "secrets", "--all-namespaces"], None);
    apply_yaml(&hub, SECRET);
    let work = eventually("the Secret's apply fails with Forbidden in the Work", REAL_WAIT, || async {
        let works = list(&hub, "work", "kubernetes-fleet.io/parent-CRP=install-demo").await?;
        let work = works.into_iter().next().ok_or("no Work yet")?;
        let status = work.status().cloned().unwrap_or_default();
        let secret = status["manifestConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["identifier"]["kind"] == "Secret")
            .cloned()
            .unwrap_or_default();
        let applied = secret["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Applied");
        match applied {
            Some(c) if c["status"] == "False" && c["message"].as_str().is_some_and(|m| m.contains("forbidden")) => {
                Ok((work, c["message"].as_str().unwrap_or_default().to_string()))
            }
            _ => Err(format!("{status}")),
        }
    })
    .await;
    let (work, message) = work;
    assert!(message.contains(SERVICE_ACCOUNT) && message.contains("secrets"), "{message}");
    assert!(message.contains("HTTP 403 Forbidden"), "{message}");
    let applied = condition(&work, "Applied");
    assert!(applied.as_ref().is_some_and(|c| c.0 == "False"), "the Work is not applied: {applied:?}");
    let crp = eventually("the placement lists the Secret as failed", REAL_WAIT, || async {
        let crp = get_object(&hub, "crp", "", "install-demo").await?;
        let statuses = crp.status().and_then(|s| s.get("placementStatuses")).cloned().unwrap_or_default();
        let failed: Vec<Value> = statuses
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["clusterName"] == member)
            .flat_map(|e| e["failedPlacements"].as_array().cloned().unwrap_or_default())
            .collect();
        match failed.iter().find(|f| f["kind"] == "Secret" && f["name"] == "api-key") {
            Some(f) if f.to_string().contains("forbidden") => Ok(crp),
            _ => Err(format!("{statuses}")),
        }
    })
    .await;
    let applied = condition(&crp, "ClusterResourcePlacementApplied");
    assert!(applied.as_ref().is_some_and(|c| c.0 == "False"), "{applied:?} {:?}", crp.status());
    assert!(cluster.get("secret", "install-demo", "api-key").is_none(), "nothing was written outside the role");
    let web = cluster.get("deployment", "install-demo", "web").expect("the Deployment stays");
    assert_eq!(web["status"]["readyReplicas"], 2, "{web}");
}
