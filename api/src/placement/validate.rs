//! Validation of a decoded placement spec: every rule of docs/spec/placement.md and
//! docs/spec/rollout.md, every problem collected with its exact field path.

use crate::kinds::{lookup_group_kind, Scope};
use crate::names;
use crate::quantity::Quantity;
use crate::validation::{check_enum, check_label_key, join_path, quote, FieldError};

use super::*;

/// Validates `spec` of a placement whose objects live in `scope`
/// (`Cluster` for a CRP, `Namespaced` for an RP).
pub(super) fn validate_spec(spec: &PlacementSpec, scope: Scope) -> Vec<FieldError> {
    let mut errors = Vec::new();
    validate_selectors(&mut errors, &spec.resource_selectors, scope);
    if let Some(policy) = &spec.policy {
        validate_policy(&mut errors, policy);
    }
    if let Some(strategy) = &spec.strategy {
        validate_strategy(&mut errors, strategy);
    }
    check_enum(
        &mut errors,
        "spec.statusReportingScope",
        spec.status_reporting_scope.as_deref(),
        STATUS_REPORTING_SCOPES,
    );
    if let Some(limit) = spec.revision_history_limit {
        if !REVISION_HISTORY_LIMIT_RANGE.contains(&limit) {
            errors.push(FieldError::invalid("spec.revisionHistoryLimit", limit, "must be between 1 and 1000"));
        }
    }
    errors
}

/// KubeFleet's CEL rules on the spec (path `spec`, its messages) for a
/// `NamespaceWithResourceSelectors` namespace selector: one at most, by
/// name, and no other namespace selector beside it.
fn validate_namespace_with_resource_selectors(errors: &mut Vec<FieldError>, selectors: &[ResourceSelector]) {
    let scoped: Vec<&ResourceSelector> = selectors
        .iter()
        .filter(|s| s.is_namespace() && s.selection_scope.as_deref() == Some(NAMESPACE_WITH_RESOURCE_SELECTORS))
        .collect();
    if scoped.is_empty() {
        return;
    }
    let object = quote("object");
    if scoped.len() > 1 {
        errors.push(FieldError::invalid(
            "spec",
            &object,
            "only one namespace selector with NamespaceWithResourceSelectors mode is allowed",
        ));
    }
    let by_name =
        |s: &&&ResourceSelector| s.name.as_deref().is_some_and(|n| !n.is_empty()) && s.label_selector.is_none();
    if scoped.iter().filter(by_name).count() != 1 {
        errors.push(FieldError::invalid(
            "spec",
            &object,
            "namespace selector with NamespaceWithResourceSelectors mode must select by name (not by label)",
        ));
    }
    if selectors.iter().filter(|s| s.is_namespace()).count() != 1 {
        errors.push(FieldError::invalid(
            "spec",
            &object,
            "when using NamespaceWithResourceSelectors mode, only one namespace selector is allowed \
             (cannot mix with other namespace selectors)",
        ));
    }
}

/// KubeFleet's CEL rule of a ClusterResourcePlacement (path `spec`, its
/// message): `NamespaceAccessible` needs exactly one selector of kind
/// `Namespace`, the namespace the status is mirrored into.
pub(super) fn validate_status_reporting(errors: &mut Vec<FieldError>, spec: &PlacementSpec) {
    let namespaces = spec.resource_selectors.iter().filter(|s| s.kind == "Namespace").count();
    if spec.status_reporting_scope() == NAMESPACE_ACCESSIBLE && namespaces != 1 {
        errors.push(FieldError::invalid(
            "spec",
            quote("object"),
            "when statusReportingScope is NamespaceAccessible, exactly one resourceSelector with kind 'Namespace' is required",
        ));
    }
}

