//! `PlacementDecision` (namespaced): one page of at most 100 of a
//! Placement's decisions, in `status.decisions`, labelled with the
//! placement and the decision group. Tools such as Argo CD's
//! `clusterDecisionResource` generator read them by the placement label.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::typed::{encode, status_or_default};
use crate::validation::{quote, FieldError, ValidationError};
use crate::Object;

/// The kind.
pub const KIND: &str = "PlacementDecision";
/// Label naming the Placement a decision page belongs to.
pub const PLACEMENT_LABEL: &str = "cluster.open-cluster-management.io/placement";
/// Label naming the page's decision group (empty for unnamed groups).
pub const DECISION_GROUP_NAME_LABEL: &str = "cluster.open-cluster-management.io/decision-group-name";
/// Label holding the page's decision group index.
pub const DECISION_GROUP_INDEX_LABEL: &str = "cluster.open-cluster-management.io/decision-group-index";
/// Most decisions one page holds.
pub const MAX_DECISIONS_PER_PAGE: usize = 100;

/// The name of a placement's `n`-th decision page (`n` from 1):
/// `<placement>-decision-<n>`.
pub fn page_name(placement: &str, n: usize) -> String {
    format!("{placement}-decision-{n}")
}

/// One chosen cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecision {
    /// The cluster's name.
    #[serde(default)]
    pub cluster_name: String,
    /// Why it was chosen (OCM leaves it empty; always written).
    #[serde(default)]
    pub reason: String,
    /// The cluster's total score from the placement's prioritizers, as of
    /// the placement's `status.lastScoreUpdateTime` (left out when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub score: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// `status` of a PlacementDecision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementDecisionStatus {
    /// At most [`MAX_DECISIONS_PER_PAGE`], cluster names unique.
    #[serde(default)]
    pub decisions: Vec<ClusterDecision>,
}

/// The status of a stored PlacementDecision (empty if none yet).
pub fn status_of(object: &Object) -> PlacementDecisionStatus {
    status_or_default(object)
}

/// Writes a PlacementDecision's status.
pub fn set_status(object: &mut Object, status: &PlacementDecisionStatus) {
    object.rest.insert("status".into(), encode(status));
}

/// A PlacementDecision holds only status: a `spec` is refused.
pub fn prepare(object: &mut Object) -> Result<(), ValidationError> {
    super::refuse_spec(object)
}

/// Checks a status about to be written (status path): at most 100
/// decisions, each naming a cluster once.
pub fn validate_status(object: &Object) -> Result<(), ValidationError> {
    let status: PlacementDecisionStatus = crate::typed::decode_status(object)?;
    let mut errors = Vec::new();
    let path = "status.decisions";
    if status.decisions.len() > MAX_DECISIONS_PER_PAGE {
        errors.push(FieldError::too_many(path, status.decisions.len(), MAX_DECISIONS_PER_PAGE));
    }
    let mut seen = BTreeSet::new();
    for (i, d) in status.decisions.iter().enumerate() {
        let name_path = format!("{path}[{i}].clusterName");
        if d.cluster_name.is_empty() {
            errors.push(FieldError::required(name_path, "clusterName is required"));
        } else if !seen.insert(d.cluster_name.as_str()) {
            errors.push(FieldError::duplicate(name_path, quote(&d.cluster_name)));
        }
    }
    ValidationError::check(&object.kind, &object.metadata.name, errors)
}
