//! Bad input is refused with its location, and nothing of it is applied.

use fleet_tests::objects::get_configmap;
use fleet_tests::{Hub, HubOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_yaml_is_refused_with_its_location_and_nothing_is_applied() {
    let hub = Hub::start(HubOptions::default()).await;
    let file = hub.dir.path().join("broken.yaml");
    let text = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: first, namespace: y}
data: {a: b}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: second
   namespace: y
data: {a: b}
";
    std::fs::write(&file, text).expect("write file");
    let out = hub.fleetctl(&["apply", "-f", file.to_str().unwrap_or("")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "malformed YAML was accepted");
    assert!(stderr.contains("broken.yaml"), "names the file: {stderr}");
    assert!(stderr.contains("document 2"), "names the document: {stderr}");
    assert!(stderr.contains("line 10"), "names the line: {stderr}");
    let mut admin = hub.client(1).await;
    let err = get_configmap(&mut admin, "y", "first", 0).await.expect_err("first document must not be applied");
    assert_eq!(err.code(), tonic::Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_document_refuses_the_whole_apply_listing_every_problem() {
    let hub = Hub::start(HubOptions::default()).await;
    let text = "\
apiVersion: v1
kind: ConfigMap
metadata: {name: good, namespace: y}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name, namespace: y, labels: {\"bad key!\": x}}
";
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(text));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "invalid object was accepted");
    assert!(stderr.contains("metadata.name"), "{stderr}");
    assert!(stderr.contains("Bad_Name"), "{stderr}");
    assert!(stderr.contains("metadata.labels"), "{stderr}");
    let mut admin = hub.client(1).await;
    let err = get_configmap(&mut admin, "y", "good", 0).await.expect_err("valid sibling must not be applied");
    assert_eq!(err.code(), tonic::Code::NotFound);
    // Fixed, the same file applies atomically.
    let fixed = text.replace("Bad_Name", "bad-name").replace("\"bad key!\"", "ok");
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&fixed));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("configmap/bad-name created"));
    get_configmap(&mut admin, "y", "good", 0).await.expect("applied together");
}
