//! `ClusterStagedUpdateStrategy` / `StagedUpdateStrategy`: the reusable list
//! of stages a run follows, its validation (docs/spec/staged-updates.md "Fields and
//! validation", strategy table) and the two value syntaxes it introduces:
//! `waitTime` durations and `maxConcurrency`.

use serde::{Deserialize, Serialize};

use crate::names;
use crate::placement::IntOrString;
use crate::selector::LabelSelector;
use crate::validation::{join_path, quote, FieldError, FieldErrorType};

use super::vocabulary::{TASK_APPROVAL, TASK_TIMED_WAIT};

/// Most stages in one strategy.
pub const MAX_STAGES: usize = 31;
/// Longest stage name.
pub const MAX_STAGE_NAME: usize = 63;
/// Most before-stage tasks of a stage.
pub const MAX_BEFORE_STAGE_TASKS: usize = 1;
/// Most after-stage tasks of a stage.
pub const MAX_AFTER_STAGE_TASKS: usize = 2;
/// `maxConcurrency` when not given.
pub const DEFAULT_MAX_CONCURRENCY: i64 = 1;
/// The pattern a string `maxConcurrency` must match.
pub const MAX_CONCURRENCY_PATTERN: &str = "^(100|[1-9][0-9]?)%$";

/// `spec` of a staged update strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateStrategySpec {
    /// The stages, run in this order.
    #[serde(default)]
    pub stages: Vec<StageConfig>,
}

/// One stage of a strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StageConfig {
    /// `^[a-z0-9]+$`, at most 63 characters, unique in the strategy.
    #[serde(default)]
    pub name: String,
    /// Clusters of the stage: omitted selects none, `{}` selects all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Label whose integer value orders the stage's clusters (then name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sorting_label_key: Option<String>,
    /// Clusters updating at once: an integer ≥ 1 or `1%`..`100%`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<IntOrString>,
    /// Tasks run when the stage's clusters all succeeded (≤ 2, one per type).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_stage_tasks: Vec<StageTask>,
    /// Tasks that gate the stage's start (≤ 1, `Approval` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_stage_tasks: Vec<StageTask>,
}

/// A before- or after-stage task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StageTask {
    /// `TimedWait` or `Approval`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// How long a `TimedWait` waits (`1h`, `1h30m`, `0.5h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_time: Option<String>,
}

/// A checked `maxConcurrency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxConcurrency {
    /// At most this many clusters at once.
    Count(u64),
    /// At most this percentage of the stage's clusters, rounded down, at least 1.
    Percent(u64),
}

impl MaxConcurrency {
    /// Reads a written value; the error says what is allowed.
    pub fn parse(value: &IntOrString) -> Result<MaxConcurrency, String> {
        match value {
            IntOrString::Int(v) if *v >= 1 => Ok(MaxConcurrency::Count(v.unsigned_abs())),
            IntOrString::Int(_) => Err("maxConcurrency must be at least 1".to_string()),
            IntOrString::Str(s) => {
                let digits = s.strip_suffix('%').unwrap_or("");
                let well_formed = !digits.is_empty()
                    && digits.len() <= 3
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && !digits.starts_with('0');
                match digits.parse::<u64>() {
                    Ok(p) if well_formed && (1..=100).contains(&p) => Ok(MaxConcurrency::Percent(p)),
                    _ => Err(format!("must match {MAX_CONCURRENCY_PATTERN}")),
                }
            }
        }
    }

    /// How many of a stage's `clusters` may update at once: a count as is,
    /// a percentage rounded down; never below 1.
    pub fn of(&self, clusters: usize) -> usize {
        let n = match *self {
            MaxConcurrency::Count(c) => usize::try_from(c).unwrap_or(usize::MAX),
            MaxConcurrency::Percent(p) => {
                let p = usize::try_from(p).unwrap_or(100);
                clusters.saturating_mul(p) / 100
            }
        };
        n.max(1)
    }
}

impl StageConfig {
    /// The stage's `maxConcurrency`, defaulted to 1 (an unreadable value,
    /// which validation refuses, also reads as 1).
    pub fn max_concurrency(&self) -> MaxConcurrency {
        self.max_concurrency
            .as_ref()
            .and_then(|v| MaxConcurrency::parse(v).ok())
            .unwrap_or(MaxConcurrency::Count(DEFAULT_MAX_CONCURRENCY.unsigned_abs()))
    }

    /// The stage's `TimedWait` after-stage task duration in whole seconds
    /// (rounded up), if it has one.
    pub fn timed_wait_seconds(&self) -> Option<i64> {
        let task = self.after_stage_tasks.iter().find(|t| t.type_ == TASK_TIMED_WAIT)?;
        let millis = wait_time_millis(task.wait_time.as_deref()?).ok()?;
        i64::try_from(millis.div_ceil(1000)).ok()
    }

    /// Whether the stage has an `Approval` task before (`before`) or after its clusters.
    pub fn has_approval(&self, before: bool) -> bool {
        let tasks = if before { &self.before_stage_tasks } else { &self.after_stage_tasks };
        tasks.iter().any(|t| t.type_ == TASK_APPROVAL)
    }
}

