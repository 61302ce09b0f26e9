//! The OCM Placement controller's step: one scheduling pass over the
//! store's sets, bindings, decision pages and add-on scores and the leader's
//! cluster cache, then — when anything differs — one command with the page
//! creates, updates and deletes and the Placement's new status, and the
//! events docs/spec/ocm.md asks for: `DecisionCreate` per new page,
//! `DecisionUpdate` per changed or removed page, and `ScoreUpdate` (every
//! candidate's `name:total`) only when the chosen clusters changed.
//!
//! A Placement reads other placements' pages only when it weights
//! `Balance` (their decisions are what Balance counts), and add-on scores
//! only when it has an AddOn prioritizer or a `celSelector` calling
//! `scores`.
//!
//! What the command checks: the Placement (its status write is conditional
//! on the version read), every page it writes, and the set bindings of its
//! namespace and the ManagedClusterSets it read (few objects, and they
//! decide which clusters count at all). Other placements' pages (Balance)
//! and add-on scores are many and change often; through the feed, a change
//! of the clusters any page decides wakes every Placement that weights
//! Balance, and any add-on score change every Placement, so a pass made on
//! an older one is redone right after — the same level-triggered guarantee
//! the cluster cache gives.

use fleet_api::ocm::clusterset::{BINDING_KIND, SET_KIND};
use fleet_api::ocm::decision::{self, PlacementDecisionStatus};
use fleet_api::ocm::placement as placement_api;
use fleet_api::ocm::{addon_score, CLUSTER_GROUP};
use fleet_api::{Object, ObjectKey};
use fleet_placement::cluster::ClusterInfo;
use fleet_placement::ocm::{self as ocm_scheduler, pages_of, weighted, OcmInputs, OcmObjects, PageChange, Prioritizer};
use fleet_statemachine::{ListQuery, Op, Store};

use super::delay_until;
use crate::controllers::events::EventNote;
use crate::controllers::placement::objects::{check, delete, with_uid};
use crate::controllers::placement::{Next, Step};
use crate::controllers::ControllerError;

/// Event reason: a PlacementDecision page was created.
pub const REASON_DECISION_CREATE: &str = "DecisionCreate";
/// Event reason: a PlacementDecision page changed or was removed.
pub const REASON_DECISION_UPDATE: &str = "DecisionUpdate";
/// Event reason: the decisions changed; the message holds every candidate's total.
pub const REASON_SCORE_UPDATE: &str = "ScoreUpdate";

/// Lists every object of an OCM cluster-group kind (in `namespace`, if given).
pub fn list_kind(store: &Store, kind: &str, namespace: Option<&str>) -> Result<Vec<Object>, ControllerError> {
    let query = ListQuery {
        group: CLUSTER_GROUP.into(),
        kind: kind.into(),
        namespace: namespace.map(str::to_string),
        selector: None,
    };
    Ok(store.list(&query)?.0)
}

