//! Server-side apply as the double does it: every field manager's last
//! applied configuration is kept; a field set by another manager to another
//! value is a conflict unless forced (forcing takes the field over); fields a
//! manager stops setting are removed unless someone else still sets them.
//! Objects merge key by key; lists and scalars are atomic (the real server
//! merges some lists by key, e.g. containers by name: not needed here).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A field path, e.g. `["spec", "replicas"]`.
pub type FieldPath = Vec<String>;

/// Fields that identify the object and are owned by nobody.
const IDENTITY: &[&[&str]] = &[&["apiVersion"], &["kind"], &["metadata", "name"], &["metadata", "namespace"]];

/// The leaf fields an apply configuration sets (identity fields excluded).
pub fn leaves(config: &Value) -> Vec<(FieldPath, Value)> {
    let mut out = Vec::new();
    collect(config, &mut Vec::new(), &mut out);
    out.retain(|(path, _)| !IDENTITY.iter().any(|id| path.iter().map(String::as_str).eq(id.iter().copied())));
    out
}

fn collect(value: &Value, path: &mut FieldPath, out: &mut Vec<(FieldPath, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                path.push(k.clone());
                collect(v, path, out);
                path.pop();
            }
        }
        other => out.push((path.clone(), other.clone())),
    }
}

/// The value at `path`, if any.
pub fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| v.get(k))
}

/// Sets `path` to `leaf`, creating objects on the way.
fn set(value: &mut Value, path: &[String], leaf: Value) {
    let Some((last, parents)) = path.split_last() else {
        *value = leaf;
        return;
    };
    let mut current = value;
    for key in parents {
        if !current.is_object() {
            *current = Value::Object(Map::new());
        }
        let Value::Object(map) = current else { return };
        current = map.entry(key.clone()).or_insert_with(|| Value::Object(Map::new()));
    }
    if let Value::Object(map) = current {
        map.insert(last.clone(), leaf);
    }
}

/// Removes `path`, and parents left empty by it.
fn remove(value: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else { return };
    let Value::Object(map) = value else { return };
    if rest.is_empty() {
        map.remove(first);
        return;
    }
    if let Some(child) = map.get_mut(first) {
        remove(child, rest);
        if child.as_object().is_some_and(Map::is_empty) {
            map.remove(first);
        }
    }
}

/// Whether `config` sets `path` (or a field under it).
fn sets(config: &Value, path: &[String]) -> bool {
    get(config, path).is_some()
}

/// A conflict: the field and the manager that owns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub manager: String,
    pub path: FieldPath,
}

/// Applies `config` as `manager` to `live` (the whole object), updating the
/// managers' configurations. Returns the conflicts instead when not forced.
pub fn apply(
    live: &mut Value,
    managers: &mut BTreeMap<String, Value>,
    manager: &str,
    config: &Value,
    force: bool,
) -> Result<(), Vec<Conflict>> {
    let new_leaves = leaves(config);
    let mut conflicts = Vec::new();
    for (path, value) in &new_leaves {
        for (other, other_config) in managers.iter() {
            if other != manager && sets(other_config, path) && get(live, path) != Some(value) {
                conflicts.push(Conflict { manager: other.clone(), path: path.clone() });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    // Forced: the other managers lose the fields taken over.
    for c in &conflicts {
        if let Some(other) = managers.get_mut(&c.manager) {
            remove(other, &c.path);
        }
    }
    // Fields this manager set before and sets no more go, unless someone else sets them.
    if let Some(previous) = managers.get(manager) {
        for (path, _) in leaves(previous) {
            let still_set = sets(config, &path);
            let set_by_others = managers.iter().any(|(m, c)| m != manager && sets(c, &path));
            if !still_set && !set_by_others {
                remove(live, &path);
            }
        }
    }
    for (path, value) in new_leaves {
        set(live, &path, value);
    }
    managers.insert(manager.to_string(), config.clone());
    Ok(())
}

/// `.spec.replicas` for conflict messages.
pub fn dotted(path: &[String]) -> String {
    path.iter().map(|p| format!(".{p}")).collect()
}
