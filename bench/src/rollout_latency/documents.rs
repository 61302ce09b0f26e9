//! The documents a rollout-latency run applies: its PickAll placement and
//! the ConfigMap the placement carries.

use serde_json::{json, Value};

use super::CONFIG_MAP;
use crate::placement_latency::placement_selecting;

/// The PickAll placement of the benchmark: selects `namespace`, rolls out to
/// all clusters at once (`maxUnavailable: 100%`, `unavailablePeriodSeconds: 0`).
pub fn placement_document(name: &str, namespace: &str, run: &str) -> Value {
    let mut document = placement_selecting(name, namespace, run, json!({"placementType": "PickAll"}));
    document["spec"]["strategy"] = json!({
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "100%", "unavailablePeriodSeconds": 0}
    });
    document
}

/// The ConfigMap the placements carry, with `value` as its data.
pub fn config_map_document(namespace: &str, value: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": namespace},
        "data": {"value": value}
    })
}

/// Namespaces the hub never places (their contents would roll out nothing).
pub fn is_reserved_namespace(name: &str) -> bool {
    name == "default" || name.starts_with("kube-") || name.starts_with("fleet-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_picks_all_and_rolls_out_at_once() {
        let doc = placement_document("p", "ns", "r");
        assert_eq!(doc["spec"]["policy"]["placementType"], "PickAll");
        assert_eq!(doc["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], "100%");
        assert_eq!(doc["spec"]["strategy"]["rollingUpdate"]["unavailablePeriodSeconds"], 0);
        assert_eq!(doc["spec"]["resourceSelectors"][0]["name"], "ns");
        assert_eq!(config_map_document("ns", "v")["data"]["value"], "v");
        assert!(is_reserved_namespace("fleet-bench-rollout") && is_reserved_namespace("default"));
        assert!(!is_reserved_namespace("bench-rollout"));
    }
}