/// The next step for the OCM Placement at `key`.
pub fn next_step(
    store: &Store,
    clusters: &[ClusterInfo],
    key: &ObjectKey,
    now: &str,
    unix_now: i64,
) -> Result<Next, ControllerError> {
    let Some(placement) = store.get(key)?.0 else { return Ok(Next::Done { recheck_after: None }) };
    if placement.metadata.deletion_timestamp.is_some() {
        return Ok(Next::Done { recheck_after: None });
    }
    let namespace = placement.metadata.namespace.clone().unwrap_or_default();
    let name = placement.metadata.name.clone();
    let spec = placement_api::spec_of(&placement);

    let set_objects = list_kind(store, SET_KIND, None)?;
    let bindings = list_kind(store, BINDING_KIND, Some(&namespace))?;
    // Other placements' pages count only for Balance, and add-on scores
    // only for AddOn prioritizers and CEL selectors calling `scores`: a
    // Placement with none of them reads only its own namespace's pages and
    // no scores.
    let (prioritizers, _) = weighted(spec.prioritizer_policy.as_ref());
    let reads_balance = prioritizers.iter().any(|w| w.prioritizer == Prioritizer::Balance);
    let reads_scores =
        prioritizers.iter().any(|w| matches!(w.prioritizer, Prioritizer::AddOn(_)))
            || spec.predicates.iter().filter_map(|p| p.required_cluster_selector.as_ref()).any(|s| {
                s.cel_selector.as_ref().is_some_and(|c| fleet_api::ocm::cel::calls_scores(&c.cel_expressions))
            });
    let all_pages = list_kind(store, decision::KIND, (!reads_balance).then_some(namespace.as_str()))?;
    let score_objects = if reads_scores { list_kind(store, addon_score::KIND, None)? } else { Vec::new() };

    let stored: Vec<Object> = pages_of(&all_pages, &namespace, &name).into_iter().cloned().collect();
    let objects = OcmObjects { sets: &set_objects, set_bindings: &bindings, pages: &all_pages, scores: &score_objects };
    let previous = placement_api::status_of(&placement);
    let last_score_update = previous.last_score_update_time.as_deref().and_then(fleet_api::time::unix_seconds);
    let inputs = OcmInputs::from_objects(&namespace, &name, objects).with_last_score_update(last_score_update);

    let timer = crate::metrics::scheduling("ocm");
    let outcome = ocm_scheduler::schedule(&inputs.request(&name, &spec, clusters, unix_now));
    drop(timer);
    let recheck_after = outcome.requeue_at.map(|at| delay_until(at, unix_now));

    let status = outcome.status(&previous, placement.metadata.generation, now);
    let changes = ocm_scheduler::page_changes(&name, &stored, &outcome.pages);
    if changes.is_empty() && status == previous {
        return Ok(Next::Done { recheck_after });
    }

    let mut ops = Vec::new();
    let mut events = Vec::new();
    for change in changes {
        match change {
            PageChange::Create(page) => {
                let object = with_uid(page.to_object(&placement));
                events.push(EventNote::normal(
                    REASON_DECISION_CREATE,
                    format!("Decision {} is created with placement {name} in namespace {namespace}", page.name),
                ));
                ops.push(Op::Create { object });
            }
            PageChange::Update(page) => {
                let Some(old) = stored.iter().find(|o| o.metadata.name == page.name) else { continue };
                let mut updated = old.clone();
                let labels = page.labels(&name);
                let relabel = labels.iter().any(|(k, v)| old.metadata.labels.get(k) != Some(v));
                if relabel {
                    updated.metadata.labels.extend(labels);
                    ops.push(Op::Update { object: updated.clone() });
                    // The label write moved the version: the status write below follows it.
                    updated.metadata.resource_version = String::new();
                }
                decision::set_status(&mut updated, &PlacementDecisionStatus { decisions: page.decisions.clone() });
                ops.push(Op::UpdateStatus { object: updated });
                events.push(EventNote::normal(
                    REASON_DECISION_UPDATE,
                    format!("Decision {} is updated with placement {name} in namespace {namespace}", page.name),
                ));
            }
            PageChange::Delete(page_name) => {
                let Some(old) = stored.iter().find(|o| o.metadata.name == page_name) else { continue };
                ops.push(delete(old));
                events.push(EventNote::normal(
                    REASON_DECISION_UPDATE,
                    format!("Decision {page_name} is deleted with placement {name} in namespace {namespace}"),
                ));
            }
        }
    }
    if outcome.decisions_changed(inputs.decided()) {
        events.push(EventNote::normal(REASON_SCORE_UPDATE, outcome.score_message()));
    }
    ops.extend(bindings.iter().chain(&set_objects).map(check));
    let mut updated = placement.clone();
    placement_api::set_status(&mut updated, &status);
    ops.push(Op::UpdateStatus { object: updated });
    Ok(Next::Write(Box::new(Step { ops, events, placement })))
}
