//! Member journeys on real Kubernetes clusters: each member is a `realkube`
//! control plane (etcd, kube-apiserver, controller manager, scheduler, KWOK
//! Nodes) and its agent runs with `--kubeconfig`. What is checked on the
//! member is read back with kubectl from the real API server.

use fleet_api::Object;
use fleet_tests::fleet::{apply_yaml, entry, get_object, listed, wait_joined, WAIT};
use fleet_tests::objects::condition;
use fleet_tests::realkube::{ClusterOptions, RealCluster};
use fleet_tests::{eventually, Hub, HubOptions};
use serde_json::Value;

/// Waits on a real cluster take longer than on embedded ones: Pods go
/// through the scheduler and KWOK, Namespaces through the controller manager.
const REAL_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

/// A hub trio, real clusters, and their agents, all stopped on drop.
struct RealFleet {
    hub: Hub,
    clusters: Vec<RealCluster>,
}

impl RealFleet {
    /// Starts the clusters (side by side) and the hub, joins an agent on
    /// each cluster with the MemberCluster's `labels` (a YAML flow map),
    /// and waits until every member reports its properties.
    async fn start(members: &[(&str, &str, ClusterOptions)]) -> RealFleet {
        let specs: Vec<(String, ClusterOptions)> =
            members.iter().map(|(name, _, options)| (name.to_string(), options.clone())).collect();
        let clusters = tokio::task::spawn_blocking(move || {
            let specs: Vec<(&str, ClusterOptions)> = specs.iter().map(|(n, o)| (n.as_str(), o.clone())).collect();
            RealCluster::start_many(&specs)
        })
        .await
        .expect("start real clusters");
        let mut hub = Hub::start(HubOptions::default()).await;
        for ((name, labels, _), cluster) in members.iter().zip(&clusters) {
            join(&mut hub, name, labels, &["--kubeconfig", cluster.kubeconfig.to_str().unwrap_or_default()]);
        }
        for (name, _, _) in members {
            wait_joined(&hub, name).await;
        }
        RealFleet { hub, clusters }
    }

    fn cluster(&self, name: &str) -> &RealCluster {
        self.clusters.iter().find(|c| c.name == name).expect("a cluster of the fleet")
    }
}

/// Applies the MemberCluster (heartbeat every second) and starts its agent
/// with the default drift-check interval: on a real cluster a change is
/// found through the agent's watches, not by its periodic check (5 minutes).
fn join(hub: &mut Hub, name: &str, labels: &str, agent_args: &[&str]) {
    apply_yaml(
        hub,
        &format!(
            "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata:\n  name: {name}\n  labels: {labels}\nspec:\n  heartbeatPeriodSeconds: 1\n"
        ),
    );
    hub.start_agent(name, agent_args);
}

/// Waits until placement `name`'s condition `ClusterResourcePlacement<suffix>`
/// has `status` at its current generation.
async fn wait_placement(hub: &Hub, name: &str, suffix: &str, status: &str) -> Object {
    let type_ = format!("ClusterResourcePlacement{suffix}");
    eventually(&format!("{name}: {type_}={status}"), REAL_WAIT, || async {
        let crp = get_object(hub, "crp", "", name).await?;
        match condition(&crp, &type_) {
            Some(c) if c.0 == status && c.2 == crp.metadata.generation => Ok(crp),
            other => Err(format!("{other:?}: {}", serde_json::to_string(&crp.status()).unwrap_or_default())),
        }
    })
    .await
}

/// A PickAll CRP of the namespaces `namespaces` with `strategy` (YAML lines under `strategy:`).
fn crp(name: &str, namespaces: &[&str], strategy: &str) -> String {
    let selectors: String = namespaces
        .iter()
        .map(|ns| format!("    - {{group: \"\", version: v1, kind: Namespace, name: {ns}}}\n"))
        .collect();
    format!(
        "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata:\n  name: {name}\nspec:\n  resourceSelectors:\n{selectors}  policy: {{placementType: PickAll}}\n  strategy:\n{strategy}"
    )
}

