//! One write of each target: `Fleet.Apply` of a ConfigMap, or etcd `KV.Put`.

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::ApplyRequest;
use serde::Serialize;
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::cli::Target;
use crate::error::Error;
use crate::etcdpb::kv_client::KvClient;
use crate::etcdpb::PutRequest;
use crate::payload::{value, Slot};

/// The namespace every benchmark ConfigMap lives in.
pub const NAMESPACE: &str = "bench";

#[derive(Serialize)]
struct ConfigMap<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    metadata: Metadata<'a>,
    data: Data<'a>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    name: &'a str,
    namespace: &'a str,
}

#[derive(Serialize)]
struct Data<'a> {
    v: &'a str,
}

/// The JSON ConfigMap written for `slot`: `data.v` holds `value_size` bytes.
pub fn configmap_document(slot: Slot, value_size: usize) -> Result<Vec<u8>, Error> {
    let name = slot.object_name();
    let v = value(value_size, slot.seq);
    let doc = ConfigMap {
        api_version: "v1",
        kind: "ConfigMap",
        metadata: Metadata { name: &name, namespace: NAMESPACE },
        data: Data { v: &v },
    };
    Ok(serde_json::to_vec(&doc)?)
}

/// The etcd Put written for `slot`: `value_size` bytes under `bench/<client>/<key>`.
pub fn put_request(slot: Slot, value_size: usize) -> PutRequest {
    PutRequest { key: slot.etcd_key(), value: value(value_size, slot.seq).into_bytes(), ..Default::default() }
}

/// A client of the system under test on one channel.
#[derive(Debug, Clone)]
pub enum Writer {
    /// The Fleet API.
    Fleet(FleetClient<Channel>),
    /// etcd's KV service.
    Etcd(KvClient<Channel>),
}

impl Writer {
    /// A writer for `target` over `channel`.
    pub fn new(target: Target, channel: Channel) -> Writer {
        match target {
            Target::Fleet => Writer::Fleet(FleetClient::new(channel)),
            Target::Etcd => Writer::Etcd(KvClient::new(channel)),
        }
    }

    /// Sends one write and waits for the system to acknowledge it.
    pub async fn write(&mut self, slot: Slot, value_size: usize) -> Result<(), Status> {
        match self {
            Writer::Fleet(client) => {
                let doc = configmap_document(slot, value_size).map_err(|e| Status::internal(e.to_string()))?;
                client.apply(ApplyRequest { documents: vec![doc], sources: vec![] }).await?;
            }
            Writer::Etcd(client) => {
                client.put(put_request(slot, value_size)).await?;
            }
        }
        Ok(())
    }
}

/// Whether a failed write is worth sending again: the system was not
/// reachable or had no leader for a moment.
pub fn is_retryable(status: &Status) -> bool {
    status.code() == Code::Unavailable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configmap_documents_carry_name_namespace_and_value() {
        let doc = configmap_document(Slot::new(2, 1003, 1000), 1024).unwrap();
        let parsed: serde_json::Value = serde_json::from_slice(&doc).unwrap();
        assert_eq!(parsed["kind"], "ConfigMap");
        assert_eq!(parsed["metadata"]["name"], "bench-2-3");
        assert_eq!(parsed["metadata"]["namespace"], "bench");
        assert_eq!(parsed["data"]["v"].as_str().map(str::len), Some(1024));
    }

    #[test]
    fn put_requests_have_the_value_size() {
        let put = put_request(Slot::new(0, 1, 10), 1024);
        assert_eq!(put.key, b"bench/0/1".to_vec());
        assert_eq!(put.value.len(), 1024);
        assert!(!put.prev_kv);
    }
}
