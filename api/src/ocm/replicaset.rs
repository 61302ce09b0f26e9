//! `ManifestWorkReplicaSet` (namespaced, `work.open-cluster-management.io`
//! v1alpha1): one ManifestWork from a template on every cluster that the
//! named Placements of its namespace decide, rolled out as each reference's
//! strategy says (`All`, `Progressive`, `ProgressivePerGroup`).
//!
//! The rollout options of all three types share one struct
//! ([`RolloutConfig`]); validation refuses the options OCM's schema does not
//! give a type (`maxConcurrency` outside `progressive`, mandatory groups
//! under `all`) and a block that does not match the strategy's `type`.

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;
use crate::ocm::check_object_name;
use crate::ocm::manifestwork::{self, ManifestWorkSpec};
use crate::placement::{IntOrPercent, IntOrString};
use crate::typed::{encode, spec_or_default, status_or_default};
use crate::validation::{check_enum, join_path, quote, FieldError, ValidationError};
use crate::Object;

/// The kind.
pub const KIND: &str = "ManifestWorkReplicaSet";
/// Rollout to every decided cluster at once (the default).
pub const ROLLOUT_ALL: &str = "All";
/// Rollout cluster by cluster, at most `maxConcurrency` at a time.
pub const ROLLOUT_PROGRESSIVE: &str = "Progressive";
/// Rollout one decision group after another.
pub const ROLLOUT_PROGRESSIVE_PER_GROUP: &str = "ProgressivePerGroup";
const ROLLOUT_TYPES: &[&str] = &[ROLLOUT_ALL, ROLLOUT_PROGRESSIVE, ROLLOUT_PROGRESSIVE_PER_GROUP];
/// Deleting the replica set deletes its ManifestWorks in the background (default).
pub const CASCADE_BACKGROUND: &str = "Background";
/// Deletion waits until the ManifestWorks are gone (OCM's other value).
pub const CASCADE_FOREGROUND: &str = "Foreground";
/// Deleting the replica set leaves its ManifestWorks.
pub const CASCADE_ORPHAN: &str = "Orphan";
const CASCADE_POLICIES: &[&str] = &[CASCADE_BACKGROUND, CASCADE_FOREGROUND, CASCADE_ORPHAN];
/// `progressDeadline` meaning "wait forever" (the default).
pub const NO_DEADLINE: &str = "None";

/// Condition: the referenced placements exist and decide clusters.
pub const CONDITION_PLACEMENT_VERIFIED: &str = "PlacementVerified";
/// Condition: the rollout over the placements' clusters finished.
pub const CONDITION_PLACEMENT_ROLLED_OUT: &str = "PlacementRolledOut";
/// Condition: every ManifestWork was applied.
pub const CONDITION_MANIFESTWORK_APPLIED: &str = "ManifestworkApplied";

/// `spec` of a ManifestWorkReplicaSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestWorkReplicaSetSpec {
    /// The ManifestWork every decided cluster gets.
    #[serde(default)]
    pub manifest_work_template: ManifestWorkSpec,
    /// Placements of this namespace (at least one).
    #[serde(default)]
    pub placement_refs: Vec<LocalPlacementReference>,
    /// `Background` (default), `Foreground` or `Orphan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade_deletion_policy: Option<String>,
}

/// A Placement of the same namespace and how to roll out over its decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalPlacementReference {
    /// The Placement's name.
    #[serde(default)]
    pub name: String,
    /// Defaults to `{type: All}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_strategy: Option<RolloutStrategy>,
}

/// OCM's rollout strategy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutStrategy {
    /// `All` (default), `Progressive` or `ProgressivePerGroup`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Options of `All`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<RolloutConfig>,
    /// Options of `Progressive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive: Option<RolloutConfig>,
    /// Options of `ProgressivePerGroup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressive_per_group: Option<RolloutConfig>,
}

impl RolloutStrategy {
    /// The type, defaulted to `All`.
    pub fn type_(&self) -> &str {
        self.type_.as_deref().unwrap_or(ROLLOUT_ALL)
    }

    /// The options of the strategy's own type (defaults when absent).
    pub fn config(&self) -> RolloutConfig {
        let config = match self.type_() {
            ROLLOUT_PROGRESSIVE => &self.progressive,
            ROLLOUT_PROGRESSIVE_PER_GROUP => &self.progressive_per_group,
            _ => &self.all,
        };
        config.clone().unwrap_or_default()
    }
}

