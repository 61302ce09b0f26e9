//! Status feedback (`manifestConfigs[].feedbackRules`): values read from an
//! applied object on the member, by its agent, and shown in the
//! ManifestWork's `resourceStatus.manifests[].statusFeedback`.
//!
//! Rules, as OCM's work agent reads them:
//! - `WellKnownStatus`: apps/v1 Deployment `ReadyReplicas`, `Replicas`,
//!   `AvailableReplicas`; batch/v1 Job `JobComplete`, `JobSucceeded`; v1
//!   Pod `PodReady`, `PodPhase`. Other kinds report nothing.
//! - `JSONPaths`: `{name, path, version}`; a path is a plain JSONPath
//!   (`.status.readyReplicas`, `['key']` and `[n]` steps) that may filter a
//!   list by one field (`.status.conditions[?(@.type=="Ready")].status`).
//!   A `version` other than the object's skips the path.
//!
//! A value is an `Integer`, `String` or `Boolean`; anything else (a float,
//! an object, a list, several matches) is `JsonRaw`, its JSON at most
//! [`MAX_JSON_RAW_BYTES`]. A path that finds nothing reports nothing.
//! Bounds: at most [`MAX_FEEDBACK_VALUES`] values per manifest (admission
//! refuses more JSON paths), so one manifest's feedback stays under about
//! 33 KiB.

use serde_json::Value;

use super::{FeedbackRule, FeedbackValue, FieldValue};

/// The largest `JsonRaw` value (its JSON), as OCM's agent bounds it.
pub const MAX_JSON_RAW_BYTES: usize = 1024;
/// The most values one manifest reports (and JSON paths one config lists).
pub const MAX_FEEDBACK_VALUES: usize = 32;

/// One step of a feedback path.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// An object key.
    Key(String),
    /// A list index.
    Index(usize),
    /// The items of a list whose `field` equals `value`.
    Filter { field: String, value: Value },
}

/// Parses a feedback path (an optional `{...}` around it, as kubectl's
/// JSONPath templates write it, is allowed).
pub fn parse(text: &str) -> Result<Vec<Step>, String> {
    let text = text.trim();
    let text = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(text);
    let body = text.strip_prefix('$').unwrap_or(text);
    let body = body.strip_prefix('.').unwrap_or(body);
    if body.is_empty() {
        return Err("the path names no field".into());
    }
    if body.contains("..") || body.contains('*') {
        return Err("wildcards and recursive descent are not supported".into());
    }
    let mut steps = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']').ok_or("'[' without ']'")?;
            // A filter's quoted value may hold ']': take the whole `?(...)`.
            let (inside, next) = if after.starts_with("?(") {
                let end = after.find(")]").ok_or("a filter ends with ')]'")?;
                (&after[..end + 1], &after[end + 2..])
            } else {
                (&after[..close], &after[close + 1..])
            };
            steps.push(bracket(inside)?);
            rest = next.strip_prefix('.').unwrap_or(next);
            continue;
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let key = &rest[..end];
        if key.is_empty() {
            return Err("empty step".into());
        }
        steps.push(Step::Key(key.to_string()));
        rest = &rest[end..];
        if let Some(next) = rest.strip_prefix('.') {
            if next.is_empty() {
                return Err("the path ends with '.'".into());
            }
            rest = next;
        }
    }
    Ok(steps)
}

/// A `[...]` step: an index, a quoted key, or `?(@.field==value)`.
fn bracket(inside: &str) -> Result<Step, String> {
    if let Some(filter) = inside.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let (left, right) = filter.split_once("==").ok_or("a filter compares one field with '=='")?;
        let field = left.trim().strip_prefix("@.").ok_or("a filter compares a field of the item, as @.type")?;
        if field.is_empty() || field.contains(['.', '[']) {
            return Err(format!("a filter compares one field of the item, not {field:?}"));
        }
        let right = right.trim();
        let unquoted = |q: char| right.strip_prefix(q).and_then(|r| r.strip_suffix(q));
        let value = match unquoted('"').or_else(|| unquoted('\'')) {
            Some(text) => Value::String(text.to_string()),
            None => {
                serde_json::from_str(right).map_err(|_| format!("{right}: a quoted string, a number or a boolean"))?
            }
        };
        return Ok(Step::Filter { field: field.to_string(), value });
    }
    let quoted = |q: char| inside.strip_prefix(q).and_then(|r| r.strip_suffix(q));
    if let Some(key) = quoted('\'').or_else(|| quoted('"')) {
        return Ok(Step::Key(key.to_string()));
    }
    inside.parse::<usize>().map(Step::Index).map_err(|_| format!("[{inside}]: an index, a quoted key or a filter"))
}

