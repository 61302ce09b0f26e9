//! Multi-document YAML/JSON parsing into [`Object`]s, with errors naming the
//! source, the document and the line.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::object::{Object, ObjectMeta};

/// Why a file could not be parsed: which source, which document, which line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: document {document}{}: {message}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
pub struct ParseError {
    /// The file name (or `-` for stdin) the text came from.
    pub source_name: String,
    /// 1-based index of the offending document.
    pub document: usize,
    /// 1-based line in the whole file, when known.
    pub line: Option<usize>,
    /// What was wrong.
    pub message: String,
}

/// One raw document: its 1-based index, its starting line and its content.
struct RawDocument {
    index: usize,
    line: Option<usize>,
    value: Value,
}

/// Parses every document of a YAML or JSON text, skipping empty documents and
/// flattening `kind: List` (and `*List` kinds with `items`) into their items.
pub fn parse_documents(source_name: &str, text: &str) -> Result<Vec<Object>, ParseError> {
    let error = |document: usize, line: Option<usize>, message: String| ParseError {
        source_name: source_name.to_string(),
        document,
        line,
        message,
    };
    let to_objects = |raw: Vec<RawDocument>| {
        let mut objects = Vec::new();
        for doc in raw {
            collect_objects(doc.value, "", &mut objects).map_err(|message| error(doc.index, doc.line, message))?;
        }
        Ok(objects)
    };
    let body = text.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('{') || body.starts_with('[') {
        // Prefer a JSON reading (better messages, full JSON escapes, several
        // concatenated values). Text that is not JSON may still be YAML flow
        // syntax, but only a complete YAML success beats the JSON error.
        return match json_documents(text) {
            Ok(raw) => to_objects(raw),
            Err((document, line, message)) => yaml_documents(text)
                .ok()
                .and_then(|raw| to_objects(raw).ok())
                .ok_or_else(|| error(document, line, message)),
        };
    }
    let raw = yaml_documents(text).map_err(|(document, line, message)| error(document, line, message))?;
    to_objects(raw)
}

type RawError = (usize, Option<usize>, String);

/// Splits a stream of concatenated JSON values.
fn json_documents(text: &str) -> Result<Vec<RawDocument>, RawError> {
    let mut docs = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let offset = stream.byte_offset();
        let start = text
            .get(offset..)
            .unwrap_or_default()
            .find(|c: char| !c.is_whitespace() && c != '\u{feff}')
            .map_or(text.len(), |skip| offset + skip);
        let line = Some(line_of(text, start));
        match stream.next() {
            None => return Ok(docs),
            Some(Ok(value)) => docs.push(RawDocument { index: docs.len() + 1, line, value }),
            Some(Err(e)) => {
                let line = if e.line() > 0 { Some(e.line()) } else { line };
                return Err((docs.len() + 1, line, e.to_string()));
            }
        }
    }
}

/// Splits a multi-document YAML stream and converts each document to JSON.
fn yaml_documents(text: &str) -> Result<Vec<RawDocument>, RawError> {
    let starts = document_start_lines(text);
    let mut docs = Vec::new();
    // After a syntax error the iterator repeats the error forever, so stop at
    // the first one.
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let index = i + 1;
        let line = starts.get(i).copied();
        let mut value = serde_yaml_ng::Value::deserialize(doc)
            .map_err(|e| (index, e.location().map(|l| l.line()).or(line), e.to_string()))?;
        value.apply_merge().map_err(|e| (index, line, e.to_string()))?;
        let value = yaml_to_json(value).map_err(|message| (index, line, message))?;
        docs.push(RawDocument { index, line, value });
    }
    Ok(docs)
}

/// The 1-based line of the byte at `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

/// Whether `line` starts with the YAML marker `marker` (`---` or `...`)
/// followed by whitespace or the end of the line.
fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
}

/// The 1-based starting line of every document the YAML parser will report,
/// in order: each `---` marker, plus an implicit document wherever content
/// appears outside any open document (e.g. the first document of a file
/// without a leading `---`).
fn document_start_lines(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { line };
        if is_marker(line, "---") {
            starts.push(i + 1);
            open = true;
        } else if is_marker(line, "...") {
            open = false;
        } else if !open {
            let content = line.trim_start();
            let blank = content.is_empty() || content.starts_with('#');
            if !blank && !line.starts_with('%') {
                starts.push(i + 1);
                open = true;
            }
        }
    }
    starts
}