fn validate_selectors(errors: &mut Vec<FieldError>, selectors: &[ResourceSelector], scope: Scope) {
    let path = "spec.resourceSelectors";
    validate_namespace_with_resource_selectors(errors, selectors);
    // KubeFleet's webhook lets a ClusterResourcePlacement name namespaced
    // kinds only beside a NamespaceWithResourceSelectors namespace, whose
    // objects they then pick.
    let picks_in_namespace = selectors
        .iter()
        .any(|s| s.is_namespace() && s.selection_scope.as_deref() == Some(NAMESPACE_WITH_RESOURCE_SELECTORS));
    if selectors.is_empty() {
        errors.push(FieldError::required(path, "at least one resource selector is required"));
    }
    if selectors.len() > MAX_RESOURCE_SELECTORS {
        errors.push(FieldError::too_many(path, selectors.len(), MAX_RESOURCE_SELECTORS));
    }
    for (i, s) in selectors.iter().enumerate() {
        let base = format!("{path}[{i}]");
        for (field, value) in [("version", &s.version), ("kind", &s.kind)] {
            if value.is_empty() {
                errors.push(FieldError::required(join_path(&base, field), format!("{field} is required")));
            }
        }
        if s.name.is_some() && s.label_selector.is_some() {
            errors.push(FieldError::forbidden(
                join_path(&base, "labelSelector"),
                "may not be specified together with name",
            ));
        }
        if let Some(name) = &s.name {
            if name.is_empty() {
                errors.push(FieldError::required(join_path(&base, "name"), "name must not be empty when given"));
            }
        }
        if let Some(selector) = &s.label_selector {
            errors.extend(selector.validate(&join_path(&base, "labelSelector")));
        }
        check_enum(errors, &join_path(&base, "selectionScope"), s.selection_scope.as_deref(), SELECTION_SCOPES);
        if let Some(info) = lookup_group_kind(&s.group, &s.kind) {
            match (scope, info.scope) {
                (Scope::Cluster, Scope::Namespaced) if !picks_in_namespace => errors.push(FieldError::invalid(
                    join_path(&base, "kind"),
                    quote(&s.kind),
                    "a ClusterResourcePlacement can only select cluster-scoped resources, unless a Namespace \
                     selector with selectionScope NamespaceWithResourceSelectors names the namespace to pick them in",
                )),
                (Scope::Namespaced, Scope::Cluster) => errors.push(FieldError::invalid(
                    join_path(&base, "kind"),
                    quote(&s.kind),
                    "a ResourcePlacement can only select namespaced resources",
                )),
                _ => {}
            }
        }
    }
}

