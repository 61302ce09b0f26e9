//! `describe` text, like kubectl's generic describer: a header block, the
//! metadata, every other field as indented key/value text, then the events.

pub mod ocm;
pub mod placement;
pub mod run;

mod lines;

use std::time::SystemTime;

use fleet_api::Object;
use serde_json::Value;

use lines::Lines;

use crate::age::age;
use crate::columns::{event_time, str_field};
use crate::table::Table;

/// The metadata fields shown in the header block, not under `Metadata:`.
const HEADER_METADATA: &[&str] = &["name", "namespace", "labels", "annotations"];

/// Renders `object` and its `events` (already filtered to it) at `now`.
pub fn render(object: &Object, events: &[Object], now: SystemTime) -> String {
    let mut text = generic(object, &[]).finish();
    text.push_str(&render_events(events, now));
    text
}

/// The header block, the metadata and every top-level field except `skip`.
fn generic(object: &Object, skip: &[&str]) -> Lines {
    let mut w = Lines::default();
    w.field(0, "Name", &object.metadata.name);
    w.field(0, "Namespace", object.metadata.namespace.as_deref().unwrap_or(""));
    w.map_multiline("Labels", &object.metadata.labels);
    w.map_multiline("Annotations", &object.metadata.annotations);
    w.field(0, "API Version", &object.api_version);
    w.field(0, "Kind", &object.kind);
    if let Ok(Value::Object(mut meta)) = serde_json::to_value(&object.metadata) {
        for skip in HEADER_METADATA {
            meta.remove(*skip);
        }
        if !meta.is_empty() {
            w.header(0, "Metadata");
            w.content(1, &meta);
        }
    }
    let mut rest = object.rest.clone();
    for field in skip {
        rest.remove(*field);
    }
    w.content(0, &rest);
    w
}

/// `Events:` and a table of TYPE REASON AGE FROM MESSAGE (oldest first), or
/// `Events:  <none>`.
pub fn render_events(events: &[Object], now: SystemTime) -> String {
    if events.is_empty() {
        return "Events:  <none>\n".to_string();
    }
    let mut sorted: Vec<&Object> = events.iter().collect();
    sorted.sort_by_cached_key(|e| event_time(e));
    let mut table = Table::new(["TYPE", "REASON", "AGE", "FROM", "MESSAGE"]);
    for event in sorted {
        table.push(vec![
            str_field(event, &["type"]),
            str_field(event, &["reason"]),
            event_age(event, now),
            event_source(event),
            str_field(event, &["message"]),
        ]);
    }
    let mut text = "Events:\n".to_string();
    for line in table.render().lines() {
        text.push_str("  ");
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// Whether `event` is about `object` (by `involvedObject` kind and name).
pub fn involves(event: &Object, object: &Object) -> bool {
    str_field(event, &["involvedObject", "name"]) == object.metadata.name
        && str_field(event, &["involvedObject", "kind"]) == object.kind
}

/// `3m`, or `3m (x5 over 10m)` for a repeated event.
fn event_age(event: &Object, now: SystemTime) -> String {
    let last = age(Some(&event_time(event)), now);
    let count = event.rest.get("count").and_then(Value::as_u64).unwrap_or(1);
    let first = str_field(event, &["firstTimestamp"]);
    if count > 1 && !first.is_empty() {
        format!("{last} (x{count} over {})", age(Some(&first), now))
    } else {
        last
    }
}

/// Who reported an event: `source.component`, else `reportingComponent`.
fn event_source(event: &Object) -> String {
    let component = str_field(event, &["source", "component"]);
    if component.is_empty() {
        str_field(event, &["reportingComponent"])
    } else {
        component
    }
}

/// kubectl's label for a field name: camelCase split into title-cased words,
/// common acronyms uppercased (`apiVersion` → `API Version`); names with
/// characters other than letters and `-` are kept as they are.
pub fn smart_label(field: &str) -> String {
    if field.is_empty() || field.chars().any(|c| !c.is_alphabetic() && c != '-') {
        return field.to_string();
    }
    split_camel_case(field)
        .into_iter()
        .map(|part| {
            let upper = part.to_uppercase();
            if ["API", "URL", "UID", "OSB", "GUID"].contains(&upper.as_str()) {
                upper
            } else {
                let mut chars = part.chars();
                match chars.next() {
                    Some(first) => first.to_uppercase().chain(chars).collect(),
                    None => String::new(),
                }
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits `camelCase`/`HTTPServer` into words (`camel`, `Case`; `HTTP`, `Server`).
fn split_camel_case(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut parts = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if !prev.is_uppercase() || next_lower {
                parts.push(std::mem::take(&mut current));
            }
        }
        current.push(c);
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::time::system_time;
    use serde_json::json;

    fn obj(value: Value) -> Object {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn labels_are_split_like_kubectl() {
        assert_eq!(smart_label("apiVersion"), "API Version");
        assert_eq!(smart_label("resourceVersion"), "Resource Version");
        assert_eq!(smart_label("uid"), "UID");
        assert_eq!(smart_label("numberOfClusters"), "Number Of Clusters");
        assert_eq!(smart_label("HTTPServer"), "HTTP Server");
        assert_eq!(smart_label("app.kubernetes.io/name"), "app.kubernetes.io/name");
    }

    #[test]
    fn describes_an_object_with_events() {
        let crp = obj(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "web", "labels": {"a": "1", "b": "2"}, "uid": "u-1", "resourceVersion": "12",
                         "generation": 1, "creationTimestamp": "2024-05-01T10:00:00Z"},
            "spec": {"policy": {"placementType": "PickN", "numberOfClusters": 2},
                     "resourceSelectors": [{"kind": "Namespace", "name": "app"}]},
        }));
        let event = obj(json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "ClusterResourcePlacement", "name": "web"},
            "type": "Normal", "reason": "Scheduled", "message": "picked 2 clusters", "count": 3,
            "firstTimestamp": "2024-05-01T10:00:00Z", "lastTimestamp": "2024-05-01T10:09:00Z",
            "source": {"component": "scheduler"}
        }));
        assert!(involves(&event, &crp));
        let now = system_time("2024-05-01T10:10:00Z").unwrap();
        let text = render(&crp, &[event], now);
        let expected = "\
Name:         web
Namespace:
Labels:       a=1
              b=2
Annotations:  <none>
API Version:  placement.kubernetes-fleet.io/v1beta1
Kind:         ClusterResourcePlacement
Metadata:
  Creation Timestamp:  2024-05-01T10:00:00Z
  Generation:          1
  Resource Version:    12
  UID:                 u-1
Spec:
  Policy:
    Number Of Clusters:  2
    Placement Type:      PickN
  Resource Selectors:
    Kind:  Namespace
    Name:  app
Events:
  TYPE     REASON      AGE                 FROM        MESSAGE
  Normal   Scheduled   60s (x3 over 10m)   scheduler   picked 2 clusters
";
        assert_eq!(text, expected);
    }

    #[test]
    fn no_events_prints_none() {
        assert_eq!(render_events(&[], SystemTime::now()), "Events:  <none>\n");
    }
}
