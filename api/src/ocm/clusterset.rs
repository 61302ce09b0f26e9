//! `ManagedClusterSet` (cluster-scoped, v1beta2): a named group of member
//! clusters, by the set label or by a label selector; and
//! `ManagedClusterSetBinding` (namespaced, named after its set): makes a set
//! usable by the Placements of its namespace.

use serde::{Deserialize, Serialize};

use crate::conditions::Condition;
use crate::typed::spec_or_default;
use crate::validation::{check_enum, quote, FieldError, ValidationError};
use crate::{names, LabelSelector, Object};

/// The set kind.
pub const SET_KIND: &str = "ManagedClusterSet";
/// The binding kind.
pub const BINDING_KIND: &str = "ManagedClusterSetBinding";
/// The label putting a cluster into the set it names.
pub const CLUSTER_SET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";
/// The set of clusters with no set label (and those labelled `default`);
/// it always exists.
pub const DEFAULT_SET: &str = "default";
/// The set of every cluster; it always exists.
pub const GLOBAL_SET: &str = "global";
/// Members are the clusters whose set label names the set (the default).
pub const SELECTOR_EXCLUSIVE_LABEL: &str = "ExclusiveClusterSetLabel";
/// Members are the clusters a label selector matches.
pub const SELECTOR_LABEL_SELECTOR: &str = "LabelSelector";
/// Every selector type.
pub const SELECTOR_TYPES: &[&str] = &[SELECTOR_EXCLUSIVE_LABEL, SELECTOR_LABEL_SELECTOR];

/// `spec` of a ManagedClusterSet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedClusterSetSpec {
    /// How members are chosen; absent means by the set label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<ManagedClusterSelector>,
}

/// `spec.clusterSelector` of a ManagedClusterSet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedClusterSelector {
    /// `ExclusiveClusterSetLabel` (default) or `LabelSelector`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector_type: Option<String>,
    /// With `LabelSelector`: which clusters (`{}` selects all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

impl ManagedClusterSetSpec {
    /// The selector type, defaulted.
    pub fn selector_type(&self) -> &str {
        self.cluster_selector.as_ref().and_then(|s| s.selector_type.as_deref()).unwrap_or(SELECTOR_EXCLUSIVE_LABEL)
    }

    /// The label selector of a `LabelSelector` set.
    pub fn label_selector(&self) -> Option<&LabelSelector> {
        self.cluster_selector.as_ref().and_then(|s| s.label_selector.as_ref())
    }
}

/// `status` of a ManagedClusterSet or a ManagedClusterSetBinding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionsStatus {
    /// `ClusterSetEmpty` on a set, `Bound` on a binding.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// `spec` of a ManagedClusterSetBinding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedClusterSetBindingSpec {
    /// The bound set; must equal the binding's name.
    #[serde(default)]
    pub cluster_set: String,
}

/// The spec of a stored ManagedClusterSet.
pub fn set_spec_of(object: &Object) -> ManagedClusterSetSpec {
    spec_or_default(object)
}

/// The spec of a stored ManagedClusterSetBinding.
pub fn binding_spec_of(object: &Object) -> ManagedClusterSetBindingSpec {
    spec_or_default(object)
}

fn validate_set(spec: &ManagedClusterSetSpec, name: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let selector = spec.cluster_selector.clone().unwrap_or_default();
    let path = "spec.clusterSelector";
    check_enum(&mut errors, &format!("{path}.selectorType"), selector.selector_type.as_deref(), SELECTOR_TYPES);
    let selector_path = format!("{path}.labelSelector");
    match (spec.selector_type(), &selector.label_selector) {
        (SELECTOR_LABEL_SELECTOR, None) => {
            errors.push(FieldError::required(selector_path, "required when selectorType is LabelSelector"))
        }
        (SELECTOR_LABEL_SELECTOR, Some(s)) => errors.extend(s.validate(&selector_path)),
        (SELECTOR_EXCLUSIVE_LABEL, Some(_)) => {
            errors.push(FieldError::forbidden(selector_path, "only allowed when selectorType is LabelSelector"))
        }
        (SELECTOR_EXCLUSIVE_LABEL, None) => {
            if let Some(detail) = names::validate_label_value(name) {
                errors.push(FieldError::invalid(
                    "metadata.name",
                    quote(name),
                    format!(
                        "a set chosen by the label {CLUSTER_SET_LABEL} needs a name that is a label value: {detail}"
                    ),
                ));
            }
        }
        _ => {}
    }
    errors
}

/// Validates and defaults a ManagedClusterSet (selector type written back).
pub fn prepare_set(object: &mut Object) -> Result<(), ValidationError> {
    let name = object.metadata.name.clone();
    super::prepare_spec(
        object,
        |spec: &ManagedClusterSetSpec| validate_set(spec, &name),
        |spec| {
            let selector = spec.cluster_selector.get_or_insert_with(Default::default);
            selector.selector_type.get_or_insert_with(|| SELECTOR_EXCLUSIVE_LABEL.to_string());
        },
    )
}

/// Validates a ManagedClusterSetBinding: `spec.clusterSet` is required and
/// equals the binding's name.
pub fn prepare_binding(object: &mut Object) -> Result<(), ValidationError> {
    let name = object.metadata.name.clone();
    let validate = |spec: &ManagedClusterSetBindingSpec| {
        let path = "spec.clusterSet";
        match spec.cluster_set.as_str() {
            "" => vec![FieldError::required(path, "the name of the bound ManagedClusterSet is required")],
            set if set != name => {
                vec![FieldError::invalid(path, quote(set), format!("must equal the binding's name {}", quote(&name)))]
            }
            _ => Vec::new(),
        }
    };
    super::prepare_spec(object, validate, |_| {})
}
