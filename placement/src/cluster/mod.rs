//! The scheduler's view of a MemberCluster: its name, labels, taints, its
//! properties as exact quantities (and as text: OCM's claims), and whether
//! (and since when not) it may receive new placements.
//!
//! The scheduler never reads a MemberCluster object directly: the node builds
//! one [`ClusterInfo`] per MemberCluster with [`ClusterInfo::from_member`], so
//! the scheduler's rules can be tested on plain values.

mod compact;

use crate::time::unix_seconds;
use fleet_api::conditions::find;
use fleet_api::member::{self, Taint, CONDITION_HEALTHY, CONDITION_JOINED};
use fleet_api::placement::canonical_property_name;
use fleet_api::quantity::Quantity;
use fleet_api::Object;

pub use compact::{Labels, Properties};

/// Prefix of the properties read from `status.resourceUsage`.
pub const RESOURCE_PROPERTY_PREFIX: &str = "resources.kubernetes-fleet.io/";

/// Why a leaving (deleted) cluster gets no new placement.
pub const REASON_LEAVING: &str = "cluster is leaving";
/// Why a cluster that has not joined yet gets no placement.
pub const REASON_NOT_JOINED: &str = "cluster has not joined";

/// The scheduler's view of one MemberCluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    /// The MemberCluster's name (the binding's `targetCluster`).
    pub name: String,
    /// The MemberCluster's labels, matched by label selectors and topology keys.
    pub labels: Labels,
    /// `spec.taints`: the cluster gets placements only from policies tolerating them all.
    pub taints: Vec<Taint>,
    /// Canonical property name -> exact value. Includes status.properties (parsed as Quantity; unparsable
    /// values skipped) and `resources.kubernetes-fleet.io/{total,allocatable,available}-{cpu,memory}` from
    /// status.resourceUsage {capacity, allocatable, available}.
    pub properties: Properties,
    /// None = eligible for new placements; Some(why) = not eligible, e.g. "cluster has not joined",
    /// "cluster is not healthy (HeartbeatTimeout)", "cluster is leaving".
    pub ineligible: Option<String>,
    /// true when the MemberCluster is being deleted (deletionTimestamp set): it is treated like a cluster that left.
    pub leaving: bool,
    /// status.properties as written (canonical names, any text): OCM's cluster claims, which claim selectors and
    /// claim topology keys read as strings (`region: east`), unlike `properties`, which keeps quantities only.
    pub claims: Labels,
    /// When an ineligible cluster (not leaving) stopped being available, in Unix seconds: the last transition of
    /// its `Healthy` condition, or of `Joined` when it has not joined. OCM's `unreachable` taint counts its
    /// `tolerationSeconds` from here. None when eligible or when no time is known.
    pub unavailable_since: Option<i64>,
    /// What the cluster's agent reports of its namespaces (KubeFleet's
    /// namespace collection, opt-in on the agent).
    pub namespaces: NamespaceInventory,
}

/// A cluster's namespaces as its agent reports them, for ResourcePlacements'
/// namespace affinity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NamespaceInventory {
    /// The agent does not collect namespaces (no `NamespaceCollectionSucceeded`
    /// condition): the cluster is not filtered by them, as in KubeFleet.
    #[default]
    NotCollected,
    /// The agent collects them but no list has arrived.
    Unavailable,
    /// `status.namespaces`' names, sorted.
    Listed(Vec<String>),
}

