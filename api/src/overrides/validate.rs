//! Validation of a decoded override spec: every row of docs/spec/overrides.md's table
//! that the object alone decides, each problem with its exact field path.

use std::collections::BTreeSet;

use crate::validation::{join_path, quote, FieldError, FieldErrorType};

use super::*;

const OVERRIDE_TYPES: &[&str] = &[OVERRIDE_JSON_PATCH, OVERRIDE_DELETE];
const PATCH_OPS: &[&str] = &["add", "remove", "replace"];
const SCOPES: &[&str] = &[SCOPE_CLUSTER, SCOPE_NAMESPACED];

/// Validates `spec` of a CRO (`cluster_scoped`) or RO.
pub(super) fn validate_spec(spec: &OverrideSpec, cluster_scoped: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(placement) = &spec.placement {
        validate_placement_ref(&mut errors, placement, cluster_scoped);
    }
    let (field, other) = if cluster_scoped {
        ("spec.clusterResourceSelectors", ("spec.resourceSelectors", &spec.resource_selectors))
    } else {
        ("spec.resourceSelectors", ("spec.clusterResourceSelectors", &spec.cluster_resource_selectors))
    };
    if !other.1.is_empty() {
        let which = if cluster_scoped { "a ClusterResourceOverride" } else { "a ResourceOverride" };
        errors.push(FieldError::forbidden(other.0, format!("{which} selects resources with {field}")));
    }
    let selectors = if cluster_scoped { &spec.cluster_resource_selectors } else { &spec.resource_selectors };
    validate_selectors(&mut errors, field, selectors);
    validate_rules(&mut errors, &spec.policy.override_rules);
    errors
}

fn validate_placement_ref(errors: &mut Vec<FieldError>, placement: &PlacementRef, cluster_scoped: bool) {
    if placement.name.is_empty() {
        errors.push(FieldError::required("spec.placement.name", "the placement's name is required"));
    }
    let scope = placement.scope();
    if !SCOPES.contains(&scope) {
        errors.push(FieldError::not_supported("spec.placement.scope", quote(scope), SCOPES));
    } else if cluster_scoped && scope == SCOPE_NAMESPACED {
        errors.push(FieldError {
            path: "spec.placement.scope".into(),
            error_type: FieldErrorType::NotSupported,
            value: Some(quote(scope)),
            detail: "clusterResourceOverride placement reference cannot be Namespaced scope".into(),
        });
    }
}

fn validate_selectors(errors: &mut Vec<FieldError>, path: &str, selectors: &[OverrideSelector]) {
    if selectors.is_empty() {
        errors.push(FieldError::required(path, "at least one resource selector is required"));
    }
    if selectors.len() > MAX_SELECTORS {
        errors.push(FieldError::too_many(path, selectors.len(), MAX_SELECTORS));
    }
    let mut seen = BTreeSet::new();
    for (k, s) in selectors.iter().enumerate() {
        let base = format!("{path}[{k}]");
        for (field, value) in [("version", &s.version), ("kind", &s.kind)] {
            if value.is_empty() {
                errors.push(FieldError::required(join_path(&base, field), format!("resource {field} is required")));
            }
        }
        if s.name.is_empty() {
            errors.push(FieldError::required(join_path(&base, "name"), "resource name is required"));
        }
        if s.label_selector.is_some() {
            errors.push(FieldError::forbidden(join_path(&base, "labelSelector"), "label selector is not supported"));
        }
        let identity = (s.group.as_str(), s.version.as_str(), s.kind.as_str(), s.name.as_str());
        if !seen.insert(identity) {
            let shown = format!("{}/{}, Kind={} {}", s.group, s.version, s.kind, s.name);
            errors.push(FieldError::duplicate(base, quote(shown.trim_start_matches('/'))));
        }
    }
}