/// Converts a YAML value to JSON: scalar mapping keys become strings (a
/// ConfigMap key `8080` is `"8080"`), tags are dropped.
fn yaml_to_json(value: serde_yaml_ng::Value) -> Result<Value, String> {
    use serde_yaml_ng::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| format!("the number {n} cannot be represented in JSON"))?
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect::<Result<_, _>>()?),
        Y::Mapping(mapping) => {
            let mut map = Map::new();
            for (key, value) in mapping {
                let key = key_to_string(key)?;
                let value = yaml_to_json(value)?;
                if map.insert(key.clone(), value).is_some() {
                    return Err(format!("duplicate mapping key {key:?}"));
                }
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value)?,
    })
}

fn key_to_string(key: serde_yaml_ng::Value) -> Result<String, String> {
    use serde_yaml_ng::Value as Y;
    match key {
        Y::String(s) => Ok(s),
        Y::Number(n) => Ok(n.to_string()),
        Y::Bool(b) => Ok(b.to_string()),
        Y::Null => Ok("null".to_string()),
        Y::Tagged(tagged) => key_to_string(tagged.value),
        Y::Sequence(_) => Err("a mapping key must be a scalar, found a sequence".to_string()),
        Y::Mapping(_) => Err("a mapping key must be a scalar, found a mapping".to_string()),
    }
}

/// Describes a JSON value's type for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Reads a required non-empty string field of a document.
fn required_string<'a>(map: &'a Map<String, Value>, field: &str, at: &str) -> Result<&'a str, String> {
    match map.get(field) {
        None | Some(Value::Null) => Err(format!("{at}missing required field \"{field}\"")),
        Some(Value::String(s)) if s.is_empty() => Err(format!("{at}\"{field}\" must not be empty")),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!("{at}\"{field}\" must be a string, found {}", type_name(other))),
    }
}

/// Turns one document (or list item, `at` naming it) into objects.
fn collect_objects(value: Value, at: &str, out: &mut Vec<Object>) -> Result<(), String> {
    let map = match value {
        Value::Null if at.is_empty() => return Ok(()),
        Value::Object(map) => map,
        other => return Err(format!("{at}expected a mapping with apiVersion and kind, found {}", type_name(&other))),
    };
    required_string(&map, "apiVersion", at)?;
    let kind = required_string(&map, "kind", at)?;
    let items = map.get("items");
    if kind == "List" || (kind.ends_with("List") && matches!(items, Some(Value::Array(_)))) {
        return match items {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    collect_objects(item.clone(), &format!("{at}items[{i}]: "), out)?;
                }
                Ok(())
            }
            Some(other) => Err(format!("{at}\"items\" must be a list, found {}", type_name(other))),
        };
    }
    let mut map = map;
    normalize_metadata(&mut map);
    let metadata = map.get("metadata").cloned();
    match serde_json::from_value::<Object>(Value::Object(map)) {
        Ok(object) => {
            out.push(object);
            Ok(())
        }
        Err(e) => Err(format!("{at}{}", explain_metadata_error(metadata, e))),
    }
}

/// Treats null metadata, null metadata fields and null label or annotation
/// values as absent or empty, as Kubernetes does (`labels:` with every entry
/// commented out is null in YAML).
fn normalize_metadata(map: &mut Map<String, Value>) {
    match map.get_mut("metadata") {
        Some(Value::Null) => {
            map.remove("metadata");
        }
        Some(Value::Object(fields)) => {
            fields.retain(|_, v| !v.is_null());
            for name in ["labels", "annotations"] {
                if let Some(Value::Object(entries)) = fields.get_mut(name) {
                    for v in entries.values_mut().filter(|v| v.is_null()) {
                        *v = Value::String(String::new());
                    }
                }
            }
        }
        _ => {}
    }
}

