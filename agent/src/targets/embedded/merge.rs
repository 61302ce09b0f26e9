//! The three-way merge of an apply: the new manifest, the manifest applied
//! last time, and the live object.
//!
//! - a field the new manifest sets takes its value (objects are merged key by
//!   key, recursively; lists and scalars are replaced whole; `null` removes);
//! - a field the last manifest set and the new one does not is removed;
//! - any other live field (set by the server, such as a Service's
//!   `clusterIP`, or by someone else) is kept.
//!
//! This is `kubectl apply`'s rule (without strategic list merging) and also
//! what server-side apply does for a single field manager, which is all the
//! embedded target has; so both apply modes use it.

use serde_json::{Map, Value};

/// Merges `new` into `live`, removing what `last` set and `new` no longer does.
pub(crate) fn three_way(live: &mut Map<String, Value>, last: &Map<String, Value>, new: &Map<String, Value>) {
    for key in last.keys() {
        if !new.contains_key(key) {
            live.remove(key);
        }
    }
    let empty = Map::new();
    for (key, value) in new {
        match value {
            Value::Null => {
                live.remove(key);
            }
            Value::Object(new_child) => {
                let last_child = match last.get(key) {
                    Some(Value::Object(m)) => m,
                    _ => &empty,
                };
                match live.get_mut(key) {
                    Some(Value::Object(live_child)) => three_way(live_child, last_child, new_child),
                    _ => {
                        let mut fresh = Map::new();
                        three_way(&mut fresh, &empty, new_child);
                        live.insert(key.clone(), Value::Object(fresh));
                    }
                }
            }
            other => {
                live.insert(key.clone(), other.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    fn merge(live: Value, last: Value, new: Value) -> Value {
        let mut live = map(live);
        three_way(&mut live, &map(last), &map(new));
        Value::Object(live)
    }

    #[test]
    fn sets_new_fields_keeps_server_fields_removes_dropped_ones() {
        let live = json!({"spec": {"clusterIP": "10.96.0.5", "ports": [{"port": 80}], "selector": {"app": "a"}}});
        let last = json!({"spec": {"ports": [{"port": 80}], "selector": {"app": "a"}}});
        let new = json!({"spec": {"ports": [{"port": 8080}]}});
        assert_eq!(merge(live, last, new), json!({"spec": {"clusterIP": "10.96.0.5", "ports": [{"port": 8080}]}}));
    }

    #[test]
    fn null_removes_and_type_changes_replace() {
        let live = json!({"data": {"a": "1", "b": "2"}, "x": 1});
        let new = json!({"data": {"a": null}, "x": {"y": {"z": null, "w": 2}}});
        assert_eq!(merge(live, json!({}), new), json!({"data": {"b": "2"}, "x": {"y": {"w": 2}}}));
    }

    #[test]
    fn same_manifest_twice_is_a_fixed_point() {
        let new = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 2}});
        let once = merge(json!({"metadata": {"uid": "u"}, "spec": {"replicas": 1}}), json!({}), new.clone());
        let twice = merge(once.clone(), new.clone(), new);
        assert_eq!(once, twice);
    }
}