/// Every value `steps` reaches in `document`.
pub fn find<'a>(steps: &[Step], document: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![document];
    for step in steps {
        current = current
            .into_iter()
            .flat_map(|value| -> Vec<&'a Value> {
                match (step, value) {
                    (Step::Key(k), Value::Object(map)) => map.get(k).into_iter().collect(),
                    (Step::Index(i), Value::Array(items)) => items.get(*i).into_iter().collect(),
                    (Step::Filter { field, value: wanted }, Value::Array(items)) => {
                        items.iter().filter(|item| item.get(field) == Some(wanted)).collect()
                    }
                    _ => Vec::new(),
                }
            })
            .collect();
    }
    current
}

/// The typed value of what a path found; `None` when it found nothing.
pub fn field_value(found: &[&Value]) -> Result<Option<FieldValue>, String> {
    let typed = |type_: &str| FieldValue { type_: type_.to_string(), ..FieldValue::default() };
    let raw = match found {
        [] | [Value::Null] => return Ok(None),
        [Value::String(s)] => return Ok(Some(FieldValue { string: Some(s.clone()), ..typed("String") })),
        [Value::Bool(b)] => return Ok(Some(FieldValue { boolean: Some(*b), ..typed("Boolean") })),
        [Value::Number(n)] if n.is_i64() => {
            return Ok(Some(FieldValue { integer: n.as_i64(), ..typed("Integer") }));
        }
        [one] => serde_json::to_string(one),
        many => serde_json::to_string(many),
    }
    .map_err(|e| e.to_string())?;
    if raw.len() > MAX_JSON_RAW_BYTES {
        return Err(format!("its JSON is {} bytes, more than {MAX_JSON_RAW_BYTES}", raw.len()));
    }
    Ok(Some(FieldValue { json_raw: Some(raw), ..typed("JsonRaw") }))
}

/// The well-known `(name, path)`s of a kind (OCM's table).
pub fn well_known(group: &str, version: &str, kind: &str) -> &'static [(&'static str, &'static str)] {
    match (group, version, kind) {
        ("apps", "v1", "Deployment") => &[
            ("ReadyReplicas", ".status.readyReplicas"),
            ("Replicas", ".status.replicas"),
            ("AvailableReplicas", ".status.availableReplicas"),
        ],
        ("batch", "v1", "Job") => &[
            ("JobComplete", ".status.conditions[?(@.type==\"Complete\")].status"),
            ("JobSucceeded", ".status.succeeded"),
        ],
        ("", "v1", "Pod") => {
            &[("PodReady", ".status.conditions[?(@.type==\"Ready\")].status"), ("PodPhase", ".status.phase")]
        }
        _ => &[],
    }
}

