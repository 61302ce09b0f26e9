//! From chosen clusters to binding changes: which existing binding stands for
//! each cluster, which bindings are kept as they are, and the minimal set of
//! creates, updates and unschedules.

use fleet_api::binding::{ClusterDecision, STATE_UNSCHEDULED};

use super::{BindingAction, ExistingBinding};
use crate::cluster::ClusterInfo;

/// The placement's bindings, indexed by the pass's name-sorted clusters.
pub(crate) struct BindingIndex<'r> {
    bindings: &'r [ExistingBinding],
    current: &'r str,
    /// Per cluster: its primary binding (index into `bindings`).
    primary: Vec<Option<usize>>,
}

impl<'r> BindingIndex<'r> {
    /// Picks each cluster's primary binding: active first, then under the
    /// current policy snapshot, then the first by name.
    pub(crate) fn new(bindings: &'r [ExistingBinding], clusters: &[&ClusterInfo], current: &'r str) -> Self {
        let mut order: Vec<usize> = (0..bindings.len()).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&bindings[a], &bindings[b]);
            (b.is_active(), b.policy_snapshot == current)
                .cmp(&(a.is_active(), a.policy_snapshot == current))
                .then_with(|| a.name.cmp(&b.name))
        });
        let mut primary = vec![None; clusters.len()];
        for i in order {
            if let Some(c) = find_cluster(clusters, &bindings[i].cluster) {
                primary[c].get_or_insert(i);
            }
        }
        BindingIndex { bindings, current, primary }
    }

    /// The binding of a cluster that keeps its placement under the current
    /// policy snapshot: active, current, and the cluster is not leaving.
    pub(crate) fn kept(&self, cluster: usize, info: &ClusterInfo) -> Option<&'r ExistingBinding> {
        let b = &self.bindings[self.primary.get(cluster).copied().flatten()?];
        (b.is_active() && b.policy_snapshot == self.current && !info.leaving).then_some(b)
    }

    /// Whether the placement is on the cluster under an older policy
    /// snapshot: its binding is active but not current, and the cluster is
    /// not leaving (KubeFleet's obsolete binding).
    pub(crate) fn obsolete(&self, cluster: usize, info: &ClusterInfo) -> bool {
        let Some(i) = self.primary.get(cluster).copied().flatten() else { return false };
        let b = &self.bindings[i];
        b.is_active() && b.policy_snapshot != self.current && !info.leaving
    }

    /// The changes that make the bindings match `chosen` (cluster index and
    /// decision, in name order): creates and updates in cluster order, then
    /// unschedules in binding name order.
    pub(crate) fn actions(&self, clusters: &[&ClusterInfo], chosen: &[(usize, ClusterDecision)]) -> Vec<BindingAction> {
        let mut actions = Vec::new();
        let mut keep = vec![false; self.bindings.len()];
        for (c, decision) in chosen {
            match self.primary.get(*c).copied().flatten() {
                Some(i) => {
                    keep[i] = true;
                    let b = &self.bindings[i];
                    let unchanged =
                        b.is_active() && b.policy_snapshot == self.current && b.score == decision.cluster_score;
                    if !unchanged {
                        actions.push(BindingAction::Update {
                            binding: b.name.clone(),
                            cluster: clusters[*c].name.clone(),
                            decision: decision.clone(),
                            revive: b.state == STATE_UNSCHEDULED,
                        });
                    }
                }
                None => actions
                    .push(BindingAction::Create { cluster: clusters[*c].name.clone(), decision: decision.clone() }),
            }
        }
        let mut dropped: Vec<&ExistingBinding> =
            self.bindings.iter().zip(&keep).filter(|(b, keep)| b.is_active() && !**keep).map(|(b, _)| b).collect();
        dropped.sort_by(|a, b| a.name.cmp(&b.name));
        actions.extend(
            dropped
                .into_iter()
                .map(|b| BindingAction::Unschedule { binding: b.name.clone(), cluster: b.cluster.clone() }),
        );
        actions
    }
}

/// The index of the cluster named `name` in the name-sorted list.
pub(crate) fn find_cluster(clusters: &[&ClusterInfo], name: &str) -> Option<usize> {
    clusters.binary_search_by(|c| c.name.as_str().cmp(name)).ok()
}
