//! OCM taints and tolerations: which clusters a placement may select given
//! their taints, and until when a `tolerationSeconds` keeps tolerating.
//!
//! A cluster's taints, as OCM sees them, are its MemberCluster taints plus
//! the `cluster.open-cluster-management.io/unreachable` taint (`NoSelect`,
//! added when the cluster stopped being available) while it is not joined
//! or not healthy. Effects:
//! - `NoSelect`: the cluster is not selected unless a toleration matches
//!   (and, with `tolerationSeconds`, only until `timeAdded` + seconds);
//! - `NoSelectIfNew`: like `NoSelect` (`tolerationSeconds` included) for
//!   clusters not in the placement's current decisions; decided clusters
//!   keep tolerating it, without a toleration;
//! - `PreferNoSelect`: never filters (OCM's behaviour);
//! - Fleet's own `NoSchedule` reads as `NoSelectIfNew` (no new placements,
//!   existing ones stay, as KubeFleet treats it); any other effect as
//!   `NoSelect`.
//!
//! A taint without a known `timeAdded` is not covered by a toleration with
//! `tolerationSeconds` (nothing shows the period has not passed).

use crate::time::unix_seconds;
use fleet_api::ocm::placement::{
    Toleration, EFFECT_NO_SELECT, EFFECT_NO_SELECT_IF_NEW, EFFECT_PREFER_NO_SELECT, OPERATOR_EXISTS, TAINT_UNREACHABLE,
};

use super::inputs::NameSet;
use crate::cluster::ClusterInfo;
use crate::scheduler::table::ClusterTable;
use crate::scheduler::FilterPlugin;

/// An OCM taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    NoSelect,
    PreferNoSelect,
    NoSelectIfNew,
}

impl Effect {
    fn of(effect: &str) -> Effect {
        match effect {
            EFFECT_PREFER_NO_SELECT => Effect::PreferNoSelect,
            EFFECT_NO_SELECT_IF_NEW | "NoSchedule" => Effect::NoSelectIfNew,
            _ => Effect::NoSelect,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Effect::NoSelect => EFFECT_NO_SELECT,
            Effect::PreferNoSelect => EFFECT_PREFER_NO_SELECT,
            Effect::NoSelectIfNew => EFFECT_NO_SELECT_IF_NEW,
        }
    }
}

/// One taint as OCM sees it.
#[derive(Debug, Clone, Copy)]
struct OcmTaint<'c> {
    key: &'c str,
    value: &'c str,
    effect: Effect,
    /// `timeAdded` in Unix seconds, if known.
    added: Option<i64>,
}

impl OcmTaint<'_> {
    fn text(&self) -> String {
        match self.value {
            "" => format!("{}:{}", self.key, self.effect.as_str()),
            value => format!("{}={}:{}", self.key, value, self.effect.as_str()),
        }
    }
}

/// The cluster's taints as OCM sees them (see the module doc).
fn taints_of(cluster: &ClusterInfo) -> impl Iterator<Item = OcmTaint<'_>> {
    let own = cluster.taints.iter().map(|t| OcmTaint {
        key: &t.key,
        value: &t.value,
        effect: Effect::of(&t.effect),
        added: t.time_added.as_deref().and_then(unix_seconds),
    });
    let unreachable = (cluster.ineligible.is_some() && !cluster.leaving).then_some(OcmTaint {
        key: TAINT_UNREACHABLE,
        value: "",
        effect: Effect::NoSelect,
        added: cluster.unavailable_since,
    });
    own.chain(unreachable)
}

/// Whether `t` matches `taint` by key, value (under its operator) and effect.
fn matches(t: &Toleration, taint: &OcmTaint) -> bool {
    let effect = t.effect.is_empty() || t.effect == taint.effect.as_str();
    let key = t.key.is_empty() || t.key == taint.key;
    let value = t.operator() == OPERATOR_EXISTS || t.value == taint.value;
    effect && key && value
}

/// The OCM taint filter of one placement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OcmTaints<'a> {
    tolerations: &'a [Toleration],
    /// The placement's current decisions (they keep `NoSelectIfNew` taints).
    decided: &'a NameSet<'a>,
    now: i64,
}

impl<'a> OcmTaints<'a> {
    /// The filter for a placement's tolerations at `now` (Unix seconds).
    pub(crate) fn new(tolerations: &'a [Toleration], decided: &'a NameSet<'a>, now: i64) -> OcmTaints<'a> {
        OcmTaints { tolerations, decided, now }
    }

    /// `Ok(until)` when every taint is tolerated, `until` being the first
    /// second at which a toleration with `tolerationSeconds` stops covering
    /// one; `Err(why)` otherwise.
    pub(crate) fn judge(&self, cluster: &ClusterInfo) -> Result<Option<i64>, String> {
        let decided = self.decided.contains(cluster.name.as_str());
        let mut until: Option<i64> = None;
        for taint in taints_of(cluster) {
            match taint.effect {
                Effect::PreferNoSelect => continue,
                Effect::NoSelectIfNew if decided => continue,
                _ => {}
            }
            // The longest cover any matching toleration gives: None = not
            // tolerated, Some(None) = forever, Some(Some(t)) = until t.
            let mut tolerated: Option<Option<i64>> = None;
            let mut expired = false;
            for t in self.tolerations.iter().filter(|t| matches(t, &taint)) {
                let cover = match (t.toleration_seconds, taint.added) {
                    (None, _) => Some(None),
                    (Some(s), Some(added)) if self.now < added.saturating_add(s) => Some(Some(added.saturating_add(s))),
                    _ => {
                        expired = true;
                        None
                    }
                };
                tolerated = match (tolerated, cover) {
                    (Some(None), _) | (_, Some(None)) => Some(None),
                    (Some(Some(a)), Some(Some(b))) => Some(Some(a.max(b))),
                    (best, None) | (None, best) => best,
                };
            }
            match tolerated {
                Some(Some(at)) => until = Some(until.map_or(at, |u| u.min(at))),
                Some(None) => {}
                None if expired => {
                    return Err(format!("the toleration of taint \"{}\" has expired", taint.text()));
                }
                None => return Err(format!("cluster has taint \"{}\" that is not tolerated", taint.text())),
            }
        }
        Ok(until)
    }
}

impl FilterPlugin for OcmTaints<'_> {
    fn name(&self) -> &'static str {
        "TaintToleration"
    }

    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        self.judge(table.info(cluster)).map(|_| ())
    }
}