fn validate_policy(errors: &mut Vec<FieldError>, policy: &PlacementPolicy) {
    let path = "spec.policy";
    check_enum(errors, "spec.policy.placementType", policy.placement_type.as_deref(), PLACEMENT_TYPES);
    let kind = policy.placement_type();
    let fixed = kind == PICK_FIXED;
    let pick_n = kind == PICK_N;

    // clusterNames: PickFixed only. An empty (or absent) list is allowed:
    // it is how a PickFixed placement is scaled to zero (its resources are
    // withdrawn from every cluster and the placement stays), as KubeFleet's
    // current webhook allows; adding names back places again.
    let names_path = "spec.policy.clusterNames";
    if fixed {
        if policy.cluster_names.len() > MAX_CLUSTER_NAMES {
            errors.push(FieldError::too_many(names_path, policy.cluster_names.len(), MAX_CLUSTER_NAMES));
        }
        for (i, name) in policy.cluster_names.iter().enumerate() {
            let p = format!("{names_path}[{i}]");
            if let Some(detail) = names::dns1123_subdomain_error(name) {
                errors.push(FieldError::invalid(p.as_str(), quote(name), detail));
            }
            if policy.cluster_names[..i].contains(name) {
                errors.push(FieldError::duplicate(p, quote(name)));
            }
        }
    } else if !policy.cluster_names.is_empty() {
        errors.push(FieldError::forbidden(names_path, "only allowed with placementType PickFixed"));
    }

    // numberOfClusters: PickN only, required there, >= 0.
    let count_path = "spec.policy.numberOfClusters";
    match (pick_n, policy.number_of_clusters) {
        (true, None) => errors.push(FieldError::required(count_path, "required when placementType is PickN")),
        (true, Some(n)) if n < 0 => {
            errors.push(FieldError::invalid(count_path, n, "must be greater than or equal to 0"))
        }
        (false, Some(_)) => errors.push(FieldError::forbidden(count_path, "only allowed with placementType PickN")),
        _ => {}
    }

    if let Some(affinity) = &policy.affinity {
        if fixed {
            errors.push(FieldError::forbidden("spec.policy.affinity", "not allowed with placementType PickFixed"));
        }
        if let Some(cluster) = &affinity.cluster_affinity {
            validate_cluster_affinity(errors, cluster, "spec.policy.affinity.clusterAffinity");
        }
    }

    let spread_path = "spec.policy.topologySpreadConstraints";
    if !policy.topology_spread_constraints.is_empty() && !pick_n {
        errors.push(FieldError::forbidden(spread_path, "only allowed with placementType PickN"));
    }
    for (i, c) in policy.topology_spread_constraints.iter().enumerate() {
        let base = format!("{spread_path}[{i}]");
        if let Some(skew) = c.max_skew {
            if skew < 1 {
                errors.push(FieldError::invalid(
                    join_path(&base, "maxSkew"),
                    skew,
                    "must be greater than or equal to 1",
                ));
            }
        }
        if c.topology_key.is_empty() {
            errors.push(FieldError::required(join_path(&base, "topologyKey"), "topologyKey is required"));
        } else {
            check_label_key(errors, join_path(&base, "topologyKey"), &c.topology_key);
        }
        check_enum(errors, &join_path(&base, "whenUnsatisfiable"), c.when_unsatisfiable.as_deref(), WHEN_UNSATISFIABLE);
    }

    let tol_path = format!("{path}.tolerations");
    if !policy.tolerations.is_empty() && fixed {
        errors.push(FieldError::forbidden(tol_path.as_str(), "not allowed with placementType PickFixed"));
    }
    for (i, t) in policy.tolerations.iter().enumerate() {
        let base = format!("{tol_path}[{i}]");
        check_enum(errors, &join_path(&base, "operator"), t.operator.as_deref(), TOLERATION_OPERATORS);
        if t.key.is_empty() {
            if t.operator() != "Exists" {
                errors.push(FieldError::required(join_path(&base, "key"), "key is required unless operator is Exists"));
            }
        } else {
            check_label_key(errors, join_path(&base, "key"), &t.key);
        }
        if t.operator() == "Exists" && !t.value.is_empty() {
            errors
                .push(FieldError::forbidden(join_path(&base, "value"), "may not be specified when operator is Exists"));
        } else if let Some(detail) = names::validate_label_value(&t.value) {
            errors.push(FieldError::invalid(join_path(&base, "value"), quote(&t.value), detail));
        }
        if !t.effect.is_empty() && t.effect != "NoSchedule" {
            errors.push(FieldError::not_supported(join_path(&base, "effect"), quote(&t.effect), &["", "NoSchedule"]));
        }
    }
}

fn validate_cluster_affinity(errors: &mut Vec<FieldError>, affinity: &ClusterAffinity, path: &str) {
    if let Some(required) = &affinity.required_during_scheduling_ignored_during_execution {
        let terms_path = format!("{path}.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms");
        let terms = &required.cluster_selector_terms;
        if terms.len() > MAX_CLUSTER_SELECTOR_TERMS {
            errors.push(FieldError::too_many(terms_path.as_str(), terms.len(), MAX_CLUSTER_SELECTOR_TERMS));
        }
        for (i, term) in terms.iter().enumerate() {
            let base = format!("{terms_path}[{i}]");
            if term.label_selector.is_none() && term.property_selector.is_none() {
                errors.push(FieldError::required(base.as_str(), "a labelSelector or a propertySelector is required"));
            }
            if term.property_sorter.is_some() {
                errors
                    .push(FieldError::forbidden(join_path(&base, "propertySorter"), "only allowed in preferred terms"));
            }
            validate_term_selectors(errors, term, &base);
        }
    }
    let preferred_path = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution");
    for (i, p) in affinity.preferred_during_scheduling_ignored_during_execution.iter().enumerate() {
        let base = format!("{preferred_path}[{i}]");
        if !WEIGHT_RANGE.contains(&p.weight) {
            errors.push(FieldError::invalid(join_path(&base, "weight"), p.weight, "must be between -100 and 100"));
        }
        let pref = join_path(&base, "preference");
        validate_term_selectors(errors, &p.preference, &pref);
        if let Some(sorter) = &p.preference.property_sorter {
            let sp = join_path(&pref, "propertySorter");
            check_property_name(errors, join_path(&sp, "name"), &sorter.name);
            if sorter.sort_order.is_empty() {
                errors.push(FieldError::required(join_path(&sp, "sortOrder"), "sortOrder is required"));
            } else {
                check_enum(errors, &join_path(&sp, "sortOrder"), Some(&sorter.sort_order), SORT_ORDERS);
            }
        }
    }
}

