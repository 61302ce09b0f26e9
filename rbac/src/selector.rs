//! The label selectors of `aggregationRule.clusterRoleSelectors`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `matchLabels` and `matchExpressions`, all of which must hold; an empty
/// selector selects every ClusterRole, as in Kubernetes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must be present with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Requirement>,
}

/// One set-based requirement.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirement {
    /// The label key.
    #[serde(default)]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(default)]
    pub operator: String,
    /// The values of `In` and `NotIn`.
    #[serde(default)]
    pub values: Vec<String>,
}

impl LabelSelector {
    /// A selector requiring `key=value`.
    pub fn label(key: &str, value: &str) -> LabelSelector {
        LabelSelector { match_labels: BTreeMap::from([(key.to_string(), value.to_string())]), ..Default::default() }
    }

    /// Whether `labels` satisfy every requirement. An unknown operator
    /// selects nothing, so a typo grants no rules.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| {
                let value = labels.get(&r.key);
                match r.operator.as_str() {
                    "In" => value.is_some_and(|v| r.values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !r.values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_by_labels_and_expressions() {
        let labels = BTreeMap::from([("a".to_string(), "1".to_string())]);
        assert!(LabelSelector::default().matches(&labels));
        assert!(LabelSelector::label("a", "1").matches(&labels));
        assert!(!LabelSelector::label("a", "2").matches(&labels));
        let expr = |op: &str, values: &[&str]| LabelSelector {
            match_expressions: vec![Requirement {
                key: "a".into(),
                operator: op.into(),
                values: values.iter().map(|v| v.to_string()).collect(),
            }],
            ..Default::default()
        };
        assert!(expr("In", &["1", "2"]).matches(&labels));
        assert!(!expr("NotIn", &["1"]).matches(&labels));
        assert!(expr("Exists", &[]).matches(&labels));
        assert!(!expr("DoesNotExist", &[]).matches(&labels));
        assert!(!expr("Sometimes", &[]).matches(&labels));
    }
}