/// The options of a rollout type (each type allows a subset; see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutConfig {
    /// Soak time after a cluster (or group) succeeds; default `0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_success_time: Option<String>,
    /// How long a cluster may take to succeed before it counts as failed;
    /// default `None` (forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
    /// Failures tolerated before the rollout stops (count or percentage;
    /// default 0); used by Progressive and ProgressivePerGroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failures: Option<IntOrString>,
    /// Groups rolled out first, tolerating no failure (Progressive types).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mandatory_decision_groups: Vec<MandatoryDecisionGroup>,
    /// Most clusters in progress at once (Progressive only; count or
    /// percentage; default from the placement's `clustersPerDecisionGroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<IntOrString>,
}

impl RolloutConfig {
    /// `minSuccessTime` in seconds (0 when absent).
    pub fn min_success_seconds(&self) -> i64 {
        self.min_success_time.as_deref().and_then(crate::time::duration_seconds).unwrap_or(0)
    }

    /// `progressDeadline` in seconds; `None` means no deadline.
    pub fn progress_deadline_seconds(&self) -> Option<i64> {
        self.progress_deadline.as_deref().filter(|d| *d != NO_DEADLINE).and_then(crate::time::duration_seconds)
    }
}

/// A decision group by name or index (the name is looked at first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MandatoryDecisionGroup {
    /// The group's `decision-group-name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group_name: String,
    /// The group's `decision-group-index`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_index: Option<i64>,
}

/// `status` of a ManifestWorkReplicaSet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetStatus {
    /// `PlacementVerified`, `PlacementRolledOut`, `ManifestworkApplied`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Over every ManifestWork of the replica set.
    #[serde(default)]
    pub summary: ManifestWorkReplicaSetSummary,
    /// Per referenced placement.
    #[serde(default)]
    pub placement_summary: Vec<PlacementSummary>,
}

/// Counts of ManifestWorks by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkReplicaSetSummary {
    /// ManifestWorks created.
    #[serde(default)]
    pub total: i64,
    /// With `Applied` True.
    #[serde(default)]
    pub applied: i64,
    /// With `Available` True.
    #[serde(default)]
    pub available: i64,
    /// With `Degraded` True.
    #[serde(default)]
    pub degraded: i64,
    /// With `Progressing` True.
    #[serde(default)]
    pub progressing: i64,
    /// ManifestWorks the replica set wants: one per decided cluster.
    #[serde(default)]
    pub desired_total: i64,
    /// ManifestWorks holding the current template and `Applied` at their
    /// current generation (OCM: clusters with the updated revision applied).
    #[serde(default)]
    pub updated: i64,
}

/// One referenced placement's share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSummary {
    /// The Placement's name.
    #[serde(default)]
    pub name: String,
    /// e.g. `2 (2 / 3 clusters applied)`.
    #[serde(default)]
    pub available_decision_groups: String,
    /// Its ManifestWorks by state.
    #[serde(default)]
    pub summary: ManifestWorkReplicaSetSummary,
}

/// The spec of a stored ManifestWorkReplicaSet.
pub fn spec_of(object: &Object) -> ManifestWorkReplicaSetSpec {
    spec_or_default(object)
}

/// The status of a stored ManifestWorkReplicaSet (empty if none yet).
pub fn status_of(object: &Object) -> ManifestWorkReplicaSetStatus {
    status_or_default(object)
}

/// Writes a ManifestWorkReplicaSet's status.
pub fn set_status(object: &mut Object, status: &ManifestWorkReplicaSetStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// Validates and defaults a ManifestWorkReplicaSet (template, references,
/// rollout strategies; `type: All` and `Background` filled in).
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    super::prepare_spec(object, validate_spec, |spec: &mut ManifestWorkReplicaSetSpec| {
        manifestwork::apply_defaults(&mut spec.manifest_work_template);
        spec.cascade_deletion_policy.get_or_insert_with(|| CASCADE_BACKGROUND.to_string());
        for r in &mut spec.placement_refs {
            let strategy = r.rollout_strategy.get_or_insert_with(Default::default);
            strategy.type_.get_or_insert_with(|| ROLLOUT_ALL.to_string());
        }
    })
}

