//! A kind in one of Fleet's own API groups that Fleet does not implement is
//! refused at every write (fleetctl's gRPC apply, and every write of the
//! Kubernetes API) naming the kind, the group and version, and what Fleet
//! implements there; nothing is stored. Discovery lists exactly the kinds
//! Fleet implements in those groups, even when a stored CRD declares more.

use std::time::Duration;

use fleet_api::kinds::{kinds_in_group, FLEET_PLACEMENT_GROUP};
use fleet_proto::fleet::{KindRef, ListRequest, ReadOptions};
use fleet_tests::eventually;
use fleet_tests::kube::KubeHub;
use fleet_tests::{Hub, HubOptions};

/// The three documents that used to apply as "created" and then do nothing.
const UNKNOWN: &str = "\
apiVersion: placement.kubernetes-fleet.io/v1
kind: MetricCollector
metadata: {name: web-status}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: AppliedWork
metadata: {name: web-work}
---
apiVersion: placement.kubefleet.dev/v1alpha1
kind: PlacementPolicy
metadata: {name: spread}
";

/// A user's own CRD kind: stored as a resource to place, as before.
const WIDGET: &str = "\
apiVersion: example.com/v1
kind: Widget
metadata: {name: gadget, namespace: team-a}
spec: {size: 3}
";

fn text(out: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
}

/// How many objects of `kind` in `api_version`'s group the hub stores.
async fn stored(hub: &Hub, api_version: &str, kind: &str) -> usize {
    let mut client = hub.client(1).await;
    let reply = client
        .list(ListRequest {
            kind: Some(KindRef { kind: kind.into(), api_version: api_version.into() }),
            namespace: String::new(),
            all_namespaces: true,
            label_selector: String::new(),
            read: Some(ReadOptions::default()),
        })
        .await
        .unwrap_or_else(|e| panic!("list {api_version} {kind}: {e}"));
    reply.into_inner().items.len()
}

fn supported_placement_kinds() -> Vec<&'static str> {
    kinds_in_group(FLEET_PLACEMENT_GROUP).map(|k| k.kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleetctl_apply_refuses_unknown_kinds_of_fleets_groups_and_stores_nothing() {
    let hub = Hub::start(HubOptions::default()).await;
    // Valid documents around the refused ones: the apply is one request, so
    // none of them may be stored either.
    let documents = format!("{WIDGET}---\n{UNKNOWN}");
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&documents));
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "unknown kinds were applied: {stdout}");
    assert!(stderr.contains("nothing was applied"), "{stderr}");
    assert!(
        stderr.contains(
            "(document 2): MetricCollector \"web-status\" is invalid:\n  kind: Unsupported value: \
             \"MetricCollector\": no matches for kind \"MetricCollector\" in version \
             \"placement.kubernetes-fleet.io/v1\""
        ),
        "{stderr}"
    );
    for kind in supported_placement_kinds() {
        assert!(stderr.contains(kind), "the supported kinds lack {kind}: {stderr}");
    }
    assert!(
        stderr.contains(
            "(document 3): AppliedWork \"web-work\" is invalid:\n  kind: Unsupported value: \
             \"AppliedWork\": no matches for kind \"AppliedWork\" in version \
             \"placement.kubernetes-fleet.io/v1beta1\""
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "(document 4): PlacementPolicy \"spread\" is invalid:\n  kind: Unsupported value: \"PlacementPolicy\": no matches for \
             kind \"PlacementPolicy\" in version \"placement.kubefleet.dev/v1alpha1\": placement.kubefleet.dev is one \
             of Fleet's own API groups and Fleet implements no kinds in it"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("(document 1)"), "the Widget is fine: {stderr}");

    // An unknown version of a kind Fleet implements names the versions served.
    let v2 = "apiVersion: placement.kubernetes-fleet.io/v2\nkind: ClusterResourcePlacement\nmetadata: {name: web}\n";
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(v2));
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "an unserved version was applied");
    assert!(
        stderr.contains(
            "ClusterResourcePlacement \"web\" is invalid:\n  apiVersion: Unsupported value: \"placement.kubernetes-fleet.io/v2\": \
             kind ClusterResourcePlacement of placement.kubernetes-fleet.io is served at versions v1beta1, v1, v1alpha1"
        ),
        "{stderr}"
    );

    // Nothing of it was stored.
    assert_eq!(stored(&hub, "placement.kubernetes-fleet.io/v1", "MetricCollector").await, 0);
    assert_eq!(stored(&hub, "placement.kubernetes-fleet.io/v1beta1", "AppliedWork").await, 0);
    assert_eq!(stored(&hub, "placement.kubefleet.dev/v1alpha1", "PlacementPolicy").await, 0);
    assert_eq!(stored(&hub, "example.com/v1", "Widget").await, 0);
    let out = hub.fleetctl(&["get", "crp"]);
    let (stdout, stderr) = text(&out);
    assert!(!stdout.contains("web"), "{stdout}{stderr}");

    // A user's CRD kind alone is stored as a resource to place, as before.
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(WIDGET));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("created"), "{stdout}");
    assert_eq!(stored(&hub, "example.com/v1", "Widget").await, 1);
}

