//! EV-1 and EV-2: evictions are judged once, one at a time, oldest first
//! (then by name), each seeing the bindings the previous one left.

use std::collections::BTreeMap;

use fleet_api::eviction::{eviction_spec_of, eviction_status_of, is_namespaced_kind, DisruptionBudgetSpec};
use fleet_api::Object;

use super::{evaluate, EvictionBinding, EvictionInput, EvictionOutcome, EvictionPlacement};

/// The evictions not final yet (EV-1), in evaluation order (EV-2):
/// `creationTimestamp` ascending, then name.
pub fn pending_in_order(evictions: &[Object]) -> Vec<&Object> {
    let mut pending: Vec<&Object> = evictions.iter().filter(|e| !eviction_status_of(e).is_final()).collect();
    let created =
        |e: &Object| e.metadata.creation_timestamp.as_deref().and_then(crate::time::unix_seconds).unwrap_or(i64::MAX);
    pending.sort_by(|a, b| created(a).cmp(&created(b)).then_with(|| a.metadata.name.cmp(&b.metadata.name)));
    pending
}

/// What the evictions of one pass read: per placement, the placement, its
/// bindings and its budget, keyed by [`placement_key`].
#[derive(Debug, Clone, Default)]
pub struct Fleet {
    /// Placements by key.
    pub placements: BTreeMap<String, EvictionPlacement>,
    /// Their bindings, by placement key.
    pub bindings: BTreeMap<String, Vec<EvictionBinding>>,
    /// Their budgets, by placement key.
    pub budgets: BTreeMap<String, DisruptionBudgetSpec>,
}

/// The key of the placement an eviction names: its name for a
/// ClusterResourcePlacement, `<namespace>/<name>` for a ResourcePlacement.
pub fn placement_key(eviction: &Object) -> String {
    let name = eviction_spec_of(eviction).placement_name;
    match eviction.metadata.namespace.as_deref().filter(|_| is_namespaced_kind(&eviction.kind)) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name,
    }
}

/// Evaluates `evictions` (any order; final ones skipped) one at a time in
/// EV-2's order; an executed eviction's binding is gone for the next ones.
/// Returns each evaluated eviction's name and outcome, in order.
pub fn evaluate_serially(evictions: &[Object], fleet: &mut Fleet) -> Vec<(String, EvictionOutcome)> {
    let mut out = Vec::new();
    for eviction in pending_in_order(evictions) {
        let spec = eviction_spec_of(eviction);
        let key = placement_key(eviction);
        let name = &key;
        let no_bindings = Vec::new();
        let outcome = evaluate(&EvictionInput {
            spec: &spec,
            generation: eviction.metadata.generation,
            placement: fleet.placements.get(name),
            bindings: fleet.bindings.get(name).unwrap_or(&no_bindings),
            budget: fleet.budgets.get(name),
            namespaced: is_namespaced_kind(&eviction.kind),
        });
        if let (Some(binding), Some(list)) = (&outcome.delete_binding, fleet.bindings.get_mut(name)) {
            list.retain(|b| &b.name != binding);
        }
        out.push((eviction.metadata.name.clone(), outcome));
    }
    out
}