/// Milliseconds of a `waitTime`: one or more `<number><unit>` with unit
/// `h`, `m` or `s` and an optional decimal fraction (`1h30m`, `0.5h`).
pub fn wait_time_millis(text: &str) -> Result<u64, String> {
    const ALLOWED: &str = "only h, m, s units are allowed, e.g. 1h, 1h30m, 0.5h";
    if text.is_empty() {
        return Err(ALLOWED.to_string());
    }
    let mut total: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let whole_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if whole_len == 0 {
            return Err(ALLOWED.to_string());
        }
        let (whole, after) = rest.split_at(whole_len);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(f) => {
                let n = f.bytes().take_while(u8::is_ascii_digit).count();
                if n == 0 {
                    return Err(ALLOWED.to_string());
                }
                f.split_at(n)
            }
            None => ("", after),
        };
        let unit: u128 = match after.bytes().next() {
            Some(b'h') => 3_600_000,
            Some(b'm') => 60_000,
            Some(b's') => 1_000,
            _ => return Err(ALLOWED.to_string()),
        };
        let too_long = || "is too long".to_string();
        let whole: u128 = whole.parse().map_err(|_| too_long())?;
        let fraction_value: u128 = if fraction.is_empty() { 0 } else { fraction.parse().map_err(|_| too_long())? };
        let scale = 10u128.checked_pow(u32::try_from(fraction.len()).map_err(|_| too_long())?).ok_or_else(too_long)?;
        let part = whole
            .checked_mul(unit)
            .and_then(|w| w.checked_add(fraction_value.checked_mul(unit)? / scale))
            .ok_or_else(too_long)?;
        total = total.checked_add(part).ok_or_else(too_long)?;
        rest = after.get(1..).unwrap_or_default();
    }
    u64::try_from(total).map_err(|_| "is too long".to_string())
}

/// Fills `maxConcurrency: 1` where a stage has none.
pub fn apply_defaults(spec: &mut UpdateStrategySpec) {
    for stage in &mut spec.stages {
        stage.max_concurrency.get_or_insert(IntOrString::Int(DEFAULT_MAX_CONCURRENCY));
    }
}

/// Every rule of the strategy table, each problem with its field path.
pub fn validate(spec: &UpdateStrategySpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let path = "spec.stages";
    if spec.stages.is_empty() {
        errors.push(FieldError::required(path, ""));
    }
    if spec.stages.len() > MAX_STAGES {
        errors.push(FieldError::too_many(path, spec.stages.len(), MAX_STAGES));
    }
    for (i, stage) in spec.stages.iter().enumerate() {
        let base = format!("{path}[{i}]");
        validate_stage_name(&mut errors, &base, &stage.name);
        if spec.stages[..i].iter().any(|s| s.name == stage.name) && !stage.name.is_empty() {
            errors.push(FieldError::duplicate(join_path(&base, "name"), quote(&stage.name)));
        }
        if let Some(selector) = &stage.label_selector {
            errors.extend(selector.validate(&join_path(&base, "labelSelector")));
        }
        if let Some(key) = &stage.sorting_label_key {
            if let Some(detail) = names::validate_label_key(key) {
                errors.push(FieldError::invalid(join_path(&base, "sortingLabelKey"), quote(key), detail));
            }
        }
        if let Some(value) = &stage.max_concurrency {
            if let Err(detail) = MaxConcurrency::parse(value) {
                errors.push(FieldError::invalid(join_path(&base, "maxConcurrency"), value, detail));
            }
        }
        validate_tasks(&mut errors, &join_path(&base, "beforeStageTasks"), &stage.before_stage_tasks, true);
        validate_tasks(&mut errors, &join_path(&base, "afterStageTasks"), &stage.after_stage_tasks, false);
    }
    errors
}

fn validate_stage_name(errors: &mut Vec<FieldError>, base: &str, name: &str) {
    let path = join_path(base, "name");
    if name.is_empty() {
        errors.push(FieldError::required(path, "stage name is required"));
    } else if name.len() > MAX_STAGE_NAME || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        errors.push(FieldError::invalid(path, quote(name), "must match ^[a-z0-9]+$ (at most 63 characters)"));
    }
}

fn validate_tasks(errors: &mut Vec<FieldError>, path: &str, tasks: &[StageTask], before: bool) {
    let max = if before { MAX_BEFORE_STAGE_TASKS } else { MAX_AFTER_STAGE_TASKS };
    if tasks.len() > max {
        errors.push(FieldError::too_many(path, tasks.len(), max));
    }
    for (k, task) in tasks.iter().enumerate() {
        let base = format!("{path}[{k}]");
        let type_path = join_path(&base, "type");
        match task.type_.as_str() {
            "" => errors.push(FieldError::required(type_path, "type is required")),
            TASK_TIMED_WAIT if before => errors.push(FieldError {
                path: type_path,
                error_type: FieldErrorType::NotSupported,
                value: Some(quote(TASK_TIMED_WAIT)),
                detail: "BeforeStageTaskType cannot be TimedWait".to_string(),
            }),
            TASK_TIMED_WAIT | TASK_APPROVAL => {
                if tasks[..k].iter().any(|t| t.type_ == task.type_) {
                    errors.push(FieldError::duplicate(type_path, quote(&task.type_)));
                }
            }
            other => {
                let supported: &[&str] = if before { &[TASK_APPROVAL] } else { &[TASK_APPROVAL, TASK_TIMED_WAIT] };
                errors.push(FieldError::not_supported(type_path, quote(other), supported));
            }
        }
        let wait_path = join_path(&base, "waitTime");
        match (task.type_.as_str(), &task.wait_time) {
            (TASK_TIMED_WAIT, None) if !before => {
                errors.push(FieldError::required(wait_path, "AfterStageTaskType is TimedWait, waitTime is required"))
            }
            (TASK_TIMED_WAIT, Some(text)) if !before => match wait_time_millis(text) {
                Ok(0) => errors.push(FieldError::invalid(wait_path, quote(text), "waitTime must be greater than 0")),
                Ok(_) => {}
                Err(detail) => errors.push(FieldError::invalid(wait_path, quote(text), detail)),
            },
            (TASK_APPROVAL, Some(_)) => {
                errors.push(FieldError::forbidden(wait_path, "AfterStageTaskType is Approval, waitTime is not allowed"))
            }
            _ => {}
        }
    }
}
