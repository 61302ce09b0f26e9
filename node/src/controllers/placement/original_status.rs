//! `reportBackStrategy: {type: Mirror, destination: OriginalResource}`: the
//! member's status of each placed object, copied verbatim onto the status
//! of the hub's own object (a Deployment on the hub shows its replicas on
//! the member), as KubeFleet defines it: only for a placement whose policy
//! selects exactly one cluster (PickFixed with one name, PickN of one), since
//! one hub object cannot hold several members' statuses.
//!
//! The agent carries the statuses in its Work's `backReportedStatus`
//! (bounded there in size and rate), so this step only copies what changed:
//! a hub object whose status already equals its member's is not written.
//! Objects unwrapped from an envelope have no hub object and are skipped.

use fleet_api::binding::{self, STATE_BOUND};
use fleet_api::envelope::ENVELOPE_WORK_LABEL;
use fleet_api::placement::{PlacementSpec, PICK_FIXED, PICK_N};
use fleet_api::work::{self, DESTINATION_ORIGINAL_RESOURCE};
use fleet_api::ObjectKey;
use fleet_statemachine::{Op, Store};
use serde_json::Value;

use super::works::BindingWorks;
use super::{Step, View};
use crate::controllers::ControllerError;

/// At most this many hub objects are written by one step; the next pass
/// continues, so one command stays small whatever a Work holds.
const MAX_WRITES_PER_STEP: usize = 64;

/// Whether the placement mirrors statuses onto its original resources.
fn mirrors_onto_originals(spec: &PlacementSpec) -> bool {
    spec.strategy
        .as_ref()
        .and_then(|s| s.report_back_strategy.as_ref())
        .is_some_and(|r| r.mirrors() && r.destination.as_deref() == Some(DESTINATION_ORIGINAL_RESOURCE))
}

/// Whether the policy selects exactly one cluster (KubeFleet's condition for
/// mirroring onto the original resource).
pub fn selects_one_cluster(spec: &PlacementSpec) -> bool {
    let policy = spec.policy.clone().unwrap_or_default();
    match policy.placement_type() {
        PICK_FIXED => policy.cluster_names.len() == 1,
        PICK_N => policy.number_of_clusters == Some(1),
        _ => false,
    }
}

/// The reported statuses to copy: (hub object, member status), from the
/// Works of the placement's one bound binding.
pub fn reported(view: &View, works: &BindingWorks) -> Vec<(ObjectKey, Value)> {
    if !mirrors_onto_originals(&view.spec) || !selects_one_cluster(&view.spec) {
        return Vec::new();
    }
    let bound: Vec<_> = view
        .bindings
        .iter()
        .filter(|b| {
            let spec = binding::spec_of(b);
            spec.is_active() && spec.state == STATE_BOUND
        })
        .collect();
    // While a reschedule moves the placement, two bindings may be bound:
    // which member speaks for the hub object is then not clear, so wait.
    let [only] = bound.as_slice() else { return Vec::new() };
    let Some(works) = works.get(&only.metadata.name) else { return Vec::new() };
    let mut out = Vec::new();
    for w in works.iter().filter(|w| !w.metadata.labels.contains_key(ENVELOPE_WORK_LABEL)) {
        for manifest in work::status_of(w).manifest_conditions {
            let Some(reported) = manifest.back_reported_status else { continue };
            let Some(status) = reported.observed_status.get("status").cloned() else { continue };
            let id = &manifest.identifier;
            out.push((ObjectKey::new(&id.group, &id.kind, &id.namespace, &id.name), status));
        }
    }
    out
}

/// The step that brings the hub objects' statuses to their members', if any
/// differs.
pub fn step(store: &Store, view: &View, works: &BindingWorks) -> Result<Option<Step>, ControllerError> {
    let mut ops = Vec::new();
    for (key, status) in reported(view, works) {
        let Some(mut object) = store.get(&key)?.0 else { continue };
        if object.rest.get("status") == Some(&status) {
            continue;
        }
        object.rest.insert("status".into(), status);
        ops.push(Op::UpdateStatus { object });
        if ops.len() == MAX_WRITES_PER_STEP {
            break;
        }
    }
    Ok((!ops.is_empty()).then(|| Step { ops, events: Vec::new(), placement: view.placement.clone() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(policy: Value, destination: &str) -> PlacementSpec {
        serde_json::from_value(json!({
            "resourceSelectors": [],
            "policy": policy,
            "strategy": {"reportBackStrategy": {"type": "Mirror", "destination": destination}}
        }))
        .unwrap()
    }

    #[test]
    fn only_a_policy_of_exactly_one_cluster_mirrors_onto_the_original() {
        let one_fixed = spec(json!({"placementType": "PickFixed", "clusterNames": ["a"]}), "OriginalResource");
        assert!(selects_one_cluster(&one_fixed) && mirrors_onto_originals(&one_fixed));
        assert!(selects_one_cluster(&spec(json!({"placementType": "PickN", "numberOfClusters": 1}), "x")));
        for policy in [
            json!({"placementType": "PickFixed", "clusterNames": ["a", "b"]}),
            json!({"placementType": "PickFixed", "clusterNames": []}),
            json!({"placementType": "PickN", "numberOfClusters": 2}),
            json!({"placementType": "PickAll"}),
        ] {
            assert!(!selects_one_cluster(&spec(policy.clone(), "OriginalResource")), "{policy}");
        }
        let to_work = spec(json!({"placementType": "PickFixed", "clusterNames": ["a"]}), "WorkAPI");
        assert!(!mirrors_onto_originals(&to_work));
    }
}
