//! One OCM scheduling pass over the framework's stages (see the module doc
//! of [`crate::ocm`]).

use std::collections::BTreeMap;

use fleet_api::ocm::placement::{PlacementSpec, DO_NOT_SCHEDULE, TOPOLOGY_KEY_CLAIM};

use super::groups::{paginate, DecisionGroup, GroupSelectors};
use super::inputs::NameSet;
use super::predicates::Predicates;
use super::prioritizers::{weighted, ScoringInputs, WeightedPrioritizer};
use super::scores;
use super::sets::EligibleSets;
use super::status::{misconfigured, satisfied, Satisfaction};
use super::taints::OcmTaints;
use super::{Candidate, Exclusion, OcmOutcome, OcmRequest, MAX_EXCLUSIONS_REPORTED, REASON_DELETING};
use crate::scheduler::pick_loop::{pick_best, NameTies, PickResult};
use crate::scheduler::plugins::{SpreadTerm, TopologySpread};
use crate::scheduler::table::{name_sorted, ClusterTable};
use crate::scheduler::Framework;

/// The earlier of two optional instants.
fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The spread terms of a placement (defaults: maxSkew 1, ScheduleAnyway).
fn spread_terms(spec: &PlacementSpec) -> impl Iterator<Item = SpreadTerm<'_>> {
    spec.spread_policy.iter().flat_map(|s| &s.spread_constraints).map(|c| SpreadTerm {
        key: &c.topology_key,
        claim: c.topology_key_type == TOPOLOGY_KEY_CLAIM,
        max_skew: c.max_skew.unwrap_or(1),
        hard: c.when_unsatisfiable.as_deref() == Some(DO_NOT_SCHEDULE),
    })
}

