//! A Placement's `celSelector` on a real trio with real agents
//! (docs/spec/ocm.md): CEL over `managedCluster` chooses the clusters, a
//! relabel through the ManagedCluster view moves the decision, Kubernetes'
//! quantity library compares what the agents report, and an expression
//! calling a function Fleet does not provide is refused.

use fleet_tests::fleet::{apply_yaml, fleet, list, Member, WAIT};
use fleet_tests::{eventually_equals, Hub};

const PROD: Member = Member { name: "cel-prod", labels: &[("env", "prod")], nodes: 1, cpu: 4 };
const DEV: Member = Member { name: "cel-dev", labels: &[("env", "dev")], nodes: 1, cpu: 4 };

const PLACEMENT: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: cel}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: global, namespace: cel}
spec: {clusterSet: global}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: prod, namespace: cel}
spec:
  predicates:
    - requiredClusterSelector:
        celSelector:
          celExpressions:
            - managedCluster.metadata.labels['env'] == 'prod'
            - managedCluster.status.clusterClaims.exists(c, c.name == 'fleet.kubernetes-fleet.io/target')
            - quantity(managedCluster.status.allocatable.cpu).isGreaterThan(quantity('500m'))
";

/// The clusters the Placement decides, sorted.
async fn decided(hub: &Hub) -> Result<Vec<String>, String> {
    let pages = list(hub, "placementdecisions", "cluster.open-cluster-management.io/placement=prod").await?;
    let mut clusters: Vec<String> =
        pages.iter().flat_map(|p| fleet_api::ocm::decision::status_of(p).decisions).map(|d| d.cluster_name).collect();
    clusters.sort();
    Ok(clusters)
}

async fn wait_decided(hub: &Hub, want: &[&str]) {
    let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
    eventually_equals(&format!("prod decides {want:?}"), WAIT, &want, || decided(hub)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cel_selector_chooses_clusters_and_follows_their_labels() {
    let hub = fleet(&[&PROD, &DEV]).await;
    apply_yaml(&hub, PLACEMENT);
    wait_decided(&hub, &["cel-prod"]).await;

    apply_yaml(
        &hub,
        "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: cel-dev\n  labels: {env: prod}\nspec: {hubAcceptsClient: true}\n",
    );
    wait_decided(&hub, &["cel-dev", "cel-prod"]).await;

    let bad =
        PLACEMENT.replace("managedCluster.metadata.labels['env'] == 'prod'", "isURL(managedCluster.metadata.name)");
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&bad));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused");
    assert!(said.contains("spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]"), "{said}");
    assert!(said.contains("calls isURL, which this environment does not provide"), "{said}");
}
