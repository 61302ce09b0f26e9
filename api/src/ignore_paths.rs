//! Paths of fields inside an object, for the fields an agent leaves as the
//! member cluster has them (a ManifestWork's `ignoreFields`, a Work's
//! `ignoreFields`): parsed from a JSON pointer (RFC 6901, `/spec/replicas`)
//! or from the plain JSONPath OCM users write (`.spec.replicas`,
//! `.metadata.annotations['example.com/owner']`, `.spec.ports[0].port`),
//! and read, written and removed in a JSON document.
//!
//! Only plain paths are accepted — no wildcards, filters or recursive
//! descent — so a path names at most one field, and what is left alone is
//! never a guess.

use serde_json::{Map, Value};

/// A parsed path: one token per step (an object key, or an array index
/// written in decimal).
pub type Tokens = Vec<String>;

/// Parses an RFC 6901 JSON pointer (`~1` is `/`, `~0` is `~`). The empty
/// pointer (the whole object) is refused: ignoring everything is not a field.
pub fn parse_pointer(text: &str) -> Result<Tokens, String> {
    let Some(rest) = text.strip_prefix('/') else {
        return Err("a JSON pointer starts with '/', as in /spec/replicas".into());
    };
    rest.split('/')
        .map(|token| {
            if token.is_empty() {
                return Err("a JSON pointer has no empty steps".to_string());
            }
            let unescaped = token.replace("~1", "/").replace("~0", "~");
            if token.replace("~1", "").replace("~0", "").contains('~') {
                return Err(format!("{token:?}: '~' must be followed by 0 or 1"));
            }
            Ok(unescaped)
        })
        .collect()
}

/// Parses a plain JSONPath: dot-separated keys (a leading `$` or `.` is
/// optional), each followed by any number of `[n]` indexes or `['key']`
/// (`["key"]`) steps for keys holding dots or slashes.
pub fn parse_json_path(text: &str) -> Result<Tokens, String> {
    let body = text.strip_prefix('$').unwrap_or(text);
    let body = body.strip_prefix('.').unwrap_or(body);
    if body.is_empty() {
        return Err("the path names no field".into());
    }
    if body.contains("..") || body.contains('*') || body.contains("?(") || body.contains('@') {
        return Err("only plain paths are supported: no wildcards, filters or recursive descent".into());
    }
    let mut tokens = Vec::new();
    let mut chars = body.chars().peekable();
    let mut key = String::new();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if key.is_empty() && tokens.is_empty() {
                    return Err("empty step".into());
                }
                if !key.is_empty() {
                    tokens.push(std::mem::take(&mut key));
                }
                if chars.peek().is_none() {
                    return Err("the path ends with '.'".into());
                }
            }
            '[' => {
                if !key.is_empty() {
                    tokens.push(std::mem::take(&mut key));
                }
                let mut inside = String::new();
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == ']' {
                        closed = true;
                        break;
                    }
                    inside.push(c);
                }
                if !closed {
                    return Err("'[' without ']'".into());
                }
                tokens.push(bracket_token(&inside)?);
            }
            ']' => return Err("']' without '['".into()),
            c => key.push(c),
        }
    }
    if !key.is_empty() {
        tokens.push(key);
    }
    if tokens.is_empty() {
        return Err("the path names no field".into());
    }
    Ok(tokens)
}

/// The token of a `[...]` step: a quoted key or an array index.
fn bracket_token(inside: &str) -> Result<String, String> {
    let quoted = |q: char| inside.len() >= 2 && inside.starts_with(q) && inside.ends_with(q);
    if quoted('\'') || quoted('"') {
        let key = &inside[1..inside.len() - 1];
        if key.is_empty() {
            return Err("an empty key in brackets".into());
        }
        return Ok(key.to_string());
    }
    match inside.parse::<usize>() {
        Ok(_) => Ok(inside.to_string()),
        Err(_) => Err(format!("[{inside}]: a step in brackets is an index or a quoted key")),
    }
}

/// The tokens as a JSON pointer.
pub fn to_pointer(tokens: &[String]) -> String {
    tokens.iter().map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1"))).collect()
}

