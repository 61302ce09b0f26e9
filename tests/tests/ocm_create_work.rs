//! `fleetctl create work` on a real trio with real agents (docs/ocm.md):
//! a ManifestWork per named cluster, and a ManifestWorkReplicaSet that
//! keeps one on every cluster an OCM Placement decides; and `get placements
//! --tree` showing that Placement's decisions.

use fleet_tests::fleet::{apply_yaml, fleet, wait_member, Member};

const EAST: Member = Member { name: "cw-east", labels: &[("tier", "web")], nodes: 1, cpu: 2 };
const WEST: Member = Member { name: "cw-west", labels: &[("tier", "web")], nodes: 1, cpu: 2 };

const MANIFESTS: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: web}
data: {mode: on}
";

const PLACEMENT: &str = "\
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: global, namespace: ops}
spec: {clusterSet: global}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: web, namespace: ops}
spec:
  predicates: [{requiredClusterSelector: {labelSelector: {matchLabels: {tier: web}}}}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_work_delivers_files_to_named_clusters_and_to_a_placement() {
    let hub = fleet(&[&EAST, &WEST]).await;
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("web.yaml");
    std::fs::write(&file, MANIFESTS).expect("written");
    let file = file.to_string_lossy().to_string();

    let out = hub.fleetctl(&["create", "work", "web", "-f", &file, "--clusters", "cw-east"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("manifestwork.work.open-cluster-management.io/web"), "{printed}");
    wait_member(&hub, "cw-east", "configmap", "web", "settings", true).await;

    apply_yaml(&hub, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ops}\n");
    apply_yaml(&hub, PLACEMENT);
    let out = hub.fleetctl(&["create", "work", "web-all", "-f", &file, "--placement", "ops/web"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_member(&hub, "cw-west", "configmap", "web", "settings", true).await;

    // The Placement and its decisions as a tree.
    let out = hub.fleetctl(&["get", "placements", "-n", "ops", "--tree"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.starts_with("ops/web (Satisfied, 2 selected)\n└── group 0\n"), "{tree}");
    assert!(tree.contains("    ├── cw-east\n    └── cw-west\n"), "{tree}");
    let out = hub.fleetctl(&["get", "mc", "--tree"]);
    assert!(!out.status.success(), "--tree is for OCM Placements only");
}
