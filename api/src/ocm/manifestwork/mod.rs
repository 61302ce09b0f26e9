//! `ManifestWork` (namespaced, `work.open-cluster-management.io/v1`): the
//! manifests one member cluster applies, in the namespace named after that
//! cluster, with OCM's delete option and per-resource update strategies.
//! Delivered like Fleet's own Work; its status reports the work's and each
//! manifest's conditions.
//!
//! [`validate_spec`] is shared with ManifestWorkReplicaSet's template.

use crate::ocm::{check_object_name, require};
use crate::typed::{encode, spec_or_default, status_or_default};
use crate::validation::{check_enum, join_path, quote, FieldError, ValidationError};
use crate::Object;

pub mod feedback;
mod spec;
mod status;

pub use spec::*;
pub use status::*;

/// The kind.
pub const KIND: &str = "ManifestWork";

/// Work condition: every manifest was applied.
pub const CONDITION_APPLIED: &str = "Applied";
/// Work condition: every applied object exists and is available.
pub const CONDITION_AVAILABLE: &str = "Available";
/// Work condition: the work is being applied.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Work condition: something failed.
pub const CONDITION_DEGRADED: &str = "Degraded";
/// Work condition: the work is deleted and its objects are being removed
/// from its cluster.
pub const CONDITION_DELETING: &str = "Deleting";
/// The finalizer that keeps a deleted ManifestWork (with its `Deleting`
/// condition) until its objects are removed from its cluster (OCM's name).
pub const CLEANUP_FINALIZER: &str = "cluster.open-cluster-management.io/manifest-work-cleanup";

/// Delete option: applied objects are deleted with the work (default).
pub const DELETE_FOREGROUND: &str = "Foreground";
/// Delete option: applied objects stay.
pub const DELETE_ORPHAN: &str = "Orphan";
/// Delete option: the listed objects stay, the rest are deleted.
pub const DELETE_SELECTIVELY_ORPHAN: &str = "SelectivelyOrphan";
/// The executor subject type OCM defines: a service account of the member cluster.
pub const EXECUTOR_SERVICE_ACCOUNT: &str = "ServiceAccount";
const DELETE_POLICIES: &[&str] = &[DELETE_FOREGROUND, DELETE_ORPHAN, DELETE_SELECTIVELY_ORPHAN];

/// Update strategy: apply changes (the default).
pub const UPDATE: &str = "Update";
/// Update strategy: create if missing, never update.
pub const CREATE_ONLY: &str = "CreateOnly";
/// Update strategy: server-side apply.
pub const SERVER_SIDE_APPLY: &str = "ServerSideApply";
/// Update strategy: only read the object back (status feedback).
pub const READ_ONLY: &str = "ReadOnly";
const UPDATE_STRATEGIES: &[&str] = &[UPDATE, CREATE_ONLY, SERVER_SIDE_APPLY, READ_ONLY];

const FEEDBACK_TYPES: &[&str] = &["WellKnownStatus", "JSONPaths"];
const SCRAPE_TYPES: &[&str] = &["Poll", "Watch"];
const IGNORE_CONDITIONS: &[&str] = &["OnSpokePresent", "OnSpokeChange"];
const FIELD_MANAGER_PREFIX: &str = "work-agent";

/// The spec of a stored ManifestWork (admission guarantees it decodes).
pub fn spec_of(object: &Object) -> ManifestWorkSpec {
    spec_or_default(object)
}

/// The status of a stored ManifestWork (empty if none yet).
pub fn status_of(object: &Object) -> ManifestWorkStatus {
    status_or_default(object)
}

/// Writes a ManifestWork's status.
pub fn set_status(object: &mut Object, status: &ManifestWorkStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// Fills OCM's defaults: delete propagation `Foreground`, update strategy
/// `Update`.
pub fn apply_defaults(spec: &mut ManifestWorkSpec) {
    if let Some(d) = &mut spec.delete_option {
        d.propagation_policy.get_or_insert_with(|| DELETE_FOREGROUND.to_string());
    }
    for c in &mut spec.manifest_configs {
        if let Some(u) = &mut c.update_strategy {
            u.type_.get_or_insert_with(|| UPDATE.to_string());
        }
    }
}

/// Validates and defaults a ManifestWork.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    super::prepare_spec(object, |spec| validate_spec(spec, "spec"), apply_defaults)
}

