//! The best-first pick both schedulers share: candidates ranked by a score
//! (ties by name, in the direction each scheduler documents), picked one at
//! a time when pick-dependent plugins (topology spread) take part, each
//! pick re-judging the others.

use std::collections::HashMap;

use super::framework::Framework;
use super::plugins::FnvBuild;
use super::table::ClusterTable;
use super::MAX_NOT_CHOSEN_REPORTED;

/// Which name wins a tie of equal scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameTies {
    /// The larger name (KubeFleet's observed behaviour).
    LargerFirst,
    /// The smaller name (OCM's rule).
    SmallerFirst,
}

impl NameTies {
    /// The tie-breaking half of a rank key: larger is better.
    fn tie(self, pos: usize) -> u32 {
        let pos = pos as u32;
        match self {
            NameTies::LargerFirst => pos,
            NameTies::SmallerFirst => !pos,
        }
    }

    /// The candidate position a rank key stands for.
    fn pos(self, key: u64) -> usize {
        let low = (key & 0xFFFF_FFFF) as u32;
        match self {
            NameTies::LargerFirst => low as usize,
            NameTies::SmallerFirst => !low as usize,
        }
    }
}

/// The pick loop's result; positions index the candidate list.
pub(crate) struct PickResult {
    /// Picked, in pick order, with the topology spread score at pick time.
    pub(crate) picked: Vec<(usize, i64)>,
    /// Not picked, allowed at the end, with their final spread score
    /// (ranked best first only as far as [`MAX_NOT_CHOSEN_REPORTED`] past
    /// the picked when no pick-dependent plugin takes part).
    pub(crate) allowed: Vec<(usize, i64)>,
    /// Not picked and rejected by a pick-dependent plugin at the end.
    pub(crate) rejected: Vec<(usize, String)>,
}

