//! The placement's own conditions.

use fleet_api::conditions::Condition;
use fleet_api::placement::PerClusterStatus;

use super::*;

/// A cluster entry whose rollout conditions have these statuses (in order),
/// each with its usual reason.
fn cluster(statuses: &[&str]) -> PerClusterStatus {
    let reasons = [
        REASON_ROLLOUT_STARTED,
        REASON_NO_OVERRIDE,
        REASON_WORK_SYNCHRONIZED,
        REASON_APPLY_SUCCEEDED,
        REASON_AVAILABLE,
    ];
    let conditions = ROLLOUT_CONDITIONS
        .iter()
        .zip(reasons)
        .zip(statuses)
        .map(|((t, r), st)| Condition { status: st.to_string(), ..Condition::new(t, true, r, "") })
        .collect();
    PerClusterStatus { cluster_name: "c".into(), conditions, ..Default::default() }
}

const DONE: &[&str] = &["True", "True", "True", "True", "True"];

fn scheduled(status: &str) -> Condition {
    Condition {
        status: status.into(),
        ..Condition::new("ClusterResourcePlacementScheduled", true, "SchedulingPolicyFulfilled", "found")
    }
}

fn fold(clusters: &[PerClusterStatus], external: bool) -> Vec<Condition> {
    fold_placement(
        "ClusterResourcePlacement",
        3,
        &scheduled("True"),
        clusters,
        Mode { external, report_diff: false },
        &[],
        "t1",
    )
}

fn view(conditions: &[Condition]) -> Vec<(String, String, String)> {
    conditions.iter().map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone())).collect()
}

#[test]
fn all_clusters_done_makes_six_true_conditions_in_order() {
    let out = fold(&[cluster(DONE), cluster(DONE), cluster(DONE)], false);
    let types: Vec<_> = out.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "ClusterResourcePlacementScheduled",
            "ClusterResourcePlacementRolloutStarted",
            "ClusterResourcePlacementOverridden",
            "ClusterResourcePlacementWorkSynchronized",
            "ClusterResourcePlacementApplied",
            "ClusterResourcePlacementAvailable",
        ]
    );
    assert!(out.iter().all(Condition::is_true));
    assert_eq!(out[2].reason, "NoOverrideSpecified");
    assert_eq!(out[4].message, "The selected resources are successfully applied to 3 clusters");
    assert_eq!(out[5].message, "The selected resources in 3 clusters are available now");
    assert!(out[1..].iter().all(|c| c.observed_generation == Some(3)));
}

#[test]
fn resource_placements_use_their_prefix() {
    let out = fold_placement("ResourcePlacement", 1, &scheduled("True"), &[cluster(DONE)], Mode::default(), &[], "t");
    assert_eq!(out[4].type_, "ResourcePlacementApplied");
    assert_eq!(out[4].message, "The selected resources are successfully applied to 1 cluster");
}

#[test]
fn one_failed_cluster_makes_applied_false_and_stops_the_chain() {
    let out = fold(
        &[cluster(DONE), cluster(&["True", "True", "True", "False"]), cluster(&["True", "True", "True", "Unknown"])],
        false,
    );
    assert_eq!(out.len(), 5);
    assert_eq!(view(&out)[4], ("ClusterResourcePlacementApplied".into(), "False".into(), "ApplyFailed".into()));
    assert!(out[4].message.contains("1 cluster,"), "{}", out[4].message);
}

#[test]
fn pending_clusters_make_unknown_conditions() {
    let out = fold(&[cluster(DONE), cluster(&["True", "True", "True", "Unknown"])], false);
    assert_eq!(view(&out)[4], ("ClusterResourcePlacementApplied".into(), "Unknown".into(), "ApplyPending".into()));
    let out = fold(&[cluster(DONE), cluster(&["True", "True", "True", "True", "False"])], false);
    assert_eq!(
        view(&out)[5],
        ("ClusterResourcePlacementAvailable".into(), "False".into(), "ResourceNotAvailableYet".into())
    );
    assert!(out[5].message.contains("1 cluster are not available") || out[5].message.contains("in 1 cluster"));
    let out = fold(&[cluster(&["True", "True", "False"])], false);
    assert_eq!(
        view(&out)[3],
        ("ClusterResourcePlacementWorkSynchronized".into(), "False".into(), "WorkNotSynchronizedYet".into())
    );
}

