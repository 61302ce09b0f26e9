//! Label selectors and property expressions compiled against a pass's
//! [`Vocabulary`], so matching a cluster compares value ids in the
//! [`ClusterTable`] instead of strings in the cluster's maps.
//!
//! A compiled selector matches exactly the clusters
//! [`LabelSelector::matches`] does (a property test checks it).

use fleet_api::placement::{ClusterSelectorTerm, PropertySelectorRequirement};
use fleet_api::quantity::Quantity;
use fleet_api::selector::{LabelSelectorRequirement, SelectorOperator};
use fleet_api::LabelSelector;

use crate::scheduler::table::{ClusterTable, Vocabulary, NO_VALUE};

/// One label requirement on one key slot.
#[derive(Debug, Clone)]
enum LabelTest {
    /// The value is one of these ids.
    In(Vec<u32>),
    /// The key is absent or its value is none of these ids.
    NotIn(Vec<u32>),
    Exists,
    DoesNotExist,
}

/// A label selector (matchLabels AND matchExpressions) over key slots.
#[derive(Debug, Clone, Default)]
pub struct CompiledLabelSelector {
    requirements: Vec<(usize, LabelTest)>,
}

impl CompiledLabelSelector {
    /// Registers the selector's keys and values in `vocabulary`.
    pub fn compile<'a>(selector: &'a LabelSelector, vocabulary: &mut Vocabulary<'a>) -> CompiledLabelSelector {
        let mut requirements = Vec::new();
        for (key, value) in &selector.match_labels {
            let slot = vocabulary.label_key(key);
            requirements.push((slot, LabelTest::In(vec![vocabulary.label_value(slot, value)])));
        }
        let mut compiled = CompiledLabelSelector { requirements };
        compiled.add_expressions(&selector.match_expressions, vocabulary, Vocabulary::label_key);
        compiled
    }

    /// Compiles OCM claim requirements: the same tests on the cluster's
    /// claims instead of its labels.
    pub fn compile_claims<'a>(
        expressions: &'a [LabelSelectorRequirement],
        vocabulary: &mut Vocabulary<'a>,
    ) -> CompiledLabelSelector {
        let mut compiled = CompiledLabelSelector::default();
        compiled.add_expressions(expressions, vocabulary, Vocabulary::claim_key);
        compiled
    }

    /// A selector that also requires `other` (both must match).
    pub fn and(mut self, other: CompiledLabelSelector) -> CompiledLabelSelector {
        self.requirements.extend(other.requirements);
        self
    }

    fn add_expressions<'a>(
        &mut self,
        expressions: &'a [LabelSelectorRequirement],
        vocabulary: &mut Vocabulary<'a>,
        key_slot: fn(&mut Vocabulary<'a>, &'a str) -> usize,
    ) {
        for r in expressions {
            let slot = key_slot(vocabulary, &r.key);
            let mut ids = || r.values.iter().map(|v| vocabulary.label_value(slot, v)).collect();
            let test = match r.operator {
                SelectorOperator::In => LabelTest::In(ids()),
                SelectorOperator::NotIn => LabelTest::NotIn(ids()),
                SelectorOperator::Exists => LabelTest::Exists,
                SelectorOperator::DoesNotExist => LabelTest::DoesNotExist,
            };
            self.requirements.push((slot, test));
        }
    }

    /// Whether the cluster's labels satisfy every requirement.
    pub fn matches(&self, table: &ClusterTable, cluster: usize) -> bool {
        self.requirements.iter().all(|(slot, test)| {
            let value = table.label(cluster, *slot);
            match test {
                LabelTest::In(ids) => ids.contains(&value),
                LabelTest::NotIn(ids) => value == NO_VALUE || !ids.contains(&value),
                LabelTest::Exists => value != NO_VALUE,
                LabelTest::DoesNotExist => value == NO_VALUE,
            }
        })
    }
}

/// A property comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PropertyOp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl PropertyOp {
    fn parse(text: &str) -> Option<PropertyOp> {
        Some(match text {
            "Gt" => PropertyOp::Gt,
            "Ge" => PropertyOp::Ge,
            "Lt" => PropertyOp::Lt,
            "Le" => PropertyOp::Le,
            "Eq" => PropertyOp::Eq,
            "Ne" => PropertyOp::Ne,
            _ => return None,
        })
    }
}

/// One property expression with its value parsed once per pass.
#[derive(Debug, Clone)]
struct PropertyExpr {
    slot: usize,
    /// `None` when the operator or the value is unusable: nothing matches.
    test: Option<(PropertyOp, Quantity)>,
}

impl PropertyExpr {
    fn compile<'a>(req: &'a PropertySelectorRequirement, vocabulary: &mut Vocabulary<'a>) -> PropertyExpr {
        let op = PropertyOp::parse(&req.operator);
        let value = req.values.first().and_then(|v| Quantity::parse(v).ok());
        PropertyExpr { slot: vocabulary.property(&req.name), test: op.zip(value) }
    }

    /// A cluster lacking the property fails.
    fn matches(&self, table: &ClusterTable, cluster: usize) -> bool {
        let (Some((op, want)), Some(have)) = (self.test, table.property(cluster, self.slot)) else {
            return false;
        };
        match op {
            PropertyOp::Gt => have > want,
            PropertyOp::Ge => have >= want,
            PropertyOp::Lt => have < want,
            PropertyOp::Le => have <= want,
            PropertyOp::Eq => have == want,
            PropertyOp::Ne => have != want,
        }
    }
}

