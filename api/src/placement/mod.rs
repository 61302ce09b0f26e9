//! `ClusterResourcePlacement` (cluster-scoped) and `ResourcePlacement`
//! (namespaced): which hub resources go to which member clusters, and how
//! they roll out. Both share [`PlacementSpec`]; KubeFleet's YAML (v1beta1 and
//! v1) is accepted unchanged.
//!
//! [`prepare`] validates (docs/spec/placement.md, docs/spec/rollout.md), defaults and writes the
//! spec back; [`check_update`] enforces what may not change.
//!
//! Normalizations on write-back: the older `metricSorter` becomes
//! `propertySorter`, and the property name alias
//! `kubernetes.azure.com/node-count` becomes `kubernetes-fleet.io/node-count`
//! (see [`canonical_property_name`]), so consumers only see canonical names.

use crate::kinds::Scope;
use crate::typed::{decode, encode};
use crate::validation::{quote, FieldError, ValidationError};
use crate::Object;

mod mirror;
mod spec;
mod status;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_scopes;
mod validate;

pub use mirror::*;
pub use spec::*;
pub use status::*;

/// Kind of the cluster-scoped placement.
pub const CLUSTER_RESOURCE_PLACEMENT: &str = "ClusterResourcePlacement";
/// Kind of the namespaced placement.
pub const RESOURCE_PLACEMENT: &str = "ResourcePlacement";

/// Every matching cluster (the default).
pub const PICK_ALL: &str = "PickAll";
/// Exactly the listed clusters.
pub const PICK_FIXED: &str = "PickFixed";
/// The N best clusters.
pub const PICK_N: &str = "PickN";
const PLACEMENT_TYPES: &[&str] = &[PICK_ALL, PICK_FIXED, PICK_N];

/// The rolling update strategy (the default).
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// Rollout handed to staged update runs.
pub const EXTERNAL: &str = "External";
const STRATEGY_TYPES: &[&str] = &[ROLLING_UPDATE, EXTERNAL];

/// `selectionScope` default: the namespace and everything in it.
pub const NAMESPACE_WITH_RESOURCES: &str = "NamespaceWithResources";
/// `selectionScope`: the namespace object alone.
pub const NAMESPACE_ONLY: &str = "NamespaceOnly";
/// `selectionScope`: the namespace, and of its contents only what the
/// placement's other selectors pick.
pub const NAMESPACE_WITH_RESOURCE_SELECTORS: &str = "NamespaceWithResourceSelectors";
const SELECTION_SCOPES: &[&str] = &[NAMESPACE_ONLY, NAMESPACE_WITH_RESOURCES, NAMESPACE_WITH_RESOURCE_SELECTORS];

/// `statusReportingScope` default: the status is on the placement only.
pub const CLUSTER_SCOPE_ONLY: &str = "ClusterScopeOnly";
/// `statusReportingScope`: the status is also mirrored into the selected
/// namespace.
pub const NAMESPACE_ACCESSIBLE: &str = "NamespaceAccessible";
const STATUS_REPORTING_SCOPES: &[&str] = &[CLUSTER_SCOPE_ONLY, NAMESPACE_ACCESSIBLE];

const PROPERTY_OPERATORS: &[&str] = &["Gt", "Ge", "Lt", "Le", "Eq", "Ne"];
const SORT_ORDERS: &[&str] = &["Ascending", "Descending"];
const WHEN_UNSATISFIABLE: &[&str] = &["DoNotSchedule", "ScheduleAnyway"];
const TOLERATION_OPERATORS: &[&str] = &["Equal", "Exists"];
const PROPAGATION_POLICIES: &[&str] = &["Delete", "Abandon"];
const APPLY_TYPES: &[&str] = &["ClientSideApply", "ServerSideApply", "ReportDiff"];
const COMPARISONS: &[&str] = &["PartialComparison", "FullComparison"];
const WHEN_TO_APPLY: &[&str] = &["Always", "IfNotDrifted"];
const WHEN_TO_TAKE_OVER: &[&str] = &["Always", "IfNoDiff", "Never"];

