//! Staged updates (docs/spec/staged-updates.md): the typed kinds a placement with
//! `strategy.type: External` is rolled out with.
//!
//! - [`strategy`]: `ClusterStagedUpdateStrategy` / `StagedUpdateStrategy`;
//! - [`run`]: `ClusterStagedUpdateRun` / `StagedUpdateRun`, spec and the
//!   status that holds all of a run's state;
//! - [`approval`]: `ClusterApprovalRequest` / `ApprovalRequest`;
//! - [`vocabulary`]: labels, states, condition types, reasons.
//!
//! [`prepare`] validates and defaults each kind (unknown fields refused);
//! [`check_update`] enforces what may not change. What runs *do* is in the
//! `placement` crate (`fleet_placement::staged`).
//!
//! Decisions beyond the spec's wording:
//! - written back on admission: a stage's `maxConcurrency` defaults to `1`,
//!   a run's `state` to `Run`;
//! - `resourceSnapshotIndex` also accepts a bare YAML integer, kept as text;
//! - `waitTime` `0s` is refused (the spec says > 0); fractions are exact to
//!   the millisecond and a wait ends on the next whole second;
//! - a `maxConcurrency` string must be a percentage (KubeFleet's pattern):
//!   `"3"` is refused, `3` is fine.

pub mod approval;
pub mod run;
pub mod strategy;
#[cfg(test)]
mod tests_approval;
#[cfg(test)]
mod tests_run;
#[cfg(test)]
mod tests_strategy;
pub mod vocabulary;

pub use approval::{ApprovalRequestSpec, ApprovalRequestStatus};
pub use run::{
    ClusterUpdatingStatus, NamespacedName, StageTaskStatus, StageUpdatingStatus, UpdateRunSpec, UpdateRunStatus,
};
pub use strategy::{MaxConcurrency, StageConfig, StageTask, UpdateStrategySpec};
pub use vocabulary::*;

use crate::typed::{decode_spec, encode, spec_or_default, status_or_default};
use crate::validation::ValidationError;
use crate::Object;

/// Whether `object` is a strategy kind.
pub fn is_strategy(object: &Object) -> bool {
    in_group(object) && matches!(object.kind.as_str(), CLUSTER_STAGED_UPDATE_STRATEGY | STAGED_UPDATE_STRATEGY)
}

/// Whether `object` is a run kind.
pub fn is_run(object: &Object) -> bool {
    in_group(object) && matches!(object.kind.as_str(), CLUSTER_STAGED_UPDATE_RUN | STAGED_UPDATE_RUN)
}

/// Whether `object` is an approval request kind.
pub fn is_approval_request(object: &Object) -> bool {
    in_group(object) && matches!(object.kind.as_str(), CLUSTER_APPROVAL_REQUEST | APPROVAL_REQUEST)
}

fn in_group(object: &Object) -> bool {
    object.group() == crate::kinds::FLEET_PLACEMENT_GROUP
}

/// The spec of a stored strategy.
pub fn strategy_spec_of(object: &Object) -> UpdateStrategySpec {
    spec_or_default(object)
}

/// The spec of a stored run.
pub fn run_spec_of(object: &Object) -> UpdateRunSpec {
    spec_or_default(object)
}

/// The status of a stored run (empty before the controller wrote one).
pub fn run_status_of(object: &Object) -> UpdateRunStatus {
    status_or_default(object)
}

/// Writes a run's status.
pub fn set_run_status(object: &mut Object, status: &UpdateRunStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// The spec of a stored approval request.
pub fn approval_spec_of(object: &Object) -> ApprovalRequestSpec {
    spec_or_default(object)
}

/// The status of a stored approval request.
pub fn approval_status_of(object: &Object) -> ApprovalRequestStatus {
    status_or_default(object)
}

/// Writes an approval request's status.
pub fn set_approval_status(object: &mut Object, status: &ApprovalRequestStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// Validates and defaults a strategy, run or approval request (other kinds
/// pass): known fields only, every rule, all problems listed; the defaulted
/// spec is written back.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    let (kind, name) = (object.kind.clone(), object.metadata.name.clone());
    if is_strategy(object) {
        let mut spec: UpdateStrategySpec = decode_spec(object)?;
        ValidationError::check(&kind, &name, strategy::validate(&spec))?;
        strategy::apply_defaults(&mut spec);
        object.rest.insert("spec".into(), encode(&spec));
    } else if is_run(object) {
        let mut spec: UpdateRunSpec = decode_spec(object)?;
        ValidationError::check(&kind, &name, run::validate(&name, &spec))?;
        run::apply_defaults(&mut spec);
        object.rest.insert("spec".into(), encode(&spec));
    } else if is_approval_request(object) {
        let spec: ApprovalRequestSpec = decode_spec(object)?;
        ValidationError::check(&kind, &name, approval::validate(&spec))?;
    }
    Ok(())
}

/// Checks an update of a run or approval request against the stored one
/// (both already prepared); other kinds pass.
pub fn check_update(old: &Object, new: &Object) -> Result<(), ValidationError> {
    let errors = if is_run(new) {
        let (mut old_spec, mut new_spec): (UpdateRunSpec, UpdateRunSpec) = (decode_spec(old)?, decode_spec(new)?);
        run::apply_defaults(&mut old_spec);
        run::apply_defaults(&mut new_spec);
        run::check_update(&old_spec, &new_spec)
    } else if is_approval_request(new) {
        approval::check_update(&decode_spec(old)?, &decode_spec(new)?)
    } else {
        Vec::new()
    };
    ValidationError::check(&new.kind, &new.metadata.name, errors)
}
