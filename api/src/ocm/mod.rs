//! Open Cluster Management's kinds (docs/spec/ocm.md), typed and validated so that
//! OCM users' manifests work here unchanged and mistakes are refused with
//! the field, the value and what is allowed:
//!
//! - [`placement`]: `Placement` (v1beta1, also v1alpha1) and its status;
//! - [`decision`]: `PlacementDecision`, its labels and page names;
//! - [`clusterset`]: `ManagedClusterSet` (v1beta2) and
//!   `ManagedClusterSetBinding`;
//! - [`addon_score`]: `AddOnPlacementScore` (v1alpha1);
//! - [`managed_cluster`]: the `ManagedCluster` view of MemberClusters;
//! - [`manifestwork`]: `ManifestWork` (work v1) and its status;
//! - [`replicaset`]: `ManifestWorkReplicaSet` (work v1alpha1) and its
//!   rollout strategy.
//!
//! Each kind's `prepare` validates and defaults the spec and writes it back
//! (as OCM's CRD defaults would show it); kinds whose only content is status
//! (PlacementDecision, AddOnPlacementScore) refuse a `spec` and offer a
//! `validate_status` for the status path.
//!
//! Choices where the spec is silent (what an OCM user expects):
//! - Validation follows OCM's CRD schemas (enums, ranges, required fields),
//!   plus: a negative `tolerationSeconds` or `numberOfClusters` is refused,
//!   decision group names must be unique (rollouts name them), a
//!   ManifestWorkReplicaSet's rollout block must match its `type`, and a
//!   binding's `spec.clusterSet` must equal its name.
//! - Fields of OCM's newest API that Fleet does not implement are refused
//!   (unknown fields) rather than silently ignored.
//! - `cascadeDeletionPolicy` accepts OCM's `Foreground` besides the spec's
//!   `Background` and `Orphan`.
//! - Durations (`minSuccessTime`, `progressDeadline`) are whole numbers with
//!   `h`, `m` or `s` units, possibly combined (`1h30m`), or `0`.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::selector::LabelSelectorRequirement;
use crate::validation::{join_path, quote, FieldError, ValidationError};
use crate::{LabelSelector, Object};

pub mod addon_score;
pub mod cel;
pub mod clusterset;
pub mod decision;
pub mod managed_cluster;
pub mod manifestwork;
pub mod placement;
pub mod replicaset;
#[cfg(test)]
mod tests;

/// API group of Placement, PlacementDecision, cluster sets and add-on scores.
pub const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";
/// API group of ManifestWork and ManifestWorkReplicaSet.
pub const WORK_GROUP: &str = "work.open-cluster-management.io";

/// Selects clusters by labels AND claims (OCM's `ClusterSelector`, also its
/// `groupClusterSelector`); an absent part matches every cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSelector {
    /// On the cluster's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// On the cluster's claims (its properties, as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_selector: Option<ClaimSelector>,
    /// CEL expressions over `managedCluster` (the cluster as the
    /// ManagedCluster view shows it), all of which must be true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel_selector: Option<ClusterCelSelector>,
}

/// `celSelector` of a cluster selector.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterCelSelector {
    /// Each must be true (CEL, over `managedCluster`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cel_expressions: Vec<String>,
}

/// A selector on cluster claims: AND-ed label-style requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimSelector {
    /// Each must hold (`In`, `NotIn`, `Exists`, `DoesNotExist`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl ClusterSelector {
    /// Checks both selectors' syntax, errors under `path`.
    pub fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(labels) = &self.label_selector {
            errors.extend(labels.validate(&join_path(path, "labelSelector")));
        }
        if let Some(claims) = &self.claim_selector {
            let as_labels = LabelSelector { match_expressions: claims.match_expressions.clone(), ..Default::default() };
            errors.extend(as_labels.validate(&join_path(path, "claimSelector")));
        }
        if let Some(cel_selector) = &self.cel_selector {
            let at = join_path(path, "celSelector.celExpressions");
            if cel_selector.cel_expressions.len() > cel::MAX_EXPRESSIONS {
                errors.push(FieldError::too_many(at.clone(), cel_selector.cel_expressions.len(), cel::MAX_EXPRESSIONS));
            }
            for (i, expression) in cel_selector.cel_expressions.iter().enumerate() {
                if let Some(why) = cel::check(expression, cel::Library::Placement) {
                    errors.push(FieldError::invalid(format!("{at}[{i}]"), quote(expression), why));
                }
            }
        }
        errors
    }
}

/// Validates a typed `spec` and writes it back defaulted: decode (unknown
/// fields refused), `validate` lists every problem, `default` fills what
/// OCM's CRD defaults would.
fn prepare_spec<T: DeserializeOwned + Serialize>(
    object: &mut Object,
    validate: impl FnOnce(&T) -> Vec<FieldError>,
    default: impl FnOnce(&mut T),
) -> Result<(), ValidationError> {
    let mut spec: T = crate::typed::decode_spec(object)?;
    ValidationError::check(&object.kind, &object.metadata.name, validate(&spec))?;
    default(&mut spec);
    object.rest.insert("spec".into(), crate::typed::encode(&spec));
    Ok(())
}

/// Refuses a `spec` on kinds that hold only status.
fn refuse_spec(object: &Object) -> Result<(), ValidationError> {
    let errors = match object.spec() {
        Some(_) => vec![FieldError::forbidden("spec", format!("{} has no spec; its content is status", object.kind))],
        None => Vec::new(),
    };
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}

/// Adds "Required" at `path` when `value` is empty.
fn require(errors: &mut Vec<FieldError>, path: String, value: &str) {
    if value.is_empty() {
        let field = path.rsplit('.').next().unwrap_or_default().to_string();
        errors.push(FieldError::required(path, format!("{field} is required")));
    }
}

/// Adds an error at `path` unless `name` is a valid object name (DNS-1123
/// subdomain) — for references to other objects.
fn check_object_name(errors: &mut Vec<FieldError>, path: String, name: &str) {
    if name.is_empty() {
        errors.push(FieldError::required(path, "a name is required"));
    } else if let Some(detail) = crate::names::dns1123_subdomain_error(name) {
        errors.push(FieldError::invalid(path, quote(name), detail));
    }
}
