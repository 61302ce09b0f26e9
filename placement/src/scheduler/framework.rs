//! The scheduling framework: the stages every pass goes through and the
//! small traits a plugin implements to take part in one of them.
//!
//! Stages, in order: **filters** (pick-independent: required affinity,
//! eligibility, taints; in KubeFleet's order, as the first rejection is
//! the reason shown) → **scores**
//! (pick-independent: preferred affinity) → **sort** → **pick**, where
//! pick-dependent plugins (topology spread) re-judge the candidates after each
//! cluster is picked. Adding a concern means adding one plugin to
//! [`Framework::for_policy`]; no other plugin changes.
//!
//! Plugins see clusters through the pass's [`ClusterTable`]: when built, a
//! plugin records in the framework's [`Vocabulary`] the label keys, values
//! and properties it reads, and the pass reads those out of every cluster
//! once.

use fleet_api::binding::ClusterScore;
use fleet_api::placement::{PlacementPolicy, PICK_FIXED, PICK_N};

use super::plugins::{Eligibility, NamespaceAffinity, PreferredAffinity, RequiredAffinity, Taints, TopologySpread};
use super::table::{ClusterTable, Vocabulary};
use super::{SchedulingOutcome, SchedulingRequest};

/// A pick-independent yes/no judgement of one cluster (eligibility, required
/// affinity, taints). Kept clusters skip filters: placements are
/// IgnoredDuringExecution.
pub trait FilterPlugin {
    /// The plugin's name, for diagnostics.
    fn name(&self) -> &'static str;
    /// `Err(reason)` when the cluster must not get the placement; the reason
    /// is a sentence shown in the policy snapshot's status.
    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String>;
}

/// A pick-independent score. It sees every candidate at once because some
/// scores are relative to the whole candidate set (a property sorter's min
/// and max).
pub trait ScorePlugin {
    /// The plugin's name, for diagnostics.
    fn name(&self) -> &'static str;
    /// Adds this plugin's share to `scores[i]` for cluster `candidates[i]`.
    fn score(&self, table: &ClusterTable, candidates: &[usize], scores: &mut [ClusterScore]);
}

/// A pick-dependent plugin's judgement of placing one more cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickVerdict {
    /// Allowed, adding this to the topology spread score.
    Score(i64),
    /// Not allowed at this point (the reason comes from [`PickPlugin::reject_reason`]).
    Reject,
}

/// A plugin whose verdict depends on the clusters already picked (topology
/// spread). Clusters are indices into the pass's name-sorted cluster list.
///
/// For speed, the plugin declares classes: clusters with equal class keys
/// must always receive equal verdicts, so the picker judges one cluster per
/// class per step instead of every candidate.
pub trait PickPlugin {
    /// The plugin's name, for diagnostics.
    fn name(&self) -> &'static str;
    /// Starts a pass: `kept` clusters are placed already, `candidates` may be.
    fn prepare(&mut self, table: &ClusterTable, kept: &[usize], candidates: &[usize]);
    /// Appends the class key of a candidate (same key ⇒ same verdict, always).
    fn class_key(&self, cluster: usize, key: &mut Vec<u32>);
    /// The verdict for placing on `cluster` given what is placed so far.
    fn evaluate(&self, cluster: usize) -> PickVerdict;
    /// Why `cluster` is rejected now (called only after [`PickVerdict::Reject`]).
    fn reject_reason(&self, cluster: usize) -> String;
    /// Records that `cluster` was picked.
    fn place(&mut self, cluster: usize);
}

/// The plugins of one scheduling pass, per stage.
#[derive(Default)]
pub struct Framework<'a> {
    vocabulary: Vocabulary<'a>,
    filters: Vec<Box<dyn FilterPlugin + 'a>>,
    scorers: Vec<Box<dyn ScorePlugin + 'a>>,
    pickers: Vec<Box<dyn PickPlugin + 'a>>,
}

