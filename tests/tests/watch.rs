//! Watches: resume from a resourceVersion without missing or repeating an
//! event; a version older than the node's history gets "expired, relist".

use std::time::Duration;

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{WatchEvent, WatchRequest};
use fleet_tests::objects::{apply, configmap, kind};
use fleet_tests::{eventually, Hub, HubOptions};
use futures::StreamExt;
use tonic::transport::Channel;

fn request(rv: u64) -> WatchRequest {
    WatchRequest {
        kind: kind("configmaps"),
        namespace: "w".into(),
        all_namespaces: false,
        label_selector: String::new(),
        resource_version: rv,
        min_resource_version: 0,
    }
}

async fn next(stream: &mut tonic::Streaming<WatchEvent>) -> WatchEvent {
    match tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
        Ok(Some(Ok(e))) => e,
        other => panic!("expected a watch event, got {other:?}"),
    }
}

fn name_of(event: &WatchEvent) -> String {
    fleet_api::Object::from_json(&event.object).map(|o| o.metadata.name).unwrap_or_default()
}

async fn watch(client: &mut FleetClient<Channel>, rv: u64) -> tonic::Streaming<WatchEvent> {
    client.watch(request(rv)).await.expect("watch").into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumes_without_missing_or_repeating_events() {
    let hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;
    let rv_a = apply(&mut admin, vec![configmap("w", "a", "1")]).await.expect("a");
    let rv_b = apply(&mut admin, vec![configmap("w", "b", "1")]).await.expect("b");
    // A different namespace never shows up.
    apply(&mut admin, vec![configmap("other", "z", "1")]).await.expect("z");

    // Watch on another node from just after a: b first, then live changes.
    let mut client = hub.client(2).await;
    let mut stream = watch(&mut client, rv_a).await;
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), name_of(&e).as_str(), e.resource_version), ("ADDED", "b", rv_b));
    let rv_a2 = apply(&mut admin, vec![configmap("w", "a", "2")]).await.expect("a2");
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), name_of(&e).as_str(), e.resource_version), ("MODIFIED", "a", rv_a2));
    drop(stream);

    // Events happen while nobody watches; resuming from the last one seen
    // delivers exactly those, in order.
    let rv_c = apply(&mut admin, vec![configmap("w", "c", "1")]).await.expect("c");
    let del = admin
        .delete(fleet_proto::fleet::DeleteRequest {
            kind: kind("cm"),
            namespace: "w".into(),
            name: "b".into(),
            resource_version: 0,
        })
        .await
        .expect("delete b")
        .into_inner()
        .resource_version;
    let mut stream = watch(&mut client, rv_a2).await;
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), name_of(&e).as_str(), e.resource_version), ("ADDED", "c", rv_c));
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), name_of(&e).as_str(), e.resource_version), ("DELETED", "b", del));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), stream.next()).await.is_err(),
        "no further (repeated) events"
    );

    // From 0: the current objects as ADDED, a bookmark, then live events.
    let mut stream = watch(&mut client, 0).await;
    let mut names = vec![name_of(&next(&mut stream).await), name_of(&next(&mut stream).await)];
    names.sort();
    assert_eq!(names, vec!["a", "c"]);
    let bookmark = next(&mut stream).await;
    assert_eq!(bookmark.r#type, "BOOKMARK");
    assert!(bookmark.resource_version >= del);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_too_old_resource_version_gets_the_relist_error() {
    let mut hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;
    let first = apply(&mut admin, vec![configmap("w", "a", "1")]).await.expect("a");
    let last = apply(&mut admin, vec![configmap("w", "b", "1")]).await.expect("b");
    // A restarted node's history starts at what it had applied when it started.
    hub.stop(3);
    hub.start_node(3, false);
    let mut client = hub.client(3).await;
    let status = eventually("node 3 serving again", Duration::from_secs(20), || {
        let mut client = client.clone();
        async move {
            match client.watch(request(first - 1)).await {
                Ok(s) => match s.into_inner().next().await {
                    Some(Err(status)) => Ok(status),
                    other => Err(format!("no error: {other:?}")),
                },
                Err(status) if status.code() == tonic::Code::FailedPrecondition => Ok(status),
                Err(status) => Err(status.to_string()),
            }
        }
    })
    .await;
    assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status}");
    assert!(status.message().contains("expired, relist"), "{status}");
    // Relisting (watch from 0) works on the same node.
    let mut stream = watch(&mut client, 0).await;
    let mut seen = Vec::new();
    loop {
        let e = next(&mut stream).await;
        if e.r#type == "BOOKMARK" {
            assert!(e.resource_version >= last);
            break;
        }
        seen.push(name_of(&e));
    }
    seen.sort();
    assert_eq!(seen, vec!["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_watch_does_not_hold_up_a_clean_shutdown() {
    let mut hub = Hub::start(HubOptions::default()).await;
    let mut client = hub.client(2).await;
    let mut stream = watch(&mut client, 0).await;
    assert_eq!(next(&mut stream).await.r#type, "BOOKMARK");
    let started = std::time::Instant::now();
    hub.stop(2); // asserts a clean exit
    assert!(started.elapsed() < Duration::from_secs(8), "shutdown waited for the watch: {:?}", started.elapsed());
    match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
        Ok(Some(Err(status))) => assert_eq!(status.code(), tonic::Code::Unavailable, "{status}"),
        Ok(None) => {}
        other => panic!("the watch should end with the node: {other:?}"),
    }
}

/// A ConfigMap in namespace `w` with label `tier`.
fn tiered(name: &str, tier: &str, value: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "w", "labels": {"tier": tier}},
        "data": {"value": value},
    }))
    .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_selector_watch_sees_objects_enter_and_leave_it() {
    let hub = Hub::start(HubOptions::default()).await;
    let mut admin = hub.client(1).await;
    let start = apply(&mut admin, vec![tiered("s", "db", "0")]).await.expect("start");
    let mut client = hub.client(3).await;
    let mut stream = client
        .watch(WatchRequest { label_selector: "tier=web".into(), ..request(start) })
        .await
        .expect("watch")
        .into_inner();

    let rv_in = apply(&mut admin, vec![tiered("s", "web", "1")]).await.expect("relabel in");
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), name_of(&e).as_str(), e.resource_version), ("ADDED", "s", rv_in));
    let rv_changed = apply(&mut admin, vec![tiered("s", "web", "2")]).await.expect("change");
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), e.resource_version), ("MODIFIED", rv_changed));
    let rv_out = apply(&mut admin, vec![tiered("s", "db", "2")]).await.expect("relabel out");
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), e.resource_version), ("DELETED", rv_out));
    let left = fleet_api::Object::from_json(&e.object).expect("object");
    assert_eq!(left.metadata.labels.get("tier").map(String::as_str), Some("web"), "DELETED carries the last match");
    assert_eq!(left.metadata.resource_version, rv_out.to_string());
    // Changes outside the selector are not seen; coming back is ADDED again.
    apply(&mut admin, vec![tiered("s", "db", "3")]).await.expect("change outside");
    let rv_back = apply(&mut admin, vec![tiered("s", "web", "3")]).await.expect("relabel in again");
    let e = next(&mut stream).await;
    assert_eq!((e.r#type.as_str(), e.resource_version), ("ADDED", rv_back));
    assert!(tokio::time::timeout(Duration::from_millis(300), stream.next()).await.is_err(), "nothing else was sent");
}
