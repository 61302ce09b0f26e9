//! The run's connection to the hub and the calls it makes: apply and time a
//! placement, remove it, read the hub's index and the latest snapshot.

use std::time::{Duration, Instant};

use fleet_api::snapshot::{IS_LATEST_LABEL, PARENT_PLACEMENT_LABEL, RESOURCE_INDEX_LABEL};
use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, DeleteRequest, ListRequest, ReadOptions};
use serde_json::Value;
use tokio::sync::mpsc;
use tonic::transport::Channel;

use super::trace::{sample, Seen};
use super::{placement_document, Sample, PLACEMENTS, POLL, SNAPSHOTS, WORKS};
use crate::error::Error;
use crate::watching::{delete, hub, kind, ms};

/// The connection, the merged watch events and the run's settings.
pub(super) struct Run {
    /// The client of the node the run talks to.
    pub(super) client: FleetClient<Channel>,
    /// The placement and Work watches' events, merged.
    pub(super) rx: mpsc::UnboundedReceiver<Result<Seen, Error>>,
    /// How many clusters a rollout must reach.
    pub(super) clusters: usize,
    /// How long one rollout (or cleanup) may take.
    pub(super) deadline: Duration,
    /// The namespace the placements select.
    pub(super) namespace: String,
    /// Names this run's placements and ConfigMap values.
    pub(super) run_id: String,
}

impl Run {
    /// Applies `document`; returns the round trip in ms, when the reply
    /// came, the hub's resource version after it and the stored object.
    pub(super) async fn apply(&mut self, document: &Value) -> Result<(f64, Instant, u64, Option<Object>), Error> {
        let bytes = serde_json::to_vec(document)?;
        let sent = Instant::now();
        let reply = self.client.apply(ApplyRequest { documents: vec![bytes], sources: vec![] }).await.map_err(hub)?;
        let replied = Instant::now();
        let reply = reply.into_inner();
        let stored = reply
            .results
            .first()
            .map(|r| Object::from_json(&r.object))
            .transpose()
            .map_err(|source| Error::Decode { what: "the applied object".into(), source })?;
        Ok((ms(replied.duration_since(sent)), replied, reply.resource_version, stored))
    }

    /// The applied index of the node the run talks to.
    pub(super) async fn hub_index(&mut self) -> Result<u64, Error> {
        let request = ListRequest {
            kind: kind("namespaces"),
            namespace: String::new(),
            all_namespaces: false,
            label_selector: "fleet-bench/none=none".into(),
            read: None,
        };
        Ok(self.client.list(request).await.map_err(hub)?.into_inner().resource_version)
    }

    /// Applies placement `name` and times it until done.
    pub(super) async fn place(&mut self, name: &str) -> Result<(Sample, i64), Error> {
        let document = placement_document(name, &self.namespace, &self.run_id);
        let (apply_ms, replied, since, stored) = self.apply(&document).await?;
        let generation = stored
            .map(|p| p.metadata.generation)
            .ok_or_else(|| Error::Hub(format!("the Apply of placement {name} returned no object")))?;
        let trace = self.follow(name, generation, since, &|_| true).await?;
        Ok((sample(name, apply_ms, replied, since, trace), generation))
    }

    /// Deletes placement `name`; returns when none of its Works is left.
    pub(super) async fn remove(&mut self, name: &str) -> Result<f64, Error> {
        let started = Instant::now();
        let request =
            DeleteRequest { kind: kind(PLACEMENTS), namespace: String::new(), name: name.into(), resource_version: 0 };
        let since = match self.client.delete(request).await {
            Ok(reply) => reply.into_inner().resource_version,
            Err(status) if status.code() == tonic::Code::NotFound => 0,
            Err(status) => return Err(hub(status)),
        };
        let deadline = started + self.deadline;
        loop {
            let request = ListRequest {
                kind: kind(WORKS),
                namespace: String::new(),
                all_namespaces: true,
                label_selector: format!("{PARENT_PLACEMENT_LABEL}={name}"),
                read: Some(ReadOptions { min_resource_version: since, consistent: false }),
            };
            if self.client.list(request).await.map_err(hub)?.into_inner().items.is_empty() {
                return Ok(ms(started.elapsed()));
            }
            if Instant::now() >= deadline {
                return Err(Error::Deadline {
                    what: format!("the Works of deleted placement {name} gone"),
                    after: self.deadline,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The index of placement `name`'s latest resource snapshot.
    pub(super) async fn latest_snapshot(&mut self, name: &str) -> Result<Option<String>, Error> {
        let request = ListRequest {
            kind: kind(SNAPSHOTS),
            namespace: String::new(),
            all_namespaces: false,
            label_selector: format!("{PARENT_PLACEMENT_LABEL}={name},{IS_LATEST_LABEL}=true"),
            read: Some(ReadOptions { min_resource_version: 0, consistent: true }),
        };
        let items = self.client.list(request).await.map_err(hub)?.into_inner().items;
        let mut indexes = Vec::new();
        for item in items {
            let snapshot = Object::from_json(&item)
                .map_err(|source| Error::Decode { what: format!("a resource snapshot of {name}"), source })?;
            indexes.extend(snapshot.metadata.labels.get(RESOURCE_INDEX_LABEL).cloned());
        }
        Ok(indexes.into_iter().max_by_key(|i| i.parse::<u64>().unwrap_or(0)))
    }

    /// Deletes `plural/name`; an object already gone counts as deleted.
    pub(super) async fn delete(&mut self, plural: &str, namespace: &str, name: &str) -> Result<(), Error> {
        delete(&mut self.client, plural, namespace, name).await
    }
}