/// A cluster selector term, compiled: label selector AND property expressions.
#[derive(Debug, Clone)]
pub struct CompiledTerm {
    labels: Option<CompiledLabelSelector>,
    properties: Vec<PropertyExpr>,
}

impl CompiledTerm {
    /// Registers the term's keys, values and properties in `vocabulary`.
    pub fn compile<'a>(term: &'a ClusterSelectorTerm, vocabulary: &mut Vocabulary<'a>) -> CompiledTerm {
        let labels = term.label_selector.as_ref().map(|s| CompiledLabelSelector::compile(s, vocabulary));
        let properties = term.property_selector.iter().flat_map(|s| &s.match_expressions);
        CompiledTerm { labels, properties: properties.map(|p| PropertyExpr::compile(p, vocabulary)).collect() }
    }

    /// Whether the label selector (if any) and every property expression match.
    pub fn matches(&self, table: &ClusterTable, cluster: usize) -> bool {
        self.labels.as_ref().is_none_or(|s| s.matches(table, cluster))
            && self.properties.iter().all(|e| e.matches(table, cluster))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::cluster::ClusterInfo;

    const KEYS: [&str; 3] = ["a", "bb", "cc"];
    const VALUES: [&str; 3] = ["x", "y", "zz"];

    fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map(
            proptest::sample::select(&KEYS[..]).prop_map(str::to_string),
            proptest::sample::select(&VALUES[..]).prop_map(str::to_string),
            0..4,
        )
    }

    fn requirement() -> impl Strategy<Value = LabelSelectorRequirement> {
        let operator = proptest::sample::select(vec![
            SelectorOperator::In,
            SelectorOperator::NotIn,
            SelectorOperator::Exists,
            SelectorOperator::DoesNotExist,
        ]);
        let values = proptest::collection::vec(proptest::sample::select(&VALUES[..]).prop_map(str::to_string), 0..3);
        (proptest::sample::select(&KEYS[..]), operator, values)
            .prop_map(|(key, operator, values)| LabelSelectorRequirement { key: key.to_string(), operator, values })
    }

    fn selector() -> impl Strategy<Value = LabelSelector> {
        (labels(), proptest::collection::vec(requirement(), 0..3))
            .prop_map(|(match_labels, match_expressions)| LabelSelector { match_labels, match_expressions })
    }

    proptest! {
        #[test]
        fn compiled_selector_matches_exactly_what_the_selector_matches(
            selectors in proptest::collection::vec(selector(), 1..3),
            open in proptest::collection::vec(any::<bool>(), 3),
            fleet in proptest::collection::vec(labels(), 1..8),
        ) {
            let mut vocabulary = Vocabulary::default();
            // Some keys opened, as a topology plugin does.
            for (key, open) in KEYS.iter().zip(&open) {
                if *open {
                    let slot = vocabulary.label_key(key);
                    vocabulary.open(slot);
                }
            }
            let compiled: Vec<_> = selectors.iter().map(|s| CompiledLabelSelector::compile(s, &mut vocabulary)).collect();
            let clusters: Vec<ClusterInfo> =
                fleet.iter().map(|labels| ClusterInfo { labels: labels.into(), ..ClusterInfo::default() }).collect();
            let table = ClusterTable::build(&vocabulary, clusters.iter().collect());
            for (s, c) in selectors.iter().zip(&compiled) {
                for (i, cluster) in clusters.iter().enumerate() {
                    prop_assert_eq!(c.matches(&table, i), s.matches(&cluster.labels.to_map()), "selector {} on {:?}", s, cluster.labels);
                }
            }
        }
    }

    #[test]
    fn property_expressions_compare_exactly_and_fail_on_missing_properties() {
        let term: ClusterSelectorTerm = serde_json::from_value(serde_json::json!({
            "propertySelector": {"matchExpressions": [{"name": "cpu", "operator": "Ge", "values": ["1500m"]}]}
        }))
        .unwrap();
        let mut vocabulary = Vocabulary::default();
        let compiled = CompiledTerm::compile(&term, &mut vocabulary);
        let with = |v: Option<&str>| {
            let mut c = ClusterInfo::default();
            if let Some(v) = v {
                c.properties.insert("cpu", Quantity::parse(v).unwrap());
            }
            c
        };
        let clusters = [with(Some("1.5")), with(Some("1499m")), with(None), with(Some("2"))];
        let table = ClusterTable::build(&vocabulary, clusters.iter().collect());
        let matched: Vec<bool> = (0..clusters.len()).map(|i| compiled.matches(&table, i)).collect();
        assert_eq!(matched, [true, false, false, true]);
    }
}
