//! The serde types of an OCM Placement's `spec` (OCM's field names).

use serde::{Deserialize, Serialize};

use crate::ocm::ClusterSelector;
use crate::placement::IntOrString;

/// `spec` of a Placement: which clusters, how many, how they are ranked and
/// grouped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementSpec {
    /// Sets to choose from (intersected with the sets bound to the
    /// namespace); empty means every bound set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_sets: Vec<String>,
    /// How many clusters to choose; unset means every feasible cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_clusters: Option<i64>,
    /// OR-ed: a cluster must match at least one (none given: every cluster).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicates: Vec<ClusterPredicate>,
    /// How candidates are ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prioritizer_policy: Option<PrioritizerPolicy>,
    /// How the chosen clusters spread over topology domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_policy: Option<SpreadPolicy>,
    /// Which cluster taints this placement tolerates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// How the decisions are split into groups (for progressive rollouts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_strategy: Option<DecisionStrategy>,
    /// The order of the decisions: `ClusterName` (default) or `Score`
    /// (highest score first, ties by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
    /// The shortest time between two writes of decision scores that do not
    /// change which clusters are chosen: digits and `h`, `m` or `s`
    /// (default `1m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_rate_limit: Option<String>,
}

impl PlacementSpec {
    /// `sortBy`, defaulted to `ClusterName`.
    pub fn sort_by(&self) -> &str {
        self.sort_by.as_deref().unwrap_or(super::SORT_BY_CLUSTER_NAME)
    }

    /// `scoreRateLimit` in seconds (default 60); `None` when it does not
    /// parse (admission refuses that).
    pub fn score_rate_limit_seconds(&self) -> Option<i64> {
        parse_rate_limit(self.score_rate_limit.as_deref().unwrap_or(super::DEFAULT_SCORE_RATE_LIMIT))
    }
}

/// Seconds in a `scoreRateLimit` (`^[0-9]+[hms]$`, as OCM's schema allows);
/// `None` for any other text or one too large.
pub fn parse_rate_limit(text: &str) -> Option<i64> {
    let unit = match text.as_bytes().last()? {
        b'h' => 3600,
        b'm' => 60,
        b's' => 1,
        _ => return None,
    };
    let digits = &text[..text.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<i64>().ok()?.checked_mul(unit)
}

/// One predicate: a required selector on labels and claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterPredicate {
    /// Absent: matches every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_cluster_selector: Option<ClusterSelector>,
}

/// `prioritizerPolicy`: the mode and the configured prioritizers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrioritizerPolicy {
    /// `Additive` (default) or `Exact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Prioritizers with their weights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configurations: Vec<PrioritizerConfig>,
}

impl PrioritizerPolicy {
    /// The mode, defaulted to `Additive`.
    pub fn mode(&self) -> &str {
        self.mode.as_deref().unwrap_or(super::MODE_ADDITIVE)
    }
}

/// One configured prioritizer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrioritizerConfig {
    /// Which prioritizer (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_coordinate: Option<ScoreCoordinate>,
    /// −10..10, default 1; 0 disables the prioritizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
}

impl PrioritizerConfig {
    /// The weight, defaulted to 1.
    pub fn weight(&self) -> i64 {
        self.weight.unwrap_or(super::DEFAULT_WEIGHT)
    }
}

/// Names a prioritizer: a built-in one or an add-on score.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoreCoordinate {
    /// `BuiltIn` (default) or `AddOn`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// With `BuiltIn`: `Balance`, `Steady`, `ResourceAllocatableCPU` or
    /// `ResourceAllocatableMemory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_in: Option<String>,
    /// With `AddOn`: where the score is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_on: Option<AddOnScore>,
}

impl ScoreCoordinate {
    /// The type, defaulted to `BuiltIn`.
    pub fn type_(&self) -> &str {
        self.type_.as_deref().unwrap_or(super::COORDINATE_BUILT_IN)
    }
}

/// An add-on score: `scoreName` in the AddOnPlacementScore `resourceName`
/// of each cluster's namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddOnScore {
    /// The AddOnPlacementScore's name.
    #[serde(default)]
    pub resource_name: String,
    /// The score's name inside it.
    #[serde(default)]
    pub score_name: String,
}

/// `spreadPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpreadPolicy {
    /// At most 8, the first the most important.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread_constraints: Vec<SpreadConstraint>,
}

/// One spread constraint over the values of a label or a claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpreadConstraint {
    /// The label or claim whose values are the domains.
    #[serde(default)]
    pub topology_key: String,
    /// `Label` or `Claim` (required).
    #[serde(default)]
    pub topology_key_type: String,
    /// ≥ 1, default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_skew: Option<i64>,
    /// `ScheduleAnyway` (default, as in OCM) or `DoNotSchedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_unsatisfiable: Option<String>,
}

/// Tolerates cluster taints matching key, value (by operator) and effect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// Empty matches every key (operator must be `Exists`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// `Equal` (default) or `Exists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Compared under `Equal`; must be empty under `Exists`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
    /// Empty matches every effect; else `NoSelect`, `PreferNoSelect` or `NoSelectIfNew`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effect: String,
    /// How long after the taint's `timeAdded` it stays tolerated (NoSelect
    /// and PreferNoSelect taints only); unset means forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    /// The operator, defaulted to `Equal`.
    pub fn operator(&self) -> &str {
        self.operator.as_deref().unwrap_or(super::OPERATOR_EQUAL)
    }
}

/// `decisionStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionStrategy {
    /// How decisions are grouped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_strategy: Option<GroupStrategy>,
}

/// `decisionStrategy.groupStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupStrategy {
    /// Named groups, filled first (a cluster joins the first that selects it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_groups: Vec<DecisionGroup>,
    /// Most clusters per group: a count ≥ 1 or a percentage of the chosen
    /// clusters (1%..100%, default `100%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters_per_decision_group: Option<IntOrString>,
}

/// A named decision group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionGroup {
    /// The group's name (the `decision-group-name` label's value).
    #[serde(default)]
    pub group_name: String,
    /// Which chosen clusters belong to it (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_cluster_selector: Option<ClusterSelector>,
}
