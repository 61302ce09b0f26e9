//! One `audit.k8s.io/v1` Event, as the Kubernetes API server writes it
//! (stage `ResponseComplete`), and the redaction that keeps Secrets'
//! contents out of it.

use std::time::SystemTime;

use fleet_rbac::{Target, UserInfo};
use serde_json::{json, Map, Value};

use super::{Entry, Level};

/// The annotation naming the hub node that served the request.
pub const NODE_ANNOTATION: &str = "audit.kubernetes-fleet.io/node";
/// Kubernetes' annotations for the authorization decision and its reason.
const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";
/// kubectl's copy of the applied object: it would repeat a Secret's data.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The request as it arrived.
#[derive(Debug, Clone)]
pub struct Request {
    /// The path (and query) or the gRPC method path.
    pub uri: String,
    /// The verb when the request noted no decision (a gRPC call about no
    /// object, a request refused before it was understood).
    pub verb: String,
    /// Whether the request writes even when it noted no write decision
    /// (joining, renewing a certificate).
    pub write: bool,
    pub source_ip: Option<String>,
    pub user_agent: Option<String>,
    pub received: SystemTime,
}

/// How the request ended.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The HTTP status (a gRPC code is mapped to one).
    pub code: u16,
    /// The error's message, for a failure.
    pub message: Option<String>,
    /// The Kubernetes reason (`Forbidden`, `NotFound`, ...), for a failure.
    pub reason: Option<String>,
}

/// What one Event is made of.
pub(super) struct Parts<'a> {
    pub id: &'a str,
    pub level: Level,
    pub node: u64,
    pub request: &'a Request,
    pub user: Option<&'a UserInfo>,
    pub entry: Option<&'a Entry>,
    pub outcome: &'a Outcome,
    pub received: SystemTime,
    pub completed: SystemTime,
}

fn timestamp(at: SystemTime) -> String {
    fleet_api::time::rfc3339_micros(at)
}

/// The Event as one JSON line (newline included).
pub(super) fn build(parts: &Parts<'_>) -> Vec<u8> {
    let mut event = Map::new();
    event.insert("kind".into(), json!("Event"));
    event.insert("apiVersion".into(), json!("audit.k8s.io/v1"));
    event.insert("level".into(), json!(parts.level.as_str()));
    event.insert("auditID".into(), json!(parts.id));
    event.insert("stage".into(), json!("ResponseComplete"));
    event.insert("requestURI".into(), json!(parts.request.uri));
    let verb = parts.entry.map_or(parts.request.verb.as_str(), |e| e.attributes.verb.as_str());
    event.insert("verb".into(), json!(verb));
    let user = match parts.user {
        Some(user) => json!({"username": user.name, "groups": user.groups}),
        None => json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]}),
    };
    event.insert("user".into(), user);
    if let Some(ip) = &parts.request.source_ip {
        event.insert("sourceIPs".into(), json!([ip]));
    }
    if let Some(agent) = &parts.request.user_agent {
        event.insert("userAgent".into(), json!(agent));
    }
    if let Some(Target::Resource { group, resource, subresource, name, namespace }) =
        parts.entry.map(|e| &e.attributes.target)
    {
        let mut reference = Map::new();
        reference.insert("resource".into(), json!(resource));
        for (field, value) in
            [("namespace", namespace), ("name", name), ("apiGroup", group), ("subresource", subresource)]
        {
            if !value.is_empty() {
                reference.insert(field.into(), json!(value));
            }
        }
        if let Some(version) = parts
            .entry
            .and_then(|e| e.object.as_ref())
            .and_then(|o| o.get("apiVersion"))
            .and_then(Value::as_str)
            .map(|v| v.rsplit('/').next().unwrap_or(v).to_string())
        {
            reference.insert("apiVersion".into(), json!(version));
        }
        event.insert("objectRef".into(), Value::Object(reference));
    }
    let outcome = parts.outcome;
    let mut status = Map::new();
    status.insert("metadata".into(), json!({}));
    status.insert("code".into(), json!(outcome.code));
    if outcome.code >= 400 {
        status.insert("status".into(), json!("Failure"));
        let resource = match parts.entry.map(|e| &e.attributes.target) {
            Some(Target::Resource { resource, .. }) => resource.as_str(),
            _ => "",
        };
        if let Some(message) = outcome.message.as_ref().filter(|_| !may_quote_secret(outcome.code, resource)) {
            status.insert("message".into(), json!(message));
        }
        if let Some(reason) = &outcome.reason {
            status.insert("reason".into(), json!(reason));
        }
    }
    event.insert("responseStatus".into(), Value::Object(status));
    if parts.level >= Level::Request {
        if let Some(object) = parts.entry.and_then(|e| e.object.as_ref()) {
            event.insert("requestObject".into(), redact(object));
        }
    }
    event.insert("requestReceivedTimestamp".into(), json!(timestamp(parts.received)));
    event.insert("stageTimestamp".into(), json!(timestamp(parts.completed)));
    let mut annotations = Map::new();
    annotations.insert(NODE_ANNOTATION.into(), json!(parts.node.to_string()));
    if let Some(entry) = parts.entry {
        let (decision, reason) = match &entry.denied {
            Some(reason) => ("forbid", reason.as_str()),
            None => ("allow", ""),
        };
        annotations.insert(DECISION_ANNOTATION.into(), json!(decision));
        if !reason.is_empty() {
            annotations.insert(REASON_ANNOTATION.into(), json!(reason));
        }
    }
    event.insert("annotations".into(), Value::Object(annotations));
    let mut line = serde_json::to_vec(&Value::Object(event)).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Whether a failure's message may quote a Secret's values: a refusal of
