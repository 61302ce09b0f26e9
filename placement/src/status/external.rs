//! Which resource index a placement's status compares its clusters with.

use fleet_api::binding::{spec_of, STATE_BOUND};
use fleet_api::Object;

use super::cluster::snapshot_index_of_name;

/// The index the status compares each chosen cluster's bound index with,
/// and reports as `observedResourceIndex`: the latest resource snapshot's
/// (`latest`), except for an External placement whose active bindings are
/// all Bound to one index — what its staged update run rolled out, which
/// may be older (SU-12). While they differ, or some is not bound yet, the
/// latest: the clusters that differ then keep `RolloutStarted` not True
/// and the placement `RolloutControlledByExternalController` (SU-13).
pub fn status_index(external: bool, bindings: &[Object], latest: Option<u64>) -> Option<u64> {
    if !external {
        return latest;
    }
    let mut common = None;
    for b in bindings.iter().filter(|b| b.metadata.deletion_timestamp.is_none()) {
        let spec = spec_of(b);
        if !spec.is_active() {
            continue;
        }
        let bound = (spec.state == STATE_BOUND).then(|| snapshot_index_of_name(&spec.resource_snapshot_name));
        match (bound.flatten(), common) {
            (None, _) => return latest,
            (Some(i), None) => common = Some(i),
            (Some(i), Some(c)) if i == c => {}
            (Some(_), Some(_)) => return latest,
        }
    }
    common.or(latest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(cluster: &str, state: &str, snapshot: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ClusterResourceBinding",
            "metadata": {"name": format!("app-{cluster}")},
            "spec": {"state": state, "targetCluster": cluster, "resourceSnapshotName": snapshot},
        }))
        .unwrap()
    }

    #[test]
    fn external_placements_report_the_index_every_cluster_has_else_the_latest() {
        let on = |i: u64| binding(&format!("c{i}"), "Bound", &format!("app-{i}-snapshot"));
        let both_old = [binding("a", "Bound", "app-0-snapshot"), binding("b", "Bound", "app-0-snapshot")];
        assert_eq!(status_index(true, &both_old, Some(1)), Some(0), "a rollback run's index once everywhere");
        assert_eq!(status_index(false, &both_old, Some(1)), Some(1), "rolling updates compare with the latest");
        assert_eq!(status_index(true, &[on(0), on(1)], Some(1)), Some(1), "differing: the latest");
        let pending = [binding("a", "Bound", "app-0-snapshot"), binding("b", "Scheduled", "")];
        assert_eq!(status_index(true, &pending, Some(1)), Some(1), "one not bound yet: the latest");
        let leaving = [binding("a", "Bound", "app-0-snapshot"), binding("b", "Unscheduled", "app-1-snapshot")];
        assert_eq!(status_index(true, &leaving, Some(1)), Some(0), "unscheduled bindings do not count");
        assert_eq!(status_index(true, &[], Some(2)), Some(2));
    }
}