impl ClusterInfo {
    /// Builds the scheduler's view of a stored MemberCluster.
    ///
    /// Eligible = `Joined` condition True AND `Healthy` condition True AND not
    /// leaving. The first failing check gives the reason, in that order:
    /// leaving, not joined, not healthy (with the condition's reason when it
    /// has one).
    pub fn from_member(mc: &Object) -> ClusterInfo {
        let spec = member::spec_of(mc);
        let status = member::status_of(mc);
        let leaving = mc.metadata.deletion_timestamp.is_some();

        let mut properties: Vec<(String, Quantity)> = Vec::new();
        let mut claims: Vec<(&str, &str)> = Vec::new();
        for (name, value) in &status.properties {
            claims.push((canonical_property_name(name), &value.value));
            if let Ok(q) = Quantity::parse(&value.value) {
                properties.push((canonical_property_name(name).to_string(), q));
            }
        }
        if let Some(usage) = &status.resource_usage {
            let families =
                [("total", &usage.capacity), ("allocatable", &usage.allocatable), ("available", &usage.available)];
            for (family, values) in families {
                for resource in ["cpu", "memory"] {
                    if let Some(q) = values.get(resource).and_then(|v| Quantity::parse(v).ok()) {
                        properties.push((format!("{RESOURCE_PROPERTY_PREFIX}{family}-{resource}"), q));
                    }
                }
            }
        }

        let joined = find(&status.conditions, CONDITION_JOINED);
        let healthy = find(&status.conditions, CONDITION_HEALTHY);
        let ineligible = if leaving {
            Some(REASON_LEAVING.to_string())
        } else if !joined.is_some_and(|c| c.is_true()) {
            Some(REASON_NOT_JOINED.to_string())
        } else {
            match healthy {
                Some(c) if c.is_true() => None,
                Some(c) if !c.reason.is_empty() => Some(format!("cluster is not healthy ({})", c.reason)),
                _ => Some("cluster is not healthy".to_string()),
            }
        };

        let unavailable_since = match (&ineligible, joined) {
            (None, _) => None,
            _ if leaving => None,
            (Some(_), Some(j)) if j.is_true() => healthy.and_then(|c| unix_seconds(&c.last_transition_time)),
            (Some(_), j) => j.and_then(|c| unix_seconds(&c.last_transition_time)),
        };
        ClusterInfo {
            name: mc.metadata.name.clone(),
            labels: Labels::from(&mc.metadata.labels),
            taints: spec.taints,
            properties: properties.into_iter().collect(),
            ineligible,
            leaving,
            claims: claims.into_iter().collect(),
            unavailable_since,
            namespaces: match (find(&status.conditions, member::CONDITION_NAMESPACES), status.namespaces) {
                (None, _) => NamespaceInventory::NotCollected,
                (Some(_), None) => NamespaceInventory::Unavailable,
                (Some(_), Some(names)) => NamespaceInventory::Listed(names.into_keys().collect()),
            },
        }
    }

    /// Whether the namespace exists on the cluster; `None` when its agent
    /// collects namespaces but has not reported them. Not asked of a
    /// cluster that does not collect them.
    pub fn has_namespace(&self, namespace: &str) -> Option<bool> {
        match &self.namespaces {
            NamespaceInventory::Listed(n) => Some(n.binary_search_by(|x| x.as_str().cmp(namespace)).is_ok()),
            NamespaceInventory::NotCollected | NamespaceInventory::Unavailable => None,
        }
    }

    /// Whether its agent collects namespaces at all.
    pub fn collects_namespaces(&self) -> bool {
        self.namespaces != NamespaceInventory::NotCollected
    }

    /// Why the cluster may not receive new placements, if so. A leaving
    /// cluster is never eligible, even when `ineligible` was left empty.
    pub fn ineligible_reason(&self) -> Option<&str> {
        match &self.ineligible {
            Some(why) => Some(why),
            None if self.leaving => Some(REASON_LEAVING),
            None => None,
        }
    }