fn validate_spec(spec: &ManifestWorkReplicaSetSpec) -> Vec<FieldError> {
    let mut errors = manifestwork::validate_spec(&spec.manifest_work_template, "spec.manifestWorkTemplate");
    if spec.placement_refs.is_empty() {
        errors.push(FieldError::required("spec.placementRefs", "at least one placement reference is required"));
    }
    for (i, r) in spec.placement_refs.iter().enumerate() {
        let base = format!("spec.placementRefs[{i}]");
        check_object_name(&mut errors, join_path(&base, "name"), &r.name);
        if spec.placement_refs[..i].iter().any(|other| other.name == r.name) {
            errors.push(FieldError::duplicate(join_path(&base, "name"), quote(&r.name)));
        }
        if let Some(strategy) = &r.rollout_strategy {
            validate_strategy(&mut errors, strategy, &join_path(&base, "rolloutStrategy"));
        }
    }
    check_enum(&mut errors, "spec.cascadeDeletionPolicy", spec.cascade_deletion_policy.as_deref(), CASCADE_POLICIES);
    errors
}

fn validate_strategy(errors: &mut Vec<FieldError>, strategy: &RolloutStrategy, base: &str) {
    check_enum(errors, &join_path(base, "type"), strategy.type_.as_deref(), ROLLOUT_TYPES);
    let blocks = [
        ("all", ROLLOUT_ALL, &strategy.all),
        ("progressive", ROLLOUT_PROGRESSIVE, &strategy.progressive),
        ("progressivePerGroup", ROLLOUT_PROGRESSIVE_PER_GROUP, &strategy.progressive_per_group),
    ];
    for (field, type_, config) in blocks {
        let Some(config) = config else { continue };
        let path = join_path(base, field);
        if strategy.type_() != type_ {
            errors.push(FieldError::forbidden(path, format!("only allowed when type is {type_}")));
            continue;
        }
        validate_config(errors, config, type_, &path);
    }
}

fn validate_config(errors: &mut Vec<FieldError>, config: &RolloutConfig, type_: &str, path: &str) {
    if let Some(t) = config.min_success_time.as_deref().filter(|t| crate::time::duration_seconds(t).is_none()) {
        errors.push(FieldError::invalid(join_path(path, "minSuccessTime"), quote(t), DURATION_DETAIL));
    }
    if let Some(d) = config.progress_deadline.as_deref() {
        if d != NO_DEADLINE && crate::time::duration_seconds(d).is_none() {
            let detail = format!("must be \"None\" or {}", DURATION_DETAIL.trim_start_matches("must be "));
            errors.push(FieldError::invalid(join_path(path, "progressDeadline"), quote(d), detail));
        }
    }
    // OCM's schema: every type has the common options (unused ones are
    // ignored, as OCM does); only Progressive has maxConcurrency and only
    // the Progressive types have mandatory groups.
    let progressive = type_ != ROLLOUT_ALL;
    let counts = [
        ("maxFailures", &config.max_failures, true),
        ("maxConcurrency", &config.max_concurrency, type_ == ROLLOUT_PROGRESSIVE),
    ];
    for (field, value, allowed) in counts {
        let Some(value) = value else { continue };
        let field_path = join_path(path, field);
        if !allowed {
            errors.push(FieldError::forbidden(field_path, format!("not used by rollout type {type_}")));
        } else if let Err(detail) = IntOrPercent::from_int_or_string(value).and_then(|v| v.validate(0)) {
            errors.push(FieldError::invalid(field_path, value, detail));
        }
    }
    if !config.mandatory_decision_groups.is_empty() && !progressive {
        errors.push(FieldError::forbidden(
            join_path(path, "mandatoryDecisionGroups"),
            format!("not used by rollout type {type_}"),
        ));
    }
    for (i, g) in config.mandatory_decision_groups.iter().enumerate() {
        let group_path = format!("{path}.mandatoryDecisionGroups[{i}]");
        if g.group_name.is_empty() && g.group_index.is_none() {
            errors.push(FieldError::required(group_path, "a groupName or a groupIndex is required"));
        } else if let Some(index) = g.group_index.filter(|i| *i < 0) {
            errors.push(FieldError::invalid(
                join_path(&group_path, "groupIndex"),
                index,
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// What a rollout duration may look like.
const DURATION_DETAIL: &str =
    "must be a duration in hours, minutes or seconds, e.g. \"90m\", \"360s\", \"1h30m\" or \"0\"";
