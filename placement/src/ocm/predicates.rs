//! Predicates: a cluster must match at least one of a placement's
//! `requiredClusterSelector`s (label selector AND claim selector AND every
//! CEL expression of its `celSelector`); no predicate lets every cluster
//! through.
//!
//! A `celSelector` sees the cluster as `managedCluster`, shaped like the
//! ManagedCluster view: `metadata.name` and `metadata.labels`,
//! `spec.taints`, and `status.clusterClaims[] {name, value}`,
//! `status.version.kubernetes` (when reported) and `status.allocatable` /
//! `status.capacity` (`cpu`, `memory`). An expression that fails for a
//! cluster (a missing field, a non-boolean result) leaves it out, with
//! why. `managedCluster.scores(name)` reads the cluster's
//! AddOnPlacementScore `name`, as stored.

use std::sync::Arc;

use fleet_api::ocm::cel::{Compiled, ScoreReader};
use fleet_api::ocm::placement::ClusterPredicate;
use fleet_api::ocm::ClusterSelector;
use serde_json::{json, Value};

use super::inputs::AddOnScores;
use crate::cluster::{ClusterInfo, RESOURCE_PROPERTY_PREFIX};

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

/// One predicate: its labels and claims, and its CEL expressions (or why
/// they do not compile: then it matches nothing).
#[derive(Debug, Clone)]
struct Term {
    selector: CompiledLabelSelector,
    cel: Option<Result<Compiled, String>>,
}

/// The OR of a placement's predicates.
#[derive(Clone)]
pub(crate) struct Predicates {
    terms: Vec<Term>,
    /// The AddOnPlacementScores, when an expression reads them.
    scores: Option<ScoreReader>,
}

impl std::fmt::Debug for Predicates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Predicates").field("terms", &self.terms).field("reads_scores", &self.scores.is_some()).finish()
    }
}

impl Predicates {
    /// Compiles the predicates against the pass's vocabulary; `scores`
    /// serve `celSelector`s that call `scores`.
    pub(crate) fn compile<'a>(
        predicates: &'a [ClusterPredicate],
        scores: &AddOnScores,
        vocabulary: &mut Vocabulary<'a>,
    ) -> Predicates {
        let terms: Vec<Term> = predicates
            .iter()
            .map(|p| match &p.required_cluster_selector {
                Some(selector) => Term {
                    selector: compile_selector(selector, vocabulary),
                    cel: selector
                        .cel_selector
                        .as_ref()
                        .filter(|c| !c.cel_expressions.is_empty())
                        .map(|c| Compiled::new(&c.cel_expressions)),
                },
                None => Term { selector: CompiledLabelSelector::default(), cel: None },
            })
            .collect();
        let reads_scores = terms.iter().any(|t| matches!(&t.cel, Some(Ok(c)) if c.uses_scores()));
        let scores = reads_scores.then(|| {
            let scores = Arc::new(scores.clone());
            Arc::new(move |cluster: &str, resource: &str| scores.list(cluster, resource)) as ScoreReader
        });
        Predicates { terms, scores }
    }
}

/// A cluster as a `celSelector` sees it (see the module doc).
pub(crate) fn managed_cluster(info: &ClusterInfo) -> Value {
    let claims: Vec<Value> = info.claims.iter().map(|(name, value)| json!({"name": name, "value": value})).collect();
    let mut status = json!({"clusterClaims": claims});
    if let Some(version) = info.claims.get(fleet_api::member::K8S_VERSION_PROPERTY) {
        status["version"] = json!({"kubernetes": version});
    }
    for (family, field) in [("allocatable", "allocatable"), ("total", "capacity")] {
        for resource in ["cpu", "memory"] {
            let name = format!("{RESOURCE_PROPERTY_PREFIX}{family}-{resource}");
            if let Some(q) = info.properties.get(&name) {
                status[field][resource] = json!(q.to_string());
            }
        }
    }
    json!({
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": info.name, "labels": info.labels.to_map()},
        "spec": {"taints": serde_json::to_value(&info.taints).unwrap_or_default()},
        "status": status,
    })
}

impl FilterPlugin for Predicates {
    fn name(&self) -> &'static str {
        "Predicate"
    }

    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        if self.terms.is_empty() {
            return Ok(());
        }
        let mut why_not = None;
        let mut object = None;
        for term in &self.terms {
            if !term.selector.matches(table, cluster) {
                continue;
            }
            let outcome = match &term.cel {
                None => Ok(true),
                Some(Err(why)) => Err(why.clone()),
                Some(Ok(compiled)) => {
                    let object = object.get_or_insert_with(|| managed_cluster(table.info(cluster)));
                    compiled.matches(object, self.scores.as_ref())
                }
            };
            match outcome {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(why) => why_not = Some(format!("{REASON_NO_PREDICATE_MATCHES} (celSelector: {why})")),
            }
        }
        Err(why_not.unwrap_or_else(|| REASON_NO_PREDICATE_MATCHES.to_string()))
    }
}