/// an object's contents (400, 422: validation quotes the values it
/// refuses) of a kind that holds or wraps Secrets. Authorization and
/// other refusals name kinds and names only.
fn may_quote_secret(code: u16, resource: &str) -> bool {
    matches!(code, 400 | 422)
        && matches!(
            resource,
            "secrets" | "configmaps" | "resourceenvelopes" | "clusterresourceenvelopes" | "works" | "manifestworks"
        )
}

/// `object` with every Secret's contents taken out, wherever it is: a
/// Secret itself, a Secret wrapped in an envelope, a Work or a
/// ManifestWork (its `data` and `stringData` are replaced by their keys),
/// and kubectl's last-applied copy of any object (dropped: it may be a
/// Secret, or wrap one).
pub fn redact(object: &Value) -> Value {
    let mut copy = object.clone();
    scrub(&mut copy);
    copy
}

fn is_secret(map: &Map<String, Value>) -> bool {
    map.get("kind").and_then(Value::as_str) == Some("Secret")
        && map.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

fn scrub(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(annotations)) = map.get_mut("metadata").and_then(|m| m.get_mut("annotations")) {
                annotations.remove(LAST_APPLIED);
            }
            if is_secret(map) {
                for field in ["data", "stringData"] {
                    if let Some(Value::Object(entries)) = map.get_mut(field) {
                        for entry in entries.values_mut() {
                            *entry = json!("<redacted>");
                        }
                    } else if map.contains_key(field) {
                        map.insert(field.into(), json!("<redacted>"));
                    }
                }
            }
            map.values_mut().for_each(scrub);
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        // A Secret's manifest held as text (a ConfigMap's entry, for one).
        Value::String(text) if looks_like_secret(text) => *text = "<redacted: a wrapped Secret>".into(),
        _ => {}
    }
}

/// Whether a string is a whole manifest of a Secret.
fn looks_like_secret(text: &str) -> bool {
    if !text.contains("Secret") {
        return false;
    }
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Object(map)) => is_secret(&map),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_of_what_may_hold_a_secret_keep_no_message() {
        let refusal = |resource: &str, code: u16| {
            let entry = Entry {
                attributes: fleet_rbac::Attributes::resource("create", "", resource, "a", "s"),
                denied: None,
                object: None,
            };
            let request = Request {
                uri: "/api/v1/namespaces/a/secrets".into(),
                verb: "create".into(),
                write: false,
                source_ip: None,
                user_agent: None,
                received: SystemTime::now(),
            };
            let outcome = Outcome {
                code,
                message: Some("data: Invalid value: \"c2VjcmV0\"".into()),
                reason: Some("Invalid".into()),
            };
            let line = build(&Parts {
                id: "x",
                level: Level::Metadata,
                node: 1,
                request: &request,
                user: None,
                entry: Some(&entry),
                outcome: &outcome,
                received: SystemTime::now(),
                completed: SystemTime::now(),
            });
            serde_json::from_slice::<Value>(&line).unwrap()
        };
        let secret = refusal("secrets", 422);
        assert!(secret["responseStatus"].get("message").is_none(), "{secret}");
        assert_eq!(secret["responseStatus"]["reason"], "Invalid");
        assert!(refusal("deployments", 422)["responseStatus"]["message"].is_string());
        assert!(refusal("secrets", 403)["responseStatus"]["message"].is_string());
    }

    #[test]
    fn secrets_lose_their_contents_wherever_they_are() {
        let object = json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourceEnvelope",
            "metadata": {"name": "e", "namespace": "a", "annotations": {LAST_APPLIED: "{\"data\":{\"k\":\"c2VjcmV0\"}}"}},
            "data": {
                "s.yaml": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "c2VjcmV0"}, "stringData": {"p": "secret"}},
                "cm.yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "visible"}},
            }
        });
        let text = redact(&object).to_string();
        assert!(!text.contains("c2VjcmV0") && !text.contains("\"secret\""), "{text}");
        assert!(text.contains("visible") && text.contains("\"k\":\"<redacted>\""), "{text}");
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e"},
            "data": {"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: c2VjcmV0}\n", "note": "a Secret's name"}});
        let text = redact(&configmap).to_string();
        assert!(!text.contains("c2VjcmV0") && text.contains("a Secret's name"), "{text}");
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": "not a map"});
        assert_eq!(redact(&secret)["data"], json!("<redacted>"));
    }
}
