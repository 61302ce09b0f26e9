//! The three ways of choosing (PickAll, PickFixed, PickN) on top of the
//! framework's stages, and the one-at-a-time pick loop for pick-dependent
//! plugins.

use std::cmp::Reverse;

use fleet_api::binding::{ClusterDecision, ClusterScore, STATE_BOUND};
use fleet_api::placement::{PICK_FIXED, PICK_N};

use super::bindings::{find_cluster, BindingIndex};
use super::framework::Framework;
use super::pick_loop::{pick_best, NameTies};
use super::table::{name_sorted, ClusterTable};
use super::{
    not_chosen_reason, picked_reason, scheduled_message, SchedulingOutcome, SchedulingRequest, FILTERED_PREFIX,
    MAX_NOT_CHOSEN_REPORTED, MAX_TARGET_CLUSTERS,
};
use crate::cluster::ClusterInfo;

/// What a policy chose, before binding changes are derived.
struct Selection {
    /// Cluster index and decision, in name order.
    chosen: Vec<(usize, ClusterDecision)>,
    not_chosen: Vec<ClusterDecision>,
    /// In name order.
    filtered: Vec<ClusterDecision>,
    fulfilled: bool,
    message: String,
    settled: bool,
}

/// One pass: sort the clusters, index the bindings, choose, derive actions.
pub(crate) fn run(fw: &mut Framework, request: &SchedulingRequest) -> SchedulingOutcome {
    let table = ClusterTable::build(fw.vocabulary(), name_sorted(request.clusters));
    let index = BindingIndex::new(request.bindings, table.clusters(), request.policy_snapshot);
    let selection = match request.policy.placement_type() {
        PICK_FIXED => pick_fixed(fw, request, &table, &index),
        PICK_N => pick_n(fw, request, &table, &index),
        _ => pick_all(fw, &table, &index),
    };
    let actions = index.actions(table.clusters(), &selection.chosen);
    SchedulingOutcome {
        chosen: selection.chosen.into_iter().map(|(_, d)| d).collect(),
        not_chosen: selection.not_chosen,
        filtered: selection.filtered,
        fulfilled: selection.fulfilled,
        message: selection.message,
        settled: selection.settled,
        actions,
    }
}

fn picked(name: &str, score: Option<ClusterScore>) -> ClusterDecision {
    ClusterDecision {
        cluster_name: name.to_string(),
        selected: true,
        cluster_score: score,
        reason: picked_reason(name, score.as_ref()),
    }
}

fn filtered(name: &str, reason: String) -> ClusterDecision {
    ClusterDecision { cluster_name: name.to_string(), selected: false, cluster_score: None, reason }
}

fn not_chosen(name: &str, score: ClusterScore) -> ClusterDecision {
    ClusterDecision {
        cluster_name: name.to_string(),
        selected: false,
        cluster_score: Some(score),
        reason: not_chosen_reason(name, &score),
    }
}

/// PickAll: the kept clusters and every candidate that passes the filters
/// (as KubeFleet, each scored 0 and 0: PickAll does not score).
fn pick_all(fw: &Framework, table: &ClusterTable, index: &BindingIndex) -> Selection {
    let clusters = table.clusters();
    let mut chosen = Vec::new();
    let mut rejected = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        if let Some(b) = index.kept(i, c) {
            chosen.push((i, picked(&c.name, b.score)));
            continue;
        }
        match fw.filter(table, i) {
            Ok(()) => chosen.push((i, picked(&c.name, Some(ClusterScore::default())))),
            Err(reason) => rejected.push((i, reason)),
        }
    }
    let filtered = reported_filtered(clusters, rejected);
    let message = scheduled_message(true, chosen.len());
    Selection { chosen, not_chosen: Vec::new(), filtered, fulfilled: true, message, settled: false }
}

/// PickFixed: the listed clusters that exist and are eligible or kept.
fn pick_fixed(fw: &Framework, request: &SchedulingRequest, table: &ClusterTable, index: &BindingIndex) -> Selection {
    let clusters = table.clusters();
    let mut names: Vec<&str> = request.policy.cluster_names.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let mut chosen = Vec::new();
    let mut rejected = Vec::new();
    for name in &names {
        let Some(i) = find_cluster(clusters, name) else {
            rejected.push(filtered(name, format!("Specified cluster \"{name}\" is not found")));
            continue;
        };
        let c = clusters[i];
        if let Some(b) = index.kept(i, c) {
            chosen.push((i, picked(name, b.score)));
            continue;
        }
        match (fw.filter(table, i), c.ineligible_reason()) {
            (Ok(()), _) => chosen.push((i, picked(name, None))),
            (Err(_), Some(why)) => rejected
                .push(filtered(name, format!("Cluster \"{name}\" is not eligible for resource placement yet: {why}"))),
            (Err(reason), None) => rejected.push(filtered(name, format!("{FILTERED_PREFIX}{reason}"))),
        }
    }
    let fulfilled = rejected.is_empty();
    let message = scheduled_message(fulfilled, chosen.len());
    Selection { chosen, not_chosen: Vec::new(), filtered: rejected, fulfilled, message, settled: false }
}