/// Picks up to `need` candidates: best topology spread score, then
/// `score(pos)`, then `preferred(pos)` before not, then the name as `ties`
/// says (candidates are in name order, so a position stands for the
/// name). With pick-dependent plugins the candidates are grouped by class
/// key, each group kept in (score, name) order, and every step judges one
/// head per group; `preferred` then counts for the first pick only, as
/// KubeFleet picks one cluster per cycle then and its first cycle drops the
/// older bindings its preference stands for.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pick_best(
    fw: &mut Framework,
    table: &ClusterTable,
    kept: &[usize],
    candidates: &[usize],
    score: impl Fn(usize) -> i64,
    preferred: impl Fn(usize) -> bool,
    ties: NameTies,
    need: usize,
) -> PickResult {
    // Best first: the score, then the name; both fit one packed key.
    let key = |pos: usize| rank_key(score(pos), ties.tie(pos));
    let mut order: Vec<u64> = if fw.has_pickers() {
        (0..candidates.len()).map(key).collect()
    } else {
        // The preference ranks between the score and the name: the score
        // doubled, plus one for a preferred candidate.
        let doubled = |pos: usize| score(pos).saturating_mul(2) + i64::from(preferred(pos));
        (0..candidates.len()).map(|pos| rank_key(doubled(pos), ties.tie(pos))).collect()
    };
    let by_rank = |a: &u64, b: &u64| b.cmp(a);

    if !fw.has_pickers() {
        // Only the first `need` (and the few not-chosen reported after them) need an order.
        let ordered = need.saturating_add(MAX_NOT_CHOSEN_REPORTED).min(order.len());
        if ordered < order.len() {
            order.select_nth_unstable_by(ordered, by_rank);
        }
        order[..ordered].sort_unstable_by(by_rank);
        let take = need.min(order.len());
        return PickResult {
            picked: order[..take].iter().map(|&key| (ties.pos(key), 0)).collect(),
            allowed: order[take..].iter().map(|&key| (ties.pos(key), 0)).collect(),
            rejected: Vec::new(),
        };
    }
    // Each position's key, for the one-at-a-time comparisons below.
    let ranks = order.clone();
    order.sort_unstable_by(by_rank);
    let order: Vec<usize> = order.into_iter().map(|k| ties.pos(k)).collect();

    fw.prepare_pick(table, kept, candidates);
    let mut keys: Vec<u32> = Vec::new();
    let mut bounds: Vec<usize> = Vec::with_capacity(order.len() + 1);
    bounds.push(0);
    for &pos in &order {
        fw.class_key(candidates[pos], &mut keys);
        bounds.push(keys.len());
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    {
        let mut group_of: HashMap<&[u32], usize, FnvBuild> = HashMap::default();
        for (j, &pos) in order.iter().enumerate() {
            let key = &keys[bounds[j]..bounds[j + 1]];
            let g = *group_of.entry(key).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(pos);
        }
    }

    let mut heads = vec![0usize; groups.len()];
    let mut picked = Vec::with_capacity(need.min(order.len()));
    let mut leftovers = None;
    while picked.len() < need {
        let first = picked.is_empty();
        let mut best: Option<(StepRank, usize, usize)> = None;
        for (g, members) in groups.iter().enumerate() {
            let Some(&head) = members.get(heads[g]) else { continue };
            let Some(spread) = fw.evaluate(candidates[head]) else { continue };
            // A group's members get the same verdict; for the first pick a
            // preferred one of equal score ranks above the head.
            let mut at = heads[g];
            if first {
                let head_score = score(head);
                let found =
                    members[at..].iter().take_while(|&&pos| score(pos) == head_score).position(|&pos| preferred(pos));
                at += found.unwrap_or(0);
            }
            let pos = members[at];
            let rank = (spread, score(pos), first && preferred(pos), ranks[pos]);
            if best.is_none_or(|(b, _, _)| rank > b) {
                best = Some((rank, g, at));
            }
        }
        let Some(((spread, ..), g, at)) = best else { break };
        // The group stays in rank order without the one picked.
        let pos = groups[g].remove(at);
        groups[g].insert(heads[g], pos);
        picked.push((pos, spread));
        heads[g] += 1;
        if picked.len() == need {
            // The others are judged in the round they lost (before the last
            // placement), so their reported scores explain why they lost.
            leftovers = Some(judge_rest(fw, candidates, &groups, &heads));
        }
        fw.place(candidates[pos]);
    }
    let (allowed, rejected) = leftovers.unwrap_or_else(|| judge_rest(fw, candidates, &groups, &heads));
    PickResult { picked, allowed, rejected }
}

/// How a candidate ranks in one pick: spread score, score, preferred, then
/// its rank key (the score and the name).
type StepRank = (i64, i64, bool, u64);

/// Not-picked candidates: (allowed with their spread score, rejected with why).
type Leftovers = (Vec<(usize, i64)>, Vec<(usize, String)>);

/// Candidates not picked (each group from its head on), as allowed with
/// their spread score or rejected with the reason, in the current state.
fn judge_rest(fw: &Framework, candidates: &[usize], groups: &[Vec<usize>], heads: &[usize]) -> Leftovers {
    let mut allowed = Vec::new();
    let mut rejected = Vec::new();
    for (g, members) in groups.iter().enumerate() {
        let rest = &members[heads[g].min(members.len())..];
        let Some(&first) = rest.first() else { continue };
        match fw.evaluate(candidates[first]) {
            Some(spread) => allowed.extend(rest.iter().map(|&pos| (pos, spread))),
            None => {
                let reason = fw.reject_reason(candidates[first]);
                rejected.extend(rest.iter().map(|&pos| (pos, reason.clone())));
            }
        }
    }
    (allowed, rejected)
}

/// A sort key ordering by score, then tie (both ascending as numbers): the
/// score, biased to unsigned, in the high half.
fn rank_key(score: i64, tie: u32) -> u64 {
    let clamped = score.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    let biased = (clamped - i64::from(i32::MIN)) as u64;
    (biased << 32) | u64::from(tie)
}
