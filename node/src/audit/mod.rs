//! The audit log (`fleet-node --audit-log FILE`): every write and every
//! refused request, on both APIs, as one `audit.k8s.io/v1` Event per line.
//!
//! Requests are audited at the API edge, never in the state machine (its
//! apply does no I/O). Each request runs in a scope ([`Auditor::scope`])
//! that the handlers fill as they go: every authorization decision notes
//! what the request is about ([`note_decision`]), admission notes the
//! object a write stores ([`note_object`]). When the request ends, the
//! scope's notes and the response status make the Events, which a writer
//! thread appends to the file ([`file`]).

mod event;
pub mod file;
mod grpc;

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use fleet_rbac::{Attributes, UserInfo};
use serde_json::Value;

pub use event::{redact, Outcome, Request};
pub use grpc::AuditLayer;

/// How much of a request an Event holds, as Kubernetes' audit levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Level {
    /// Nothing is recorded.
    #[value(name = "None")]
    None,
    /// Who, what, when, where and the outcome.
    #[value(name = "Metadata")]
    Metadata,
    /// Metadata and the object written (a Secret's contents never).
    #[value(name = "Request")]
    Request,
}

impl Level {
    /// The name Kubernetes gives the level.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
        }
    }
}

/// The verbs that change something.
pub fn is_write(verb: &str) -> bool {
    matches!(verb, "create" | "update" | "patch" | "delete" | "deletecollection")
}

/// Records requests to the audit log; a disabled one records nothing and
/// costs a branch per request.
pub struct Auditor {
    level: Level,
    node: u64,
    sink: Option<file::Sink>,
}

/// What a request's handlers noted.
#[derive(Debug, Default)]
pub struct Note {
    /// One entry per object or path the request was authorized for.
    pub entries: Vec<Entry>,
    /// Whether written objects are kept (the Request level).
    keep_objects: bool,
}

/// One authorization decision of a request, and the object it wrote.
#[derive(Debug, Clone)]
pub struct Entry {
    pub attributes: Attributes,
    /// Why it was refused, when it was.
    pub denied: Option<String>,
    /// The object admitted for writing (Request level only).
    pub object: Option<Value>,
}

tokio::task_local! {
    static NOTE: RefCell<Note>;
}

/// Notes an authorization decision of the request being audited (a no-op
/// outside one). The same question asked twice is noted once.
pub fn note_decision(attributes: &Attributes, denied: Option<&str>) {
    let _ = NOTE.try_with(|note| {
        let mut note = note.borrow_mut();
        if let Some(entry) = note.entries.iter_mut().find(|e| e.attributes == *attributes) {
            if entry.denied.is_none() {
                entry.denied = denied.map(str::to_string);
            }
            return;
        }
        note.entries.push(Entry { attributes: attributes.clone(), denied: denied.map(str::to_string), object: None });
    });
}

/// Notes the object a write of the request being audited stores: it goes
/// with the last decision about a write (a create is authorized before its
/// name is known, so that entry also takes the object's name).
pub fn note_object(object: &fleet_api::Object) {
    let _ = NOTE.try_with(|note| {
        let mut note = note.borrow_mut();
        let keep = note.keep_objects;
        let Some(entry) = note.entries.iter_mut().rev().find(|e| is_write(&e.attributes.verb)) else { return };
        if let fleet_rbac::Target::Resource { name, .. } = &mut entry.attributes.target {
            if name.is_empty() {
                name.clone_from(&object.metadata.name);
            }
        }
        if keep && entry.object.is_none() {
            entry.object = serde_json::to_value(object).ok();
        }
    });
}

/// Notes that the request's last write was refused after RBAC allowed it
/// (admission's checks of the author, [`crate::reach`]), and why.
pub fn note_refusal(reason: &str) {
    let _ = NOTE.try_with(|note| {
        let mut note = note.borrow_mut();
        if let Some(entry) = note.entries.iter_mut().rev().find(|e| is_write(&e.attributes.verb)) {
            entry.denied = Some(reason.to_string());
        }
    });
}

impl Auditor {
    /// An auditor that records nothing.
    pub fn disabled() -> Arc<Auditor> {
        Arc::new(Auditor { level: Level::None, node: 0, sink: None })
    }

    /// An auditor of node `node` writing to `sink` at `level`.
    pub fn new(level: Level, node: u64, sink: file::Sink) -> Arc<Auditor> {
        let sink = (level != Level::None).then_some(sink);
        Arc::new(Auditor { level, node, sink })
    }

