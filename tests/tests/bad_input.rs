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

/// A write that must go through at once: the hub is not stalled.
async fn hub_still_writes(hub: &Hub, name: &str) {
    let mut admin = hub.client(2).await;
    // A give-up deadline, not a measurement: a stalled hub never answers.
    tokio::time::timeout(fleet_tests::fleet::WAIT, async {
        fleet_tests::objects::apply(&mut admin, vec![fleet_tests::objects::configmap("y", name, "v")])
            .await
            .expect("a small write after the refusal");
        get_configmap(&mut admin, "y", name, 0).await.expect("readable");
    })
    .await
    .expect("the hub stalled: a small write and read did not finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_writes_and_statuses_are_refused_without_stalling_the_hub() {
    use fleet_proto::fleet::UpdateStatusRequest;
    use serde_json::json;
    let hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;

    // Twenty objects under the object limit, over the command limit together.
    let big = "x".repeat(1024 * 1024);
    let documents: Vec<Vec<u8>> =
        (0..20).map(|i| fleet_tests::objects::configmap("y", &format!("big-{i}"), &big)).collect();
    let err = fleet_tests::objects::apply(&mut admin, documents).await.expect_err("a 20 MiB apply");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(err.message().contains("ConfigMap y/big-0"), "names the objects: {err}");
    assert!(err.message().contains(&fleet_raft::MAX_COMMAND_BYTES.to_string()), "names the limit: {err}");
    assert!(get_configmap(&mut admin, "y", "big-0", 0).await.is_err(), "nothing of it applied");
    hub_still_writes(&hub, "after-apply").await;

    let status = |status: serde_json::Value| UpdateStatusRequest {
        object: serde_json::to_vec(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "after-apply", "namespace": "y"},
            "status": status,
        }))
        .unwrap_or_default(),
    };
    // 100 MiB: over the message limit, refused before anything is decoded.
    let huge = status(json!({"blob": "y".repeat(100 * 1024 * 1024)}));
    let err = admin.update_status(huge).await.expect_err("a 100 MiB status");
    assert_ne!(err.code(), tonic::Code::Ok);
    hub_still_writes(&hub, "after-huge-status").await;
    // A status full of floats over the object limit: refused with the limit.
    let floats: Vec<f64> = (0..200_000).map(|i| f64::from(i) * 1.000_000_1e300).collect();
    let err = admin.update_status(status(json!({"floats": floats}))).await.expect_err("a float status");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(err.message().contains("over the limit of 1572864 bytes"), "{err}");
    hub_still_writes(&hub, "after-float-status").await;
    // Under the limit, floats are stored as they came, bit for bit: also
    // values whose shortest decimal form serde_json's default parser reads
    // one unit in the last place off (the workspace enables its
    // float_roundtrip feature).
    let mut floats: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.25 - 100.0).collect();
    floats.extend([0.091_443_385_120_928_87, 0.914_615_523_521_910_7, 117.633_311_394_000_17, 0.921_568_632_125_854_5]);
    admin.update_status(status(json!({"floats": floats.clone()}))).await.expect("a small float status");
    let stored = fleet_tests::objects::get(&mut admin, "configmaps", "y", "after-apply").await.expect("get");
    let stored = stored.status().and_then(|s| s.get("floats")).cloned();
    assert!(stored == Some(json!(floats)), "the float status read back differs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_work_status_is_validated_and_size_limited_like_any_write() {
    use fleet_proto::fleet::{GetRequest, UpdateStatusRequest};
    use serde_json::json;
    let mut hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;
    hub.start_agent("east", &[]);
    let get_work = || GetRequest {
        kind: fleet_tests::objects::kind("work"),
        namespace: "fleet-member-east".into(),
        name: "w".into(),
        read: None,
    };
    fleet_tests::objects::apply(&mut admin, vec![fleet_tests::objects::work("east", "w", vec![])])
        .await
        .expect("a Work for east");
    let member = fleet_tests::eventually("east's certificate to work", std::time::Duration::from_secs(30), || async {
        let tls = hub.member_tls("east").ok_or("no certificate yet")?;
        let mut c = fleet_tests::hub::connect(&hub.endpoint(2), tls);
        c.get(get_work()).await.map(|_| c.clone()).map_err(|e| e.to_string())
    })
    .await;
    // The agent reports once and is then stopped, so that only this test writes the Work's status
    // (no report of the agent's can still be in flight and land after the test's writes).
    fleet_tests::eventually("east's own report on the Work", std::time::Duration::from_secs(30), || async {
        let mut read = get_work();
        read.read = Some(fleet_proto::fleet::ReadOptions { consistent: true, ..Default::default() });
        let stored = admin.clone().get(read).await.map_err(|e| e.to_string())?.into_inner();
        let stored: serde_json::Value = serde_json::from_slice(&stored.object).map_err(|e| e.to_string())?;
        if stored["status"]["conditions"].as_array().is_some_and(|c| !c.is_empty()) {
            Ok(())
        } else {
            Err("no status yet".to_string())
        }
    })
    .await;
    hub.kill_agent("east");
    let with_status = |status: serde_json::Value| UpdateStatusRequest {
        object: serde_json::to_vec(&json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "fleet-member-east"},
            "status": status,
        }))
        .unwrap_or_default(),
    };

    // 100 MiB from a member: refused before anything is decoded.
    let huge =
        with_status(json!({"conditions": [{"type": "Applied", "status": "True", "message": "x".repeat(100 << 20)}]}));
    let err = member.clone().update_status(huge).await.expect_err("a 100 MiB member status");
    assert_ne!(err.code(), tonic::Code::Ok);
    hub_still_writes(&hub, "after-member-huge").await;
    // Full of floats where conditions belong: refused, naming the field.
    let floats: Vec<f64> = (0..50_000).map(|i| f64::from(i) * 1.5e-300).collect();
    let err = member.clone().update_status(with_status(json!({"conditions": floats}))).await.expect_err("floats");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(err.message().contains("status.conditions"), "{err}");
    hub_still_writes(&hub, "after-member-floats").await;
    // Malformed conditions: refused with every problem, nothing written.
    let bad = json!({"conditions": [{"type": "Applied", "status": "Yes"}],
        "manifestConditions": [{"identifier": {"ordinal": -1}, "conditions": []}]});
    let err = member.clone().update_status(with_status(bad)).await.expect_err("bad conditions");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(err.message().contains("status.conditions[0].status"), "{err}");
    assert!(err.message().contains("status.manifestConditions[0].identifier.ordinal"), "{err}");
    // A well-formed status is accepted.
    let good = json!({"conditions": [{"type": "Applied", "status": "True", "reason": "AllApplied",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    member.clone().update_status(with_status(good)).await.expect("a valid member status");
    // Read through the leader: the write went to node 2, and node 1 may not have applied it yet.
    let mut read = get_work();
    read.read = Some(fleet_proto::fleet::ReadOptions { consistent: true, ..Default::default() });
    let stored = admin.get(read).await.expect("get").into_inner();
    let stored: serde_json::Value = serde_json::from_slice(&stored.object).unwrap_or_default();
    assert_eq!(stored["status"]["conditions"][0]["reason"], "AllApplied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pick_fixed_placement_takes_no_names_but_refuses_bad_ones() {
    let hub = Hub::start(HubOptions::default()).await;
    let crp = |names: &str| {
        format!(
            "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {{name: fixed}}\n\
             spec:\n  resourceSelectors: [{{group: \"\", version: v1, kind: Namespace, name: app}}]\n\
             \x20 policy:\n    placementType: PickFixed\n{names}"
        )
    };
    // No names (empty or absent) is a PickFixed placement scaled to zero.
    for names in ["    clusterNames: [east]\n", "    clusterNames: []\n", ""] {
        let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&crp(names)));
        assert!(out.status.success(), "{names:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = hub.fleetctl_with_stdin(&["apply", "-f", "-"], Some(&crp("    clusterNames: [east, east, Bad_]\n")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "bad names were accepted");
    assert!(stderr.contains("ClusterResourcePlacement") && stderr.contains("fixed"), "{stderr}");
    assert!(stderr.contains("spec.policy.clusterNames[1]: Duplicate value: \"east\""), "{stderr}");
    assert!(stderr.contains("spec.policy.clusterNames[2]: Invalid value: \"Bad_\""), "{stderr}");
}
