//! Kubernetes-style `Event` objects recorded by the controllers: one object
//! per (involved object, reason, message), whose `count` grows on repeats;
//! at most [`MAX_EVENTS_PER_OBJECT`] per involved object; deleted by the
//! leader's collector once older than the TTL. Recording is best-effort: a
//! failed event write never fails the reconcile that caused it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fleet_api::{Object, ObjectKey};
use fleet_raft::Consensus;
use fleet_statemachine::{Command, ListQuery, Op};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use fleet_api::time::now_rfc3339;

/// Most events kept per involved object (the oldest go first).
pub const MAX_EVENTS_PER_OBJECT: usize = 30;
/// How long an event lives after it last happened.
pub const EVENT_TTL: Duration = Duration::from_secs(3600);
/// How often the leader deletes expired events.
const COLLECT_EVERY: Duration = Duration::from_secs(60);
/// Namespace of events about cluster-scoped objects.
const CLUSTER_SCOPED_EVENT_NAMESPACE: &str = "default";
/// `source.component` of the events controllers record.
const COMPONENT: &str = "fleet-controller";

/// What a controller wants recorded about `involved`.
#[derive(Debug, Clone)]
pub struct EventNote {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

impl EventNote {
    /// A `Normal` event.
    pub fn normal(reason: &str, message: impl Into<String>) -> EventNote {
        EventNote { warning: false, reason: reason.into(), message: message.into() }
    }

    /// A `Warning` event.
    pub fn warning(reason: &str, message: impl Into<String>) -> EventNote {
        EventNote { warning: true, reason: reason.into(), message: message.into() }
    }
}

/// The namespace an event about `involved` lives in.
fn event_namespace(involved: &Object) -> String {
    involved.metadata.namespace.clone().unwrap_or_else(|| CLUSTER_SCOPED_EVENT_NAMESPACE.to_string())
}

/// The event's name: the involved object's name and a digest of what
/// happened, so a repeat finds (and counts into) the same object.
fn event_name(involved: &Object, note: &EventNote) -> String {
    let mut digest = Sha256::new();
    for part in [involved.kind.as_str(), &involved.metadata.name, &note.reason, &note.message] {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    let hash = hex::encode(&digest.finalize()[..8]);
    let mut base = involved.metadata.name.clone();
    base.truncate(253 - hash.len() - 1);
    format!("{base}.{hash}")
}

/// Records Events off the reconcile's critical path: controllers hand notes
/// to [`EventRecorder::record`] and go on; one task writes them, everything
/// queued at that moment in one command (so a 50-cluster rollout costs a few
/// Raft entries for its Events, not one per cluster), strictly one command
/// at a time (so count increments never race each other).
#[derive(Clone)]
pub struct EventRecorder {
    tx: tokio::sync::mpsc::UnboundedSender<(Object, Vec<EventNote>)>,
}

impl EventRecorder {
    /// Starts the writer task (it ends when every recorder is dropped).
    pub fn start(consensus: Arc<Consensus>) -> EventRecorder {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(write_loop(consensus, rx));
        EventRecorder { tx }
    }

    /// Queues `notes` about `involved`.
    pub fn record(&self, involved: &Object, notes: Vec<EventNote>) {
        if !notes.is_empty() {
            // The writer only stops with the leadership session: nothing to do then.
            let _ = self.tx.send((involved.clone(), notes));
        }
    }
}

/// Most Events written in one command.
const MAX_EVENTS_PER_WRITE: usize = 500;

async fn write_loop(consensus: Arc<Consensus>, mut rx: tokio::sync::mpsc::UnboundedReceiver<(Object, Vec<EventNote>)>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let mut notes = batch[0].1.len();
        while notes < MAX_EVENTS_PER_WRITE {
            match rx.try_recv() {
                Ok(more) => {
                    notes += more.1.len();
                    batch.push(more);
                }
                Err(_) => break,
            }
        }
        let now = now_rfc3339();
        let ops = match batch_ops(consensus.store(), &batch, &now) {
            Ok(ops) => ops,
            Err(e) => {
                tracing::debug!("events not recorded: {e}");
                continue;
            }
        };
        if let Err(e) = consensus.write(Command { now, ops }).await {
            tracing::debug!("{notes} events not recorded: {e}");
        }
    }
}

/// The ops recording a batch: per Event object (involved object, reason,
/// message) a create or one count increment by the number of repeats, and
/// per involved object the deletes that keep it within the cap.
fn batch_ops(
    store: &fleet_statemachine::Store,
    batch: &[(Object, Vec<EventNote>)],
    now: &str,
) -> Result<Vec<Op>, String> {
    // (namespace, name) -> (involved, note, repeats), in first-seen order.
    let mut wanted: Vec<((String, String), &Object, &EventNote, i64)> = Vec::new();
    for (involved, notes) in batch {
        for note in notes {
            let id = (event_namespace(involved), event_name(involved, note));
            match wanted.iter_mut().find(|w| w.0 == id) {
                Some(w) => w.3 += 1,
                None => wanted.push((id, involved, note, 1)),
            }
        }
    }
    let mut ops = Vec::new();
    let mut touched: Vec<String> = Vec::new();
    let mut new_events = Vec::new();
    for ((namespace, name), involved, note, repeats) in &wanted {
        let key = ObjectKey::new("", "Event", namespace, name);
        match store.get(&key).map_err(|e| e.to_string())?.0 {
            Some(mut event) => {
                let count = event.rest.get("count").and_then(Value::as_i64).unwrap_or(1);
                event.rest.insert("count".into(), json!(count + repeats));
                event.rest.insert("lastTimestamp".into(), json!(now));
                ops.push(Op::Update { object: event });
                touched.push(name.clone());
            }
            None => new_events.push((namespace, name, *involved, *note, *repeats)),
        }
    }
    // Of the new events about one object, only the last (newest) within
    // the cap are created: the others would be the oldest, the first to
    // go (a placement scheduled onto thousands of clusters notes one per
    // cluster).
    let mut creates: Vec<(String, &Object, usize)> = Vec::new();
    let mut kept = Vec::new();
    for (namespace, name, involved, note, repeats) in new_events.into_iter().rev() {
        let slot = creates.iter().position(|c| c.0 == *namespace && c.1.metadata.name == involved.metadata.name);
        let slot = slot.unwrap_or_else(|| {
            creates.push((namespace.clone(), involved, 0));
            creates.len() - 1
        });
        if creates[slot].2 < MAX_EVENTS_PER_OBJECT {
            creates[slot].2 += 1;
            kept.push((namespace, name, involved, note, repeats));
        }
    }
    for (namespace, name, involved, note, repeats) in kept.into_iter().rev() {
        let mut event = new_event(involved, note, namespace, name, now)?;
        event.rest.insert("count".into(), json!(repeats));
        ops.push(Op::Create { object: event });
    }
    for (namespace, involved, added) in creates {
        ops.extend(over_cap(store, involved, &namespace, added, &touched)?);
    }
    Ok(ops)
}

fn new_event(involved: &Object, note: &EventNote, namespace: &str, name: &str, now: &str) -> Result<Object, String> {
    let value = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace, "uid": uuid::Uuid::new_v4().to_string()},
        "involvedObject": {
            "apiVersion": involved.api_version,
            "kind": involved.kind,
            "name": involved.metadata.name,
            "namespace": involved.metadata.namespace,
            "uid": involved.metadata.uid,
        },
        "reason": note.reason,
        "message": note.message,
        "type": if note.warning { "Warning" } else { "Normal" },
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": COMPONENT},
    });
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Deletes that keep the involved object's events within the cap once
/// `added` more are created (the oldest first, never one being updated).
fn over_cap(
    store: &fleet_statemachine::Store,
    involved: &Object,
    namespace: &str,
    added: usize,
    touched: &[String],
) -> Result<Vec<Op>, String> {
    let prefix = format!("{}.", involved.metadata.name);
    let (events, _) = store.list_named_prefix("", "Event", namespace, &prefix).map_err(|e| e.to_string())?;
    let mut mine: Vec<Object> = events.into_iter().filter(|e| is_about(e, involved)).collect();
    if mine.len() + added <= MAX_EVENTS_PER_OBJECT {
        return Ok(Vec::new());
    }
    mine.sort_by_key(last_timestamp);
    let excess = mine.len() + added - MAX_EVENTS_PER_OBJECT;
    Ok(mine
        .iter()
        .filter(|e| !touched.contains(&e.metadata.name))
        .take(excess)
        .map(|e| Op::Delete { key: ObjectKey::of(e), resource_version: e.metadata.resource_version_number() })
        .collect())
}