/// The values `rules` read from `object` (the live object as JSON), at
/// most [`MAX_FEEDBACK_VALUES`], and why some could not be read.
pub fn evaluate(rules: &[FeedbackRule], object: &Value) -> (Vec<FeedbackValue>, Vec<String>) {
    let text = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or_default();
    let api_version = text("apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = text("kind");
    let mut paths: Vec<(&str, &str)> = Vec::new();
    let mut problems = Vec::new();
    for rule in rules {
        match rule.type_.as_str() {
            "WellKnownStatus" => {
                let known = well_known(group, version, kind);
                if known.is_empty() {
                    problems.push(format!("no well-known status for {api_version} {kind}"));
                }
                paths.extend(known.iter().copied());
            }
            _ => {
                for p in &rule.json_paths {
                    if !p.version.is_empty() && p.version != version {
                        problems.push(format!("{}: version {} is not the object's ({version})", p.name, p.version));
                        continue;
                    }
                    paths.push((p.name.as_str(), p.path.as_str()));
                }
            }
        }
    }
    let mut values: Vec<FeedbackValue> = Vec::new();
    for (name, path) in paths {
        if values.len() == MAX_FEEDBACK_VALUES {
            problems.push(format!("more than {MAX_FEEDBACK_VALUES} values: the rest are left out"));
            break;
        }
        if values.iter().any(|v| v.name == name) {
            continue;
        }
        let found = match parse(path) {
            Ok(steps) => field_value(&find(&steps, object)),
            Err(why) => Err(why),
        };
        match found {
            Ok(Some(field_value)) => values.push(FeedbackValue { name: name.to_string(), field_value }),
            Ok(None) => {}
            Err(why) => problems.push(format!("{name}: {why}")),
        }
    }
    (values, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ocm::manifestwork::JsonPath;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2, "ratio": 0.5,
                "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]}})
    }

    fn rule(paths: &[(&str, &str)]) -> FeedbackRule {
        FeedbackRule {
            type_: "JSONPaths".into(),
            json_paths: paths
                .iter()
                .map(|(n, p)| JsonPath { name: n.to_string(), path: p.to_string(), ..Default::default() })
                .collect(),
        }
    }

    #[test]
    fn paths_parse_with_keys_indexes_and_one_field_filters() {
        assert_eq!(
            parse(".status.readyReplicas").unwrap(),
            [Step::Key("status".into()), Step::Key("readyReplicas".into())]
        );
        assert_eq!(parse("{.spec.template.spec.containers[0].image}").unwrap().len(), 6);
        assert_eq!(
            parse(r#".status.conditions[?(@.type=="Ready")].status"#).unwrap()[2],
            Step::Filter { field: "type".into(), value: json!("Ready") }
        );
        assert_eq!(parse(".metadata.annotations['a.b/c']").unwrap()[2], Step::Key("a.b/c".into()));
        for bad in ["", ".", ".a..b", ".a[*]", ".a[x]", ".a[?(@.x>1)]", ".a[?(@.x.y==1)]", ".a[0", ".a."] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn well_known_status_of_a_deployment_and_typed_json_paths() {
        let (values, problems) =
            evaluate(&[FeedbackRule { type_: "WellKnownStatus".into(), json_paths: vec![] }], &deployment());
        let named: Vec<(&str, Option<i64>)> = values.iter().map(|v| (v.name.as_str(), v.field_value.integer)).collect();
        assert_eq!(named, [("ReadyReplicas", Some(2)), ("Replicas", Some(3)), ("AvailableReplicas", Some(2))]);
        assert!(problems.is_empty());

        let r = rule(&[
            ("available", r#".status.conditions[?(@.type=="Available")].status"#),
            ("image", ".spec.template.spec.containers[0].image"),
            ("ratio", ".status.ratio"),
            ("conditions", ".status.conditions"),
            ("missing", ".status.nothing"),
        ]);
        let (values, problems) = evaluate(&[r], &deployment());
        let get = |n: &str| values.iter().find(|v| v.name == n).map(|v| v.field_value.clone());
        assert_eq!(get("available").and_then(|v| v.string), Some("True".into()));
        assert_eq!(get("image").map(|v| v.type_), Some("String".into()));
        assert_eq!(get("ratio").and_then(|v| v.json_raw), Some("0.5".into()), "a float is raw JSON");
        assert_eq!(get("conditions").map(|v| v.type_), Some("JsonRaw".into()));
        assert_eq!(get("missing"), None, "nothing found, nothing reported");
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn bounds_and_problems_are_reported() {
        let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"blob": "x".repeat(2000)},
            "status": {"list": ["x".repeat(2000)]}});
        let (values, problems) = evaluate(&[rule(&[("list", ".status.list")])], &big);
        assert!(values.is_empty() && problems[0].contains("more than 1024"), "{problems:?}");
        let many: Vec<(String, String)> = (0..40).map(|i| (format!("v{i}"), ".apiVersion".to_string())).collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(n, p)| (n.as_str(), p.as_str())).collect();
        let (values, problems) = evaluate(&[rule(&many)], &big);
        assert_eq!(values.len(), MAX_FEEDBACK_VALUES);
        assert!(problems.iter().any(|p| p.contains("left out")));
        let (values, problems) =
            evaluate(&[FeedbackRule { type_: "WellKnownStatus".into(), json_paths: vec![] }], &big);
        assert!(values.is_empty() && problems[0].contains("no well-known status for v1 ConfigMap"));
    }
}
