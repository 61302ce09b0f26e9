//! What the client's methods take and return: typed forms of the proto messages.

use fleet_api::Object;
use fleet_proto::fleet as pb;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::kind::KindArg;

/// What to list or watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// The kind.
    pub kind: KindArg,
    /// The namespace; empty with `all_namespaces == false` means cluster-scoped
    /// kinds, or every namespace.
    pub namespace: String,
    /// Every namespace.
    pub all_namespaces: bool,
    /// A kubectl `-l` selector (empty: everything).
    pub label_selector: String,
    /// A linearizable read through the leader (lists only).
    pub consistent: bool,
}

impl ListQuery {
    /// Every object of `kind` in `namespace` (empty: see [`ListQuery::namespace`]).
    pub fn new(kind: KindArg, namespace: impl Into<String>) -> ListQuery {
        ListQuery {
            kind,
            namespace: namespace.into(),
            all_namespaces: false,
            label_selector: String::new(),
            consistent: false,
        }
    }
}

/// What `apply` did to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyAction {
    /// It did not exist.
    Created,
    /// It existed and changed.
    Configured,
    /// It existed and is the same.
    Unchanged,
}

impl ApplyAction {
    /// Parses the server's action word; unknown words count as `configured`.
    pub fn parse(word: &str) -> ApplyAction {
        match word {
            "created" => ApplyAction::Created,
            "unchanged" => ApplyAction::Unchanged,
            _ => ApplyAction::Configured,
        }
    }

    /// The word kubectl prints.
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyAction::Created => "created",
            ApplyAction::Configured => "configured",
            ApplyAction::Unchanged => "unchanged",
        }
    }
}

/// The result of one `apply` call.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyOutcome {
    /// Per document, in request order: what happened and the stored object.
    pub results: Vec<(ApplyAction, Object)>,
    /// The log index of the write.
    pub resource_version: u64,
}

/// The result of a `list` call.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectList {
    /// The objects.
    pub items: Vec<Object>,
    /// The applied index the list was read at: watch from here.
    pub resource_version: u64,
}

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventType {
    /// The object appeared.
    Added,
    /// The object changed.
    Modified,
    /// The object was deleted (the object is its last state).
    Deleted,
    /// Progress marker: nothing changed up to `resource_version`.
    Bookmark,
}

impl EventType {
    /// Parses the proto's type string.
    pub fn parse(word: &str) -> Option<EventType> {
        match word {
            "ADDED" => Some(EventType::Added),
            "MODIFIED" => Some(EventType::Modified),
            "DELETED" => Some(EventType::Deleted),
            "BOOKMARK" => Some(EventType::Bookmark),
            _ => None,
        }
    }

    /// The proto's type string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
        }
    }
}

/// One change seen by a watch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WatchEvent {
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// The object after the change (for `DELETED`, its last state). Empty
    /// for bookmarks that carry no object.
    pub object: Option<Object>,
    /// The log index of the change.
    #[serde(skip)]
    pub resource_version: u64,
}