/// Finds which metadata field a deserialization error is about, so the
/// message names it (`metadata.labels: invalid type: ...`).
fn explain_metadata_error(metadata: Option<Value>, error: serde_json::Error) -> String {
    match metadata {
        Some(Value::Object(fields)) => {
            for (field, value) in fields {
                let mut single = Map::new();
                single.insert(field.clone(), value);
                if let Err(e) = serde_json::from_value::<ObjectMeta>(Value::Object(single)) {
                    return format!("metadata.{field}: {e}");
                }
            }
            error.to_string()
        }
        Some(other @ (Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_))) => {
            format!("metadata: expected a mapping, found {}", type_name(&other))
        }
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<Object> {
        parse_documents("f.yaml", text).unwrap()
    }

    fn parse_err(text: &str) -> ParseError {
        parse_documents("f.yaml", text).unwrap_err()
    }

    fn names(objects: &[Object]) -> Vec<&str> {
        objects.iter().map(|o| o.metadata.name.as_str()).collect()
    }

    #[test]
    fn multi_document_yaml_skips_empty_and_comment_only_documents() {
        let text = "# header comment\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: a\ndata:\n  k: v\n...\n---\n";
        let objects = parse(text);
        assert_eq!(names(&objects), ["a", "b"]);
        assert_eq!(objects[1].metadata.namespace.as_deref(), Some("a"));
        assert_eq!(objects[1].rest["data"]["k"], "v");
        assert_eq!(parse("apiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n").len(), 1);
    }

    #[test]
    fn empty_inputs_have_no_objects() {
        for text in ["", "\n\n", "# nothing\n", "---\n", "---\n---\n", "\u{feff}"] {
            assert!(parse(text).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn lists_are_flattened() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: b}\n---\napiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n";
        assert_eq!(names(&parse(text)), ["a", "b", "c"]);
        assert!(parse("apiVersion: v1\nkind: List\n").is_empty());
        let err =
            parse_err("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n- apiVersion: v1\n");
        assert_eq!(err.to_string(), "f.yaml: document 1 (line 1): items[1]: missing required field \"kind\"");
        let err = parse_err("apiVersion: v1\nkind: List\nitems: 3\n");
        assert_eq!(err.message, "\"items\" must be a list, found a number");
    }

    #[test]
    fn json_input() {
        let one = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"},"data":{"x":"1"}}"#;
        let objects = parse_documents("f.json", one).unwrap();
        assert_eq!(names(&objects), ["a"]);
        assert_eq!(objects[0].rest["data"]["x"], "1");
        // Tabs and JSON-only escapes that a YAML parser refuses.
        let tabs = "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"ConfigMap\",\n\t\"metadata\": {\"name\": \"b\"},\n\t\"data\": {\"s\": \"a\\/b \\ud83d\\ude00\"}\n}\n";
        let objects = parse_documents("f.json", tabs).unwrap();
        assert_eq!(objects[0].rest["data"]["s"], "a/b \u{1F600}");
        let list = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}},{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"y"}}]}"#;
        assert_eq!(names(&parse_documents("f.json", list).unwrap()), ["x", "y"]);
        let two = format!("{one}\n{tabs}");
        assert_eq!(names(&parse_documents("f.json", &two).unwrap()), ["a", "b"]);
        // YAML flow syntax that is not JSON still parses.
        assert_eq!(names(&parse("{apiVersion: v1, kind: Namespace, metadata: {name: z}}")), ["z"]);
    }

    #[test]
    fn json_errors_name_document_and_line() {
        let text = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\"}}\n{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Namespace\",,\n}\n";
        let err = parse_documents("f.json", text).unwrap_err();
        assert_eq!((err.document, err.line), (2, Some(4)));
        assert!(err.to_string().starts_with("f.json: document 2 (line 4): "), "{err}");
        let text = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\"}\n\n{\"apiVersion\":\"v1\"}\n";
        let err = parse_documents("f.json", text).unwrap_err();
        assert_eq!(err.to_string(), "f.json: document 2 (line 3): missing required field \"kind\"");
        // Broken JSON that YAML would read (as `kind: null`) reports the JSON error.
        let err = parse_documents("f.json", "{\"apiVersion\": \"v1\",\n \"kind\": }").unwrap_err();
        assert_eq!(err.to_string(), "f.json: document 1 (line 2): expected value at line 2 column 10");
    }

    #[test]
    fn yaml_syntax_error_reports_document_and_file_line() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n  bad: indent\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n";
        let err = parse_err(text);
        assert_eq!((err.document, err.line), (2, Some(7)), "{err}");
        assert!(err.to_string().starts_with("f.yaml: document 2 (line 7): "), "{err}");
        let err = parse_err("a: 1\n---\nb: [1,\n");
        assert_eq!(err.document, 2);
        assert!(err.line.is_some_and(|l| l >= 3), "{err}");
        let err = parse_err("apiVersion: v1\nkind: A\napiVersion: v2\n");
        assert!(err.message.contains("duplicate"), "{err}");
    }

    #[test]
    fn documents_need_api_version_and_kind() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n# the second\napiVersion: v1\nmetadata: {name: b}\n";
        let err = parse_err(text);
        assert_eq!(err.to_string(), "f.yaml: document 2 (line 4): missing required field \"kind\"");
        for (text, message) in [
            ("kind: Namespace\n", "missing required field \"apiVersion\""),
            ("apiVersion: ''\nkind: X\n", "\"apiVersion\" must not be empty"),
            ("apiVersion: v1\nkind: 5\n", "\"kind\" must be a string, found a number"),
            ("- a\n- b\n", "expected a mapping with apiVersion and kind, found a list"),
            ("just text\n", "expected a mapping with apiVersion and kind, found a string"),
        ] {
            let err = parse_err(text);
            assert_eq!((err.document, err.line, err.message.as_str()), (1, Some(1), message));
        }
    }

    #[test]
    fn metadata_type_errors_name_the_field_and_document() {
        let text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels:\n  - a\n";
        let err = parse_err(text);
        assert_eq!((err.document, err.line), (2, Some(4)));
        assert!(err.message.starts_with("metadata.labels: invalid type: sequence, expected a map"), "{err}");
        let err = parse_err("apiVersion: v1\nkind: A\nmetadata:\n  labels:\n    version: 1\n");
        assert!(err.message.starts_with("metadata.labels: invalid type: integer `1`, expected a string"), "{err}");
        let err = parse_err("apiVersion: v1\nkind: A\nmetadata: [1]\n");
        assert_eq!(err.message, "metadata: expected a mapping, found a list");
    }

    #[test]
    fn nulls_in_metadata_are_absent() {
        let objects = parse("apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  labels:\n  annotations:\n    note:\n");
        assert!(objects[0].metadata.labels.is_empty());
        assert_eq!(objects[0].metadata.annotations["note"], "");
        assert_eq!(parse("apiVersion: v1\nkind: A\nmetadata:\n")[0].metadata.name, "");
    }

    #[test]
    fn yaml_scalars_convert_to_json() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  8080: port\n  1.5: f\n  true: t\n  ~: n\n  on: yes\nspec:\n  big: 18446744073709551615\n  neg: -3\n  tagged: !custom value\n  base: &b {x: 1}\n  merged:\n    <<: *b\n    y: 2\n";
        let data = &parse(text)[0].rest;
        assert_eq!(
            data["data"],
            serde_json::json!({"8080": "port", "1.5": "f", "true": "t", "null": "n", "on": "yes"})
        );
        assert_eq!(data["spec"]["big"], serde_json::json!(u64::MAX));
        assert_eq!(data["spec"]["neg"], -3);
        assert_eq!(data["spec"]["tagged"], "value");
        assert_eq!(data["spec"]["merged"], serde_json::json!({"x": 1, "y": 2}));
        let err = parse_err("apiVersion: v1\nkind: A\nspec: {x: .inf}\n");
        assert_eq!(err.message, "the number .inf cannot be represented in JSON");
        let err = parse_err("apiVersion: v1\nkind: A\nspec:\n  1: a\n  '1': b\n");
        assert_eq!(err.message, "duplicate mapping key \"1\"");
        let err = parse_err("apiVersion: v1\nkind: A\nspec: {[1]: a}\n");
        assert_eq!(err.message, "a mapping key must be a scalar, found a sequence");
    }

    #[test]
    fn document_start_lines_follow_markers() {
        assert_eq!(document_start_lines("a: 1\n---\nb: 2\n"), [1, 2]);
        assert_eq!(document_start_lines("# c\n\n---\na: 1\n--- # x\n---\n"), [3, 5, 6]);
        assert_eq!(document_start_lines("%YAML 1.2\n---\na: |\n  ---x\n...\n"), [2]);
        assert_eq!(document_start_lines("\u{feff}a: 1\n"), [1]);
        assert!(document_start_lines("# only\n").is_empty());
    }
}