/// PickN: keep what is placed (dropping the lowest first on scale-in), then
/// add the best candidates until N.
fn pick_n(fw: &mut Framework, request: &SchedulingRequest, table: &ClusterTable, index: &BindingIndex) -> Selection {
    let clusters = table.clusters();
    let want = request.number_of_clusters.or(request.policy.number_of_clusters).unwrap_or(0).max(0);
    let n = usize::try_from(want).unwrap_or(usize::MAX);

    // Kept clusters, and scale-in.
    let mut kept: Vec<(usize, Option<ClusterScore>, bool)> = clusters
        .iter()
        .enumerate()
        .filter_map(|(i, c)| index.kept(i, c).map(|b| (i, b.score, b.state == STATE_BOUND)))
        .collect();
    let mut is_kept = vec![false; clusters.len()];
    if kept.len() > n {
        kept.sort_by_key(|&(i, score, bound)| {
            let s = score.unwrap_or_default();
            (bound, s.topology_spread_score, s.affinity_score, i)
        });
        kept.drain(..kept.len() - n);
        kept.sort_unstable_by_key(|k| k.0);
    }
    for k in &kept {
        is_kept[k.0] = true;
    }
    let mut chosen: Vec<(usize, ClusterDecision)> =
        kept.iter().map(|&(i, score, _)| (i, picked(&clusters[i].name, score))).collect();
    if kept.len() == n {
        // As KubeFleet: nothing to pick, so nothing is judged (with N = 0,
        // no cluster ever is).
        let message = scheduled_message(true, n);
        let settled = n > 0;
        return Selection { chosen, not_chosen: Vec::new(), filtered: Vec::new(), fulfilled: true, message, settled };
    }

    // Filters.
    let mut candidates = Vec::new();
    let mut rejected: Vec<(usize, String)> = Vec::new();
    for (i, _) in is_kept.iter().enumerate().filter(|(_, kept)| !**kept) {
        match fw.filter(table, i) {
            Ok(()) => candidates.push(i),
            Err(reason) => rejected.push((i, reason)),
        }
    }

    // Scores, sort, pick. On equal topology spread and affinity scores, a
    // cluster the placement is on under an older policy snapshot goes
    // first (KubeFleet's same-placement affinity), then the larger name.
    let scores = fw.score(table, &candidates);
    let obsolete: Vec<bool> = candidates.iter().map(|&i| index.obsolete(i, clusters[i])).collect();
    let kept_indices: Vec<usize> = kept.iter().map(|k| k.0).collect();
    let need = n.saturating_sub(kept.len());
    let affinity = |pos: usize| scores[pos].affinity_score;
    let older = |pos: usize| obsolete[pos];
    let result = pick_best(fw, table, &kept_indices, &candidates, affinity, older, NameTies::LargerFirst, need);
    // The not chosen are reported as the last cycle ranked them: with
    // spread constraints KubeFleet picks one cluster per cycle, and only
    // its first still ranks by the older bindings.
    let last_cycle_first = !fw.has_pickers() || result.picked.is_empty() || (result.picked.len() == 1 && need == 1);
    let rank = |pos: usize| (scores[pos].affinity_score, last_cycle_first && obsolete[pos]);

    for &(pos, spread) in &result.picked {
        let score = ClusterScore { topology_spread_score: spread, ..scores[pos] };
        chosen.push((candidates[pos], picked(&clusters[candidates[pos]].name, Some(score))));
    }
    chosen.sort_unstable_by_key(|c| c.0);

    // Only the best few not picked are reported: select them in O(n), then sort those.
    let mut rest = result.allowed;
    let best_first = |&(pos, spread): &(usize, i64)| (Reverse(spread), Reverse(rank(pos)), Reverse(pos));
    if rest.len() > MAX_NOT_CHOSEN_REPORTED {
        rest.select_nth_unstable_by_key(MAX_NOT_CHOSEN_REPORTED - 1, best_first);
        rest.truncate(MAX_NOT_CHOSEN_REPORTED);
    }
    rest.sort_unstable_by_key(best_first);
    let not_chosen_list = rest
        .iter()
        .map(|&(pos, spread)| {
            let score = ClusterScore { topology_spread_score: spread, ..scores[pos] };
            not_chosen(&clusters[candidates[pos]].name, score)
        })
        .collect();
    rejected.extend(result.rejected.into_iter().map(|(pos, reason)| (candidates[pos], reason)));

    let fulfilled = chosen.len() == n;
    let message = scheduled_message(fulfilled, chosen.len());
    Selection {
        chosen,
        not_chosen: not_chosen_list,
        filtered: reported_filtered(clusters, rejected),
        fulfilled,
        message,
        settled: false,
    }
}

/// The filtered clusters as decisions, in name order, only as many as a
/// policy snapshot's status can list (decisions are built for those alone:
/// at 10,000 clusters most are filtered, and naming them all would cost more
/// than scheduling).
fn reported_filtered(clusters: &[&ClusterInfo], mut rejected: Vec<(usize, String)>) -> Vec<ClusterDecision> {
    if rejected.len() > MAX_TARGET_CLUSTERS {
        rejected.select_nth_unstable_by_key(MAX_TARGET_CLUSTERS - 1, |r| r.0);
        rejected.truncate(MAX_TARGET_CLUSTERS);
    }
    rejected.sort_unstable_by_key(|r| r.0);
    rejected.into_iter().map(|(i, reason)| filtered(&clusters[i].name, format!("{FILTERED_PREFIX}{reason}"))).collect()
}
