//! The record of what a `ClientSideApply` Work last applied, kept on the
//! member object as KubeFleet keeps it: the annotation
//! [`LAST_APPLIED_ANNOTATION`] holds the applied configuration as JSON.
//!
//! Fleet does not need it to merge (both targets know what Fleet set last
//! time: the API server's managed fields, the embedded target's own
//! record), but a cluster moved between KubeFleet and Fleet does: KubeFleet's
//! three-way merge reads it to remove the fields a manifest stopped setting.
//! Like KubeFleet, the record is left empty when it would take the object's
//! annotations past Kubernetes' limit, and server-side apply alone then
//! decides (KubeFleet's "fall back to server-side apply").

use fleet_api::Object;

/// KubeFleet's annotation for the last applied configuration.
pub const LAST_APPLIED_ANNOTATION: &str = "kubernetes-fleet.io/last-applied-configuration";

/// Kubernetes' limit on an object's annotations: the sum of the lengths of
/// their keys and values.
pub const ANNOTATIONS_SIZE_LIMIT: usize = 256 * 1024;

/// Records `desired` (the apply configuration) in its own
/// [`LAST_APPLIED_ANNOTATION`]; the record is empty when it would not fit
/// within [`ANNOTATIONS_SIZE_LIMIT`]. Returns whether it was recorded.
pub fn record(desired: &mut Object) -> bool {
    desired.metadata.annotations.remove(LAST_APPLIED_ANNOTATION);
    let Ok(configuration) = serde_json::to_string(&*desired) else {
        // An Object always encodes; were it not to, an empty record is the
        // size fallback's answer too.
        desired.metadata.annotations.insert(LAST_APPLIED_ANNOTATION.to_string(), String::new());
        return false;
    };
    let others: usize = desired.metadata.annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
    let fits = others + LAST_APPLIED_ANNOTATION.len() + configuration.len() <= ANNOTATIONS_SIZE_LIMIT;
    let value = if fits { configuration } else { String::new() };
    desired.metadata.annotations.insert(LAST_APPLIED_ANNOTATION.to_string(), value);
    fits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(value: &str) -> Object {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "annotations": {"a": "b"}},
            "data": {"k": value},
        }))
        .unwrap()
    }

    #[test]
    fn a_small_object_records_itself_without_a_nested_record() {
        let mut desired = config_map("v");
        desired.metadata.annotations.insert(LAST_APPLIED_ANNOTATION.into(), "stale".into());
        assert!(record(&mut desired));
        let recorded: serde_json::Value =
            serde_json::from_str(&desired.metadata.annotations[LAST_APPLIED_ANNOTATION]).unwrap();
        assert_eq!(recorded["data"]["k"], "v");
        assert_eq!(recorded["metadata"]["annotations"], serde_json::json!({"a": "b"}), "no record inside the record");
    }

    #[test]
    fn an_object_past_the_annotation_limit_records_nothing() {
        let mut desired = config_map(&"x".repeat(ANNOTATIONS_SIZE_LIMIT));
        assert!(!record(&mut desired));
        assert_eq!(desired.metadata.annotations[LAST_APPLIED_ANNOTATION], "");
        assert_eq!(desired.metadata.annotations["a"], "b");
    }

    #[test]
    fn the_limit_counts_every_annotation() {
        // Small enough data, but the other annotations use up the room.
        let mut desired = config_map("v");
        desired.metadata.annotations.insert("big".into(), "y".repeat(ANNOTATIONS_SIZE_LIMIT - 100));
        assert!(!record(&mut desired));
    }
}
