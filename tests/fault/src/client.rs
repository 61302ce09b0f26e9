//! A client process of a fault run: it performs operations on a small set
//! of ConfigMaps through whichever hub node it picks, and records each
//! invocation and answer in a shared [`Recorder`]. An answer that does not
//! come within the timeout, or an error that does not prove the operation
//! was refused, is recorded as [`Outcome::Unknown`].

use std::sync::Arc;
use std::time::Duration;

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, DeleteRequest, GetRequest, KindRef, ReadOptions};
use serde_json::{json, Value};
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::error::Error;
use crate::history::{digest, Command, Failure, Observed, Outcome, Response};
use crate::recorder::Recorder;

/// One client process: its id, a connection to every node, and what it has
/// seen (so that default reads ask for at least that much, as fleetctl does).
pub struct Client {
    process: u64,
    namespace: String,
    nodes: Vec<FleetClient<Channel>>,
    recorder: Arc<Recorder>,
    timeout: Duration,
    /// Newest resourceVersion this client has seen or written.
    seen: u64,
    /// Last resourceVersion seen per key, for compare-and-set.
    versions: std::collections::HashMap<String, u64>,
    written: u64,
    rng: u64,
}

/// The ConfigMap document for `name` holding `value`, with an optional
/// resourceVersion precondition.
fn document(namespace: &str, name: &str, value: &str, expected: Option<u64>) -> Vec<u8> {
    let mut metadata = json!({"name": name, "namespace": namespace});
    if let Some(rv) = expected {
        metadata["resourceVersion"] = Value::String(rv.to_string());
    }
    let doc = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"value": value}});
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// The resourceVersion and value digest of a returned object.
fn observed(object: &[u8]) -> Option<(u64, u64)> {
    let value: Value = serde_json::from_slice(object).ok()?;
    let rv = value["metadata"]["resourceVersion"].as_str()?.parse().ok()?;
    let data = value["data"]["value"].as_str()?;
    Some((rv, digest(data.as_bytes())))
}

