//! OCM `Placement` (namespaced, `cluster.open-cluster-management.io`
//! v1beta1, v1alpha1 accepted): which clusters of the sets bound to its
//! namespace it chooses, how they are ranked, and how its decisions are
//! grouped. [`prepare`] validates, fills OCM's defaults and writes the spec
//! back; the scheduler lives in `fleet-placement`'s `ocm` module.

use crate::typed::{encode, spec_or_default, status_or_default};
use crate::validation::ValidationError;
use crate::Object;

mod spec;
mod status;
#[cfg(test)]
mod tests;
mod validate;

pub use spec::*;
pub use status::*;

/// The kind.
pub const KIND: &str = "Placement";

/// Prioritizer mode: the defaults (`Balance`, `Steady` at weight 1) count
/// unless overridden (the default mode).
pub const MODE_ADDITIVE: &str = "Additive";
/// Prioritizer mode: only the configured prioritizers count.
pub const MODE_EXACT: &str = "Exact";
/// Every prioritizer mode.
pub const MODES: &[&str] = &[MODE_ADDITIVE, MODE_EXACT];

/// Score coordinate type of a built-in prioritizer (the default).
pub const COORDINATE_BUILT_IN: &str = "BuiltIn";
/// Score coordinate type of an add-on score.
pub const COORDINATE_ADD_ON: &str = "AddOn";
/// Every score coordinate type.
pub const COORDINATE_TYPES: &[&str] = &[COORDINATE_BUILT_IN, COORDINATE_ADD_ON];

/// Built-in prioritizer: spreads decisions over clusters.
pub const PRIORITIZER_BALANCE: &str = "Balance";
/// Built-in prioritizer: favours the current decisions.
pub const PRIORITIZER_STEADY: &str = "Steady";
/// Built-in prioritizer: favours allocatable CPU.
pub const PRIORITIZER_ALLOCATABLE_CPU: &str = "ResourceAllocatableCPU";
/// Built-in prioritizer: favours allocatable memory.
pub const PRIORITIZER_ALLOCATABLE_MEMORY: &str = "ResourceAllocatableMemory";
/// Every built-in prioritizer.
pub const BUILT_IN_PRIORITIZERS: &[&str] =
    &[PRIORITIZER_BALANCE, PRIORITIZER_STEADY, PRIORITIZER_ALLOCATABLE_CPU, PRIORITIZER_ALLOCATABLE_MEMORY];

/// A prioritizer's weight when not given.
pub const DEFAULT_WEIGHT: i64 = 1;
/// Allowed prioritizer weights.
pub const WEIGHT_RANGE: std::ops::RangeInclusive<i64> = -10..=10;

/// Spread domains are the values of a label.
pub const TOPOLOGY_KEY_LABEL: &str = "Label";
/// Spread domains are the values of a claim.
pub const TOPOLOGY_KEY_CLAIM: &str = "Claim";
/// Every topology key type.
pub const TOPOLOGY_KEY_TYPES: &[&str] = &[TOPOLOGY_KEY_LABEL, TOPOLOGY_KEY_CLAIM];
/// A spread constraint breaking `maxSkew` filters the cluster out.
pub const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
/// A spread constraint breaking `maxSkew` only lowers the cluster's rank
/// (OCM's default).
pub const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
/// Every `whenUnsatisfiable`.
pub const WHEN_UNSATISFIABLE: &[&str] = &[DO_NOT_SCHEDULE, SCHEDULE_ANYWAY];
/// Most spread constraints.
pub const MAX_SPREAD_CONSTRAINTS: usize = 8;

/// Toleration operator comparing values (the default).
pub const OPERATOR_EQUAL: &str = "Equal";
/// Toleration operator matching any value.
pub const OPERATOR_EXISTS: &str = "Exists";
/// Every toleration operator.
pub const TOLERATION_OPERATORS: &[&str] = &[OPERATOR_EQUAL, OPERATOR_EXISTS];
/// Taint effect: the cluster is not selected unless tolerated.
pub const EFFECT_NO_SELECT: &str = "NoSelect";
/// Taint effect: a hint only; the cluster may be selected.
pub const EFFECT_PREFER_NO_SELECT: &str = "PreferNoSelect";
/// Taint effect: not newly selected unless tolerated; kept if already decided.
pub const EFFECT_NO_SELECT_IF_NEW: &str = "NoSelectIfNew";
/// Every OCM taint effect.
pub const TAINT_EFFECTS: &[&str] = &[EFFECT_NO_SELECT, EFFECT_PREFER_NO_SELECT, EFFECT_NO_SELECT_IF_NEW];
/// The taint a cluster carries while its agent does not heartbeat.
pub const TAINT_UNREACHABLE: &str = "cluster.open-cluster-management.io/unreachable";

