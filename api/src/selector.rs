//! Label selectors: the Kubernetes `matchLabels`/`matchExpressions` form and
//! the kubectl `-l` string form.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::names;
use crate::validation::{join_path, quote, FieldError};

mod syntax;
#[cfg(test)]
mod tests;

/// Selects objects by their labels (Kubernetes semantics).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Every key must be present with exactly this value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Every requirement must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry: a key, an operator and its values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    /// The label key the requirement is about.
    pub key: String,
    /// How the label value relates to `values`.
    pub operator: SelectorOperator,
    /// Values for `In`/`NotIn`; empty for `Exists`/`DoesNotExist`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// The operator of a [`LabelSelectorRequirement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum SelectorOperator {
    /// The label is present and its value is one of `values`.
    In,
    /// The label is absent or its value is none of `values`.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

impl SelectorOperator {
    /// The Kubernetes spelling (`In`, `NotIn`, `Exists`, `DoesNotExist`).
    pub fn as_str(&self) -> &'static str {
        match self {
            SelectorOperator::In => "In",
            SelectorOperator::NotIn => "NotIn",
            SelectorOperator::Exists => "Exists",
            SelectorOperator::DoesNotExist => "DoesNotExist",
        }
    }
}

/// What a `-l` selector may look like, appended to every parse error.
pub(crate) const ALLOWED: &str = "a selector is a comma-separated list of `key=value`, `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`, `key` or `!key`";

/// Why a `-l` selector string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The string is not valid selector syntax.
    #[error("unable to parse label selector {}: {detail}; {ALLOWED}", quote(.text))]
    Syntax {
        /// The whole selector text.
        text: String,
        /// What was wrong.
        detail: String,
    },
    /// A key is not a valid label key.
    #[error("invalid label key {} in selector {}: {detail}", quote(.key), quote(.text))]
    InvalidKey {
        /// The whole selector text.
        text: String,
        /// The offending key.
        key: String,
        /// What a label key may look like.
        detail: String,
    },
    /// A value is not a valid label value.
    #[error("invalid label value {} in selector {}: {detail}", quote(.value), quote(.text))]
    InvalidValue {
        /// The whole selector text.
        text: String,
        /// The offending value.
        value: String,
        /// What a label value may look like.
        detail: String,
    },
}

impl LabelSelector {
    /// Parses kubectl `-l` syntax (`a=b,c!=d,e in (x,y),f notin (z),g,!h`);
    /// the empty string is the empty selector, which matches everything.
    pub fn parse(text: &str) -> Result<LabelSelector, SelectorError> {
        syntax::parse(text)
    }

    /// Whether `labels` satisfy every matchLabel and every expression.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector has no terms (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Checks operators' values and label syntax; `path` (e.g.
    /// `spec.resourceSelectors[0].labelSelector`) prefixes each error.
    pub fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = crate::validation::validate_labels(&self.match_labels, &join_path(path, "matchLabels"));
        for (i, req) in self.match_expressions.iter().enumerate() {
            let base = join_path(path, &format!("matchExpressions[{i}]"));
            if let Some(detail) = names::validate_label_key(&req.key) {
                errors.push(FieldError::invalid(join_path(&base, "key"), quote(&req.key), detail));
            }
            let values_path = join_path(&base, "values");
            match req.operator {
                SelectorOperator::In | SelectorOperator::NotIn if req.values.is_empty() => {
                    errors.push(FieldError::required(
                        values_path.as_str(),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
                SelectorOperator::Exists | SelectorOperator::DoesNotExist if !req.values.is_empty() => {
                    errors.push(FieldError::forbidden(
                        values_path.as_str(),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
                _ => {}
            }
            for (j, value) in req.values.iter().enumerate() {
                if let Some(detail) = names::validate_label_value(value) {
                    errors.push(FieldError::invalid(format!("{values_path}[{j}]"), quote(value), detail));
                }
            }
        }
        errors
    }
}

impl LabelSelectorRequirement {
    /// Whether `labels` satisfy this one requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            SelectorOperator::In => value.is_some_and(|v| self.values.contains(v)),
            SelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            SelectorOperator::Exists => value.is_some(),
            SelectorOperator::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for LabelSelectorRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        match (self.operator, self.values.as_slice()) {
            (SelectorOperator::Exists, _) => write!(f, "{key}"),
            (SelectorOperator::DoesNotExist, _) => write!(f, "!{key}"),
            (SelectorOperator::NotIn, [value]) => write!(f, "{key}!={value}"),
            (SelectorOperator::In, values) => write!(f, "{key} in ({})", values.join(",")),
            (SelectorOperator::NotIn, values) => write!(f, "{key} notin ({})", values.join(",")),
        }
    }
}

impl fmt::Display for LabelSelector {
    /// The kubectl `-l` form; [`LabelSelector::parse`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (key, value) in &self.match_labels {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{key}={value}")?;
        }
        for req in &self.match_expressions {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{req}")?;
        }
        Ok(())
    }
}