impl<'a> Framework<'a> {
    /// The plugins a (defaulted) policy calls for: PickFixed checks
    /// eligibility only; PickAll checks required affinity, then
    /// eligibility (KubeFleet's filter order: a cluster failing both is
    /// reported as not matching), namespace affinity (for a
    /// ResourcePlacement in `namespace`) and taints; PickN adds preferred
    /// affinity scores and topology spread.
    pub fn for_policy(policy: &'a PlacementPolicy, namespace: Option<&'a str>) -> Framework<'a> {
        let mut fw = Framework::default();
        match policy.placement_type() {
            PICK_FIXED => fw.with_filter(Eligibility),
            placement_type => {
                let required = RequiredAffinity::new(policy, fw.vocabulary_mut());
                fw = fw.with_filter(required).with_filter(Eligibility);
                if let Some(namespace) = namespace {
                    fw = fw.with_filter(NamespaceAffinity::new(namespace));
                }
                fw = fw.with_filter(Taints::new(&policy.tolerations));
                if placement_type == PICK_N {
                    let preferred = PreferredAffinity::new(policy, fw.vocabulary_mut());
                    fw = fw.with_scorer(preferred);
                    if !policy.topology_spread_constraints.is_empty() {
                        let spread = TopologySpread::new(&policy.topology_spread_constraints, fw.vocabulary_mut());
                        fw = fw.with_picker(spread);
                    }
                }
                fw
            }
        }
    }

    /// Where a plugin being built records what it reads of the clusters.
    pub fn vocabulary_mut(&mut self) -> &mut Vocabulary<'a> {
        &mut self.vocabulary
    }

    /// What the plugins read of the clusters.
    pub fn vocabulary(&self) -> &Vocabulary<'a> {
        &self.vocabulary
    }

    /// Runs one scheduling pass (see [`super::schedule`]). The framework
    /// should have been built for `request.policy`.
    pub fn schedule(&mut self, request: &SchedulingRequest) -> SchedulingOutcome {
        super::pick::run(self, request)
    }

    /// Adds a filter (run in the order added; the first rejection wins).
    pub fn with_filter(mut self, plugin: impl FilterPlugin + 'a) -> Self {
        self.filters.push(Box::new(plugin));
        self
    }

    /// Adds a score plugin.
    pub fn with_scorer(mut self, plugin: impl ScorePlugin + 'a) -> Self {
        self.scorers.push(Box::new(plugin));
        self
    }

    /// Adds a pick-dependent plugin.
    pub fn with_picker(mut self, plugin: impl PickPlugin + 'a) -> Self {
        self.pickers.push(Box::new(plugin));
        self
    }

    /// Runs the filters on one cluster: the first rejection's reason, if any.
    pub fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        self.filters.iter().try_for_each(|f| f.filter(table, cluster))
    }

    /// Scores the candidates (parallel to `candidates`).
    pub fn score(&self, table: &ClusterTable, candidates: &[usize]) -> Vec<ClusterScore> {
        let mut scores = vec![ClusterScore::default(); candidates.len()];
        for s in &self.scorers {
            s.score(table, candidates, &mut scores);
        }
        scores
    }

    /// Whether any pick-dependent plugin takes part (then picks are made one at a time).
    pub(crate) fn has_pickers(&self) -> bool {
        !self.pickers.is_empty()
    }

    pub(crate) fn prepare_pick(&mut self, table: &ClusterTable, kept: &[usize], candidates: &[usize]) {
        for p in &mut self.pickers {
            p.prepare(table, kept, candidates);
        }
    }

    pub(crate) fn class_key(&self, cluster: usize, key: &mut Vec<u32>) {
        for p in &self.pickers {
            p.class_key(cluster, key);
        }
    }

    /// The combined verdict: the sum of the scores, or `None` when any plugin rejects.
    pub(crate) fn evaluate(&self, cluster: usize) -> Option<i64> {
        let mut total = 0i64;
        for p in &self.pickers {
            match p.evaluate(cluster) {
                PickVerdict::Score(s) => total = total.saturating_add(s),
                PickVerdict::Reject => return None,
            }
        }
        Some(total)
    }

    /// The first rejecting plugin's reason.
    pub(crate) fn reject_reason(&self, cluster: usize) -> String {
        self.pickers
            .iter()
            .find(|p| p.evaluate(cluster) == PickVerdict::Reject)
            .map(|p| p.reject_reason(cluster))
            .unwrap_or_default()
    }

    pub(crate) fn place(&mut self, cluster: usize) {
        for p in &mut self.pickers {
            p.place(cluster);
        }
    }
}
