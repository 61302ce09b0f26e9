//! The real `kubectl` and the official Python client against a real trio
//! through the Kubernetes-compatible API (`fleet-node --kube-listen`), with
//! kubeconfigs from `fleetctl kubeconfig`.

use std::path::PathBuf;
use std::time::Duration;

use fleet_tests::eventually;
use fleet_tests::kube::{KubeHub, Stream};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/examples")
}

fn path_arg(path: &std::path::Path) -> String {
    path.to_string_lossy().to_string()
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

const CRP: &str = "apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: bad
spec:
  resourceSelectors:
    - {group: \"\", version: v1, kind: Namespace, name: web-demo}
  policy:
    placementType: PickN
    numberOfClusters: -1
";

fn configmap(value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: web-demo\ndata:\n  mode: {value:?}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_manages_the_hub_like_a_cluster() {
    let kube = KubeHub::start().await;
    let dir = kube.hub.dir.path().to_path_buf();
    let examples = examples();

    // Discovery: every Fleet, OCM and Kubernetes kind, with short names.
    let resources = kube.kubectl_ok(&["api-resources"]);
    for expected in ["clusterresourceplacements", "crp", "placements", "manifestworks", "deployments", "events"] {
        assert!(resources.contains(expected), "api-resources lacks {expected}:\n{resources}");
    }

    // Client-side apply of every example, then again (nothing changes).
    let applied = kube.kubectl_ok(&["apply", "-R", "-f", &path_arg(&examples)]);
    assert!(applied.contains("clusterresourceplacement.placement.kubernetes-fleet.io/web-demo created"), "{applied}");
    assert!(applied.contains("deployment.apps/web created"), "{applied}");
    // Server-side apply of the top-level examples takes over (client-side fields migrate to it).
    let ssa = kube.kubectl_ok(&["apply", "--server-side", "-f", &path_arg(&examples)]);
    assert!(
        ssa.contains("clusterresourceplacement.placement.kubernetes-fleet.io/web-demo serverside-applied"),
        "{ssa}"
    );
    let managers = kube.kubectl_ok(&[
        "get",
        "crp",
        "web-demo",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]);
    assert!(managers.split(' ').any(|m| m == "kubectl"), "managers: {managers}");

    // The same columns as fleetctl get -o wide.
    let wide = kube.kubectl_ok(&["get", "crp", "-o", "wide"]);
    let ours = kube.hub.fleetctl(&["get", "crp", "-o", "wide"]);
    let header =
        |t: &str| t.lines().next().unwrap_or_default().split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(header(&wide), header(&String::from_utf8_lossy(&ours.stdout)), "kubectl:\n{wide}");
    assert!(wide.contains("web-demo"), "{wide}");

    // get -o yaml round-trips through apply.
    let yaml = kube.kubectl_ok(&["get", "crp", "web-demo", "-o", "yaml"]);
    let file = dir.join("web-demo.yaml");
    std::fs::write(&file, &yaml).expect("write");
    kube.kubectl_ok(&["apply", "-f", &path_arg(&file)]);
    let spec = |k: &KubeHub| k.kubectl_ok(&["get", "crp", "web-demo", "-o", "jsonpath={.spec}"]);
    let before = spec(&kube);

    // get -w sees a change.
    let mut watch =
        kube.kubectl_stream(&["get", "crp", "web-demo", "-w", "-o", "jsonpath={.metadata.labels.round}{\"\\n\"}"]);
    watch.wait_for("the initial state", Duration::from_secs(20), |l| l.is_empty());
    kube.kubectl_ok(&["label", "crp", "web-demo", "round=two"]);
    watch.wait_for("the label change", Duration::from_secs(20), |l| l == "two");
    drop(watch);
    assert_eq!(spec(&kube), before, "labels do not change the spec");

    // describe shows the object and the controller's events.
    let described = kube.kubectl_ok(&["describe", "crp", "web-demo"]);
    assert!(described.contains("Name:         web-demo") && described.contains("Events:"), "{described}");
    let events = eventually("an event about web-demo", Duration::from_secs(20), || async {
        let d = kube.kubectl_ok(&["describe", "crp", "web-demo"]);
        if d.contains("fleet-controller") {
            Ok(d)
        } else {
            Err(d)
        }
    })
    .await;
    assert!(events.contains("Normal"), "{events}");

    // diff: a changed file differs (exit 1), the live one does not (exit 0).
    let live = kube.kubectl_ok(&["get", "crp", "web-demo", "-o", "yaml"]);
    std::fs::write(&file, &live).expect("write");
    let same = kube.kubectl(&["diff", "-f", &path_arg(&file)]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    std::fs::write(&file, live.replace("round: two", "round: three")).expect("write");
    let diff = kube.kubectl(&["diff", "-f", &path_arg(&file)]);
    assert_eq!(diff.status.code(), Some(1), "{}", text(&diff));
    assert!(text(&diff).contains("+    round: three"), "{}", text(&diff));

    // explain reads the OpenAPI v3 schemas.
    let explained = kube.kubectl_ok(&["explain", "crp"]);
    assert!(explained.contains("ClusterResourcePlacement") && explained.contains("spec"), "{explained}");

    // An invalid object: Kubernetes' Invalid error with the field fleetctl would name.
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, CRP).expect("write");
    let invalid = kube.kubectl(&["apply", "-f", &path_arg(&bad)]);
    assert!(!invalid.status.success());
    assert!(
        text(&invalid).contains("is invalid: spec.policy.numberOfClusters: Invalid value: -1"),
        "{}",
        text(&invalid)
    );

    // Conflicts: a stale resourceVersion, and two server-side appliers of one field.
    std::fs::write(&file, &yaml).expect("write");
    let stale = kube.kubectl(&["replace", "-f", &path_arg(&file)]);
    assert!(text(&stale).contains("the object has been modified"), "{}", text(&stale));
    let cm = dir.join("cm.yaml");
    std::fs::write(&cm, configmap("alice")).expect("write");
    kube.kubectl_ok(&["apply", "--server-side", "--field-manager", "alice", "-f", &path_arg(&cm)]);
    std::fs::write(&cm, configmap("bob")).expect("write");
    let conflict = kube.kubectl(&["apply", "--server-side", "--field-manager", "bob", "-f", &path_arg(&cm)]);
    assert!(!conflict.status.success());
    assert!(text(&conflict).contains("conflict with \"alice\": .data.mode"), "{}", text(&conflict));
    kube.kubectl_ok(&["apply", "--server-side", "--field-manager", "bob", "--force-conflicts", "-f", &path_arg(&cm)]);
    let mode = kube.kubectl_ok(&["get", "cm", "shared", "-n", "web-demo", "-o", "jsonpath={.data.mode}"]);
    assert_eq!(mode, "bob");

    // The viewer reads but may not write.
    let viewer = kube.viewer.clone();
    let read = kube.kubectl_with(&viewer, &["get", "crp", "web-demo", "-o", "name"]);
    assert!(read.status.success(), "{}", text(&read));
    let refused = kube.kubectl_with(&viewer, &["delete", "crp", "web-demo"]);
    assert!(!refused.status.success());
    assert!(text(&refused).contains("Forbidden"), "{}", text(&refused));

    // delete.
    let deleted = kube.kubectl_ok(&["delete", "crp", "web-demo"]);
    assert!(deleted.contains("deleted"), "{deleted}");
    let gone = kube.kubectl(&["get", "crp", "web-demo"]);
    assert!(text(&gone).contains("NotFound"), "{}", text(&gone));
}

const PYTHON_CLIENT: &str = r#"
import sys
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
print("namespaces " + ",".join(sorted(n.metadata.name for n in core.list_namespace().items)), flush=True)
api = client.CustomObjectsApi()
group, version, plural = "placement.kubernetes-fleet.io", "v1beta1", "clusterresourceplacements"
listed = api.list_cluster_custom_object(group, version, plural)
print("placements " + ",".join(sorted(i["metadata"]["name"] for i in listed["items"])), flush=True)
w = watch.Watch()
for event in w.stream(api.list_cluster_custom_object, group, version, plural,
                      resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=60):
    labels = event["object"]["metadata"].get("labels") or {}
    print("event %s %s %s" % (event["type"], event["object"]["metadata"]["name"], labels.get("seen", "")), flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_keeps_working_through_a_follower_and_python_lists_and_watches() {
    let kube = KubeHub::start().await;
    kube.kubectl_ok(&["apply", "-f", &path_arg(&examples())]);

    // The official Python client lists typed and custom objects, then watches from the list's version.
    let config = path_arg(&kube.admin);
    let mut python = Stream::python(PYTHON_CLIENT, &[&config]);
    python.wait_for("the namespace list", Duration::from_secs(30), |l| {
        l.starts_with("namespaces ") && l.contains("web-demo")
    });
    python.wait_for("the placement list", Duration::from_secs(30), |l| l == "placements web-demo");
    kube.kubectl_ok(&["label", "crp", "web-demo", "seen=python"]);
    python.wait_for("the watched change", Duration::from_secs(30), |l| l == "event MODIFIED web-demo python");
    drop(python);

    // Kill the leader; kubectl through a follower's context keeps reading and writing.
    let leader = kube.hub.wait_leader().await;
    let follower = (1..=3).find(|id| *id != leader).unwrap_or(1);
    let mut hub = kube;
    hub.hub.kill(leader);
    let context = format!("fleet-node-{follower}");
    let file = hub.hub.dir.path().join("after.yaml");
    std::fs::write(&file, configmap("after-failover")).expect("write");
    let file = path_arg(&file);
    eventually("kubectl applies through a follower after the leader died", Duration::from_secs(30), || async {
        let out = hub.kubectl(&["--context", &context, "apply", "-f", &file]);
        if out.status.success() {
            Ok(())
        } else {
            Err(text(&out))
        }
    })
    .await;
    let mode = hub.kubectl_ok(&[
        "--context",
        &context,
        "get",
        "cm",
        "shared",
        "-n",
        "web-demo",
        "-o",
        "jsonpath={.data.mode}",
    ]);
    assert_eq!(mode, "after-failover");
}

const UNKNOWN_FIELD_CRP: &str = "apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata:
  name: extra
spec:
  resourceSelectors:
    - {group: \"\", version: v1, kind: Namespace, name: pages}
  policy:
    placementType: PickAll
    colour: blue
";

/// A ConfigMap in namespace `pages` with `labels` (a YAML flow map).
fn configmap_in_pages(name: &str, labels: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: pages\n  labels: {labels}\ndata:\n  a: b\n")
}

/// `text` with every run of whitespace one space.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `WatchEvent` lines of a raw watch, parsed.
fn event(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or(serde_json::Value::Null)
}

fn event_rv(line: &str) -> u64 {
    event(line)["object"]["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explains_validates_pages_reviews_and_resumes_watches() {
    let kube = KubeHub::start().await;
    let dir = kube.hub.dir.path().to_path_buf();

    // explain: typed fields with their types and the doc comments of the Rust types.
    let explain = |what: &[&str]| squash(&kube.kubectl_ok(&[&["explain"], what].concat()));
    let policy = explain(&["clusterresourceplacement.spec.policy"]);
    for expected in ["placementType <string>", "numberOfClusters <integer>", "PickN", "affinity <Affinity>"] {
        assert!(policy.contains(expected), "explain lacks {expected:?}:\n{policy}");
    }
    let rolling = explain(&["crp.spec.strategy.rollingUpdate.maxUnavailable"]);
    assert!(rolling.contains("<IntOrString>"), "{rolling}");
    let ocm = explain(&["placements.spec", "--api-version=cluster.open-cluster-management.io/v1beta1"]);
    assert!(ocm.contains("numberOfClusters") && ocm.contains("How many clusters to choose"), "{ocm}");
    let cro = explain(&["clusterresourceoverride.spec.policy"]);
    assert!(cro.contains("overrideRules <[]OverrideRule>"), "{cro}");
    let delete_options = explain(&["membercluster.spec.deleteOptions"]);
    assert!(
        delete_options.contains("validationMode <string>") && delete_options.contains("Strict"),
        "{delete_options}"
    );
    let namespaces = explain(&["membercluster.status.namespaces"]);
    assert!(
        namespaces.contains("namespaces <map[string]string>") && namespaces.contains("ResourcePlacement"),
        "{namespaces}"
    );
    let rpe = explain(&["resourceplacementeviction.spec"]);
    assert!(rpe.contains("placementName <string>") && rpe.contains("clusterName <string>"), "{rpe}");
    let report_back = explain(&["crp.spec.strategy.reportBackStrategy"]);
    assert!(report_back.contains("destination <string>") && report_back.contains("WorkAPI"), "{report_back}");
    let rpdb = explain(&["rpdb.spec"]);
    assert!(rpdb.contains("minAvailable <IntOrString>") && rpdb.contains("maxUnavailable <IntOrString>"), "{rpdb}");

    // fieldValidation: Strict refuses an unknown field, Warn drops it with a warning, Ignore drops it.
    // kubectl create NAMESPACE|CONFIGMAP sends protobuf, which the hub reads.
    let imperative = kube.kubectl(&["create", "configmap", "imperative", "--from-literal", "k=v"]);
    assert!(imperative.status.success(), "{}", text(&imperative));
    let created = kube.kubectl_ok(&["get", "configmap", "imperative", "-o", "jsonpath={.data.k}"]);
    assert_eq!(created, "v");
    let apply = |name: &str, yaml: &str| {
        let file = dir.join(name);
        std::fs::write(&file, yaml).expect("write");
        kube.kubectl_ok(&["apply", "-f", &path_arg(&file)])
    };
    apply("pages.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: pages\n");
    let file = dir.join("extra.yaml");
    std::fs::write(&file, UNKNOWN_FIELD_CRP).expect("write");
    let strict = kube.kubectl(&["apply", "--validate=strict", "-f", &path_arg(&file)]);
    assert!(!strict.status.success(), "{}", text(&strict));
    assert!(
        text(&strict).contains("unknown field \\\"spec.policy.colour\\\"")
            || text(&strict).contains("unknown field \"spec.policy.colour\""),
        "{}",
        text(&strict)
    );
    // As Kubernetes refuses at strict decoding: 400 BadRequest.
    assert!(
        text(&strict).contains("(BadRequest)") && text(&strict).contains("strict decoding error"),
        "{}",
        text(&strict)
    );
    let warned = kube.kubectl(&["apply", "--validate=warn", "-f", &path_arg(&file)]);
    assert!(warned.status.success(), "{}", text(&warned));
    assert!(
        String::from_utf8_lossy(&warned.stderr).contains("Warning: unknown field \"spec.policy.colour\""),
        "{}",
        text(&warned)
    );
    let stored = kube.kubectl_ok(&["get", "crp", "extra", "-o", "jsonpath={.spec.policy}"]);
    assert!(!stored.contains("colour") && stored.contains("PickAll"), "{stored}");
    std::fs::write(&file, UNKNOWN_FIELD_CRP.replace("colour: blue", "colour: red")).expect("write");
    let ignored = kube.kubectl(&["apply", "--validate=false", "-f", &path_arg(&file)]);
    assert!(ignored.status.success(), "{}", text(&ignored));
    assert!(!text(&ignored).contains("unknown field"), "{}", text(&ignored));

    // auth can-i answers from the role.
    assert_eq!(kube.kubectl_ok(&["auth", "can-i", "create", "crp"]).trim(), "yes");
    let viewer = kube.viewer.clone();
    let no = kube.kubectl_with(&viewer, &["auth", "can-i", "delete", "crp"]);
    // kubectl prints the reason after "no - ".
    let said = String::from_utf8_lossy(&no.stdout).to_string();
    assert!(said.starts_with("no - user \"viewer\"") && said.contains("cannot delete"), "{}", text(&no));
    assert_eq!(no.status.code(), Some(1));
    let yes = kube.kubectl_with(&viewer, &["auth", "can-i", "list", "configmaps", "-n", "pages"]);
    assert_eq!(String::from_utf8_lossy(&yes.stdout).trim(), "yes", "{}", text(&yes));

    // Paging: kubectl's chunked list sees every object; a raw page says what follows.
    for i in 1..=5 {
        let batch = if i <= 2 { "old" } else { "new" };
        apply(&format!("cm-{i}.yaml"), &configmap_in_pages(&format!("cm-{i}"), &format!("{{batch: {batch}}}")));
    }
    let chunked = kube.kubectl_ok(&["get", "configmaps", "-n", "pages", "--chunk-size=2", "-o", "name"]);
    assert_eq!(chunked.lines().count(), 5, "{chunked}");
    let page = |query: &str| kube.kubectl(&["get", "--raw", &format!("/api/v1/namespaces/pages/configmaps?{query}")]);
    let first: serde_json::Value = serde_json::from_slice(&page("limit=2").stdout).expect("a list");
    assert_eq!(first["items"].as_array().map(Vec::len), Some(2), "{first}");
    assert_eq!(first["metadata"]["remainingItemCount"], 3, "{first}");
    let token = first["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let second: serde_json::Value =
        serde_json::from_slice(&page(&format!("limit=2&continue={token}")).stdout).expect("a list");
    assert_eq!(second["items"][0]["metadata"]["name"], "cm-3", "{second}");
    // A change in the rest of the list expires the token (410): the pages could no longer agree.
    kube.kubectl_ok(&["label", "configmap", "cm-5", "-n", "pages", "touched=yes"]);
    let expired = page(&format!("limit=2&continue={token}"));
    assert!(!expired.status.success());
    assert!(text(&expired).contains("Expired") || text(&expired).contains("410"), "{}", text(&expired));

    // deletecollection with a label selector.
    let deleted = kube.kubectl(&["delete", "--raw", "/api/v1/namespaces/pages/configmaps?labelSelector=batch%3Dold"]);
    assert!(deleted.status.success(), "{}", text(&deleted));
    let left = kube.kubectl_ok(&["get", "configmaps", "-n", "pages", "-o", "name"]);
    assert!(!left.contains("cm-1") && !left.contains("cm-2") && left.contains("cm-3"), "{left}");

    // One Raft entry, several objects: deleting an owner deletes its dependent at the same
    // resourceVersion. A client that resumes from the version of the first event it saw
    // still gets the other.
    apply("owner.yaml", &configmap_in_pages("owner", "{}"));
    let uid = kube.kubectl_ok(&["get", "configmap", "owner", "-n", "pages", "-o", "jsonpath={.metadata.uid}"]);
    let dependent = dir.join("dependent.yaml");
    std::fs::write(
        &dependent,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dependent\n  namespace: pages\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}\n"
        ),
    )
    .expect("write");
    kube.kubectl_ok(&["apply", "-f", &path_arg(&dependent)]);
    let before: serde_json::Value =
        serde_json::from_slice(&page("labelSelector=nothing%3Dhere").stdout).expect("a list");
    let listed_at = before["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
    kube.kubectl_ok(&["delete", "configmap", "owner", "-n", "pages"]);
    let watch_from = |rv: &str| {
        kube.kubectl_stream(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/pages/configmaps?watch=true&resourceVersion={rv}"),
        ])
    };
    let deleted_event = |name: &'static str| {
        move |l: &str| {
            let e = event(l);
            e["type"] == "DELETED" && e["object"]["metadata"]["name"] == name
        }
    };
    let mut all = watch_from(&listed_at);
    let owner_rv = event_rv(&all.wait_for("the owner's deletion", Duration::from_secs(20), deleted_event("owner")));
    drop(all);
    let mut all = watch_from(&listed_at);
    let dependent_rv =
        event_rv(&all.wait_for("the dependent's deletion", Duration::from_secs(20), deleted_event("dependent")));
    drop(all);
    assert!(owner_rv > 0 && owner_rv == dependent_rv, "one entry deletes both: {owner_rv} vs {dependent_rv}");
    let mut resumed = watch_from(&owner_rv.to_string());
    resumed.wait_for("the dependent after resuming at the entry", Duration::from_secs(20), deleted_event("dependent"));
    drop(resumed);
    let mut resumed = watch_from(&owner_rv.to_string());
    resumed.wait_for("the owner after resuming at the entry", Duration::from_secs(20), deleted_event("owner"));
    drop(resumed);

    // Bookmarks: a quiet watch that asked for them learns how far the hub has moved.
    let quiet = format!(
        "/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourceplacements?watch=true&allowWatchBookmarks=true&resourceVersion={owner_rv}&labelSelector=nothing%3Dhere"
    );
    let mut bookmarks = kube.kubectl_stream(&["get", "--raw", &quiet]);
    apply("after-bookmark.yaml", &configmap_in_pages("after-bookmark", "{}"));
    let line = bookmarks.wait_for("a bookmark past the resumed version", Duration::from_secs(30), |l| {
        let e = event(l);
        e["type"] == "BOOKMARK" && event_rv(l) > owner_rv
    });
    assert_eq!(event(&line)["object"]["kind"], "ClusterResourcePlacement", "{line}");
}
