//! `ClusterResourceBinding` / `ResourceBinding`: the scheduler's output, one
//! per (placement, chosen cluster). Rollout moves it from `Scheduled` to
//! `Bound`; the scheduler marks it `Unscheduled` when the cluster is dropped.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conditions::Condition;
use crate::typed::{decode, encode};
use crate::validation::{quote, FieldError, ValidationError};
use crate::Object;

/// Kind of a ClusterResourcePlacement's bindings.
pub const CLUSTER_RESOURCE_BINDING: &str = "ClusterResourceBinding";
/// Kind of a ResourcePlacement's bindings.
pub const RESOURCE_BINDING: &str = "ResourceBinding";

/// Chosen by the scheduler, not yet rolled out to.
pub const STATE_SCHEDULED: &str = "Scheduled";
/// Rollout has bound the binding to a resource snapshot.
pub const STATE_BOUND: &str = "Bound";
/// The cluster is no longer chosen; the binding is being removed.
pub const STATE_UNSCHEDULED: &str = "Unscheduled";

/// Annotation a staged update run puts on a binding it rolls out: the
/// scheduling policy snapshot the binding was under then. When the
/// scheduler later moves the binding to a new policy snapshot, its rollout
/// is undecided again until a run reaches it (SU-13; KubeFleet's binding
/// conditions go stale the same way).
pub const ROLLED_OUT_UNDER_ANNOTATION: &str = "kubernetes-fleet.io/rolled-out-under-policy-snapshot";

/// Whether a Bound binding's rollout by a staged update run predates its
/// current scheduling policy snapshot ([`ROLLED_OUT_UNDER_ANNOTATION`]). A
/// binding without the annotation was not rolled out by a run of this
/// kind and is not stale. `spec` is the binding's, already decoded.
pub fn rollout_predates_policy(binding: &Object, spec: &BindingSpec) -> bool {
    binding
        .metadata
        .annotations
        .get(ROLLED_OUT_UNDER_ANNOTATION)
        .is_some_and(|under| *under != spec.scheduling_policy_snapshot_name)
}
const STATES: &[&str] = &[STATE_SCHEDULED, STATE_BOUND, STATE_UNSCHEDULED];

/// A cluster's two scheduling scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterScore {
    /// Sum of the preferred affinity terms' contributions.
    #[serde(default)]
    pub affinity_score: i64,
    /// Topology spread score: `priorityScore` in KubeFleet's API (its Go
    /// field is `TopologySpreadScore`; that spelling is read too).
    #[serde(default, rename = "priorityScore", alias = "topologySpreadScore")]
    pub topology_spread_score: i64,
}

/// Why a cluster was (or was not) chosen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecision {
    pub cluster_name: String,
    #[serde(default)]
    pub selected: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_score: Option<ClusterScore>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// `spec` of a binding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BindingSpec {
    /// `Scheduled`, `Bound` or `Unscheduled`.
    #[serde(default)]
    pub state: String,
    /// The resource snapshot rolled out (set by rollout).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_snapshot_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_override_snapshots: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_override_snapshots: Vec<String>,
    /// The policy snapshot this decision was made under.
    #[serde(default)]
    pub scheduling_policy_snapshot_name: String,
    #[serde(default)]
    pub target_cluster: String,
    #[serde(default)]
    pub cluster_decision: ClusterDecision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_strategy: Option<Value>,
}

impl BindingSpec {
    /// Whether the binding still places resources (Scheduled or Bound).
    pub fn is_active(&self) -> bool {
        self.state == STATE_SCHEDULED || self.state == STATE_BOUND
    }
}

/// `status` of a binding (filled by rollout and work status; open-ended).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

/// The binding kind of a placement kind.
pub fn binding_kind(placement_kind: &str) -> &'static str {
    if placement_kind == crate::placement::RESOURCE_PLACEMENT {
        RESOURCE_BINDING
    } else {
        CLUSTER_RESOURCE_BINDING
    }
}

/// Whether `object` is a binding kind.
pub fn is_binding(object: &Object) -> bool {
    object.group() == crate::kinds::FLEET_PLACEMENT_GROUP
        && matches!(object.kind.as_str(), CLUSTER_RESOURCE_BINDING | RESOURCE_BINDING)
}

/// The spec of a stored binding (admission guarantees it decodes).
pub fn spec_of(object: &Object) -> BindingSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// The status of a stored binding.
pub fn status_of(object: &Object) -> BindingStatus {
    object.status().and_then(|s| decode(s, "status").ok()).unwrap_or_default()
}

/// Writes a typed spec into the object.
pub fn set_spec(object: &mut Object, spec: &BindingSpec) {
    object.rest.insert("spec".into(), encode(spec));
}

/// Validates a binding written by a user or controller: known fields, a
/// known state and a target cluster.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let raw = object.spec().cloned().unwrap_or(Value::Object(Default::default()));
    let spec: BindingSpec = match decode(&raw, "spec") {
        Ok(s) => s,
        Err(e) => return ValidationError::check(&object.kind, &object.metadata.name, vec![e]),
    };
    let mut errors = Vec::new();
    if !STATES.contains(&spec.state.as_str()) {
        errors.push(FieldError::not_supported("spec.state", quote(&spec.state), STATES));
    }
    if spec.target_cluster.is_empty() {
        errors.push(FieldError::required("spec.targetCluster", "the cluster this binding places on"));
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(spec: Value) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
            "metadata": {"name": "web-east-1"}, "spec": spec
        }))
        .unwrap()
    }

    #[test]
    fn writes_kubefleet_priority_score_and_checks_state() {
        let mut b = binding(json!({
            "state": "Scheduled", "targetCluster": "east-1", "schedulingPolicySnapshotName": "web-0",
            "clusterDecision": {"clusterName": "east-1", "selected": true,
                "clusterScore": {"affinityScore": 3, "priorityScore": -1}, "reason": "picked"}
        }));
        prepare(&mut b).unwrap();
        let spec = spec_of(&b);
        assert_eq!(
            spec.cluster_decision.cluster_score,
            Some(ClusterScore { affinity_score: 3, topology_spread_score: -1 })
        );
        // Written as KubeFleet's API spells it; the Go field's name is read too.
        let score = ClusterScore { affinity_score: 3, topology_spread_score: -1 };
        assert_eq!(serde_json::to_value(score).unwrap(), json!({"affinityScore": 3, "priorityScore": -1}));
        let read: ClusterScore = serde_json::from_value(json!({"topologySpreadScore": 2})).unwrap();
        assert_eq!(read.topology_spread_score, 2);
        assert!(spec.is_active());
        let mut bad = binding(json!({"state": "Gone"}));
        let e = prepare(&mut bad).unwrap_err().to_string();
        assert!(e.contains("spec.state: Unsupported value: \"Gone\""), "{e}");
        assert!(e.contains("spec.targetCluster: Required value"), "{e}");
    }
}