/// Most resource selectors in one placement.
pub const MAX_RESOURCE_SELECTORS: usize = 100;
/// Most cluster names of a PickFixed policy.
pub const MAX_CLUSTER_NAMES: usize = 100;
/// Most required cluster selector terms.
pub const MAX_CLUSTER_SELECTOR_TERMS: usize = 10;
/// Allowed weights of preferred terms.
pub const WEIGHT_RANGE: std::ops::RangeInclusive<i64> = -100..=100;
/// Allowed `revisionHistoryLimit`s.
pub const REVISION_HISTORY_LIMIT_RANGE: std::ops::RangeInclusive<i64> = 1..=1000;
/// `revisionHistoryLimit` when not given.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i64 = 10;
/// `maxUnavailable` when not given.
pub const DEFAULT_MAX_UNAVAILABLE: IntOrPercent = IntOrPercent::Percent(25);
/// `maxSurge` when not given.
pub const DEFAULT_MAX_SURGE: IntOrPercent = IntOrPercent::Percent(25);
/// `unavailablePeriodSeconds` when not given.
pub const DEFAULT_UNAVAILABLE_PERIOD_SECONDS: i64 = 60;

/// The canonical node-count property.
pub const NODE_COUNT_PROPERTY: &str = "kubernetes-fleet.io/node-count";
/// Older (AKS) spelling of [`NODE_COUNT_PROPERTY`], accepted on input.
pub const NODE_COUNT_PROPERTY_ALIAS: &str = "kubernetes.azure.com/node-count";

/// The canonical spelling of a property name (the alias of the node count
/// becomes [`NODE_COUNT_PROPERTY`]; every other name is its own).
pub fn canonical_property_name(name: &str) -> &str {
    if name == NODE_COUNT_PROPERTY_ALIAS {
        NODE_COUNT_PROPERTY
    } else {
        name
    }
}

/// Whether `object` is a placement kind of Fleet's placement group.
pub fn is_placement(object: &Object) -> bool {
    object.group() == crate::kinds::FLEET_PLACEMENT_GROUP
        && matches!(object.kind.as_str(), CLUSTER_RESOURCE_PLACEMENT | RESOURCE_PLACEMENT)
}

/// The scope of the objects a placement kind may select.
fn selected_scope(kind: &str) -> Scope {
    if kind == RESOURCE_PLACEMENT {
        Scope::Namespaced
    } else {
        Scope::Cluster
    }
}

/// The spec of a stored placement (admission guarantees it decodes and is
/// defaulted).
pub fn spec_of(object: &Object) -> PlacementSpec {
    object.spec().and_then(|s| decode(s, "spec").ok()).unwrap_or_default()
}

/// Decodes a placement's spec with field paths in errors.
fn decode_spec(object: &Object) -> Result<PlacementSpec, ValidationError> {
    crate::typed::decode_spec(object)
}

/// Fills every default (docs/spec/placement.md, docs/spec/rollout.md) and normalizes property
/// names. Assumes a valid spec; invalid values are left alone.
pub fn apply_defaults(spec: &mut PlacementSpec) {
    for s in &mut spec.resource_selectors {
        s.selection_scope.get_or_insert_with(|| NAMESPACE_WITH_RESOURCES.to_string());
    }
    let policy = spec.policy.get_or_insert_with(Default::default);
    policy.placement_type.get_or_insert_with(|| PICK_ALL.to_string());
    for c in &mut policy.topology_spread_constraints {
        c.max_skew.get_or_insert(1);
        c.when_unsatisfiable.get_or_insert_with(|| "DoNotSchedule".to_string());
    }
    for t in &mut policy.tolerations {
        t.operator.get_or_insert_with(|| "Equal".to_string());
    }
    if let Some(cluster) = policy.affinity.as_mut().and_then(|a| a.cluster_affinity.as_mut()) {
        let required = cluster.required_during_scheduling_ignored_during_execution.iter_mut();
        let terms = required.flat_map(|r| r.cluster_selector_terms.iter_mut());
        let preferred = cluster.preferred_during_scheduling_ignored_during_execution.iter_mut();
        for term in terms.chain(preferred.map(|p| &mut p.preference)) {
            for e in term.property_selector.iter_mut().flat_map(|s| s.match_expressions.iter_mut()) {
                e.name = canonical_property_name(&e.name).to_string();
            }
            if let Some(sorter) = &mut term.property_sorter {
                sorter.name = canonical_property_name(&sorter.name).to_string();
            }
        }
    }
    let strategy = spec.strategy.get_or_insert_with(Default::default);
    let type_ = strategy.type_.get_or_insert_with(|| ROLLING_UPDATE.to_string());
    if type_ != EXTERNAL {
        let rolling = strategy.rolling_update.get_or_insert_with(Default::default);
        rolling.max_unavailable.get_or_insert_with(|| DEFAULT_MAX_UNAVAILABLE.to_int_or_string());
        rolling.max_surge.get_or_insert_with(|| DEFAULT_MAX_SURGE.to_int_or_string());
        rolling.unavailable_period_seconds.get_or_insert(DEFAULT_UNAVAILABLE_PERIOD_SECONDS);
    }
    if let Some(d) = &mut strategy.delete_strategy {
        d.propagation_policy.get_or_insert_with(|| "Delete".to_string());
    }
    // KubeFleet's CRD default, once the strategy is given.
    if let Some(r) = &mut strategy.report_back_strategy {
        r.type_.get_or_insert_with(|| crate::work::REPORT_BACK_DISABLED.to_string());
    }
    spec.revision_history_limit.get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    spec.status_reporting_scope.get_or_insert_with(|| CLUSTER_SCOPE_ONLY.to_string());
}