/// Runs one OCM scheduling pass.
pub fn schedule(request: &OcmRequest) -> OcmOutcome {
    let spec = request.spec;
    let decided: NameSet = request.decided.iter().map(String::as_str).collect();
    let mut fw = Framework::default();
    let sets = EligibleSets::resolve(&spec.cluster_sets, request.cluster_sets, request.bound_sets, fw.vocabulary_mut());
    let predicates = Predicates::compile(&spec.predicates, request.addon_scores, fw.vocabulary_mut());
    let taints = OcmTaints::new(&spec.tolerations, &decided, request.now);
    let group_strategy = spec.decision_strategy.as_ref().and_then(|d| d.group_strategy.as_ref());
    let groups = GroupSelectors::compile(group_strategy, fw.vocabulary_mut());
    let (cpu_slot, memory_slot) = ScoringInputs::register(fw.vocabulary_mut());
    if spec.spread_policy.as_ref().is_some_and(|s| !s.spread_constraints.is_empty()) {
        let spread = TopologySpread::from_terms(spread_terms(spec), fw.vocabulary_mut());
        fw = fw.with_picker(spread);
    }
    fw = fw.with_filter(predicates).with_filter(taints);
    let (prioritizers, mut problems) = weighted(spec.prioritizer_policy.as_ref());

    let sets = match sets {
        Ok(sets) => sets,
        Err(no_sets) => {
            let groups = vec![DecisionGroup::default()];
            let (pages, group_statuses) = paginate(request.placement_name, &groups, &BTreeMap::new());
            return OcmOutcome {
                prioritizers,
                groups,
                pages,
                group_statuses,
                satisfied: satisfied(&Satisfaction::NoSets(no_sets)),
                misconfigured: misconfigured(&problems),
                score_update_time: request.recorded.updated,
                ..OcmOutcome::default()
            };
        }
    };
    let table = ClusterTable::build(fw.vocabulary(), name_sorted(request.clusters));

    // Sets, deletion, filters.
    let mut candidates = Vec::new();
    let mut excluded: Vec<(usize, String)> = Vec::new();
    let mut outside_sets = 0;
    let mut requeue_at = None;
    for i in 0..table.len() {
        if !sets.contains(&table, i) {
            outside_sets += 1;
        } else if table.info(i).leaving {
            excluded.push((i, REASON_DELETING.to_string()));
        } else {
            match fw.filter(&table, i) {
                Ok(()) => {
                    requeue_at = earliest(requeue_at, taints.judge(table.info(i)).ok().flatten());
                    candidates.push(i);
                }
                Err(reason) => excluded.push((i, reason)),
            }
        }
    }

    // Prioritizers.
    let inputs = ScoringInputs {
        decided: &decided,
        counts: request.other_decisions,
        addon: request.addon_scores,
        now: request.now,
        cpu_slot,
        memory_slot,
    };
    let mut totals = vec![0i64; candidates.len()];
    let mut per_prioritizer = Vec::with_capacity(prioritizers.len());
    for WeightedPrioritizer { prioritizer, weight } in &prioritizers {
        let (scores, expires) = inputs.score(prioritizer, &table, &candidates);
        for (total, score) in totals.iter_mut().zip(&scores) {
            *total = total.saturating_add(weight.saturating_mul(*score));
        }
        per_prioritizer.push(scores);
        requeue_at = earliest(requeue_at, expires);
    }

    // Pick.
    let asked = spec.number_of_clusters.map(|n| usize::try_from(n).unwrap_or(0));
    let want = asked.unwrap_or(candidates.len());
    let picked =
        pick_best(&mut fw, &table, &[], &candidates, |pos| totals[pos], |_| false, NameTies::SmallerFirst, want);
    let (candidate_list, mut chosen) =
        describe_candidates(&table, &candidates, &per_prioritizer, &totals, picked, want);
    chosen.sort_unstable();

    // Decision scores and order.
    let fresh: BTreeMap<String, i64> =
        candidate_list.iter().filter(|c| c.chosen).map(|c| (c.cluster.clone(), c.total)).collect();
    let decision_scores = scores::decide(fresh, request.recorded, spec, request.now);
    requeue_at = earliest(requeue_at, decision_scores.due_at);
    let mut ordered = chosen.clone();
    scores::order(spec, &mut ordered, |&c| decision_scores.of(&table.info(c).name));

    // Groups and pages.
    let (length, problem) = groups.group_length(chosen.len());
    problems.extend(problem);
    let decision_groups = groups.form(&table, &ordered, length);
    let (pages, group_statuses) = paginate(request.placement_name, &decision_groups, &decision_scores.scores);

    let feasible = candidates.len();
    let in_sets = table.len() - outside_sets;
    let satisfaction = Satisfaction::Scheduled { sets: &sets.names, in_sets, feasible, asked, chosen: chosen.len() };
    let excluded_total = excluded.len();
    excluded.truncate(MAX_EXCLUSIONS_REPORTED);
    OcmOutcome {
        eligible_sets: sets.names.iter().map(|s| s.to_string()).collect(),
        prioritizers,
        candidates: candidate_list,
        chosen: chosen.iter().map(|&c| table.info(c).name.clone()).collect(),
        excluded: excluded
            .into_iter()
            .map(|(i, reason)| Exclusion { cluster: table.info(i).name.clone(), reason })
            .collect(),
        excluded_total,
        outside_sets,
        groups: decision_groups,
        pages,
        group_statuses,
        satisfied: satisfied(&satisfaction),
        misconfigured: misconfigured(&problems),
        requeue_at,
        score_update_time: decision_scores.updated,
    }
}

/// Every candidate with its scores and verdict (name order), and the chosen
/// ones as table indices.
fn describe_candidates(
    table: &ClusterTable,
    candidates: &[usize],
    per_prioritizer: &[Vec<i64>],
    totals: &[i64],
    result: PickResult,
    want: usize,
) -> (Vec<Candidate>, Vec<usize>) {
    let mut list: Vec<Candidate> = candidates
        .iter()
        .enumerate()
        .map(|(pos, &c)| Candidate {
            cluster: table.info(c).name.clone(),
            scores: per_prioritizer.iter().map(|scores| scores[pos]).collect(),
            total: totals[pos],
            ..Candidate::default()
        })
        .collect();
    let mut chosen = Vec::with_capacity(result.picked.len());
    for (pos, spread) in result.picked {
        list[pos].chosen = true;
        list[pos].spread_score = spread;
        chosen.push(candidates[pos]);
    }
    let not_best = format!("not among the {want} best-ranked clusters");
    for (pos, spread) in result.allowed {
        list[pos].spread_score = spread;
        list[pos].left_out = Some(not_best.clone());
    }
    for (pos, reason) in result.rejected {
        list[pos].left_out = Some(reason);
    }
    (list, chosen)
}