/// Validates a ManifestWork spec found at `path` (`spec`, or
/// `spec.manifestWorkTemplate` of a ManifestWorkReplicaSet).
pub fn validate_spec(spec: &ManifestWorkSpec, path: &str) -> Vec<FieldError> {
    let mut errors = crate::work::validate_manifests(&spec.workload.manifests, &format!("{path}.workload.manifests"));
    if let Some(d) = &spec.delete_option {
        validate_delete_option(&mut errors, d, &join_path(path, "deleteOption"));
    }
    for (i, c) in spec.manifest_configs.iter().enumerate() {
        validate_config(&mut errors, c, &format!("{path}.manifestConfigs[{i}]"));
    }
    if let Some(executor) = &spec.executor {
        errors.extend(validate_executor(executor, &join_path(path, "executor")));
    }
    errors
}

/// The field errors of an `executor` at `path` (`spec.executor` of a
/// ManifestWork, or of the Work it is mirrored into): OCM's only subject
/// type, `ServiceAccount`, with a namespace and name that are object names.
pub fn validate_executor(executor: &ManifestWorkExecutor, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let base = join_path(path, "subject");
    let subject = &executor.subject;
    if subject.type_.is_empty() {
        errors.push(FieldError::required(join_path(&base, "type"), "type is required (ServiceAccount)"));
    } else {
        check_enum(&mut errors, &join_path(&base, "type"), Some(&subject.type_), &[EXECUTOR_SERVICE_ACCOUNT]);
    }
    match &subject.service_account {
        Some(sa) => {
            check_object_name(&mut errors, join_path(&base, "serviceAccount.namespace"), &sa.namespace);
            check_object_name(&mut errors, join_path(&base, "serviceAccount.name"), &sa.name);
        }
        None => errors
            .push(FieldError::required(join_path(&base, "serviceAccount"), "required when type is ServiceAccount")),
    }
    errors
}

fn validate_delete_option(errors: &mut Vec<FieldError>, d: &DeleteOption, base: &str) {
    let policy_path = join_path(base, "propagationPolicy");
    check_enum(errors, &policy_path, d.propagation_policy.as_deref(), DELETE_POLICIES);
    let selective = d.propagation_policy.as_deref() == Some(DELETE_SELECTIVELY_ORPHAN);
    match &d.selectively_orphan {
        Some(_) if !selective => errors.push(FieldError::forbidden(
            join_path(base, "selectivelyOrphans"),
            "only allowed when propagationPolicy is SelectivelyOrphan",
        )),
        Some(rules) => {
            for (i, rule) in rules.orphaning_rules.iter().enumerate() {
                validate_identifier(errors, rule, &format!("{base}.selectivelyOrphans.orphaningRules[{i}]"));
            }
        }
        None => {}
    }
    if let Some(ttl) = d.ttl_seconds_after_finished.filter(|t| *t < 0) {
        errors.push(FieldError::invalid(
            join_path(base, "ttlSecondsAfterFinished"),
            ttl,
            "must be greater than or equal to 0",
        ));
    }
}

fn validate_identifier(errors: &mut Vec<FieldError>, id: &ResourceIdentifier, base: &str) {
    require(errors, join_path(base, "resource"), &id.resource);
    require(errors, join_path(base, "name"), &id.name);
}