/// Validates and defaults a ClusterResourcePlacement or ResourcePlacement:
/// known fields only, every rule of the spec (all problems listed), then the
/// defaulted spec is written back.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let mut spec = decode_spec(object)?;
    let mut errors = validate::validate_spec(&spec, selected_scope(&object.kind));
    if object.kind == CLUSTER_RESOURCE_PLACEMENT {
        validate::validate_status_reporting(&mut errors, &spec);
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)?;
    apply_defaults(&mut spec);
    object.rest.insert("spec".into(), encode(&spec));
    Ok(())
}

/// Checks an update of a placement against the stored one: `placementType`
/// cannot change, tolerations can only be added (every old toleration
/// must still be present), and a ClusterResourcePlacement's
/// `statusReportingScope` stays what it was.
pub fn check_update(old: &Object, new: &Object) -> Result<(), ValidationError> {
    let mut old_spec = decode_spec(old)?;
    let mut new_spec = decode_spec(new)?;
    apply_defaults(&mut old_spec);
    apply_defaults(&mut new_spec);
    let scope_changed = old_spec.status_reporting_scope() != new_spec.status_reporting_scope();
    let old_policy = old_spec.policy.unwrap_or_default();
    let new_policy = new_spec.policy.unwrap_or_default();
    let mut errors = Vec::new();
    if new.kind == CLUSTER_RESOURCE_PLACEMENT && scope_changed {
        // KubeFleet's CEL rule on the spec, with its path and message.
        errors.push(FieldError::invalid("spec", quote("object"), "statusReportingScope is immutable"));
    }
    if old_policy.placement_type() != new_policy.placement_type() {
        errors.push(FieldError::invalid(
            "spec.policy.placementType",
            quote(new_policy.placement_type()),
            format!("field is immutable (was {})", quote(old_policy.placement_type())),
        ));
    }
    let new_tolerations: Vec<Toleration> = new_policy.tolerations.iter().map(Toleration::normalized).collect();
    for (i, t) in old_policy.tolerations.iter().enumerate() {
        if !new_tolerations.contains(&t.normalized()) {
            errors.push(FieldError::forbidden(
                "spec.policy.tolerations",
                format!("tolerations can only be added; toleration {i} (key {}) was removed or changed", quote(&t.key)),
            ));
        }
    }
    ValidationError::check(&new.kind, &new.metadata.name, errors)
}

/// Whether a placement's `strategy.applyStrategy.type` is `ReportDiff`.
pub fn reports_diff(placement: &crate::Object) -> bool {
    let type_ = placement.spec().and_then(|s| s.pointer("/strategy/applyStrategy/type"));
    type_.and_then(serde_json::Value::as_str) == Some(crate::work::APPLY_TYPE_REPORT_DIFF)
}
