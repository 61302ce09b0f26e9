//! Validation of a decoded OCM Placement spec: every rule of docs/spec/ocm.md and
//! OCM's schema, every problem collected with its exact field path.

use crate::names;
use crate::ocm::{check_object_name, require};
use crate::placement::IntOrPercent;
use crate::validation::{check_enum, check_label_key, join_path, quote, FieldError};

use super::*;

/// Longest toleration value OCM accepts.
const MAX_TOLERATION_VALUE: usize = 1024;

/// Validates `spec` of a Placement.
pub(super) fn validate_spec(spec: &PlacementSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, set) in spec.cluster_sets.iter().enumerate() {
        check_object_name(&mut errors, format!("spec.clusterSets[{i}]"), set);
    }
    if let Some(n) = spec.number_of_clusters {
        if !(0..=i64::from(i32::MAX)).contains(&n) {
            errors.push(FieldError::invalid("spec.numberOfClusters", n, format!("must be between 0 and {}", i32::MAX)));
        }
    }
    for (i, p) in spec.predicates.iter().enumerate() {
        if let Some(selector) = &p.required_cluster_selector {
            errors.extend(selector.validate(&format!("spec.predicates[{i}].requiredClusterSelector")));
        }
    }
    if let Some(policy) = &spec.prioritizer_policy {
        validate_prioritizers(&mut errors, policy);
    }
    if let Some(spread) = &spec.spread_policy {
        validate_spread(&mut errors, spread);
    }
    for (i, t) in spec.tolerations.iter().enumerate() {
        validate_toleration(&mut errors, t, &format!("spec.tolerations[{i}]"));
    }
    if let Some(groups) = spec.decision_strategy.as_ref().and_then(|d| d.group_strategy.as_ref()) {
        validate_groups(&mut errors, groups);
    }
    check_enum(&mut errors, "spec.sortBy", spec.sort_by.as_deref(), SORT_BY);
    if let Some(limit) = spec.score_rate_limit.as_deref() {
        if parse_rate_limit(limit).is_none() {
            errors.push(FieldError::invalid(
                "spec.scoreRateLimit",
                quote(limit),
                "must be a whole number followed by h, m or s (e.g. 30s, 1m, 2h)",
            ));
        }
    }
    errors
}

fn validate_prioritizers(errors: &mut Vec<FieldError>, policy: &PrioritizerPolicy) {
    check_enum(errors, "spec.prioritizerPolicy.mode", policy.mode.as_deref(), MODES);
    for (i, c) in policy.configurations.iter().enumerate() {
        let base = format!("spec.prioritizerPolicy.configurations[{i}]");
        if let Some(weight) = c.weight {
            if !WEIGHT_RANGE.contains(&weight) {
                errors.push(FieldError::invalid(join_path(&base, "weight"), weight, "must be between -10 and 10"));
            }
        }
        let path = join_path(&base, "scoreCoordinate");
        let Some(coordinate) = &c.score_coordinate else {
            errors.push(FieldError::required(path, "scoreCoordinate is required"));
            continue;
        };
        check_enum(errors, &join_path(&path, "type"), coordinate.type_.as_deref(), COORDINATE_TYPES);
        let built_in_path = join_path(&path, "builtIn");
        let add_on_path = join_path(&path, "addOn");
        match coordinate.type_() {
            COORDINATE_BUILT_IN => {
                match coordinate.built_in.as_deref() {
                    None | Some("") => errors.push(FieldError::required(
                        built_in_path,
                        "the name of a built-in prioritizer is required when type is BuiltIn",
                    )),
                    Some(name) => check_enum(errors, &built_in_path, Some(name), BUILT_IN_PRIORITIZERS),
                }
                if coordinate.add_on.is_some() {
                    errors.push(FieldError::forbidden(add_on_path, "only allowed when type is AddOn"));
                }
            }
            COORDINATE_ADD_ON => {
                match &coordinate.add_on {
                    None => errors.push(FieldError::required(add_on_path, "required when type is AddOn")),
                    Some(add_on) => {
                        require(errors, join_path(&add_on_path, "resourceName"), &add_on.resource_name);
                        require(errors, join_path(&add_on_path, "scoreName"), &add_on.score_name);
                    }
                }
                if coordinate.built_in.is_some() {
                    errors.push(FieldError::forbidden(built_in_path, "only allowed when type is BuiltIn"));
                }
            }
            _ => {}
        }
    }
}

