//! Cluster sets and bindings: which sets a Placement may choose from, and
//! whether a cluster belongs to one of them.
//!
//! A set is usable when a ManagedClusterSetBinding in the placement's
//! namespace names it and it exists (as an object, or as one of the
//! built-in `default` and `global` sets); `spec.clusterSets`, when given,
//! narrows the usable sets further.

use std::collections::BTreeSet;

use fleet_api::ocm::clusterset::{
    self, ManagedClusterSetSpec, CLUSTER_SET_LABEL, DEFAULT_SET, GLOBAL_SET, SELECTOR_LABEL_SELECTOR,
};
use fleet_api::ocm::placement::{REASON_NO_BINDINGS, REASON_NO_INTERSECTION};
use fleet_api::Object;

use crate::scheduler::plugins::CompiledLabelSelector;
use crate::scheduler::table::{ClusterTable, Vocabulary, NO_VALUE};

/// A ManagedClusterSet as the scheduler reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterSet {
    /// The set's name.
    pub name: String,
    /// How its members are chosen.
    pub spec: ManagedClusterSetSpec,
}

impl ClusterSet {
    /// The scheduler's view of a stored ManagedClusterSet.
    pub fn from_object(object: &Object) -> ClusterSet {
        ClusterSet { name: object.metadata.name.clone(), spec: clusterset::set_spec_of(object) }
    }
}

/// Why a placement has no set to choose from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoSets {
    /// No binding in the namespace names an existing set.
    NoBindings,
    /// Sets are bound, but none of those `spec.clusterSets` names.
    NoIntersection(Vec<String>),
}

impl NoSets {
    /// The `PlacementSatisfied` reason, as OCM's controller gives it.
    pub fn reason(&self) -> &'static str {
        match self {
            NoSets::NoBindings => REASON_NO_BINDINGS,
            NoSets::NoIntersection(_) => REASON_NO_INTERSECTION,
        }
    }

    /// The condition message, word for word OCM's.
    pub fn message(&self) -> String {
        match self {
            NoSets::NoBindings => "No valid ManagedClusterSetBindings found in placement namespace".into(),
            NoSets::NoIntersection(wanted) => {
                format!("None of ManagedClusterSets [{}] is bound to placement namespace", wanted.join(","))
            }
        }
    }
}

/// How one set decides membership.
enum Membership {
    /// The set label equals the set's name (and, for `default`, is absent).
    SetLabel,
    /// A label selector decides.
    Selector(CompiledLabelSelector),
}

/// The sets a placement chooses from, compiled against the pass's vocabulary.
pub(crate) struct EligibleSets<'a> {
    /// Names, sorted.
    pub(crate) names: Vec<&'a str>,
    /// The set label's key slot.
    label_slot: usize,
    /// Value ids of the sets chosen by the set label.
    by_label: Vec<u32>,
    /// Whether `default` is chosen by the set label (clusters without it belong).
    unlabelled: bool,
    selectors: Vec<CompiledLabelSelector>,
    /// A set selects every cluster.
    everything: bool,
}

/// Whether a set exists without an object (`default` and `global` always do).
fn is_builtin(name: &str) -> bool {
    name == DEFAULT_SET || name == GLOBAL_SET
}

impl<'a> EligibleSets<'a> {
    /// The usable sets: bound in the namespace, existing, and named by
    /// `wanted` when that is not empty.
    pub(crate) fn resolve(
        wanted: &'a [String],
        sets: &'a [ClusterSet],
        bound: &'a [String],
        vocabulary: &mut Vocabulary<'a>,
    ) -> Result<EligibleSets<'a>, NoSets> {
        let exists = |name: &str| is_builtin(name) || sets.iter().any(|s| s.name == name);
        let valid: BTreeSet<&str> = bound.iter().map(String::as_str).filter(|n| exists(n)).collect();
        if valid.is_empty() {
            return Err(NoSets::NoBindings);
        }
        let names: Vec<&str> = if wanted.is_empty() {
            valid.into_iter().collect()
        } else {
            let wanted_names: BTreeSet<&str> = wanted.iter().map(String::as_str).collect();
            valid.intersection(&wanted_names).copied().collect()
        };
        if names.is_empty() {
            return Err(NoSets::NoIntersection(wanted.to_vec()));
        }
        let mut eligible = EligibleSets {
            names: names.clone(),
            label_slot: vocabulary.label_key(CLUSTER_SET_LABEL),
            by_label: Vec::new(),
            unlabelled: false,
            selectors: Vec::new(),
            everything: false,
        };
        for name in names {
            let stored = sets.iter().find(|s| s.name == name).map(|s| &s.spec);
            match Self::membership(name, stored, vocabulary) {
                Some(Membership::SetLabel) => {
                    eligible.by_label.push(vocabulary.label_value(eligible.label_slot, name));
                    eligible.unlabelled |= name == DEFAULT_SET;
                }
                Some(Membership::Selector(s)) => eligible.selectors.push(s),
                None => eligible.everything = true,
            }
        }
        Ok(eligible)
    }

    /// How a set decides membership; `None` when it takes every cluster.
    fn membership(
        name: &str,
        stored: Option<&'a ManagedClusterSetSpec>,
        vocabulary: &mut Vocabulary<'a>,
    ) -> Option<Membership> {
        let spec = match stored {
            Some(spec) => spec,
            // Built-in sets: `global` takes everything, `default` uses the label.
            None if name == GLOBAL_SET => return None,
            None => return Some(Membership::SetLabel),
        };
        if spec.selector_type() != SELECTOR_LABEL_SELECTOR {
            return Some(Membership::SetLabel);
        }
        match spec.label_selector() {
            Some(selector) if !selector.is_empty() => {
                Some(Membership::Selector(CompiledLabelSelector::compile(selector, vocabulary)))
            }
            _ => None,
        }
    }

    /// Whether the cluster belongs to any of the sets.
    pub(crate) fn contains(&self, table: &ClusterTable, cluster: usize) -> bool {
        if self.everything {
            return true;
        }
        let set = table.label(cluster, self.label_slot);
        if self.by_label.contains(&set) || (self.unlabelled && set == NO_VALUE) {
            return true;
        }
        self.selectors.iter().any(|s| s.matches(table, cluster))
    }
}