fn validate_rules(errors: &mut Vec<FieldError>, rules: &[OverrideRule]) {
    let path = "spec.policy.overrideRules";
    if rules.is_empty() {
        errors.push(FieldError::required(path, "at least one override rule is required"));
    }
    if rules.len() > MAX_RULES {
        errors.push(FieldError::too_many(path, rules.len(), MAX_RULES));
    }
    for (i, rule) in rules.iter().enumerate() {
        let base = format!("{path}[{i}]");
        if let Some(selector) = &rule.cluster_selector {
            validate_cluster_selector(errors, &join_path(&base, "clusterSelector"), selector);
        }
        let patches_path = join_path(&base, "jsonPatchOverrides");
        match rule.override_type() {
            OVERRIDE_JSON_PATCH => {
                if rule.json_patch_overrides.is_empty() {
                    errors.push(FieldError::required(patches_path.as_str(), "JSONPatchOverrides cannot be empty"));
                }
                if rule.json_patch_overrides.len() > MAX_PATCHES {
                    errors.push(FieldError::too_many(
                        patches_path.as_str(),
                        rule.json_patch_overrides.len(),
                        MAX_PATCHES,
                    ));
                }
                for (j, patch) in rule.json_patch_overrides.iter().enumerate() {
                    validate_patch(errors, &format!("{patches_path}[{j}]"), patch);
                }
            }
            OVERRIDE_DELETE => {
                if !rule.json_patch_overrides.is_empty() {
                    errors.push(FieldError::forbidden(
                        patches_path,
                        "JSONPatchOverrides cannot be set when the override type is Delete",
                    ));
                }
            }
            other => {
                errors.push(FieldError::not_supported(join_path(&base, "overrideType"), quote(other), OVERRIDE_TYPES))
            }
        }
    }
}

fn validate_cluster_selector(errors: &mut Vec<FieldError>, path: &str, selector: &OverrideClusterSelector) {
    let terms_path = join_path(path, "clusterSelectorTerms");
    if selector.cluster_selector_terms.len() > MAX_TERMS {
        errors.push(FieldError::too_many(terms_path.as_str(), selector.cluster_selector_terms.len(), MAX_TERMS));
    }
    for (t, term) in selector.cluster_selector_terms.iter().enumerate() {
        let base = format!("{terms_path}[{t}]");
        match &term.label_selector {
            Some(labels) => errors.extend(labels.validate(&join_path(&base, "labelSelector"))),
            None => errors.push(FieldError::required(
                join_path(&base, "labelSelector"),
                "a label selector is required in an override's cluster selector term",
            )),
        }
        if term.property_selector.is_some() {
            errors.push(FieldError::forbidden(join_path(&base, "propertySelector"), "only labelSelector is supported"));
        }
        if term.property_sorter.is_some() {
            errors.push(FieldError::forbidden(join_path(&base, "propertySorter"), "only labelSelector is supported"));
        }
    }
}

fn validate_patch(errors: &mut Vec<FieldError>, base: &str, patch: &JsonPatchOverride) {
    if !PATCH_OPS.contains(&patch.op.as_str()) {
        errors.push(FieldError::not_supported(join_path(base, "op"), quote(&patch.op), PATCH_OPS));
    }
    if let Some(detail) = path_problem(&patch.path) {
        errors.push(FieldError::invalid(join_path(base, "path"), quote(&patch.path), detail));
    }
    if patch.op == "remove" && patch.value.is_some() {
        errors.push(FieldError::forbidden(join_path(base, "value"), "remove operation cannot have value"));
    }
}

/// Why a patch path is refused, if it is (docs/spec/overrides.md, `J.path`).
pub fn path_problem(path: &str) -> Option<&'static str> {
    let Some(rest) = path.strip_prefix('/') else { return Some("path must start with /") };
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Some("path cannot contain empty string");
    }
    match segments.as_slice() {
        ["kind", ..] | ["apiVersion", ..] => Some("cannot override typeMeta fields"),
        ["status", ..] => Some("cannot override status fields"),
        ["metadata"] => Some("cannot override metadata fields except annotations and labels"),
        ["metadata", field, ..] if *field != "labels" && *field != "annotations" => {
            Some("cannot override metadata fields except annotations and labels")
        }
        _ => None,
    }
}