impl WatchEvent {
    /// Converts a proto event.
    pub fn from_proto(event: pb::WatchEvent) -> Result<WatchEvent> {
        let event_type = EventType::parse(&event.r#type)
            .ok_or_else(|| Error::Protocol(format!("a watch event of unknown type {:?}", event.r#type)))?;
        let object = if event.object.is_empty() { None } else { Some(decode_object(&event.object)?) };
        Ok(WatchEvent { event_type, object, resource_version: event.resource_version })
    }
}

/// The hub cluster as `cluster status -o json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterStatus {
    /// The leader's id, if one is known.
    pub leader: Option<u64>,
    /// The current Raft term.
    pub term: u64,
    /// Every member, by id.
    pub members: Vec<ClusterMember>,
    /// The node that answered (not printed).
    #[serde(skip)]
    pub answered_by: u64,
}

/// One member of the hub cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMember {
    /// The node id.
    pub id: u64,
    /// Its peer/API address.
    pub address: String,
    /// `Leader`, `Follower`, `Learner` or `Candidate`.
    pub role: String,
    /// The last log index it applied.
    pub last_applied: u64,
    /// Whether the answering node can reach it.
    pub reachable: bool,
    /// Its state digest, when asked for (`-o json`) and it answered.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub digest: Option<MemberDigest>,
    /// Its fleet-node version, when it answered and reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A member's state digest: `sha256:<hex>` over its objects in key order at
/// one applied index. Members at the same index must have the same digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberDigest {
    /// The digest.
    pub digest: String,
    /// The applied index it covers.
    pub digest_index: u64,
}

impl ClusterStatus {
    /// Converts the proto answer: leader 0 means none; the leader's role is
    /// always `Leader`; members sorted by id.
    pub fn from_proto(response: pb::ClusterStatusResponse) -> ClusterStatus {
        let leader = (response.leader != 0).then_some(response.leader);
        let mut members: Vec<ClusterMember> = response
            .members
            .into_iter()
            .map(|m| ClusterMember {
                role: if Some(m.id) == leader { "Leader".to_string() } else { m.role },
                id: m.id,
                address: m.address,
                last_applied: m.last_applied,
                reachable: m.reachable,
                digest: (!m.digest.is_empty())
                    .then_some(MemberDigest { digest: m.digest, digest_index: m.digest_index }),
                version: (!m.version.is_empty()).then_some(m.version),
            })
            .collect();
        members.sort_by_key(|m| m.id);
        ClusterStatus { leader, term: response.term, members, answered_by: response.node_id }
    }
}

/// Parses one object sent by the server.
pub fn decode_object(bytes: &[u8]) -> Result<Object> {
    Object::from_json(bytes).map_err(|source| Error::Decode { what: "object", source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> ClusterStatus {
        ClusterStatus::from_proto(pb::ClusterStatusResponse {
            leader: 2,
            term: 7,
            node_id: 1,
            members: vec![
                pb::ClusterMember {
                    id: 2,
                    address: "127.0.0.1:7002".into(),
                    role: "Follower".into(),
                    last_applied: 40,
                    reachable: true,
                    digest: "sha256:ab".into(),
                    digest_index: 39,
                    version: "0.1.0".into(),
                },
                pb::ClusterMember {
                    id: 1,
                    address: "127.0.0.1:7001".into(),
                    role: "Follower".into(),
                    last_applied: 41,
                    reachable: false,
                    ..Default::default()
                },
            ],
        })
    }

    #[test]
    fn cluster_status_json_has_the_contract_shape() {
        let json = serde_json::to_value(status()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "leader": 2,
                "term": 7,
                "members": [
                    {"id": 1, "address": "127.0.0.1:7001", "role": "Follower", "lastApplied": 41, "reachable": false},
                    {"id": 2, "address": "127.0.0.1:7002", "role": "Leader", "lastApplied": 40, "reachable": true,
                     "digest": "sha256:ab", "digestIndex": 39, "version": "0.1.0"},
                ]
            })
        );
    }

    #[test]
    fn no_leader_is_null() {
        let s =
            ClusterStatus::from_proto(pb::ClusterStatusResponse { leader: 0, term: 1, members: vec![], node_id: 3 });
        assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"leader":null,"term":1,"members":[]}"#);
    }

    #[test]
    fn watch_events_convert() {
        let ev = WatchEvent::from_proto(pb::WatchEvent {
            r#type: "DELETED".into(),
            object: br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.to_vec(),
            resource_version: 9,
        })
        .unwrap();
        assert_eq!(ev.event_type, EventType::Deleted);
        assert_eq!(ev.object.unwrap().metadata.name, "a");
        assert!(WatchEvent::from_proto(pb::WatchEvent { r#type: "NOPE".into(), ..Default::default() }).is_err());
    }
}