fn validate_term_selectors(errors: &mut Vec<FieldError>, term: &ClusterSelectorTerm, base: &str) {
    if let Some(selector) = &term.label_selector {
        errors.extend(selector.validate(&join_path(base, "labelSelector")));
    }
    if let Some(selector) = &term.property_selector {
        for (j, e) in selector.match_expressions.iter().enumerate() {
            let ep = format!("{base}.propertySelector.matchExpressions[{j}]");
            check_property_name(errors, join_path(&ep, "name"), &e.name);
            if e.operator.is_empty() {
                errors.push(FieldError::required(join_path(&ep, "operator"), "operator is required"));
            } else {
                check_enum(errors, &join_path(&ep, "operator"), Some(&e.operator), PROPERTY_OPERATORS);
            }
            let vp = join_path(&ep, "values");
            match e.values.as_slice() {
                [value] => {
                    if let Err(err) = Quantity::parse(value) {
                        errors.push(FieldError::invalid(format!("{vp}[0]"), quote(value), err.detail));
                    }
                }
                [] => errors.push(FieldError::required(vp, "exactly one value is required")),
                more => errors.push(FieldError::too_many(vp, more.len(), 1)),
            }
        }
    }
}

fn check_property_name(errors: &mut Vec<FieldError>, path: String, name: &str) {
    if name.is_empty() {
        errors.push(FieldError::required(path, "name is required"));
    } else {
        check_label_key(errors, path, name);
    }
}

fn validate_strategy(errors: &mut Vec<FieldError>, strategy: &RolloutStrategy) {
    check_enum(errors, "spec.strategy.type", strategy.type_.as_deref(), STRATEGY_TYPES);
    if strategy.type_.as_deref() == Some(EXTERNAL) && strategy.rolling_update.is_some() {
        errors.push(FieldError::forbidden(
            "spec.strategy.rollingUpdate",
            "rollingUpdate is not allowed when the rollout strategy type is External",
        ));
    }
    if let Some(rolling) = &strategy.rolling_update {
        let base = "spec.strategy.rollingUpdate";
        for (field, value) in [("maxUnavailable", &rolling.max_unavailable), ("maxSurge", &rolling.max_surge)] {
            let Some(value) = value else { continue };
            let path = join_path(base, field);
            match IntOrPercent::from_int_or_string(value).and_then(|v| v.validate(1)) {
                Ok(()) => {}
                Err(detail) => errors.push(FieldError::invalid(path, value, detail)),
            }
        }
        if let Some(period) = rolling.unavailable_period_seconds {
            if period < 0 {
                errors.push(FieldError::invalid(
                    join_path(base, "unavailablePeriodSeconds"),
                    period,
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    if let Some(s) = &strategy.apply_strategy {
        let base = "spec.strategy.applyStrategy";
        check_enum(errors, &join_path(base, "type"), s.type_.as_deref(), APPLY_TYPES);
        check_enum(errors, &join_path(base, "comparisonOption"), s.comparison_option.as_deref(), COMPARISONS);
        check_enum(errors, &join_path(base, "whenToApply"), s.when_to_apply.as_deref(), WHEN_TO_APPLY);
        check_enum(errors, &join_path(base, "whenToTakeOver"), s.when_to_take_over.as_deref(), WHEN_TO_TAKE_OVER);
    }
    if let Some(d) = &strategy.delete_strategy {
        check_enum(
            errors,
            "spec.strategy.deleteStrategy.propagationPolicy",
            d.propagation_policy.as_deref(),
            PROPAGATION_POLICIES,
        );
    }
    if let Some(r) = &strategy.report_back_strategy {
        errors.extend(r.validate("spec.strategy.reportBackStrategy"));
    }
}
