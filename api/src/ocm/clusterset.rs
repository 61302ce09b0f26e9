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
/// Condition on a set: whether it selects no cluster.
pub const CONDITION_EMPTY: &str = "ClusterSetEmpty";
/// `ClusterSetEmpty` True: no cluster is in the set.
pub const REASON_NO_CLUSTER_MATCHED: &str = "NoClusterMatched";
/// `ClusterSetEmpty` False: some clusters are in the set.
pub const REASON_CLUSTERS_SELECTED: &str = "ClustersSelected";
/// Condition on a binding: whether the set it names exists.
pub const CONDITION_BOUND: &str = "Bound";
/// `Bound` True: the set exists.
pub const REASON_BOUND: &str = "ClusterSetBound";
/// `Bound` False: the set does not exist.
pub const REASON_SET_NOT_FOUND: &str = "ClusterSetNotFound";
/// Every selector type.
pub const SELECTOR_TYPES: &[&str] = &[SELECTOR_EXCLUSIVE_LABEL, SELECTOR_LABEL_SELECTOR];

/// `spec` of a ManagedClusterSet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedClusterSetSpec {
    /// How members are chosen; absent means by the set label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<ManagedClusterSelector>,
    /// Namespaces every member cluster of the set gets (OCM's managed
    /// namespaces): created on each member, kept while it is in the set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_namespaces: Vec<ManagedNamespaceConfig>,
}

/// One of a set's `spec.managedNamespaces`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManagedNamespaceConfig {
    /// The namespace's name (a DNS-1123 label, as OCM's schema requires).
    #[serde(default)]
    pub name: String,
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

/// The status of a stored ManagedClusterSet or ManagedClusterSetBinding.
pub fn status_of(object: &Object) -> ConditionsStatus {
    crate::typed::status_or_default(object)
}

/// Writes a set's or a binding's status.
pub fn set_status(object: &mut Object, status: &ConditionsStatus) {
    object.rest.insert("status".into(), crate::typed::encode(status));
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
    errors.extend(validate_managed_namespaces(&spec.managed_namespaces));
    errors
}

/// Each managed namespace needs a DNS-1123 label for a name, named once.
fn validate_managed_namespaces(namespaces: &[ManagedNamespaceConfig]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, namespace) in namespaces.iter().enumerate() {
        let path = format!("spec.managedNamespaces[{i}].name");
        if namespace.name.is_empty() {
            errors.push(FieldError::required(path, "a namespace name is required"));
        } else if let Some(detail) = names::dns1123_label_error(&namespace.name) {
            errors.push(FieldError::invalid(path, quote(&namespace.name), detail));
        } else if !seen.insert(namespace.name.as_str()) {
            errors.push(FieldError::duplicate(path, quote(&namespace.name)));
        }
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
