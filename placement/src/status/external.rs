//! What an External placement reports while staged update runs roll it out
//! (SU-13): each cluster stands on the snapshot its own binding holds, and
//! the placement names a resource index only when every chosen cluster
//! holds the same one.

use fleet_api::conditions::{find, Condition};
use fleet_api::placement::PerClusterStatus;

use super::{REASON_ROLLOUT_EXTERNAL, ROLLOUT_STARTED};

/// The resource index every chosen cluster reports (`observedResourceIndex`
/// of each named entry), when they all report the same non-empty one.
/// Entries without a cluster name stand for clusters the policy could not
/// get and do not count.
pub fn common_index(clusters: &[PerClusterStatus]) -> Option<&str> {
    let mut chosen = clusters.iter().filter(|c| !c.cluster_name.is_empty());
    let first = chosen.next()?.observed_resource_index.as_str();
    let agreed = !first.is_empty() && chosen.all(|c| c.observed_resource_index == first);
    agreed.then_some(first)
}

/// The placement's `RolloutStarted` (unsuffixed type) while its rollout is
/// up to staged update runs and cannot be summed up: Unknown with
/// `RolloutControlledByExternalController`, saying why. `None` when the
/// chosen clusters agree on one index and every one of them has decided
/// its rollout (True or False), so the usual conditions follow.
pub fn undecided_rollout(clusters: &[PerClusterStatus]) -> Option<Condition> {
    let chosen: Vec<&PerClusterStatus> = clusters.iter().filter(|c| !c.cluster_name.is_empty()).collect();
    let message = if common_index(clusters).is_some() {
        let undecided = chosen
            .iter()
            .find(|c| find(&c.conditions, ROLLOUT_STARTED).is_none_or(|r| r.status != "True" && r.status != "False"))?;
        format!(
            "Rollout is controlled by an external controller and cluster {} is in RolloutStarted Unknown state",
            undecided.cluster_name
        )
    } else if chosen.iter().all(|c| c.observed_resource_index.is_empty()) {
        "Rollout is controlled by an external controller and no resource snapshot name is observed across \
         clusters, probably rollout has not started yet"
            .to_string()
    } else {
        "Rollout is controlled by an external controller and different resource snapshot versions are observed \
         across clusters"
            .to_string()
    };
    Some(Condition::unknown(ROLLOUT_STARTED, REASON_ROLLOUT_EXTERNAL, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(cluster: &str, index: &str, rollout: Option<&str>) -> PerClusterStatus {
        let conditions = rollout
            .map(|status| Condition { status: status.into(), ..Condition::new(ROLLOUT_STARTED, true, "r", "") })
            .into_iter()
            .collect();
        PerClusterStatus {
            cluster_name: cluster.into(),
            observed_resource_index: index.into(),
            conditions,
            ..Default::default()
        }
    }

    #[test]
    fn su_13_an_index_only_when_every_chosen_cluster_holds_it() {
        let both = [entry("a", "0", Some("True")), entry("b", "0", Some("True"))];
        assert_eq!(common_index(&both), Some("0"), "a rollback run's index once everywhere");
        let differ = [entry("a", "0", Some("True")), entry("b", "1", Some("True"))];
        assert_eq!(common_index(&differ), None);
        let pending = [entry("a", "0", Some("True")), entry("b", "", Some("Unknown"))];
        assert_eq!(common_index(&pending), None, "one not bound yet");
        let none = [entry("a", "", None), entry("b", "", None)];
        assert_eq!(common_index(&none), None);
        let unfilled = [entry("a", "2", Some("True")), PerClusterStatus::default()];
        assert_eq!(common_index(&unfilled), Some("2"), "a cluster the policy could not get does not count");
        assert_eq!(common_index(&[]), None);
    }

    #[test]
    fn su_13_undecided_rollouts_say_why() {
        let message = |clusters: &[PerClusterStatus]| undecided_rollout(clusters).map(|c| c.message);
        let none = [entry("a", "", Some("Unknown")), entry("b", "", Some("Unknown"))];
        assert!(message(&none).is_some_and(|m| m.contains("no resource snapshot name is observed")));
        let differ = [entry("a", "0", Some("True")), entry("b", "", Some("Unknown"))];
        assert!(message(&differ).is_some_and(|m| m.contains("different resource snapshot versions")));
        let unknown = [entry("a", "1", Some("True")), entry("b", "1", None)];
        assert!(message(&unknown).is_some_and(|m| m.contains("cluster b is in RolloutStarted Unknown state")));
        let decided = [entry("a", "1", Some("True")), entry("b", "1", Some("True"))];
        assert_eq!(message(&decided), None);
        let condition = undecided_rollout(&none).map(|c| (c.type_, c.status, c.reason));
        assert_eq!(condition, Some((ROLLOUT_STARTED.into(), "Unknown".into(), REASON_ROLLOUT_EXTERNAL.into())));
    }
}
