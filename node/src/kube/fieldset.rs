//! Field ownership for server-side apply: the set of leaf field paths a
//! manager set, in and out of Kubernetes' `managedFields` (`FieldsV1`).
//! Lists are atomic (owned as a whole), maps are owned per key.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

/// A field path, e.g. `["spec", "policy", "placementType"]`.
pub type Path = Vec<String>;

/// Metadata fields a manager can own (the rest are the server's or identity).
const OWNED_METADATA: &[&str] = &["labels", "annotations", "ownerReferences", "finalizers"];

/// The leaf paths `value` sets (an object's identity and status excluded).
pub fn leaves(value: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    let Some(root) = value.as_object() else { return out };
    for (key, child) in root {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for field in OWNED_METADATA {
                    if let Some(v) = child.get(*field) {
                        walk(v, vec!["metadata".into(), field.to_string()], &mut out);
                    }
                }
            }
            _ => walk(child, vec![key.clone()], &mut out),
        }
    }
    out
}

fn walk(value: &Value, path: Path, out: &mut BTreeSet<Path>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let mut next = path.clone();
                next.push(key.clone());
                walk(child, next, out);
            }
        }
        _ => {
            out.insert(path);
        }
    }
}

/// The value at `path`, if any.
pub fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key.as_str()))
}

/// Removes the field at `path` (and maps it leaves empty, up to the top level).
pub fn remove(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cursor = &mut *value;
    for key in parents {
        match cursor.get_mut(key.as_str()) {
            Some(next) => cursor = next,
            None => return,
        }
    }
    if let Some(map) = cursor.as_object_mut() {
        map.remove(last);
    }
    if parents.len() > 1 {
        let parent_empty = get(value, parents).is_some_and(|p| p.as_object().is_some_and(Map::is_empty));
        if parent_empty {
            remove(value, parents);
        }
    }
}

/// Merges `patch` into `target`: maps by key, anything else replaced.
pub fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (key, value) in p {
                match t.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => merge(existing, value),
                    _ => {
                        t.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

/// Whether two paths overlap (one is the other or contains it).
pub fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// `.spec.policy.placementType`.
pub fn dotted(path: &[String]) -> String {
    path.iter().map(|p| format!(".{p}")).collect()
}

/// A set as `FieldsV1` (`{"f:spec":{"f:x":{}}}`).
pub fn to_fields_v1(paths: &BTreeSet<Path>) -> Value {
    let mut root = Value::Object(Map::new());
    for path in paths {
        let mut cursor = &mut root;
        for key in path {
            let map = match cursor.as_object_mut() {
                Some(m) => m,
                None => break,
            };
            cursor = map.entry(format!("f:{key}")).or_insert_with(|| json!({}));
        }
    }
    root
}

/// The set a `FieldsV1` value holds (entries other than `f:` are ignored).
pub fn from_fields_v1(fields: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    collect(fields, Vec::new(), &mut out);
    out
}

fn collect(value: &Value, path: Path, out: &mut BTreeSet<Path>) {
    let children: Vec<(&String, &Value)> =
        value.as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("f:")).collect();
    if children.is_empty() {
        if !path.is_empty() {
            out.insert(path);
        }
        return;
    }
    for (key, child) in children {
        let mut next = path.clone();
        next.push(key.trim_start_matches("f:").to_string());
        collect(child, next, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_round_trip_through_fields_v1() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}},
            "data": {"k": "v", "l": "w"}, "status": {"s": 1}});
        let set = leaves(&object);
        assert_eq!(set.len(), 3);
        assert!(set.contains(&vec!["metadata".to_string(), "labels".into(), "x".into()]));
        let v1 = to_fields_v1(&set);
        assert_eq!(v1["f:data"]["f:k"], json!({}));
        assert_eq!(from_fields_v1(&v1), set);
    }

    #[test]
    fn removal_prunes_emptied_maps() {
        let mut object = json!({"spec": {"a": {"b": 1}, "c": 2}});
        remove(&mut object, &["spec".to_string(), "a".into(), "b".into()]);
        assert_eq!(object, json!({"spec": {"c": 2}}));
        let mut target = json!({"spec": {"a": 1, "m": {"x": 1}}});
        merge(&mut target, &json!({"spec": {"m": {"y": 2}, "l": [1]}}));
        assert_eq!(target, json!({"spec": {"a": 1, "m": {"x": 1, "y": 2}, "l": [1]}}));
        assert!(overlaps(&["spec".to_string()], &["spec".to_string(), "a".into()]));
        assert_eq!(dotted(&["spec".to_string(), "a".into()]), ".spec.a");
    }
}