/// `clustersPerDecisionGroup` when not given: everything in one group.
pub const DEFAULT_CLUSTERS_PER_DECISION_GROUP: &str = "100%";

/// `sortBy`: decisions in cluster-name order (the default).
pub const SORT_BY_CLUSTER_NAME: &str = "ClusterName";
/// `sortBy`: decisions by score, highest first, ties by cluster name.
pub const SORT_BY_SCORE: &str = "Score";
/// Every `sortBy`.
pub const SORT_BY: &[&str] = &[SORT_BY_CLUSTER_NAME, SORT_BY_SCORE];
/// `scoreRateLimit` when not given.
pub const DEFAULT_SCORE_RATE_LIMIT: &str = "1m";

/// Condition: whether the placement got the clusters it asks for.
pub const CONDITION_SATISFIED: &str = "PlacementSatisfied";
/// Condition: whether the placement's configuration is usable.
pub const CONDITION_MISCONFIGURED: &str = "PlacementMisconfigured";
/// `PlacementSatisfied` True: every decision was made.
pub const REASON_ALL_DECISIONS_SCHEDULED: &str = "AllDecisionsScheduled";
/// `PlacementSatisfied` False: fewer feasible clusters than asked for.
pub const REASON_NOT_ALL_DECISIONS_SCHEDULED: &str = "NotAllDecisionsScheduled";
/// `PlacementSatisfied` False: no usable set binding in the namespace.
pub const REASON_NO_BINDINGS: &str = "NoManagedClusterSetBindings";
/// `PlacementSatisfied` False: no cluster was decided (none feasible, or
/// `numberOfClusters: 0`).
pub const REASON_NO_CLUSTER_MATCHED: &str = "NoManagedClusterMatched";
/// `PlacementSatisfied` False: sets are bound, but none that
/// `spec.clusterSets` names.
pub const REASON_NO_INTERSECTION: &str = "NoIntersection";
/// `PlacementSatisfied` False: the usable sets have no member cluster.
pub const REASON_SETS_EMPTY: &str = "AllManagedClusterSetsEmpty";
/// `PlacementMisconfigured` True.
pub const REASON_MISCONFIGURED: &str = "Misconfigured";
/// `PlacementMisconfigured` False (OCM's spelling).
pub const REASON_CONFIGURED: &str = "Succeedconfigured";

/// The spec of a stored Placement (admission guarantees it decodes).
pub fn spec_of(object: &Object) -> PlacementSpec {
    spec_or_default(object)
}

/// The status of a stored Placement (empty if none yet).
pub fn status_of(object: &Object) -> PlacementStatus {
    status_or_default(object)
}

/// Writes a Placement's status.
pub fn set_status(object: &mut Object, status: &PlacementStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// Fills OCM's defaults: mode `Additive`, weights 1, coordinate type
/// `BuiltIn`, toleration operator `Equal`, `maxSkew` 1,
/// `whenUnsatisfiable: ScheduleAnyway`, `clustersPerDecisionGroup: 100%`.
/// `sortBy` and `scoreRateLimit` stay absent when not given, as with the
/// CRDs of OCM releases before them (a real API server stores no value);
/// [`PlacementSpec::sort_by`] and [`PlacementSpec::score_rate_limit_seconds`]
/// read their defaults.
pub fn apply_defaults(spec: &mut PlacementSpec) {
    let policy = spec.prioritizer_policy.get_or_insert_with(Default::default);
    policy.mode.get_or_insert_with(|| MODE_ADDITIVE.to_string());
    for c in &mut policy.configurations {
        c.weight.get_or_insert(DEFAULT_WEIGHT);
        if let Some(coordinate) = &mut c.score_coordinate {
            coordinate.type_.get_or_insert_with(|| COORDINATE_BUILT_IN.to_string());
        }
    }
    for c in spec.spread_policy.iter_mut().flat_map(|s| &mut s.spread_constraints) {
        c.max_skew.get_or_insert(1);
        c.when_unsatisfiable.get_or_insert_with(|| SCHEDULE_ANYWAY.to_string());
    }
    for t in &mut spec.tolerations {
        t.operator.get_or_insert_with(|| OPERATOR_EQUAL.to_string());
    }
    let groups = spec.decision_strategy.get_or_insert_with(Default::default);
    let groups = groups.group_strategy.get_or_insert_with(Default::default);
    groups
        .clusters_per_decision_group
        .get_or_insert_with(|| crate::placement::IntOrString::Str(DEFAULT_CLUSTERS_PER_DECISION_GROUP.into()));
}

/// Validates and defaults a Placement: known fields only, every rule listed
/// with its path, then the defaulted spec is written back.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    super::prepare_spec(object, validate::validate_spec, apply_defaults)
}
