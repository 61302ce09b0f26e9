//! Each node records where its Kubernetes-compatible API listens, as a
//! replicated object (`fleet.internal` `NodeEndpoint` `node-<id>`), so that
//! `fleetctl kubeconfig` can list every node's address from any node.

use std::sync::Arc;
use std::time::Duration;

use fleet_api::time::now_rfc3339;
use fleet_api::{Object, ObjectKey, ObjectMeta};
use fleet_raft::Consensus;
use fleet_statemachine::{Command, Op};
use serde_json::json;

use crate::members::internal::INTERNAL_GROUP;

/// Kind of the record.
pub const ENDPOINT_KIND: &str = "NodeEndpoint";

/// The record's key for node `id`.
pub fn endpoint_key(id: u64) -> ObjectKey {
    ObjectKey::new(INTERNAL_GROUP, ENDPOINT_KIND, "", &format!("node-{id}"))
}

fn endpoint_object(id: u64, kube_address: &str) -> Object {
    let mut rest = serde_json::Map::new();
    rest.insert("spec".into(), json!({"nodeId": id, "kubeAddress": kube_address}));
    Object {
        api_version: format!("{INTERNAL_GROUP}/v1"),
        kind: ENDPOINT_KIND.into(),
        metadata: ObjectMeta { name: format!("node-{id}"), ..ObjectMeta::default() },
        rest,
    }
}

/// Writes this node's record once the hub can commit (retrying while
/// there is no leader), unless it already says the same; stops early
/// when the node stops.
pub async fn run(
    consensus: Arc<Consensus>,
    id: u64,
    kube_address: String,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let desired = endpoint_object(id, &kube_address);
    let mut delay = Duration::from_millis(200);
    loop {
        let store = consensus.store().clone();
        let stored = crate::blocking::blocking(move || {
            store.get(&endpoint_key(id)).map(|(o, _)| o).map_err(crate::error::storage_error)
        })
        .await
        .ok()
        .flatten();
        if stored.is_some_and(|o| o.spec() == desired.spec()) {
            return;
        }
        let op = Op::Apply { object: desired.clone(), uid: uuid::Uuid::new_v4().to_string() };
        match consensus.write(Command { now: now_rfc3339(), ops: vec![op] }).await {
            Ok(_) => return,
            Err(e) => tracing::debug!("recording this node's kube address: {e}; retrying"),
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}
