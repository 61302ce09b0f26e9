//! Taints and tolerations: a tainted cluster gets placements only from
//! policies that tolerate every one of its taints — except OCM's
//! `PreferNoSelect` (written through the ManagedCluster view), a hint that
//! never keeps a cluster out, for either scheduler.

use fleet_api::member::Taint;
use fleet_api::placement::Toleration;

use crate::scheduler::framework::FilterPlugin;

/// OCM's hint-only taint effect.
const PREFER_NO_SELECT: &str = fleet_api::ocm::placement::EFFECT_PREFER_NO_SELECT;
use crate::scheduler::table::ClusterTable;

/// Filters out clusters with a taint that no toleration matches.
#[derive(Debug, Clone, Copy)]
pub struct Taints<'a> {
    tolerations: &'a [Toleration],
}

impl<'a> Taints<'a> {
    /// The filter for a policy's tolerations.
    pub fn new(tolerations: &'a [Toleration]) -> Taints<'a> {
        Taints { tolerations }
    }
}

/// Whether `toleration` matches `taint`: keys equal (or an empty key with
/// `Exists`), `Exists` or equal values under `Equal` (the default), and the
/// effect equal or empty (any).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let exists = toleration.operator() == "Exists";
    let key = toleration.key == taint.key || (toleration.key.is_empty() && exists);
    let value = match toleration.operator() {
        "Exists" => true,
        "Equal" => toleration.value == taint.value,
        _ => false,
    };
    let effect = toleration.effect.is_empty() || toleration.effect == taint.effect;
    key && value && effect
}

/// A taint as KubeFleet's scheduler writes it in a reason (Go's `%+v` of
/// its taint): `&{Key:k Value:v Effect:NoSchedule}`.
pub fn taint_text(taint: &Taint) -> String {
    format!("&{{Key:{} Value:{} Effect:{}}}", taint.key, taint.value, taint.effect)
}

impl FilterPlugin for Taints<'_> {
    fn name(&self) -> &'static str {
        "TaintToleration"
    }

    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        let untolerated =
            |taint: &&Taint| taint.effect != PREFER_NO_SELECT && !self.tolerations.iter().any(|t| tolerates(t, taint));
        match table.info(cluster).taints.iter().find(untolerated) {
            Some(taint) => Err(format!("taint {} cannot be tolerated", taint_text(taint))),
            None => Ok(()),
        }
    }
}
