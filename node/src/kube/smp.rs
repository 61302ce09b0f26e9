//! Strategic merge patch for the built-in Kubernetes kinds (what `kubectl
//! apply` and `kubectl edit` send for them): maps merge, `null` deletes,
//! lists of the common keyed kinds (containers, env, volumes, ports, ...)
//! merge by their key, `$patch: delete|replace`, `$retainKeys`,
//! `$deleteFromPrimitiveList/…` and `$setElementOrder/…` (order is not
//! kept: lists end in stored order, new elements last). Other lists are
//! replaced, as Kubernetes does for lists without a patch strategy.

use serde_json::{Map, Value};

/// The merge key of a keyed list, by field name.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let has = |key: &str| items.iter().all(|i| i.get(key).is_some());
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => Some("name"),
        "volumeMounts" | "volumeDevices" => Some("mountPath"),
        "ports" if has("containerPort") => Some("containerPort"),
        "ports" => Some("port"),
        "ownerReferences" => Some("uid"),
        "conditions" => Some("type"),
        "hostAliases" => Some("ip"),
        "topologySpreadConstraints" => Some("topologyKey"),
        _ => None,
    }
}

/// Lists of primitives that merge as sets.
fn merges_as_set(field: &str) -> bool {
    field == "finalizers"
}

/// Applies a strategic merge patch to `target`.
pub fn apply(target: &mut Value, patch: &Value) -> Result<(), String> {
    merge_object(target, patch, "")
}

fn merge_object(target: &mut Value, patch: &Value, path: &str) -> Result<(), String> {
    let Some(patch) = patch.as_object() else {
        *target = patch.clone();
        return Ok(());
    };
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = Value::Object(without_directives(patch));
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(format!("{path}: $patch: Unsupported value: {other:?}: merge, replace or delete")),
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let mut retain: Option<Vec<String>> = None;
    for (key, value) in patch {
        if key == "$patch" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if key == "$retainKeys" {
            retain = Some(value.as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect());
            continue;
        }
        let Some(map) = target.as_object_mut() else { continue };
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let remove: Vec<&Value> = value.as_array().into_iter().flatten().collect();
            if let Some(Value::Array(items)) = map.get_mut(field) {
                items.retain(|i| !remove.contains(&i));
            }
            continue;
        }
        let child = format!("{path}.{key}");
        match value {
            Value::Null => {
                map.remove(key);
            }
            Value::Object(_) => {
                let slot = map.entry(key.clone()).or_insert(Value::Null);
                merge_object(slot, value, &child)?;
                if slot.is_null() {
                    map.remove(key);
                }
            }
            Value::Array(items) => {
                let slot = map.entry(key.clone()).or_insert(Value::Array(Vec::new()));
                merge_list(slot, key, items, &child)?;
            }
            other => {
                map.insert(key.clone(), other.clone());
            }
        }
    }
    if let (Some(keys), Some(map)) = (retain, target.as_object_mut()) {
        map.retain(|k, _| keys.contains(k));
    }
    Ok(())
}

fn without_directives(patch: &Map<String, Value>) -> Map<String, Value> {
    patch.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn merge_list(target: &mut Value, field: &str, items: &[Value], path: &str) -> Result<(), String> {
    if merges_as_set(field) {
        let existing = target.as_array().cloned().unwrap_or_default();
        let mut merged = existing;
        for item in items {
            if !merged.contains(item) {
                merged.push(item.clone());
            }
        }
        *target = Value::Array(merged);
        return Ok(());
    }
    let replace = items.iter().any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"));
    let objects = items.iter().all(Value::is_object);
    let key = if objects && !replace { merge_key(field, items) } else { None };
    let Some(key) = key else {
        *target = Value::Array(items.iter().filter(|i| i.get("$patch").is_none()).cloned().collect());
        return Ok(());
    };
    let mut merged = target.as_array().cloned().unwrap_or_default();
    for item in items {
        let id = item.get(key);
        let position = merged.iter().position(|m| m.get(key) == id);
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                merged.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => {
                merge_object(&mut merged[i], item, &format!("{path}[{key}={}]", id.unwrap_or(&Value::Null)))?
            }
            (None, false) => {
                let mut fresh = Value::Object(Map::new());
                merge_object(&mut fresh, item, path)?;
                merged.push(fresh);
            }
        }
    }
    *target = Value::Array(merged);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_merge_by_name_and_other_lists_replace() {
        let mut deploy = json!({"spec": {"template": {"spec": {
            "containers": [{"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]}, {"name": "side", "image": "busybox"}],
            "tolerations": [{"key": "a"}]
        }}}});
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "side"}],
            "containers": [{"name": "web", "image": "nginx:2", "env": [{"name": "B", "value": "2"}]}, {"name": "side", "$patch": "delete"}],
            "tolerations": [{"key": "b"}]
        }}}});
        apply(&mut deploy, &patch).unwrap();
        let spec = &deploy["spec"]["template"]["spec"];
        assert_eq!(spec["containers"].as_array().unwrap().len(), 1);
        assert_eq!(spec["containers"][0]["image"], "nginx:2");
        assert_eq!(spec["containers"][0]["env"].as_array().unwrap().len(), 2, "env merges by name");
        assert_eq!(spec["tolerations"], json!([{"key": "b"}]));
    }

    #[test]
    fn nulls_delete_and_directives_apply() {
        let mut cm =
            json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]}, "data": {"k": "v", "gone": "1"}});
        let patch =
            json!({"metadata": {"labels": {"b": null}, "finalizers": ["y"]}, "data": {"gone": null, "new": "2"}});
        apply(&mut cm, &patch).unwrap();
        assert_eq!(cm["metadata"]["labels"], json!({"a": "1"}));
        assert_eq!(cm["metadata"]["finalizers"], json!(["x", "y"]));
        assert_eq!(cm["data"], json!({"k": "v", "new": "2"}));
        let mut spec = json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}});
        apply(&mut spec, &json!({"strategy": {"$retainKeys": ["type"], "type": "Recreate"}})).unwrap();
        assert_eq!(spec, json!({"strategy": {"type": "Recreate"}}));
        assert!(apply(&mut spec, &json!({"strategy": {"$patch": "explode"}})).is_err());
    }
}
