//! The serde types of a placement's `spec` (KubeFleet's field names), and
//! [`IntOrPercent`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::selector::LabelSelector;
use crate::work::{ApplyStrategy, ReportBackStrategy};

/// `spec` of a ClusterResourcePlacement or ResourcePlacement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementSpec {
    #[serde(default)]
    pub resource_selectors: Vec<ResourceSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PlacementPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<RolloutStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i64>,
    /// `ClusterScopeOnly` (default) or `NamespaceAccessible`: a
    /// ClusterResourcePlacement selecting exactly one namespace also
    /// mirrors its status into a ClusterResourcePlacementStatus of the same
    /// name in that namespace. Immutable. Has no effect on a
    /// ResourcePlacement, whose status is already namespaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reporting_scope: Option<String>,
}

impl PlacementSpec {
    /// The status reporting scope, defaulted to `ClusterScopeOnly`.
    pub fn status_reporting_scope(&self) -> &str {
        self.status_reporting_scope.as_deref().unwrap_or(super::CLUSTER_SCOPE_ONLY)
    }

    /// The name of the namespace a `NamespaceWithResourceSelectors`
    /// namespace selector names (the first such selector), if any: the one
    /// namespace whose objects the placement's other selectors pick.
    pub fn namespace_with_resource_selectors(&self) -> Option<&str> {
        self.resource_selectors
            .iter()
            .find(|s| {
                s.is_namespace() && s.selection_scope.as_deref() == Some(super::NAMESPACE_WITH_RESOURCE_SELECTORS)
            })
            .map(|s| s.name.as_deref().unwrap_or(""))
    }
}

/// One `resourceSelectors` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSelector {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// For a Namespace: `NamespaceWithResources` (default: the namespace
    /// and everything in it), `NamespaceOnly` (the namespace alone) or
    /// `NamespaceWithResourceSelectors` (the namespace and, of its
    /// contents, only what the placement's other selectors pick).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection_scope: Option<String>,
}

impl ResourceSelector {
    /// Whether the selector picks core `v1` Namespaces (the selectors
    /// KubeFleet's namespace rules count).
    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.version == "v1" && self.kind == "Namespace"
    }
}

/// `spec.policy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementPolicy {
    /// `PickAll` (default), `PickFixed` or `PickN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_clusters: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

impl PlacementPolicy {
    /// The placement type, defaulted to `PickAll`.
    pub fn placement_type(&self) -> &str {
        self.placement_type.as_deref().unwrap_or(super::PICK_ALL)
    }
}

/// `spec.policy.affinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Affinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
}

/// `affinity.clusterAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterAffinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<ClusterSelector>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredClusterSelector>,
}

/// The required cluster selector: OR-ed terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSelector {
    #[serde(default)]
    pub cluster_selector_terms: Vec<ClusterSelectorTerm>,
}

/// A cluster selector term; `propertySorter` only in preferred terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSelectorTerm {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_selector: Option<PropertySelector>,
    /// Also read from KubeFleet's older spelling `metricSorter`; always
    /// written back as `propertySorter`.
    #[serde(default, alias = "metricSorter", skip_serializing_if = "Option::is_none")]
    pub property_sorter: Option<PropertySorter>,
}

/// `propertySelector`: AND-ed expressions on cluster properties.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PropertySelector {
    #[serde(default)]
    pub match_expressions: Vec<PropertySelectorRequirement>,
}

/// One property expression: `name operator values[0]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PropertySelectorRequirement {
    #[serde(default)]
    pub name: String,
    /// `Gt`, `Ge`, `Lt`, `Le`, `Eq` or `Ne`.
    #[serde(default)]
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

/// `propertySorter` (alias `metricSorter`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PropertySorter {
    #[serde(default)]
    pub name: String,
    /// `Ascending` or `Descending`.
    #[serde(default)]
    pub sort_order: String,
}

/// A weighted preferred term.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreferredClusterSelector {
    #[serde(default)]
    pub weight: i64,
    #[serde(default)]
    pub preference: ClusterSelectorTerm,
}

/// `topologySpreadConstraints` entry (PickN only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologySpreadConstraint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_skew: Option<i64>,
    #[serde(default)]
    pub topology_key: String,
    /// `DoNotSchedule` (default) or `ScheduleAnyway`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_unsatisfiable: Option<String>,
}

/// A toleration of cluster taints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// `Equal` (default) or `Exists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// `""` (any) or `NoSchedule`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effect: String,
}