fn validate_spread(errors: &mut Vec<FieldError>, spread: &SpreadPolicy) {
    let path = "spec.spreadPolicy.spreadConstraints";
    let constraints = &spread.spread_constraints;
    if constraints.len() > MAX_SPREAD_CONSTRAINTS {
        errors.push(FieldError::too_many(path, constraints.len(), MAX_SPREAD_CONSTRAINTS));
    }
    for (i, c) in constraints.iter().enumerate() {
        let base = format!("{path}[{i}]");
        let key_path = join_path(&base, "topologyKey");
        if c.topology_key.is_empty() {
            errors.push(FieldError::required(key_path, "topologyKey is required"));
        } else {
            check_label_key(errors, key_path, &c.topology_key);
        }
        let type_path = join_path(&base, "topologyKeyType");
        if c.topology_key_type.is_empty() {
            errors.push(FieldError::required(type_path, "topologyKeyType is required (Label or Claim)"));
        } else {
            check_enum(errors, &type_path, Some(&c.topology_key_type), TOPOLOGY_KEY_TYPES);
        }
        if let Some(skew) = c.max_skew.filter(|s| *s < 1) {
            errors.push(FieldError::invalid(join_path(&base, "maxSkew"), skew, "must be greater than or equal to 1"));
        }
        check_enum(errors, &join_path(&base, "whenUnsatisfiable"), c.when_unsatisfiable.as_deref(), WHEN_UNSATISFIABLE);
    }
}

fn validate_toleration(errors: &mut Vec<FieldError>, t: &Toleration, base: &str) {
    check_enum(errors, &join_path(base, "operator"), t.operator.as_deref(), TOLERATION_OPERATORS);
    let exists = t.operator() == OPERATOR_EXISTS;
    if t.key.is_empty() {
        if !exists {
            errors.push(FieldError::required(join_path(base, "key"), "key is required unless operator is Exists"));
        }
    } else {
        check_label_key(errors, join_path(base, "key"), &t.key);
    }
    if exists && !t.value.is_empty() {
        errors.push(FieldError::forbidden(join_path(base, "value"), "may not be specified when operator is Exists"));
    } else if t.value.len() > MAX_TOLERATION_VALUE {
        errors.push(FieldError::too_long(join_path(base, "value"), MAX_TOLERATION_VALUE));
    }
    if !t.effect.is_empty() {
        check_enum(errors, &join_path(base, "effect"), Some(&t.effect), TAINT_EFFECTS);
    }
    if let Some(seconds) = t.toleration_seconds.filter(|s| *s < 0) {
        errors.push(FieldError::invalid(
            join_path(base, "tolerationSeconds"),
            seconds,
            "must be greater than or equal to 0",
        ));
    }
}

fn validate_groups(errors: &mut Vec<FieldError>, groups: &GroupStrategy) {
    let base = "spec.decisionStrategy.groupStrategy";
    if let Some(value) = &groups.clusters_per_decision_group {
        if let Err(detail) = IntOrPercent::from_int_or_string(value).and_then(|v| v.validate(1)) {
            errors.push(FieldError::invalid(join_path(base, "clustersPerDecisionGroup"), value, detail));
        }
    }
    for (i, g) in groups.decision_groups.iter().enumerate() {
        let path = format!("{base}.decisionGroups[{i}]");
        let name_path = join_path(&path, "groupName");
        if g.group_name.is_empty() {
            errors.push(FieldError::required(name_path, "groupName is required"));
        } else if let Some(detail) = names::validate_label_value(&g.group_name) {
            errors.push(FieldError::invalid(name_path, quote(&g.group_name), detail));
        } else if groups.decision_groups[..i].iter().any(|other| other.group_name == g.group_name) {
            errors.push(FieldError::duplicate(name_path, quote(&g.group_name)));
        }
        match &g.group_cluster_selector {
            Some(selector) => {
                let at = join_path(&path, "groupClusterSelector");
                errors.extend(selector.validate(&at));
                if selector.cel_selector.is_some() {
                    errors.push(FieldError::forbidden(
                        join_path(&at, "celSelector"),
                        "decision groups select by labels and claims; celSelector is for predicates",
                    ));
                }
            }
            None => errors.push(FieldError::required(
                join_path(&path, "groupClusterSelector"),
                "groupClusterSelector is required",
            )),
        }
    }
}
