//! OCM cluster sets on a real trio with real agents (docs/spec/ocm.md):
//! a set's `ClusterSetEmpty` and a binding's `Bound` follow clusters
//! joining and being relabelled and sets being created and deleted; a
//! set's `spec.managedNamespaces` appear on its members (and stay on one
//! that leaves the set); fleetctl shows the conditions.

use fleet_tests::fleet::{apply_yaml, fleet, member_has, member_object, wait_member, Member, WAIT};
use fleet_tests::objects::get;
use fleet_tests::{eventually, Hub};

const SET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";
const A: Member = Member { name: "set-a", labels: &[(SET_LABEL, "prod")], nodes: 1, cpu: 2 };
const B: Member = Member { name: "set-b", labels: &[("env", "dev")], nodes: 1, cpu: 2 };

const SETS: &str = "\
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: prod}
spec:
  managedNamespaces: [{name: team-a}]
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: nobody}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: prod, namespace: apps}
spec: {clusterSet: prod}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: later, namespace: apps}
spec: {clusterSet: later}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: default, namespace: apps}
spec: {clusterSet: default}
";

/// Waits until condition `type_` of the object reads (status, reason) and
/// its message contains `message`.
async fn wait_condition(hub: &Hub, kind: &str, namespace: &str, name: &str, want: (&str, &str, &str)) {
    let (type_, status, reason) = want;
    eventually(&format!("{kind} {namespace}/{name}: {type_}={status} ({reason})"), WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let object = get(&mut admin, kind, namespace, name).await.map_err(|e| e.to_string())?;
        let conditions = object.status().and_then(|s| s.get("conditions")).cloned().unwrap_or_default();
        let found = conditions.as_array().into_iter().flatten().find(|c| c["type"] == type_).cloned();
        match found {
            Some(c) if c["status"] == status && c["reason"] == reason => Ok(c),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// Waits until the set's `ClusterSetEmpty` message says `count` clusters.
async fn wait_selected(hub: &Hub, set: &str, count: usize) {
    eventually(&format!("{set} selects {count}"), WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let object = get(&mut admin, "managedclusterset", "", set).await.map_err(|e| e.to_string())?;
        let conditions = object.status().and_then(|s| s.get("conditions")).cloned().unwrap_or_default();
        let message = conditions
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "ClusterSetEmpty")
            .map(|c| c["message"].clone());
        if message.as_ref().and_then(|m| m.as_str()) == Some(format!("{count} ManagedClusters selected").as_str()) {
            Ok(())
        } else {
            Err(format!("{message:?}"))
        }
    })
    .await;
}

/// fleetctl's stdout, asserting success.
fn fleetctl(hub: &Hub, args: &[&str]) -> String {
    let out = hub.fleetctl(args);
    assert!(out.status.success(), "fleetctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Relabels a cluster through the ManagedCluster view.
fn relabel(hub: &Hub, cluster: &str, labels: &str) {
    apply_yaml(
        hub,
        &format!(
            "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: {cluster}\n  labels: {labels}\nspec: {{hubAcceptsClient: true}}\n"
        ),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_and_binding_conditions_follow_clusters_and_sets_and_managed_namespaces_reach_members() {
    let hub = fleet(&[&A, &B]).await;
    apply_yaml(&hub, SETS);

    wait_condition(&hub, "managedclusterset", "", "prod", ("ClusterSetEmpty", "False", "ClustersSelected")).await;
    wait_selected(&hub, "prod", 1).await;
    wait_condition(&hub, "managedclusterset", "", "nobody", ("ClusterSetEmpty", "True", "NoClusterMatched")).await;
    wait_condition(&hub, "mcsb", "apps", "prod", ("Bound", "True", "ClusterSetBound")).await;
    wait_condition(&hub, "mcsb", "apps", "default", ("Bound", "True", "ClusterSetBound")).await;
    wait_condition(&hub, "mcsb", "apps", "later", ("Bound", "False", "ClusterSetNotFound")).await;

    // The managed namespace reaches the set's member, labelled, and only it.
    wait_member(&hub, "set-a", "namespace", "", "team-a", true).await;
    let namespace = member_object(&hub, "set-a", "namespace", "", "team-a").unwrap_or_default();
    assert_eq!(namespace["metadata"]["labels"]["clusterset.open-cluster-management.io/managed-by"], "prod");
    assert!(!member_has(&hub, "set-b", "namespace", "", "team-a"), "set-b is not in prod");

    // The set a binding names appears, then goes.
    apply_yaml(
        &hub,
        "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {name: later}\n",
    );
    wait_condition(&hub, "mcsb", "apps", "later", ("Bound", "True", "ClusterSetBound")).await;
    let out = hub.fleetctl(&["delete", "managedclusterset", "later"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_condition(&hub, "mcsb", "apps", "later", ("Bound", "False", "ClusterSetNotFound")).await;

    // set-b joins prod: two members, the namespace follows; nobody stays empty.
    relabel(&hub, "set-b", &format!("{{{SET_LABEL}: prod}}"));
    wait_selected(&hub, "prod", 2).await;
    wait_member(&hub, "set-b", "namespace", "", "team-a", true).await;

    // Both leave: prod is empty again; the namespace stays, as in OCM.
    relabel(&hub, "set-a", &format!("{{{SET_LABEL}: dev}}"));
    relabel(&hub, "set-b", &format!("{{{SET_LABEL}: dev}}"));
    wait_condition(&hub, "managedclusterset", "", "prod", ("ClusterSetEmpty", "True", "NoClusterMatched")).await;
    eventually("set-a's managed-namespaces Work removed", WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        match get(&mut admin, "work", "fleet-member-set-a", "mcs.managed-namespaces").await {
            Err(e) if e.code() == tonic::Code::NotFound => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(member_has(&hub, "set-a", "namespace", "", "team-a"), "a managed namespace is never deleted");

    let sets = fleetctl(&hub, &["get", "managedclusterset", "-o", "wide"]);
    assert!(sets.lines().any(|l| l.starts_with("prod ") && l.contains("True") && l.contains("team-a")), "{sets}");
    let bindings = fleetctl(&hub, &["get", "mcsb", "-n", "apps", "-o", "wide"]);
    assert!(bindings.lines().any(|l| l.starts_with("later ") && l.contains("ClusterSetNotFound")), "{bindings}");
}

/// What scripts do: `kubectl wait --for=condition=Bound` on a binding
/// returns once its set exists, and times out while it does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_wait_for_bound_returns_once_the_set_exists() {
    let kube = fleet_tests::kube::KubeHub::start().await;
    apply_yaml(
        &kube.hub,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n---\napiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {name: prod, namespace: apps}\nspec: {clusterSet: prod}\n",
    );
    let wait = ["wait", "--for=condition=Bound", "managedclustersetbinding/prod", "-n", "apps", "--timeout=2s"];
    assert!(!kube.kubectl(&wait).status.success(), "no set prod yet: not Bound");
    apply_yaml(
        &kube.hub,
        "apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {name: prod}\n",
    );
    let wait = ["wait", "--for=condition=Bound", "managedclustersetbinding/prod", "-n", "apps", "--timeout=30s"];
    let out = kube.kubectl_ok(&wait);
    assert!(out.contains("condition met"), "{out}");
    let empty = ["wait", "--for=condition=ClusterSetEmpty", "managedclusterset/prod", "--timeout=30s"];
    assert!(kube.kubectl_ok(&empty).contains("condition met"), "a set with no cluster is empty");
}