    /// Whether the cluster may receive new placements.
    pub fn is_eligible(&self) -> bool {
        self.ineligible_reason().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(value: serde_json::Value) -> Object {
        serde_json::from_value(value).unwrap()
    }

    fn conditions(joined: &str, healthy: (&str, &str)) -> serde_json::Value {
        json!([
            {"type": "Joined", "status": joined, "reason": "Joined"},
            {"type": "Healthy", "status": healthy.0, "reason": healthy.1},
        ])
    }

    #[test]
    fn reads_labels_taints_properties_and_resource_usage() {
        let o = mc(json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": "east-1", "labels": {"region": "east"}},
            "spec": {"taints": [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]},
            "status": {
                "conditions": conditions("True", ("True", "HeartbeatReceived")),
                "properties": {
                    "kubernetes.azure.com/node-count": {"value": "3"},
                    "kubernetes.azure.com/per-cpu-core-cost": {"value": "0.045"},
                    "broken": {"value": "not a number"}
                },
                "resourceUsage": {"capacity": {"cpu": "12", "memory": "48Gi"}, "allocatable": {"cpu": "11"},
                    "available": {"cpu": "500m", "memory": "1Gi"}}
            }
        }));
        let c = ClusterInfo::from_member(&o);
        assert_eq!(c.name, "east-1");
        assert_eq!(c.labels.get("region"), Some("east"));
        assert_eq!(c.taints.len(), 1);
        assert!(c.is_eligible());
        assert!(!c.leaving);
        let p = |n: &str| c.properties.get(n);
        assert_eq!(p("kubernetes-fleet.io/node-count"), Some(Quantity::from_units(3)));
        assert_eq!(p("kubernetes.azure.com/per-cpu-core-cost"), Some(Quantity::parse("45m").unwrap()));
        assert_eq!(p("broken"), None);
        assert_eq!(p("resources.kubernetes-fleet.io/total-cpu"), Some(Quantity::from_units(12)));
        assert_eq!(p("resources.kubernetes-fleet.io/total-memory"), Some(Quantity::parse("48Gi").unwrap()));
        assert_eq!(p("resources.kubernetes-fleet.io/allocatable-cpu"), Some(Quantity::from_units(11)));
        assert_eq!(p("resources.kubernetes-fleet.io/allocatable-memory"), None);
        assert_eq!(p("resources.kubernetes-fleet.io/available-cpu"), Some(Quantity::parse("0.5").unwrap()));
        assert_eq!(p("resources.kubernetes-fleet.io/available-memory"), Some(Quantity::parse("1Gi").unwrap()));
        // Claims keep every property as text, under its canonical name.
        assert_eq!(c.claims.get("broken"), Some("not a number"));
        assert_eq!(c.claims.get("kubernetes-fleet.io/node-count"), Some("3"));
        assert_eq!(c.claims.get("resources.kubernetes-fleet.io/total-cpu"), None);
        assert_eq!(c.unavailable_since, None);
    }

    #[test]
    fn eligibility_needs_joined_healthy_and_not_leaving() {
        let base = |status: serde_json::Value, deleting: bool| {
            let mut o = mc(json!({
                "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
                "metadata": {"name": "c"}, "spec": {}, "status": status
            }));
            if deleting {
                o.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
            }
            ClusterInfo::from_member(&o)
        };
        let c = base(json!({}), false);
        assert_eq!(c.ineligible.as_deref(), Some("cluster has not joined"));
        let c = base(json!({"conditions": conditions("False", ("True", "x"))}), false);
        assert_eq!(c.ineligible.as_deref(), Some("cluster has not joined"));
        let c = base(json!({"conditions": conditions("True", ("Unknown", "HeartbeatTimeout"))}), false);
        assert_eq!(c.ineligible.as_deref(), Some("cluster is not healthy (HeartbeatTimeout)"));
        let lost = json!([
            {"type": "Joined", "status": "True", "lastTransitionTime": "2024-05-01T09:00:00Z"},
            {"type": "Healthy", "status": "Unknown", "lastTransitionTime": "2024-05-01T10:00:00Z"},
        ]);
        assert_eq!(base(json!({"conditions": lost}), false).unavailable_since, Some(1_714_557_600));
        let never = json!([{"type": "Joined", "status": "False", "lastTransitionTime": "2024-05-01T10:00:00Z"}]);
        assert_eq!(base(json!({"conditions": never}), false).unavailable_since, Some(1_714_557_600));
        let c = base(json!({"conditions": [{"type": "Joined", "status": "True"}]}), false);
        assert_eq!(c.ineligible.as_deref(), Some("cluster is not healthy"));
        let c = base(json!({"conditions": conditions("True", ("True", "ok"))}), true);
        assert_eq!(c.ineligible.as_deref(), Some("cluster is leaving"));
        assert!(c.leaving);
        let c = base(json!({"conditions": conditions("True", ("True", "ok"))}), false);
        assert_eq!(c.ineligible, None);
    }
}