/// Whether `event` is about `involved` (same kind and name).
fn is_about(event: &Object, involved: &Object) -> bool {
    let about = event.rest.get("involvedObject");
    let field = |f: &str| about.and_then(|a| a.get(f)).and_then(Value::as_str).unwrap_or_default().to_string();
    field("kind") == involved.kind && field("name") == involved.metadata.name
}

fn last_timestamp(event: &Object) -> String {
    event.rest.get("lastTimestamp").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Deletes expired events while this node leads (runs inside a leadership
/// session; ends when the session is cancelled).
pub async fn collect_expired(consensus: Arc<Consensus>) {
    let mut tick = tokio::time::interval(COLLECT_EVERY);
    loop {
        tick.tick().await;
        let store = consensus.store().clone();
        let query = ListQuery { group: String::new(), kind: "Event".into(), namespace: None, selector: None };
        let Ok((events, _)) = store.list(&query) else { continue };
        let cutoff = fleet_api::time::rfc3339_of(SystemTime::now() - EVENT_TTL);
        let expired: Vec<Op> = events
            .iter()
            .filter(|e| last_timestamp(e) < cutoff)
            .map(|e| Op::Delete { key: ObjectKey::of(e), resource_version: e.metadata.resource_version_number() })
            .collect();
        for chunk in expired.chunks(200) {
            if let Err(e) = consensus.write(Command { now: now_rfc3339(), ops: chunk.to_vec() }).await {
                tracing::debug!("expired events not deleted: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests;