    /// Whether anything is recorded.
    pub fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Waits until every Event recorded so far is written and synced to
    /// disk (the node calls it when it stops).
    pub async fn sync(&self) {
        if let Some(sink) = &self.sink {
            sink.sync().await;
        }
    }

    /// Runs `request` in an audit scope; `finish` then turns the scope's
    /// notes and the request's outcome into Events.
    pub async fn scope<F: Future>(&self, request: F) -> (F::Output, Note) {
        if !self.enabled() {
            return (request.await, Note::default());
        }
        let note = Note { entries: Vec::new(), keep_objects: self.level >= Level::Request };
        NOTE.scope(RefCell::new(note), async move {
            let output = request.await;
            (output, NOTE.with(|n| std::mem::take(&mut *n.borrow_mut())))
        })
        .await
    }

    /// Records the request if it wrote or was refused: one Event per
    /// object or path it was about (all with the same auditID), or one
    /// without objectRef when it noted none.
    pub async fn finish(&self, request: &Request, user: Option<&UserInfo>, note: Note, outcome: &Outcome) {
        let Some(sink) = &self.sink else { return };
        let refused = matches!(outcome.code, 401 | 403 | 429);
        let writes = note.entries.iter().any(|e| is_write(&e.attributes.verb)) || request.write;
        if !(refused || writes) {
            return;
        }
        let received = request.received;
        let completed = SystemTime::now();
        let id = uuid::Uuid::new_v4().to_string();
        // The writes and refusals among what it was about (an apply of
        // several objects may also have read some); a request that noted
        // nothing (refused before it was understood) is one Event.
        let recorded: Vec<&Entry> =
            note.entries.iter().filter(|e| is_write(&e.attributes.verb) || e.denied.is_some()).collect();
        let entries: Vec<Option<&Entry>> = match (recorded.is_empty(), note.entries.first()) {
            (false, _) => recorded.into_iter().map(Some).collect(),
            (true, first) => vec![first],
        };
        for entry in entries {
            let event = event::build(&event::Parts {
                id: &id,
                level: self.level,
                node: self.node,
                request,
                user,
                entry,
                outcome,
                received,
                completed,
            });
            sink.send(event).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verb: &str) -> Request {
        Request {
            uri: format!("/test/{verb}"),
            verb: verb.into(),
            write: false,
            source_ip: None,
            user_agent: None,
            received: SystemTime::now(),
        }
    }

    /// Runs one request that notes `attributes` (refused when `denied`)
    /// and ends with `code`.
    async fn serve(auditor: &Auditor, attributes: Attributes, denied: Option<&str>, code: u16) {
        let verb = attributes.verb.clone();
        let ((), note) = auditor.scope(async { note_decision(&attributes, denied) }).await;
        let user = UserInfo { name: "alice".into(), groups: vec!["team-a".into()] };
        auditor.finish(&request(&verb), Some(&user), note, &Outcome { code, message: None, reason: None }).await;
    }

    #[tokio::test]
    async fn writes_and_refusals_are_recorded_and_allowed_reads_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let sink = file::start(file::FileOptions { path: path.clone(), max_bytes: 0, max_backups: 0 }).unwrap();
        let auditor = Auditor::new(Level::Metadata, 2, sink);
        let cm = |verb: &str, name: &str| Attributes::resource(verb, "", "configmaps", "team-a", name);
        serve(&auditor, cm("get", "app"), None, 200).await;
        serve(&auditor, cm("list", ""), None, 200).await;
        serve(&auditor, cm("create", "app"), None, 201).await;
        serve(&auditor, cm("get", "other"), Some("alice may not"), 403).await;
        auditor.sync().await;
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!((lines[0]["verb"].as_str(), lines[0]["objectRef"]["name"].as_str()), (Some("create"), Some("app")));
        assert_eq!(lines[0]["responseStatus"]["code"], 201);
        assert!(lines[0].get("requestObject").is_none(), "Metadata holds no object");
        assert_eq!(lines[1]["annotations"]["authorization.k8s.io/decision"], "forbid");
        assert_eq!(lines[1]["annotations"]["audit.kubernetes-fleet.io/node"], "2");
        assert_eq!(lines[1]["user"]["groups"][0], "team-a");
    }

    #[tokio::test]
    async fn level_none_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let sink =
            file::start(file::FileOptions { path: dir.path().join("a.log"), max_bytes: 0, max_backups: 0 }).unwrap();
        assert!(!Auditor::new(Level::None, 1, sink).enabled());
        assert!(!Auditor::disabled().enabled());
    }
}