#[test]
fn rollout_blocked_by_strategy_is_false() {
    let out = fold(&[cluster(DONE), cluster(&["False"]), cluster(&["False"])], false);
    assert_eq!(out.len(), 2);
    assert_eq!(
        view(&out)[1],
        ("ClusterResourcePlacementRolloutStarted".into(), "False".into(), "RolloutNotStartedYet".into())
    );
    assert!(out[1].message.contains("2 clusters"));
}

#[test]
fn su_13_external_placements_sum_up_only_clusters_on_one_snapshot() {
    let on = |index: &str, statuses: &[&str]| PerClusterStatus {
        observed_resource_index: index.into(),
        ..cluster(statuses)
    };
    let external_unknown = (
        "ClusterResourcePlacementRolloutStarted".to_string(),
        "Unknown".to_string(),
        "RolloutControlledByExternalController".to_string(),
    );
    for clusters in [vec![on("0", DONE), on("1", DONE)], vec![on("0", DONE), on("", &["Unknown"])]] {
        let out = fold(&clusters, true);
        assert_eq!(view(&out)[1..], *std::slice::from_ref(&external_unknown), "Scheduled and RolloutStarted alone");
        assert_eq!(out[1].observed_generation, Some(3));
    }
    let out = fold(&[on("1", DONE), on("1", DONE)], true);
    assert_eq!(out.len(), 6, "one snapshot everywhere: the usual chain");
    assert!(out.iter().all(Condition::is_true));
    let out = fold(&[on("1", DONE), on("1", &["False"])], true);
    assert_eq!(view(&out)[1].2, "RolloutNotStartedYet", "a decided False is summed up as usual");
}

#[test]
fn a_cluster_not_yet_folded_counts_as_pending() {
    let unfolded = PerClusterStatus { cluster_name: "late".into(), ..Default::default() };
    let out = fold(&[cluster(DONE), unfolded], false);
    assert_eq!(
        view(&out)[1],
        ("ClusterResourcePlacementRolloutStarted".into(), "Unknown".into(), "RolloutStartedUnknown".into())
    );
}

#[test]
fn pending_scheduling_stops_the_chain_but_unfulfilled_does_not() {
    let out = fold_placement(
        "ClusterResourcePlacement",
        3,
        &scheduled("Unknown"),
        &[cluster(DONE)],
        Mode::default(),
        &[],
        "t",
    );
    assert_eq!(out.len(), 1);
    let out =
        fold_placement("ClusterResourcePlacement", 3, &scheduled("False"), &[cluster(DONE)], Mode::default(), &[], "t");
    assert_eq!(out.len(), 6);
}

#[test]
fn with_no_chosen_cluster_scheduled_stands_alone() {
    assert_eq!(fold(&[], false).len(), 1);
    let could_not_get = PerClusterStatus::default();
    let out = fold(std::slice::from_ref(&could_not_get), false);
    assert_eq!(out.len(), 1, "an unnamed entry is a cluster the policy could not get");
    let out = fold(&[cluster(DONE), could_not_get], false);
    assert_eq!(out.len(), 6);
    assert!(out.iter().all(Condition::is_true), "only chosen clusters are counted");
}

#[test]
fn transition_times_move_only_when_status_changes() {
    let first = fold(&[cluster(&["True", "True", "True", "Unknown"])], false);
    assert!(first.iter().all(|c| c.last_transition_time == "t1"));
    let second = fold_placement(
        "ClusterResourcePlacement",
        3,
        &scheduled("True"),
        &[cluster(DONE)],
        Mode::default(),
        &first,
        "t2",
    );
    let times: Vec<_> = second.iter().map(|c| c.last_transition_time.as_str()).collect();
    assert_eq!(times, vec!["t1", "t1", "t1", "t1", "t2", "t2"]);
}