/// The current version a conflict names ("... is at resourceVersion N, ...").
fn conflict_current(status: &Status) -> Option<u64> {
    let (_, rest) = status.message().split_once("is at resourceVersion ")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// What an error answer proves. Only refusals made by the state machine
/// are definite; anything else may have happened after a proposal.
fn failure(status: &Status) -> Outcome {
    match status.code() {
        Code::NotFound => Outcome::Fail(Failure::NotFound),
        Code::AlreadyExists => Outcome::Fail(Failure::AlreadyExists),
        Code::Aborted => Outcome::Fail(Failure::Conflict { current: conflict_current(status) }),
        Code::InvalidArgument | Code::PermissionDenied | Code::Unauthenticated => Outcome::Fail(Failure::Rejected),
        _ => Outcome::Unknown,
    }
}

fn configmap_kind() -> Option<KindRef> {
    Some(KindRef { kind: "ConfigMap".into(), api_version: "v1".into() })
}

impl Client {
    /// A client with a connection to every node (at least one), answering
    /// within `timeout`.
    pub fn new(
        process: u64,
        namespace: &str,
        nodes: Vec<FleetClient<Channel>>,
        recorder: Arc<Recorder>,
        timeout: Duration,
    ) -> Result<Client, Error> {
        if nodes.is_empty() {
            return Err(Error::Client(format!("client {process}: no node to talk to")));
        }
        let rng = process.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        Ok(Client {
            process,
            namespace: namespace.into(),
            nodes,
            recorder,
            timeout,
            seen: 0,
            versions: Default::default(),
            written: 0,
            rng,
        })
    }

    /// A pseudo-random number below `n` (xorshift; choices, not security).
    fn below(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n.max(1)
    }

    fn node(&mut self) -> FleetClient<Channel> {
        // In bounds: `new` refuses an empty list and `below(n)` is under n.
        let i = self.below(self.nodes.len() as u64) as usize;
        self.nodes[i].clone()
    }

    fn saw(&mut self, key: &str, rv: u64) {
        self.seen = self.seen.max(rv);
        self.versions.insert(key.to_string(), rv);
    }

    /// Runs `call` with the timeout, recording `command` on `key` and the
    /// outcome `judge` draws from the answer, with the store revision the
    /// answer reveals (which later reads then ask for at least).
    async fn record<T, F>(
        &mut self,
        key: &str,
        command: Command,
        call: F,
        judge: impl FnOnce(T) -> (Outcome, u64),
    ) -> Outcome
    where
        F: std::future::Future<Output = Result<tonic::Response<T>, Status>>,
    {
        let id = self.recorder.invoke(self.process, key, command);
        let outcome = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(reply)) => {
                let (outcome, revision) = judge(reply.into_inner());
                self.seen = self.seen.max(revision);
                outcome
            }
            Ok(Err(status)) => failure(&status),
            Err(_) => Outcome::Unknown,
        };
        self.recorder.complete(id, outcome);
        outcome
    }

    /// Writes a fresh value to `key`, with `expected` as a precondition.
    pub async fn write(&mut self, key: &str, expected: Option<u64>) -> Outcome {
        self.written += 1;
        let value = format!("p{}-{}", self.process, self.written);
        let stored = digest(value.as_bytes());
        let command = match expected {
            None => Command::Put { value: stored },
            Some(_) => Command::Update { value: stored, expected },
        };
        let request =
            ApplyRequest { documents: vec![document(&self.namespace, key, &value, expected)], sources: vec![] };
        let mut node = self.node();
        let outcome = self
            .record(key, command, node.apply(request), |reply| {
                match reply.results.first().and_then(|r| observed(&r.object)) {
                    Some((rv, _)) => (Outcome::Ok(Response::Written { rv }), reply.resource_version),
                    None => (Outcome::Unknown, reply.resource_version),
                }
            })
            .await;
        if let Outcome::Ok(Response::Written { rv }) = outcome {
            self.saw(key, rv);
        }
        outcome
    }

    /// Deletes `key`, with `expected` as a precondition.
    pub async fn delete(&mut self, key: &str, expected: Option<u64>) -> Outcome {
        let request = DeleteRequest {
            kind: configmap_kind(),
            namespace: self.namespace.clone(),
            name: key.into(),
            resource_version: expected.unwrap_or(0),
        };
        let mut node = self.node();
        let outcome = self
            .record(key, Command::Delete { expected }, node.delete(request), |reply| {
                (Outcome::Ok(Response::Deleted), reply.resource_version)
            })
            .await;
        if outcome == Outcome::Ok(Response::Deleted) {
            self.versions.remove(key);
        }
        outcome
    }

    /// Reads `key`: linearizably through the leader (`consistent`), or from
    /// the node asked, at least as new as what this client has seen.
    pub async fn read(&mut self, key: &str, consistent: bool) -> Outcome {
        let request = GetRequest {
            kind: configmap_kind(),
            namespace: self.namespace.clone(),
            name: key.into(),
            read: Some(ReadOptions { min_resource_version: self.seen, consistent }),
        };
        let mut node = self.node();
        let outcome = self
            .record(key, Command::Read { consistent }, node.get(request), |reply| {
                let outcome = match observed(&reply.object) {
                    Some((rv, digest)) => Outcome::Ok(Response::Read {
                        observed: Observed::Present { rv, digest },
                        served_at: Some(reply.resource_version),
                    }),
                    None => Outcome::Unknown,
                };
                (outcome, reply.resource_version)
            })
            .await;
        match outcome {
            Outcome::Ok(Response::Read { observed: Observed::Present { rv, .. }, .. }) => self.saw(key, rv),
            Outcome::Fail(Failure::NotFound) => {
                self.versions.remove(key);
            }
            _ => {}
        }
        outcome
    }

    /// One operation picked at random on one of `keys`: reads (half of them
    /// consistent), puts, compare-and-sets from the version last seen, and
    /// deletes with or without a precondition.
    /// With no key to choose from, nothing is done and the outcome says so.
    pub async fn random_op(&mut self, keys: &[&str]) -> Outcome {
        let Some(&key) = keys.get(self.below(keys.len() as u64) as usize) else {
            return Outcome::Fail(Failure::Rejected);
        };
        let known = self.versions.get(key).copied();
        match self.below(10) {
            0..=1 => self.read(key, true).await,
            2..=3 => self.read(key, false).await,
            4..=5 => self.write(key, None).await,
            6..=8 => self.write(key, Some(known.unwrap_or(1))).await,
            _ => {
                let conditional = self.below(2) == 0;
                self.delete(key, known.filter(|_| conditional)).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_the_way_fleet_writes_them() {
        let object = br#"{"metadata":{"name":"a","resourceVersion":"17"},"data":{"value":"p1-3"}}"#;
        assert_eq!(observed(object), Some((17, digest(b"p1-3"))));
        let conflict = Status::aborted(
            "conflict: v1/ConfigMap ns/a is at resourceVersion 42, not 7: the object has been modified",
        );
        assert_eq!(failure(&conflict), Outcome::Fail(Failure::Conflict { current: Some(42) }));
        assert_eq!(failure(&Status::unavailable("no leader")), Outcome::Unknown);
        assert_eq!(failure(&Status::deadline_exceeded("late")), Outcome::Unknown);
        assert_eq!(failure(&Status::not_found("gone")), Outcome::Fail(Failure::NotFound));
        let doc: Value = serde_json::from_slice(&document("ns", "a", "v", Some(9))).unwrap_or_default();
        assert_eq!(doc["metadata"]["resourceVersion"], "9");
    }

    #[test]
    fn a_client_needs_a_node() {
        let client = Client::new(3, "ns", Vec::new(), Arc::new(Recorder::new()), Duration::from_secs(1));
        assert!(matches!(client, Err(Error::Client(m)) if m.contains("client 3")));
    }
}
