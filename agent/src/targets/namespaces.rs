//! The namespaces a target reports on each heartbeat, so the hub schedules
//! a ResourcePlacement only onto clusters where its namespace exists
//! (KubeFleet's namespace affinity).
//!
//! Bounded: at most [`MAX_REPORTED_NAMESPACES`] names. Namespaces Fleet
//! placed come first (a ResourcePlacement's namespace is usually placed by a
//! ClusterResourcePlacement), then the others, each group by name, so the
//! same cluster always reports the same list. A namespace being deleted is
//! left out, as KubeFleet's tracker does, so nothing new is scheduled into
//! it. When some do not fit, the report says so in a `Degraded` condition.

use std::collections::BTreeMap;

use fleet_api::conditions::Condition;
use fleet_api::member::{CONDITION_NAMESPACES, MAX_REPORTED_NAMESPACES};

/// One namespace as the target sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenNamespace<'a> {
    /// The namespace's name.
    pub name: &'a str,
    /// Its owner annotation (`<namespace>/<name>` of the Work that placed
    /// it), if Fleet placed it.
    pub owner: Option<&'a str>,
    /// Whether it is being deleted.
    pub terminating: bool,
}

/// The bounded namespace map (name → placing Work's name, empty when
/// Fleet did not place it) and the condition saying whether all fit.
pub fn report<'a>(seen: impl IntoIterator<Item = SeenNamespace<'a>>) -> (BTreeMap<String, String>, Condition) {
    report_bounded(seen, MAX_REPORTED_NAMESPACES)
}

/// [`report`] with a given bound.
fn report_bounded<'a>(
    seen: impl IntoIterator<Item = SeenNamespace<'a>>,
    bound: usize,
) -> (BTreeMap<String, String>, Condition) {
    let mut live: Vec<(bool, &str, String)> = seen
        .into_iter()
        .filter(|n| !n.terminating)
        .map(|n| {
            let work = n.owner.map(|o| o.rsplit('/').next().unwrap_or(o).to_string());
            (work.is_none(), n.name, work.unwrap_or_default())
        })
        .collect();
    live.sort();
    live.dedup_by(|a, b| a.1 == b.1);
    let total = live.len();
    let namespaces: BTreeMap<String, String> =
        live.into_iter().take(bound).map(|(_, name, work)| (name.to_string(), work)).collect();
    let condition = if total > bound {
        Condition::new(
            CONDITION_NAMESPACES,
            false,
            "Degraded",
            format!(
                "Namespaces are collected in a degraded mode since the number of namespaces reaches the track \
                 limit: {total} namespaces, {bound} reported (those Fleet placed first, then by name)"
            ),
        )
    } else {
        Condition::new(CONDITION_NAMESPACES, true, "Succeeded", "All namespaces have been collected successfully")
    };
    (namespaces, condition)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns<'a>(name: &'a str, owner: Option<&'a str>) -> SeenNamespace<'a> {
        SeenNamespace { name, owner, terminating: false }
    }

    #[test]
    fn lists_every_live_namespace_with_the_work_that_placed_it() {
        let seen = [
            ns("default", None),
            ns("app", Some("fleet-member-east/crp-work")),
            SeenNamespace { name: "going", owner: None, terminating: true },
        ];
        let (map, condition) = report(seen);
        assert_eq!(map.len(), 2);
        assert_eq!(map["app"], "crp-work");
        assert_eq!(map["default"], "");
        assert!(!map.contains_key("going"), "a namespace being deleted takes no new placements");
        assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("True", "Succeeded"));
    }

    #[test]
    fn past_the_bound_fleet_placed_namespaces_come_first_then_by_name() {
        let owners: Vec<String> = (0..3).map(|i| format!("fleet-member-east/w{i}")).collect();
        let names: Vec<String> = (0..6).map(|i| format!("ns-{i}")).collect();
        let mut seen: Vec<SeenNamespace<'_>> = names.iter().map(|n| ns(n, None)).collect();
        seen.push(ns("z-placed", Some(&owners[0])));
        seen.push(ns("y-placed", Some(&owners[1])));
        let (map, condition) = report_bounded(seen, 4);
        let listed: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(listed, ["ns-0", "ns-1", "y-placed", "z-placed"]);
        assert_eq!((condition.status.as_str(), condition.reason.as_str()), ("False", "Degraded"));
        assert!(condition.message.contains("8 namespaces, 4 reported"), "{}", condition.message);
    }

    #[test]
    fn the_bound_is_kubefleets() {
        let names: Vec<String> = (0..MAX_REPORTED_NAMESPACES + 1).map(|i| format!("ns-{i:04}")).collect();
        let (map, condition) = report(names.iter().map(|n| ns(n, None)));
        assert_eq!(map.len(), 200);
        assert_eq!(condition.status, "False");
        let (map, condition) = report(names[..200].iter().map(|n| ns(n, None)));
        assert_eq!(map.len(), 200);
        assert_eq!(condition.status, "True");
    }
}
