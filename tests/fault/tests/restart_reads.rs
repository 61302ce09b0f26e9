//! Every node SIGKILLed right after an acknowledged write and started
//! again: the node that led comes back as leader with its vote, before any
//! election, and with the commit index it last saved, which may be behind
//! the write it acknowledged. A consistent read served then must still see
//! that write (the fault suite's `all_killed` soak found one that did not).
//! Several rounds, reading through every node as soon as it answers.

use std::time::{Duration, Instant};

use fleet_proto::fleet::{GetRequest, KindRef, ReadOptions};
use fleet_tests::objects::{apply, configmap};
use fleet_tests::{Hub, HubOptions};

const ROUNDS: usize = 6;
const NAMESPACE: &str = "restart-reads";

/// The `value` of ConfigMap `k` by a consistent read through `node`, or why not.
async fn consistent_value(hub: &Hub, node: u64) -> Result<Option<String>, String> {
    let mut client = hub.client(node).await;
    let request = GetRequest {
        kind: Some(KindRef { kind: "ConfigMap".into(), api_version: "v1".into() }),
        namespace: NAMESPACE.into(),
        name: "k".into(),
        read: Some(ReadOptions { consistent: true, ..Default::default() }),
    };
    match client.get(request).await {
        Ok(reply) => {
            let object: serde_json::Value =
                serde_json::from_slice(&reply.into_inner().object).map_err(|e| e.to_string())?;
            Ok(object["data"]["value"].as_str().map(str::to_string))
        }
        Err(status) if status.code() == tonic::Code::NotFound => Ok(None),
        Err(status) => Err(status.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consistent_read_right_after_every_node_restarts_sees_every_acknowledged_write() {
    let mut hub = Hub::start(HubOptions::default()).await;
    for round in 0..ROUNDS {
        let leader = hub.wait_leader().await;
        let mut client = hub.client(leader).await;
        // A burst, so that the last acknowledged write is likely newer than
        // the commit index the leader saved.
        let mut last = String::new();
        for i in 0..20 {
            let value = format!("round-{round}-write-{i}");
            let deadline = Instant::now() + Duration::from_secs(60);
            while let Err(e) = apply(&mut client, vec![configmap(NAMESPACE, "k", &value)]).await {
                assert!(Instant::now() < deadline, "round {round}: write {i} not acknowledged: {e}");
            }
            last = value;
        }
        for id in 1..=3 {
            hub.kill(id);
        }
        for id in 1..=3 {
            hub.start_node(id, false);
        }
        // The first consistent read any node answers, and every one after,
        // sees the last acknowledged value.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut answered = 0;
        while answered < 3 {
            for id in 1..=3 {
                match consistent_value(&hub, id).await {
                    Ok(value) => {
                        assert_eq!(
                            value.as_deref(),
                            Some(last.as_str()),
                            "round {round}: a consistent read through node {id} after the restart missed an acknowledged write"
                        );
                        answered += 1;
                    }
                    Err(e) => assert!(Instant::now() < deadline, "round {round}: no consistent read answered: {e}"),
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