/// A CRD of KubeFleet's declaring a kind Fleet does not implement (applied
/// to the hub, e.g. to be placed): stored, but it serves nothing.
const STATUS_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "metriccollectors.placement.kubernetes-fleet.io"},
  "spec": {
    "group": "placement.kubernetes-fleet.io",
    "names": {"kind": "MetricCollector", "plural": "metriccollectors",
              "singular": "metriccollector", "listKind": "MetricCollectorList"},
    "scope": "Cluster",
    "versions": [{"name": "v1", "served": true, "storage": true,
                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
  }
}"#;

const CRP: &str = "apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: web}
spec:
  resourceSelectors:
    - {group: \"\", version: v1, kind: Namespace, name: web-demo}
  policy: {placementType: PickAll}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_no_matches_and_every_write_of_an_unknown_kind_is_refused() {
    let kube = KubeHub::start().await;
    let dir = kube.hub.dir.path().to_path_buf();
    let write = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, body).expect("write manifest");
        path.to_string_lossy().to_string()
    };

    // Discovery lists exactly the kinds the registry implements.
    let listed = kube.kubectl_ok(&["api-resources", "--api-group", FLEET_PLACEMENT_GROUP, "-o", "name"]);
    let mut listed: Vec<&str> =
        listed.lines().map(|l| l.trim_end_matches(&format!(".{FLEET_PLACEMENT_GROUP}"))).collect();
    let mut implemented: Vec<&str> = kinds_in_group(FLEET_PLACEMENT_GROUP).map(|k| k.plural).collect();
    listed.sort();
    implemented.sort();
    assert_eq!(listed, implemented);

    // A CRD in Fleet's group is stored (a resource to place), yet does not
    // make its kind served.
    let crd = write("crd.json", STATUS_CRD);
    kube.kubectl_ok(&["apply", "-f", &crd]);
    eventually("the CRD is stored", Duration::from_secs(20), || async {
        let out = kube.kubectl(&["get", "crd", "metriccollectors.placement.kubernetes-fleet.io"]);
        if out.status.success() {
            Ok(())
        } else {
            Err(text(&out).1)
        }
    })
    .await;
    let resources = kube.kubectl_ok(&["api-resources"]);
    assert!(!resources.contains("metriccollectors"), "{resources}");

    // kubectl apply: no matches for the kind, as a Kubernetes API server
    // with KubeFleet's CRDs answers.
    // kubectl validates a kind it cannot find in the hub's OpenAPI v3 by
    // falling back to OpenAPI v2, which the hub does not serve ("failed to
    // download openapi"); without validation it reaches the mapping refusal.
    let unknown = write("unknown.yaml", UNKNOWN);
    let out = kube.kubectl(&["apply", "--validate=false", "-f", &unknown]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "unknown kinds were applied");
    for (kind, version) in [
        ("MetricCollector", "placement.kubernetes-fleet.io/v1"),
        ("AppliedWork", "placement.kubernetes-fleet.io/v1beta1"),
        ("PlacementPolicy", "placement.kubefleet.dev/v1alpha1"),
    ] {
        assert!(stderr.contains(&format!("no matches for kind \"{kind}\" in version \"{version}\"")), "{stderr}");
    }
    let out = kube.kubectl(&["apply", "--server-side", "--validate=false", "-f", &unknown]);
    assert!(!out.status.success(), "unknown kinds were applied server-side");

    // The resource path itself: 404, naming what Fleet serves there.
    let status = write(
        "status.json",
        r#"{"apiVersion": "placement.kubernetes-fleet.io/v1", "kind": "MetricCollector", "metadata": {"name": "web-status"}}"#,
    );
    let out =
        kube.kubectl(&["create", "--raw", "/apis/placement.kubernetes-fleet.io/v1/metriccollectors", "-f", &status]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "an unserved resource path was written");
    assert!(stderr.contains("NotFound"), "{stderr}");
    assert!(
        stderr.contains("placement.kubernetes-fleet.io/v1 is one of Fleet's own API groups and Fleet serves only these resources in it: "),
        "{stderr}"
    );
    assert!(stderr.contains("clusterresourceplacements"), "{stderr}");

    // A body of a KubeFleet group sent to a served path: admission refuses
    // it on create, update and patch, naming kind, group and what is served.
    kube.kubectl_ok(&["apply", "-f", &write("crp.yaml", CRP)]);
    let foreign = |name: &str| {
        serde_json::json!({
            "apiVersion": "placement.kubefleet.dev/v1beta1",
            "kind": "ClusterResourcePlacement",
            "metadata": {"name": name},
            "spec": {
                "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "web-demo"}],
                "policy": {"placementType": "PickAll"},
            },
        })
        .to_string()
    };
    let other = write("other.json", &foreign("other"));
    let same = write("same.json", &foreign("web"));
    let refused = "no matches for kind \"ClusterResourcePlacement\" in version \"placement.kubefleet.dev/v1beta1\": \
                   placement.kubefleet.dev is one of Fleet's own API groups and Fleet implements no kinds in it; \
                   ClusterResourcePlacement is served as apiVersion placement.kubernetes-fleet.io/v1beta1";
    let crps = "/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourceplacements";
    for (verb, out) in [
        ("create", kube.kubectl(&["create", "--raw", crps, "-f", &other])),
        ("update", kube.kubectl(&["replace", "--raw", &format!("{crps}/web"), "-f", &same])),
        (
            "patch",
            kube.kubectl(&[
                "patch",
                "crp",
                "web",
                "--type",
                "merge",
                "-p",
                r#"{"apiVersion":"placement.kubefleet.dev/v1beta1"}"#,
            ]),
        ),
    ] {
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{verb} was accepted");
        assert!(stderr.contains(refused), "{verb}: {stderr}");
    }
    assert_eq!(stored(&kube.hub, "placement.kubernetes-fleet.io/v1", "MetricCollector").await, 0);
    let names = kube.kubectl_ok(&["get", "crp", "-o", "name"]);
    assert_eq!(names.trim(), "clusterresourceplacement.placement.kubernetes-fleet.io/web");
}
