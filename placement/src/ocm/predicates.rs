//! Predicates: a cluster must match at least one of a placement's
//! `requiredClusterSelector`s (label selector AND claim selector); no
//! predicate lets every cluster through.

use fleet_api::ocm::placement::ClusterPredicate;
use fleet_api::ocm::ClusterSelector;

use crate::scheduler::plugins::CompiledLabelSelector;
use crate::scheduler::table::{ClusterTable, Vocabulary};
use crate::scheduler::FilterPlugin;

/// Why a cluster fails the predicates.
pub const REASON_NO_PREDICATE_MATCHES: &str = "cluster does not match any of the placement's predicates";

/// Compiles an OCM cluster selector: its label selector AND its claim
/// selector (an absent part matches everything).
pub(crate) fn compile_selector<'a>(
    selector: &'a ClusterSelector,
    vocabulary: &mut Vocabulary<'a>,
) -> CompiledLabelSelector {
    let labels = match &selector.label_selector {
        Some(s) => CompiledLabelSelector::compile(s, vocabulary),
        None => CompiledLabelSelector::default(),
    };
    let claims = selector.claim_selector.as_ref().map(|c| c.match_expressions.as_slice()).unwrap_or_default();
    labels.and(CompiledLabelSelector::compile_claims(claims, vocabulary))
}

/// The OR of a placement's predicates.
#[derive(Debug, Clone)]
pub(crate) struct Predicates {
    terms: Vec<CompiledLabelSelector>,
}

impl Predicates {
    /// Compiles the predicates against the pass's vocabulary.
    pub(crate) fn compile<'a>(predicates: &'a [ClusterPredicate], vocabulary: &mut Vocabulary<'a>) -> Predicates {
        let terms = predicates
            .iter()
            .map(|p| match &p.required_cluster_selector {
                Some(selector) => compile_selector(selector, vocabulary),
                None => CompiledLabelSelector::default(),
            })
            .collect();
        Predicates { terms }
    }
}

impl FilterPlugin for Predicates {
    fn name(&self) -> &'static str {
        "Predicate"
    }

    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        if self.terms.is_empty() || self.terms.iter().any(|t| t.matches(table, cluster)) {
            Ok(())
        } else {
            Err(REASON_NO_PREDICATE_MATCHES.to_string())
        }
    }
}
