//! Hub calls the latency commands share: turning a gRPC status into an
//! [`Error`], naming a kind, milliseconds from a [`Duration`], deleting an
//! object that may already be gone, and forwarding a watch's events to a
//! channel, each stamped with the instant it arrived.

use std::time::{Duration, Instant};

use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{DeleteRequest, KindRef, WatchEvent};
use futures::StreamExt;
use tokio::sync::mpsc;
use tonic::transport::Channel;

use crate::error::Error;

/// A failed hub call as an [`Error::Hub`].
pub fn hub(s: tonic::Status) -> Error {
    Error::Hub(format!("{:?}: {}", s.code(), s.message()))
}

/// The kind a request names, by its plural (`works`, `namespaces`, …).
pub fn kind(plural: &str) -> Option<KindRef> {
    Some(KindRef { kind: plural.into(), api_version: String::new() })
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Deletes `plural/name` (in `namespace`, empty for cluster-scoped kinds);
/// an object that is already gone counts as deleted.
pub async fn delete(client: &mut FleetClient<Channel>, plural: &str, namespace: &str, name: &str) -> Result<(), Error> {
    let request =
        DeleteRequest { kind: kind(plural), namespace: namespace.into(), name: name.into(), resource_version: 0 };
    match client.delete(request).await {
        Ok(_) => Ok(()),
        Err(status) if status.code() == tonic::Code::NotFound => Ok(()),
        Err(status) => Err(Error::Hub(format!("delete {plural}/{name}: {:?}: {}", status.code(), status.message()))),
    }
}

/// Reads `stream` and sends what `pick` makes of each ADDED/MODIFIED event's
/// object (given its `resourceVersion` and the instant the event arrived);
/// events `pick` returns `None` for, DELETED and BOOKMARK events, and objects
/// that do not decode are skipped. A stream error is sent and ends the
/// forwarding; so does the end of the stream, reported as "the `what` watch
/// ended". Stops quietly once the receiver is gone.
pub async fn forward<T>(
    mut stream: tonic::Streaming<WatchEvent>,
    what: String,
    mut pick: impl FnMut(Object, u64, Instant) -> Option<T>,
    tx: mpsc::UnboundedSender<Result<T, Error>>,
) {
    while let Some(event) = stream.next().await {
        let at = Instant::now();
        let event = match event {
            Ok(event) => event,
            Err(status) => {
                let _ = tx.send(Err(hub(status)));
                return;
            }
        };
        if event.r#type == "DELETED" || event.r#type == "BOOKMARK" {
            continue;
        }
        let Ok(object) = Object::from_json(&event.object) else { continue };
        let Some(seen) = pick(object, event.resource_version, at) else { continue };
        if tx.send(Ok(seen)).is_err() {
            return;
        }
    }
    let _ = tx.send(Err(Error::Hub(format!("the {what} watch ended"))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_name_kinds_and_convert() {
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
        assert_eq!(kind("works").map(|k| k.kind), Some("works".to_string()));
        let error = hub(tonic::Status::not_found("gone"));
        assert!(matches!(&error, Error::Hub(m) if m == "NotFound: gone"), "{error:?}");
    }
}
