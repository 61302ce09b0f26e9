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

use crate::service::now_rfc3339;

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

/// Records `notes` about `involved`, each as a create or a count increment.
pub async fn record(consensus: &Arc<Consensus>, involved: &Object, notes: Vec<EventNote>) {
    for note in notes {
        if let Err(e) = record_one(consensus, involved, &note).await {
            tracing::debug!(object = %involved.metadata.name, reason = %note.reason, "event not recorded: {e}");
        }
    }
}

async fn record_one(consensus: &Arc<Consensus>, involved: &Object, note: &EventNote) -> Result<(), String> {
    let namespace = event_namespace(involved);
    let name = event_name(involved, note);
    let key = ObjectKey::new("", "Event", &namespace, &name);
    let now = now_rfc3339();
    let store = consensus.store().clone();
    let existing = store.get(&key).map_err(|e| e.to_string())?.0;
    let op = match existing {
        Some(mut event) => {
            let count = event.rest.get("count").and_then(Value::as_i64).unwrap_or(1);
            event.rest.insert("count".into(), json!(count + 1));
            event.rest.insert("lastTimestamp".into(), json!(now));
            Op::Update { object: event }
        }
        None => Op::Create { object: new_event(involved, note, &namespace, &name, &now)? },
    };
    let mut ops = vec![op];
    ops.extend(over_cap(&store, involved, &namespace)?);
    consensus.write(Command { now, ops }).await.map_err(|e| e.to_string())?;
    Ok(())
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

/// Deletes that keep the involved object's events within the cap once one
/// more is added.
fn over_cap(store: &fleet_statemachine::Store, involved: &Object, namespace: &str) -> Result<Vec<Op>, String> {
    let prefix = format!("{}.", involved.metadata.name);
    let (events, _) = store.list_named_prefix("", "Event", namespace, &prefix).map_err(|e| e.to_string())?;
    let mut mine: Vec<Object> = events.into_iter().filter(|e| is_about(e, involved)).collect();
    if mine.len() < MAX_EVENTS_PER_OBJECT {
        return Ok(Vec::new());
    }
    mine.sort_by_key(last_timestamp);
    let excess = mine.len() + 1 - MAX_EVENTS_PER_OBJECT;
    Ok(mine
        .iter()
        .take(excess)
        .map(|e| Op::Delete { key: ObjectKey::of(e), resource_version: e.metadata.resource_version_number() })
        .collect())
}

/// Whether `event` is about `involved` (same kind and name).
pub fn is_about(event: &Object, involved: &Object) -> bool {
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
        let cutoff = humantime::format_rfc3339_seconds(SystemTime::now() - EVENT_TTL).to_string();
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