impl Toleration {
    /// The operator, defaulted to `Equal`.
    pub fn operator(&self) -> &str {
        self.operator.as_deref().unwrap_or("Equal")
    }

    /// The same toleration with its operator defaulted (for comparisons).
    pub fn normalized(&self) -> Toleration {
        Toleration { operator: Some(self.operator().to_string()), ..self.clone() }
    }
}

/// `spec.strategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutStrategy {
    /// `RollingUpdate` (default) or `External`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_strategy: Option<ApplyStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_strategy: Option<DeleteStrategy>,
    /// Whether (and where) the member's status of each placed object is
    /// reported back to the hub (KubeFleet's `reportBackStrategy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_back_strategy: Option<ReportBackStrategy>,
}

/// `strategy.rollingUpdate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollingUpdateConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_period_seconds: Option<i64>,
}

/// `strategy.deleteStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteStrategy {
    /// `Delete` (default) or `Abandon`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
}

/// An integer or a string as written (Kubernetes' `IntOrString`); see
/// [`IntOrPercent::from_int_or_string`] for the checked form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrString {
    /// A bare integer.
    Int(i64),
    /// A string, e.g. `25%`.
    Str(String),
}

/// Kubernetes' int-or-string schema, a named definition so that `kubectl
/// explain` shows `<IntOrString>` (it names a referenced type by its
/// definition).
impl schemars::JsonSchema for IntOrString {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntOrString".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An integer or a string, e.g. 3 or \"25%\".",
            "x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]
        })
    }
}

impl fmt::Display for IntOrString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrString::Int(v) => write!(f, "{v}"),
            IntOrString::Str(s) => f.write_str(&crate::validation::quote(s)),
        }
    }
}

/// An absolute count or a percentage of some N (`maxUnavailable`, `maxSurge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOrPercent {
    /// An absolute number.
    Int(i64),
    /// A percentage (`25%` is `Percent(25)`).
    Percent(i64),
}

impl IntOrPercent {
    /// Parses `"25%"` or `"3"` (a bare integer in a string, as Kubernetes
    /// accepts); any other text is an error naming what is allowed.
    pub fn parse(text: &str) -> Result<IntOrPercent, String> {
        const WANT: &str = "must be an integer or a percentage (e.g. \"25%\")";
        if let Some(number) = text.strip_suffix('%') {
            if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
                return Err(WANT.to_string());
            }
            number.parse().map(IntOrPercent::Percent).map_err(|_| WANT.to_string())
        } else {
            text.parse().map(IntOrPercent::Int).map_err(|_| WANT.to_string())
        }
    }

    /// The checked form of a written value.
    pub fn from_int_or_string(value: &IntOrString) -> Result<IntOrPercent, String> {
        match value {
            IntOrString::Int(v) => Ok(IntOrPercent::Int(*v)),
            IntOrString::Str(s) => IntOrPercent::parse(s),
        }
    }

    /// Checks the value is at least `min` (an integer) or a percentage in
    /// `min..=100` (a percentage of 0 is allowed only when `min` is 0).
    pub fn validate(&self, min: i64) -> Result<(), String> {
        match *self {
            IntOrPercent::Int(v) if v < min => Err(format!("must be greater than or equal to {min}")),
            IntOrPercent::Percent(p) if p < min => Err(format!("must be a percentage of at least {min}%")),
            IntOrPercent::Percent(p) if p > 100 => Err("must be a percentage of at most 100%".into()),
            _ => Ok(()),
        }
    }

    /// The value scaled on `n`: an integer as is (0 if negative), a
    /// percentage of `n` rounded up.
    pub fn scaled(&self, n: usize) -> usize {
        match *self {
            IntOrPercent::Int(v) => usize::try_from(v).unwrap_or(0),
            IntOrPercent::Percent(p) => {
                let p = usize::try_from(p).unwrap_or(0);
                (p.saturating_mul(n)).div_ceil(100)
            }
        }
    }

    /// Back to the written form (`25%` as a string, integers bare).
    pub fn to_int_or_string(self) -> IntOrString {
        match self {
            IntOrPercent::Int(v) => IntOrString::Int(v),
            IntOrPercent::Percent(p) => IntOrString::Str(format!("{p}%")),
        }
    }
}

impl fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrPercent::Int(v) => write!(f, "{v}"),
            IntOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}