/// Waits until `check` holds of the object on the real cluster (`None`: absent).
async fn wait_member(
    cluster: &RealCluster,
    kind: &str,
    namespace: &str,
    name: &str,
    what: &str,
    check: impl Fn(Option<&Value>) -> bool,
) -> Option<Value> {
    eventually(&format!("{kind} {namespace}/{name} on {}: {what}", cluster.name), REAL_WAIT, || async {
        let object = cluster.get(kind, namespace, name);
        if check(object.as_ref()) {
            Ok(object)
        } else {
            Err(format!("{object:?}"))
        }
    })
    .await
}

const WORKLOADS: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {mode: standard}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          resources: {requests: {cpu: 500m, memory: 256Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres:17}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logs, namespace: shop}
spec:
  selector: {matchLabels: {app: logs}}
  template:
    metadata: {labels: {app: logs}}
    spec:
      containers: [{name: logs, image: fluent-bit:3}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox:1.36, command: ["true"]}]
"#;

/// A Deployment no Node can hold (it asks for more CPU than any has).
const UNSCHEDULABLE: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: huge}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: giant, namespace: huge}
spec:
  replicas: 1
  selector: {matchLabels: {app: giant}}
  template:
    metadata: {labels: {app: giant}}
    spec:
      containers:
        - name: giant
          image: nginx:1.27
          resources: {requests: {cpu: "100"}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_cluster_joins_runs_workloads_and_lets_them_go_with_their_placement() {
    let options = ClusterOptions { nodes: 2, node_cpu: "4".into(), node_memory: "8Gi".into(), ..Default::default() };
    let fleet = RealFleet::start(&[("kube-1", "{env: real}", options)]).await;
    let hub = &fleet.hub;
    let cluster = fleet.cluster("kube-1");

    // Properties from the real Nodes and the API server.
    let mc = get_object(hub, "mc", "", "kube-1").await.expect("member cluster");
    let status = mc.status().cloned().unwrap_or_default();
    let property = |name: &str| status["properties"][name]["value"].as_str().unwrap_or_default().to_string();
    assert_eq!(property("kubernetes-fleet.io/node-count"), "2", "{status}");
    assert_eq!(property("fleet.kubernetes-fleet.io/target"), "kubernetes", "{status}");
    assert!(property("k8s.io/k8s-version").starts_with("v1.36."), "{status}");
    // OCM users read the same version from the ManagedCluster view.
    let managed = get_object(hub, "managedcluster", "", "kube-1").await.expect("managed cluster view");
    let version = managed.status().and_then(|s| s.pointer("/version/kubernetes")).cloned().unwrap_or_default();
    assert_eq!(version.as_str(), Some(property("k8s.io/k8s-version").as_str()), "{:?}", managed.status());
    assert_eq!(property("k8s.io/cluster-entrypoint"), cluster.server, "{status}");
    let kubeconfig = std::fs::read_to_string(&cluster.kubeconfig).expect("kubeconfig");
    let ca = property("k8s.io/cluster-certificate-authority-data");
    assert!(!ca.is_empty() && kubeconfig.contains(&format!("certificate-authority-data: {ca}")), "{status}");
    assert_eq!(status["resourceUsage"]["capacity"]["cpu"], "8", "{status}");
    assert_eq!(status["resourceUsage"]["allocatable"]["memory"], "16Gi", "{status}");

    // Every workload kind becomes Available as KubeFleet judges it.
    apply_yaml(hub, WORKLOADS);
    apply_yaml(hub, &crp("shop", &["shop"], "    applyStrategy: {type: ClientSideApply}\n"));
    let crp_status = wait_placement(hub, "shop", "Available", "True").await;
    let shop = entry(&crp_status, "kube-1");
    assert!(shop["failedPlacements"].as_array().is_none_or(Vec::is_empty), "{shop}");
    let web = cluster.get("deployment", "shop", "web").expect("the Deployment is on the member");
    assert_eq!(web["status"]["readyReplicas"], 2, "{web}");
    let owner = web["metadata"]["annotations"]["fleet.kubernetes-fleet.io/owner-work"].as_str().unwrap_or_default();
    assert!(owner.contains("shop"), "the owner annotation names the placement's Work: {web}");
    // KubeFleet does not track a Job's availability (it is neither a data
    // object nor a workload it knows); KWOK still runs it to completion.
    wait_member(cluster, "job", "shop", "migrate", "succeeded", |job| {
        job.is_some_and(|j| j["status"]["succeeded"] == 1)
    })
    .await;
    let daemons = cluster.get("daemonset", "shop", "logs").expect("the DaemonSet is on the member");
    assert_eq!(daemons["status"]["numberReady"], 2, "{daemons}");

    // The Pods' requests show in the member's available CPU (8 - 2 × 500m).
    eventually("kube-1's available cpu counts the web Pods", REAL_WAIT, || async {
        let mc = get_object(hub, "mc", "", "kube-1").await?;
        let available = mc.status().map(|s| s["resourceUsage"]["available"]["cpu"].clone()).unwrap_or_default();
        if available == "7" {
            Ok(())
        } else {
            Err(format!("available cpu {available}"))
        }
    })
    .await;

    // A Deployment whose Pods can never be scheduled is applied, never Available.
    apply_yaml(hub, UNSCHEDULABLE);
    apply_yaml(hub, &crp("huge", &["huge"], "    applyStrategy: {type: ClientSideApply}\n"));
    wait_placement(hub, "huge", "Applied", "True").await;
    eventually("giant's Pod is Unschedulable on kube-1", REAL_WAIT, || async {
        let pods = cluster.kubectl_ok(&[
            "get",
            "pods",
            "-n",
            "huge",
            "-o",
            "jsonpath={.items[*].status.conditions[*].reason}",
        ]);
        if pods.contains("Unschedulable") {
            Ok(())
        } else {
            Err(pods)
        }
    })
    .await;
    let huge = eventually("huge reports giant not available", REAL_WAIT, || async {
        let crp = get_object(hub, "crp", "", "huge").await?;
        let failed = entry(&crp, "kube-1")["failedPlacements"].clone();
        let listed = failed.as_array().into_iter().flatten().any(|f| f["kind"] == "Deployment" && f["name"] == "giant");
        if listed {
            Ok(crp)
        } else {
            Err(format!("{failed}"))
        }
    })
    .await;
    let available = condition(&huge, "ClusterResourcePlacementAvailable");
    assert!(available.as_ref().is_some_and(|c| c.0 == "False"), "{available:?} {:?}", huge.status());

    // Deleting the placement removes its objects; the Namespace goes through
    // Terminating and is finalized by the controller manager.
    let out = hub.fleetctl(&["delete", "crp", "shop"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_member(cluster, "namespace", "", "shop", "finalized and gone", |ns| ns.is_none()).await;
    assert!(cluster.get("deployment", "shop", "web").is_none());
    eventually("the shop placement and its Work are gone from the hub", WAIT, || async {
        match get_object(hub, "crp", "", "shop").await {
            Err(e) if e.contains("not found") || e.contains("NotFound") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// A Namespace and ConfigMaps `(name, data)` in it (`data` a YAML flow map).
fn namespace_with(namespace: &str, configmaps: &[(&str, &str)]) -> String {
    let mut yaml = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n");
    for (name, data) in configmaps {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata: {data}\n"
        ));
    }
    yaml
}

/// Waits until `kube-1`'s entry of placement `name` satisfies `check`.
async fn wait_entry(hub: &Hub, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    eventually(&format!("{name}: {what}"), REAL_WAIT, || async {
        let crp = get_object(hub, "crp", "", name).await?;
        let e = entry(&crp, "kube-1");
        if check(&e) {
            Ok(e)
        } else {
            Err(e.to_string())
        }
    })
    .await
}

fn owner_of(object: &Value) -> Option<&str> {
    object["metadata"]["annotations"]["fleet.kubernetes-fleet.io/owner-work"].as_str()
}

/// `data` of a ConfigMap on the real cluster.
fn data_of(cluster: &RealCluster, namespace: &str, name: &str) -> Value {
    cluster.get("configmap", namespace, name).map(|c| c["data"].clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_strategies_hold_on_a_real_cluster_edited_with_kubectl() {
    let fleet = RealFleet::start(&[("kube-1", "{env: real}", ClusterOptions::default())]).await;
    let hub = &fleet.hub;
    let cluster = fleet.cluster("kube-1");

    // Objects someone created on the member before Fleet placed anything.
    cluster.apply(
        &[
            namespace_with("never", &[("cfg", "{k: member}")]),
            namespace_with("ifnodiff", &[("cfg", "{k: member}"), ("same", "{k: hub}")]),
            namespace_with("always", &[("cfg", "{k: member}")]),
            namespace_with("audit", &[("cfg", "{k: member}")]),
        ]
        .join("---\n"),
    );
    let tracked = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: kept}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx:1.27}]}\n";
    for (namespace, data) in
        [("never", "{k: hub}"), ("ifnodiff", "{k: hub}"), ("always", "{k: hub}"), ("audit", "{k: hub}")]
    {
        apply_yaml(hub, &namespace_with(namespace, &[("cfg", data)]));
    }
    apply_yaml(hub, &namespace_with("ifnodiff", &[("cfg", "{k: hub}"), ("same", "{k: hub}")]));
    apply_yaml(hub, &(namespace_with("kept", &[("cfg", "{k: hub}")]) + tracked));
    apply_yaml(hub, &namespace_with("csa", &[("cfg", "{k: hub, old: gone-soon}")]));
    apply_yaml(hub, &namespace_with("ssa", &[("cfg", "{k: hub}")]));
    let strategy = |s: &str| format!("    applyStrategy: {s}\n");
    apply_yaml(hub, &crp("never", &["never"], &strategy("{whenToTakeOver: Never}")));
    apply_yaml(hub, &crp("ifnodiff", &["ifnodiff"], &strategy("{whenToTakeOver: IfNoDiff}")));
    apply_yaml(hub, &crp("always", &["always"], &strategy("{whenToTakeOver: Always, whenToApply: Always}")));
    apply_yaml(hub, &crp("audit", &["audit"], &strategy("{type: ReportDiff}")));
    apply_yaml(hub, &crp("kept", &["kept"], &strategy("{whenToApply: IfNotDrifted}")));
    apply_yaml(hub, &crp("csa", &["csa"], &strategy("{type: ClientSideApply}")));
    apply_yaml(hub, &crp("ssa", &["ssa"], &strategy("{type: ServerSideApply, serverSideApplyConfig: {force: false}}")));

    // Never: nothing taken over, each object NotTakenOver.
    let e =
        wait_entry(hub, "never", "conflicts reported", |e| listed(e, "failedPlacements", "ConfigMap", "cfg").is_some())
            .await;
    let failed = listed(&e, "failedPlacements", "ConfigMap", "cfg").cloned().unwrap_or_default();
    assert_eq!(failed["condition"]["reason"], "NotTakenOver", "{failed}");
    let cfg = cluster.get("configmap", "never", "cfg").expect("cfg");
    assert_eq!((cfg["data"]["k"].as_str(), owner_of(&cfg)), (Some("member"), None));

    // IfNoDiff: the identical object is taken over; the different one is
    // not, and its diff is reported from the real object (server defaults
    // and managed fields are no diff).
    let e = wait_entry(hub, "ifnodiff", "the diff reported", |e| {
        listed(e, "diffedPlacements", "ConfigMap", "cfg").is_some()
    })
    .await;
    let diffed = listed(&e, "diffedPlacements", "ConfigMap", "cfg").cloned().unwrap_or_default();
    assert_eq!(
        diffed["observedDiffs"],
        serde_json::json!([{"path": "/data/k", "valueInHub": "hub", "valueInMember": "member"}]),
        "{e}"
    );
    assert_eq!(
        listed(&e, "failedPlacements", "ConfigMap", "cfg").map(|f| f["condition"]["reason"].clone()),
        Some("FailedToTakeOver".into())
    );
    assert!(listed(&e, "failedPlacements", "ConfigMap", "same").is_none(), "{e}");
    wait_member(cluster, "configmap", "ifnodiff", "same", "taken over", |c| c.is_some_and(|c| owner_of(c).is_some()))
        .await;

    // ReportDiff: the diff is reported, nothing is applied.
    let e =
        wait_entry(hub, "audit", "the diff reported", |e| listed(e, "diffedPlacements", "ConfigMap", "cfg").is_some())
            .await;
    let diffed = listed(&e, "diffedPlacements", "ConfigMap", "cfg").cloned().unwrap_or_default();
    assert_eq!(diffed["observedDiffs"][0]["path"], "/data/k", "{e}");
    assert_eq!(data_of(cluster, "audit", "cfg")["k"], "member");

    // Always: taken over and overwritten; then edited with kubectl on the
    // member, the drift is overwritten again.
    wait_placement(hub, "always", "Available", "True").await;
    assert_eq!(data_of(cluster, "always", "cfg")["k"], "hub");
    cluster.kubectl_ok(&["patch", "configmap", "cfg", "-n", "always", "-p", r#"{"data":{"k":"member"}}"#]);
    wait_member(cluster, "configmap", "always", "cfg", "overwritten back", |c| {
        c.is_some_and(|c| c["data"]["k"] == "hub")
    })
    .await;

    // IfNotDrifted: a Deployment with every server default is no drift;
    // an edit of the ConfigMap is reported and kept.
    wait_placement(hub, "kept", "Available", "True").await;
    cluster.kubectl_ok(&["patch", "configmap", "cfg", "-n", "kept", "-p", r#"{"data":{"k":"member"}}"#]);
    let e =
        wait_entry(hub, "kept", "the drift reported", |e| listed(e, "driftedPlacements", "ConfigMap", "cfg").is_some())
            .await;
    let drifted = listed(&e, "driftedPlacements", "ConfigMap", "cfg").cloned().unwrap_or_default();
    assert_eq!(
        drifted["observedDrifts"],
        serde_json::json!([{"path": "/data/k", "valueInHub": "hub", "valueInMember": "member"}]),
        "{e}"
    );
    assert!(listed(&e, "driftedPlacements", "Deployment", "web").is_none(), "server defaults are no drift: {e}");
    assert_eq!(data_of(cluster, "kept", "cfg")["k"], "member", "kept");

    // ClientSideApply: a key dropped from the manifest goes from the member,
    // a key someone else added on the member stays (kubectl apply's rule).
    wait_placement(hub, "csa", "Available", "True").await;
    cluster.kubectl_ok(&["patch", "configmap", "cfg", "-n", "csa", "-p", r#"{"data":{"extra":"theirs"}}"#]);
    apply_yaml(hub, &namespace_with("csa", &[("cfg", "{k: hub2}")]));
    let data =
        wait_member(cluster, "configmap", "csa", "cfg", "updated", |c| c.is_some_and(|c| c["data"]["k"] == "hub2"))
            .await;
    assert_eq!(data.map(|c| c["data"].clone()), Some(serde_json::json!({"k": "hub2", "extra": "theirs"})));

    // ServerSideApply without force: a field another manager took is a
    // conflict the real API server reports, surfaced as a failed apply.
    wait_placement(hub, "ssa", "Available", "True").await;
    let theirs = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ssa}\ndata: {k: ops}\n";
    let out = cluster.kubectl_as(
        &cluster.kubeconfig,
        &["apply", "--server-side", "--force-conflicts", "--field-manager", "ops", "-f", "-"],
        Some(theirs),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    apply_yaml(hub, &namespace_with("ssa", &[("cfg", "{k: hub3}")]));
    let e = wait_entry(hub, "ssa", "the conflict reported", |e| {
        listed(e, "failedPlacements", "ConfigMap", "cfg").is_some()
    })
    .await;
    let failed = listed(&e, "failedPlacements", "ConfigMap", "cfg").cloned().unwrap_or_default();
    assert!(failed["condition"]["message"].as_str().unwrap_or_default().contains("conflict"), "{failed}");
    assert_eq!(data_of(cluster, "ssa", "cfg")["k"], "ops");

    // Co-ownership: an object another owner holds (an ownerReference to a
    // real object, which the garbage collector honours) is applied only
    // with allowCoOwnership, and keeps its owner.
    cluster.apply(&namespace_with("owned", &[("owner", "{k: theirs}")]));
    let owner_uid =
        cluster.get("configmap", "owned", "owner").map(|o| o["metadata"]["uid"].clone()).unwrap_or_default();
    cluster.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: owned\n  ownerReferences: [{{apiVersion: v1, kind: ConfigMap, name: owner, uid: {owner_uid}}}]\ndata: {{k: member}}\n"
    ));
    apply_yaml(hub, &namespace_with("owned", &[("cfg", "{k: hub}")]));
    apply_yaml(hub, &crp("owned", &["owned"], &strategy("{allowCoOwnership: false}")));
    let e = wait_entry(hub, "owned", "co-ownership refused", |e| {
        listed(e, "failedPlacements", "ConfigMap", "cfg").is_some()
    })
    .await;
    let failed = listed(&e, "failedPlacements", "ConfigMap", "cfg").cloned().unwrap_or_default();
    assert_eq!(failed["condition"]["reason"], "FailedToTakeOver", "{failed}");
    assert_eq!(data_of(cluster, "owned", "cfg")["k"], "member");
    apply_yaml(hub, &crp("owned", &["owned"], &strategy("{allowCoOwnership: true}")));
    wait_placement(hub, "owned", "Available", "True").await;
    let cfg = cluster.get("configmap", "owned", "cfg").expect("cfg");
    assert_eq!(cfg["data"]["k"], "hub");
    assert!(owner_of(&cfg).is_some(), "{cfg}");
    assert_eq!(cfg["metadata"]["ownerReferences"][0]["uid"], owner_uid, "the other owner is kept: {cfg}");
}

/// A cluster-scoped CustomResourceDefinition and its namespaced kind.
const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties: {size: {type: integer}}
"#;

/// Namespace `catalog` with a ConfigMap, 20 Widgets, a ResourceEnvelope
/// holding a Role, and a ClusterRole; a staged placement of all of it, an
/// override of the ConfigMap on real clusters, and a strategy whose first
/// stage is the real cluster.
fn catalog() -> String {
    let mut yaml = String::from(WIDGET_CRD);
    yaml.push_str("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: catalog}\n");
    yaml.push_str("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: catalog}\ndata: {mode: standard}\n");
    for i in 0..20 {
        yaml.push_str(&format!(
            "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w{i}, namespace: catalog}}\nspec: {{size: {i}}}\n"
        ));
    }
    yaml.push_str(
        r#"---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceEnvelope
metadata: {name: access, namespace: catalog}
data:
  "role.yaml":
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata: {name: widget-editor, namespace: catalog}
    rules: [{apiGroups: [example.com], resources: [widgets], verbs: [get, list, update]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: catalog-reader}
rules: [{apiGroups: [example.com], resources: [widgets], verbs: [get, list, watch]}]
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceOverride
metadata: {name: real-mode, namespace: catalog}
spec:
  placement: {name: catalog}
  resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: settings}]
  policy:
    overrideRules:
      - clusterSelector:
          clusterSelectorTerms: [{labelSelector: {matchLabels: {env: real}}}]
        jsonPatchOverrides: [{op: replace, path: /data/mode, value: "${MEMBER-CLUSTER-NAME}"}]
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata: {name: real-first}
spec:
  stages:
    - {name: real, labelSelector: {matchLabels: {env: real}}}
    - {name: simulated, labelSelector: {matchLabels: {env: sim}}}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: catalog}
spec:
  resourceSelectors:
    - {group: apiextensions.k8s.io, version: v1, kind: CustomResourceDefinition, name: widgets.example.com}
    - {group: "", version: v1, kind: Namespace, name: catalog}
    - {group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole, name: catalog-reader}
  policy: {placementType: PickAll}
  strategy: {type: External}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: catalog-v1}
spec:
  placementName: catalog
  resourceSnapshotIndex: "0"
  stagedRolloutStrategyName: real-first
  state: Run
"#,
    );
    yaml
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_its_resources_an_envelope_and_an_override_roll_out_in_stages_over_a_mixed_fleet() {
    let mut fleet = RealFleet::start(&[("kube-1", "{env: real}", ClusterOptions::default())]).await;
    join(&mut fleet.hub, "sim-1", "{env: sim}", &[]);
    wait_joined(&fleet.hub, "sim-1").await;
    let hub = &fleet.hub;
    let cluster = fleet.cluster("kube-1");

    apply_yaml(hub, &catalog());
    eventually("the staged run succeeded", REAL_WAIT, || async {
        let run = get_object(hub, "csur", "", "catalog-v1").await?;
        match condition(&run, "Succeeded") {
            Some(c) if c.0 == "True" => Ok(()),
            other => Err(format!("{other:?}: {}", serde_json::to_string(&run.status()).unwrap_or_default())),
        }
    })
    .await;
    wait_placement(hub, "catalog", "Available", "True").await;

    // On the real cluster: the CRD is served, so its resources were applied
    // (discovery refreshed); the envelope's Role, the ClusterRole, and the
    // override's value.
    let crd = cluster.get("crd", "", "widgets.example.com").expect("the CRD is on the member");
    let established = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    assert!(established, "{crd}");
    let widgets = cluster.kubectl_ok(&["get", "widgets", "-n", "catalog", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(widgets.split_whitespace().count(), 20, "{widgets}");
    assert_eq!(cluster.get("widget", "catalog", "w7").map(|w| w["spec"]["size"].clone()), Some(7.into()));
    assert!(cluster.get("role", "catalog", "widget-editor").is_some(), "the envelope's Role");
    assert!(cluster.get("clusterrole", "", "catalog-reader").is_some());
    assert_eq!(data_of(cluster, "catalog", "settings")["mode"], "kube-1", "overridden on the real cluster");

    // On the embedded member: the same objects, without the override.
    let sim =
        fleet_tests::fleet::member_object(hub, "sim-1", "configmap", "catalog", "settings").expect("settings on sim-1");
    assert_eq!(sim["data"]["mode"], "standard");
    assert!(fleet_tests::fleet::member_has(hub, "sim-1", "widget", "catalog", "w19"));
    assert!(fleet_tests::fleet::member_has(hub, "sim-1", "role", "catalog", "widget-editor"));

    // The real cluster finished its stage before the embedded one started.
    let run = get_object(hub, "csur", "", "catalog-v1").await.expect("run");
    let stages = run.status().map(|s| s["stagesStatus"].clone()).unwrap_or_default();
    let time = |stage: usize, type_: &str| {
        stages[stage]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == type_)
            .and_then(|c| c["lastTransitionTime"].as_str())
            .map(str::to_string)
    };
    assert!(time(0, "Succeeded").is_some() && time(1, "Progressing").is_some(), "{stages}");
    assert!(time(0, "Succeeded") <= time(1, "Progressing"), "{stages}");
}