fn validate_config(errors: &mut Vec<FieldError>, c: &ManifestConfigOption, base: &str) {
    validate_identifier(errors, &c.resource_identifier, &join_path(base, "resourceIdentifier"));
    for (i, rule) in c.feedback_rules.iter().enumerate() {
        let path = format!("{base}.feedbackRules[{i}]");
        if rule.type_.is_empty() {
            errors.push(FieldError::required(join_path(&path, "type"), "type is required"));
        } else {
            check_enum(errors, &join_path(&path, "type"), Some(&rule.type_), FEEDBACK_TYPES);
        }
        if rule.type_ == "JSONPaths" && rule.json_paths.is_empty() {
            errors.push(FieldError::required(join_path(&path, "jsonPaths"), "required when type is JSONPaths"));
        }
        let mut names = std::collections::BTreeSet::new();
        for (j, p) in rule.json_paths.iter().enumerate() {
            require(errors, format!("{path}.jsonPaths[{j}].name"), &p.name);
            require(errors, format!("{path}.jsonPaths[{j}].path"), &p.path);
            if !p.name.is_empty() && !names.insert(p.name.as_str()) {
                errors.push(FieldError::duplicate(format!("{path}.jsonPaths[{j}].name"), quote(&p.name)));
            }
            if let (false, Err(why)) = (p.path.is_empty(), feedback::parse(&p.path)) {
                errors.push(FieldError::invalid(format!("{path}.jsonPaths[{j}].path"), quote(&p.path), why));
            }
        }
        if rule.json_paths.len() > feedback::MAX_FEEDBACK_VALUES {
            errors.push(FieldError::too_many(
                join_path(&path, "jsonPaths"),
                rule.json_paths.len(),
                feedback::MAX_FEEDBACK_VALUES,
            ));
        }
    }
    if let Some(u) = &c.update_strategy {
        let path = join_path(base, "updateStrategy");
        check_enum(errors, &join_path(&path, "type"), u.type_.as_deref(), UPDATE_STRATEGIES);
        if let Some(ssa) = &u.server_side_apply {
            let ssa_path = join_path(&path, "serverSideApply");
            if !ssa.field_manager.is_empty() && !ssa.field_manager.starts_with(FIELD_MANAGER_PREFIX) {
                errors.push(FieldError::invalid(
                    join_path(&ssa_path, "fieldManager"),
                    crate::validation::quote(&ssa.field_manager),
                    format!("must start with {FIELD_MANAGER_PREFIX:?}"),
                ));
            }
            for (i, f) in ssa.ignore_fields.iter().enumerate() {
                let fp = format!("{ssa_path}.ignoreFields[{i}]");
                check_enum(errors, &join_path(&fp, "condition"), f.condition.as_deref(), IGNORE_CONDITIONS);
                if f.json_paths.is_empty() && f.json_pointers.is_empty() {
                    errors.push(FieldError::required(
                        join_path(&fp, "jsonPaths"),
                        "at least one JSON path (or JSON pointer, in jsonPointers) is required",
                    ));
                }
                for (j, p) in f.json_paths.iter().enumerate() {
                    if let Err(why) = crate::ignore_paths::parse_json_path(p) {
                        errors.push(FieldError::invalid(format!("{fp}.jsonPaths[{j}]"), quote(p), why));
                    }
                }
                for (j, p) in f.json_pointers.iter().enumerate() {
                    if let Err(why) = crate::ignore_paths::parse_pointer(p) {
                        errors.push(FieldError::invalid(format!("{fp}.jsonPointers[{j}]"), quote(p), why));
                    }
                }
            }
        }
    }
    for (i, rule) in c.condition_rules.iter().enumerate() {
        let path = format!("{base}.conditionRules[{i}]");
        require(errors, join_path(&path, "condition"), &rule.condition);
        if rule.type_.is_empty() {
            errors
                .push(FieldError::required(join_path(&path, "type"), "type is required (WellKnownConditions or CEL)"));
        } else {
            check_enum(errors, &join_path(&path, "type"), Some(&rule.type_), &["WellKnownConditions", "CEL"]);
        }
        let expressions_path = join_path(&path, "celExpressions");
        if rule.type_ == "CEL" && rule.cel_expressions.is_empty() {
            errors.push(FieldError::required(expressions_path.clone(), "required when type is CEL"));
        }
        if rule.type_ != "CEL" && !rule.cel_expressions.is_empty() {
            errors.push(FieldError::forbidden(expressions_path.clone(), "only allowed when type is CEL"));
        }
        if rule.cel_expressions.len() > crate::ocm::cel::MAX_EXPRESSIONS {
            errors.push(FieldError::too_many(
                expressions_path,
                rule.cel_expressions.len(),
                crate::ocm::cel::MAX_EXPRESSIONS,
            ));
        }
        for (j, expression) in rule.cel_expressions.iter().enumerate() {
            if let Some(why) = crate::ocm::cel::check(expression, crate::ocm::cel::Library::Conditions) {
                errors.push(FieldError::invalid(format!("{path}.celExpressions[{j}]"), quote(expression), why));
            }
        }
        if let Some(why) = (!rule.message_expression.is_empty())
            .then(|| crate::ocm::cel::check(&rule.message_expression, crate::ocm::cel::Library::Conditions))
            .flatten()
        {
            errors.push(FieldError::invalid(
                join_path(&path, "messageExpression"),
                quote(&rule.message_expression),
                why,
            ));
        }
    }
    check_enum(errors, &join_path(base, "feedbackScrapeType"), c.feedback_scrape_type.as_deref(), SCRAPE_TYPES);
}