/// The value at `tokens`, if there is one.
pub fn get<'a>(document: &'a Value, tokens: &[String]) -> Option<&'a Value> {
    tokens.iter().try_fold(document, |value, token| match value {
        Value::Object(map) => map.get(token),
        Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// Sets the value at `tokens`, creating the objects on the way; returns
/// whether it could (an array index past the end, or a step through a
/// scalar, cannot be written).
pub fn set(document: &mut Value, tokens: &[String], new: Value) -> bool {
    let Some((last, parents)) = tokens.split_last() else { return false };
    let mut value = document;
    for token in parents {
        value = match value {
            Value::Object(map) => map.entry(token.clone()).or_insert_with(|| Value::Object(Map::new())),
            Value::Array(items) => match token.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                Some(item) => item,
                None => return false,
            },
            _ => return false,
        };
    }
    match value {
        Value::Object(map) => {
            map.insert(last.clone(), new);
            true
        }
        Value::Array(items) => match last.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
            Some(item) => {
                *item = new;
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// Removes the field at `tokens` from an object (array items are left:
/// removing one would renumber the others).
pub fn remove(document: &mut Value, tokens: &[String]) {
    let Some((last, parents)) = tokens.split_last() else { return };
    let mut value = document;
    for token in parents {
        value = match value {
            Value::Object(map) => match map.get_mut(token) {
                Some(v) => v,
                None => return,
            },
            Value::Array(items) => match token.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    if let Value::Object(map) = value {
        map.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(parts: &[&str]) -> Tokens {
        parts.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn pointers_and_json_paths_parse_to_the_same_tokens() {
        assert_eq!(parse_pointer("/spec/replicas").unwrap(), t(&["spec", "replicas"]));
        assert_eq!(parse_pointer("/metadata/annotations/a~1b~0c").unwrap(), t(&["metadata", "annotations", "a/b~c"]));
        assert_eq!(parse_json_path(".spec.replicas").unwrap(), t(&["spec", "replicas"]));
        assert_eq!(parse_json_path("$.spec.replicas").unwrap(), t(&["spec", "replicas"]));
        assert_eq!(parse_json_path("spec.replicas").unwrap(), t(&["spec", "replicas"]));
        assert_eq!(
            parse_json_path(".metadata.annotations['example.com/owner']").unwrap(),
            t(&["metadata", "annotations", "example.com/owner"])
        );
        assert_eq!(parse_json_path(".spec.ports[0].port").unwrap(), t(&["spec", "ports", "0", "port"]));
        assert_eq!(to_pointer(&t(&["metadata", "annotations", "a/b~c"])), "/metadata/annotations/a~1b~0c");
    }

    #[test]
    fn what_is_not_a_plain_path_is_refused_with_why() {
        assert!(parse_pointer("spec/replicas").unwrap_err().contains("starts with '/'"));
        assert!(parse_pointer("/").unwrap_err().contains("empty steps"));
        assert!(parse_pointer("/a~2").unwrap_err().contains("'~'"));
        for bad in ["", ".", "$", ".spec..replicas", ".spec.containers[*].image", ".items[?(@.x)]"] {
            assert!(parse_json_path(bad).is_err(), "{bad:?}");
        }
        assert!(parse_json_path(".spec[x]").unwrap_err().contains("index or a quoted key"));
        assert!(parse_json_path(".spec[0").unwrap_err().contains("without ']'"));
        assert!(parse_json_path(".spec.").unwrap_err().contains("ends with"));
    }

    #[test]
    fn get_set_and_remove() {
        let mut doc = json!({"spec": {"replicas": 3, "ports": [{"port": 80}]}});
        assert_eq!(get(&doc, &t(&["spec", "replicas"])), Some(&json!(3)));
        assert_eq!(get(&doc, &t(&["spec", "ports", "0", "port"])), Some(&json!(80)));
        assert_eq!(get(&doc, &t(&["spec", "missing"])), None);
        assert!(set(&mut doc, &t(&["spec", "replicas"]), json!(5)));
        assert!(set(&mut doc, &t(&["metadata", "labels", "a"]), json!("b")), "objects are created on the way");
        assert!(set(&mut doc, &t(&["spec", "ports", "0", "port"]), json!(81)));
        assert!(!set(&mut doc, &t(&["spec", "ports", "3", "port"]), json!(1)), "past the end");
        assert!(!set(&mut doc, &t(&["spec", "replicas", "x"]), json!(1)), "through a scalar");
        assert_eq!(doc, json!({"spec": {"replicas": 5, "ports": [{"port": 81}]}, "metadata": {"labels": {"a": "b"}}}));
        remove(&mut doc, &t(&["metadata", "labels", "a"]));
        remove(&mut doc, &t(&["nothing", "here"]));
        assert_eq!(doc["metadata"], json!({"labels": {}}));
    }
}
