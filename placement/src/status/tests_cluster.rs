//! One chosen cluster's status entry.

use fleet_api::conditions::{find, Condition};
use fleet_api::placement::PerClusterStatus;
use fleet_api::Object;
use serde_json::{json, Value};

use super::*;

pub(super) fn binding(state: &str, snapshot: &str) -> Object {
    serde_json::from_value(
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
        "metadata": {"name": "web-east"}, "spec": {"state": state, "targetCluster": "east",
            "resourceSnapshotName": snapshot, "schedulingPolicySnapshotName": "web-0"}}),
    )
    .unwrap()
}

/// A Work of `binding` web-east for `index` at generation 1 with
/// (type, status, reason) conditions observed at 1 and manifest conditions.
pub(super) fn work(name: &str, index: u64, conditions: &[(&str, &str, &str)], manifests: Value) -> Object {
    let conditions: Vec<Value> = conditions
        .iter()
        .map(|(t, s, r)| json!({"type": t, "status": s, "reason": r, "observedGeneration": 1, "lastTransitionTime": "t0"}))
        .collect();
    serde_json::from_value(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
        "metadata": {"name": name, "namespace": "fleet-member-east", "generation": 1, "labels": {
            "kubernetes-fleet.io/parent-resource-binding": "web-east",
            "kubernetes-fleet.io/parent-resource-snapshot-index": index.to_string()}},
        "spec": {"workload": {"manifests": []}},
        "status": {"conditions": conditions, "manifestConditions": manifests}}))
    .unwrap()
}

pub(super) const OK: &[(&str, &str, &str)] =
    &[("Applied", "True", "AllManifestsApplied"), ("Available", "True", "AllManifestsAvailable")];

fn scheduled_entry() -> PerClusterStatus {
    PerClusterStatus {
        cluster_name: "east".into(),
        conditions: vec![Condition {
            last_transition_time: "t0".into(),
            ..Condition::new("Scheduled", true, "Scheduled", "picked")
        }],
        ..Default::default()
    }
}

fn fold(binding: &Object, works: &[Object], latest: Option<u64>, expected: usize) -> PerClusterStatus {
    let mut entry = scheduled_entry();
    let facts = ClusterRollout {
        cluster: "east",
        binding,
        works,
        latest_resource_index: latest,
        external: false,
        overrides_current: true,
        expected_works: expected,
        works_in_sync: true,
        rendering: &Rendering::NoOverrides,
    };
    fold_cluster(&mut entry, &facts, 5, "t1");
    entry
}

/// The facts of one cluster with the usual defaults: judged on the latest
/// index, its overrides current, one Work expected, Works in sync.
pub(super) fn rollout<'a>(
    binding: &'a Object,
    works: &'a [Object],
    latest: Option<u64>,
    rendering: &'a Rendering,
) -> ClusterRollout<'a> {
    ClusterRollout {
        cluster: "east",
        binding,
        works,
        latest_resource_index: latest,
        external: false,
        overrides_current: true,
        expected_works: 1,
        works_in_sync: true,
        rendering,
    }
}

fn summary(entry: &PerClusterStatus) -> Vec<(String, String, String)> {
    entry.conditions.iter().map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone())).collect()
}

fn s(t: &str, st: &str, r: &str) -> (String, String, String) {
    (t.into(), st.into(), r.into())
}

#[test]
fn a_rolled_out_cluster_has_every_condition_true() {
    let b = binding("Bound", "web-2-snapshot");
    let entry = fold(&b, &[work("web-work", 2, OK, json!([])), work("web-work-1", 2, OK, json!([]))], Some(2), 2);
    assert_eq!(
        summary(&entry),
        vec![
            s("Scheduled", "True", "Scheduled"),
            s("RolloutStarted", "True", "RolloutStarted"),
            s("Overridden", "True", "NoOverrideSpecified"),
            s("WorkSynchronized", "True", "AllWorkSynced"),
            s("Applied", "True", "AllWorkHaveBeenApplied"),
            s("Available", "True", "AllWorkAreAvailable"),
        ]
    );
    assert_eq!(entry.observed_resource_index, "2");
    assert!(entry.conditions[1..].iter().all(|c| c.observed_generation == Some(5) && c.last_transition_time == "t1"));
    assert_eq!(entry.conditions[0].last_transition_time, "t0", "Scheduled is kept as it was");
    assert!(!entry.rest.contains_key("failedPlacements"));
}

#[test]
fn not_bound_to_the_latest_stops_at_rollout_started() {
    let entry = fold(&binding("Bound", "web-1-snapshot"), &[work("web-work", 1, OK, json!([]))], Some(2), 1);
    assert_eq!(summary(&entry)[1..], [s("RolloutStarted", "False", "RolloutNotStartedYet")]);
    assert_eq!(entry.observed_resource_index, "2", "the latest, as KubeFleet reports it");
    let entry = fold(&binding("Scheduled", ""), &[], Some(2), 1);
    assert_eq!(summary(&entry)[1..], [s("RolloutStarted", "False", "RolloutNotStartedYet")]);
    assert_eq!(entry.observed_resource_index, "2");
    let entry = fold(&binding("Scheduled", ""), &[], None, 1);
    assert_eq!(entry.observed_resource_index, "", "no snapshot yet");
}

#[test]
fn missing_or_stale_works_are_not_synchronized() {
    let b = binding("Bound", "web-2-snapshot");
    let entry = fold(&b, &[work("web-work", 2, OK, json!([]))], Some(2), 2);
    assert_eq!(summary(&entry).last(), Some(&s("WorkSynchronized", "False", "WorkNotSynchronizedYet")));
    let entry = fold(&b, &[work("web-work", 1, OK, json!([]))], Some(2), 1);
    assert_eq!(summary(&entry).last(), Some(&s("WorkSynchronized", "False", "WorkNotSynchronizedYet")));
    assert_eq!(summary(&entry).len(), 4);
}

#[test]
fn apply_pending_and_failed() {
    let b = binding("Bound", "web-2-snapshot");
    let entry = fold(&b, &[work("web-work", 2, &[], json!([]))], Some(2), 1);
    assert_eq!(summary(&entry).last(), Some(&s("Applied", "Unknown", "ApplyPending")));
    let manifests = json!([
        {"identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment", "namespace": "app", "name": "web"},
         "conditions": [{"type": "Applied", "status": "False", "reason": "Conflict", "message": "owned elsewhere"}]},
        {"identifier": {"ordinal": 1, "version": "v1", "kind": "ConfigMap", "namespace": "app", "name": "cfg"},
         "conditions": [{"type": "Applied", "status": "True", "reason": "Applied"}]}
    ]);
    let failed = work("web-work", 2, &[("Applied", "False", "SomeManifestsAreNotApplied")], manifests);
    let entry = fold(&b, &[failed], Some(2), 1);
    assert_eq!(summary(&entry).last(), Some(&s("Applied", "False", "NotAllWorkHaveBeenApplied")));
    assert_eq!(
        entry.rest.get("failedPlacements"),
        Some(&json!([{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "app", "name": "web",
            "condition": {"type": "Applied", "status": "False", "reason": "Conflict", "message": "owned elsewhere"}}]))
    );
    // Once fixed, the list goes away.
    let entry2 = {
        let mut e = entry.clone();
        let works = [work("web-work", 2, OK, json!([]))];
        let facts = ClusterRollout {
            cluster: "east",
            binding: &b,
            works: &works,
            latest_resource_index: Some(2),
            external: false,
            overrides_current: true,
            expected_works: 1,
            works_in_sync: true,
            rendering: &Rendering::NoOverrides,
        };
        fold_cluster(&mut e, &facts, 5, "t2");
        e
    };
    assert!(!entry2.rest.contains_key("failedPlacements"));
    assert_eq!(find(&entry2.conditions, "Applied").map(|c| c.last_transition_time.as_str()), Some("t2"));
    assert_eq!(find(&entry2.conditions, "RolloutStarted").map(|c| c.last_transition_time.as_str()), Some("t1"));
}

#[test]
fn not_available_yet_and_not_trackable() {
    let b = binding("Bound", "web-2-snapshot");
    let pending = work(
        "web-work",
        2,
        &[("Applied", "True", "AllManifestsApplied"), ("Available", "False", "SomeManifestsAreNotAvailable")],
        json!([]),
    );
    let entry = fold(&b, &[pending], Some(2), 1);
    assert_eq!(summary(&entry).last(), Some(&s("Available", "False", "NotAllWorkAreAvailable")));
    let untrackable = work(
        "web-work",
        2,
        &[("Applied", "True", "AllManifestsApplied"), ("Available", "True", "WorkNotTrackable")],
        json!([]),
    );
    let entry = fold(&b, &[untrackable], Some(2), 1);
    assert_eq!(summary(&entry).last(), Some(&s("Available", "True", "NotAllWorkAreAvailabilityTrackable")));
}

#[test]
fn failed_placements_are_capped_at_100() {
    let manifests: Vec<Value> = (0..150)
        .map(|i| json!({"identifier": {"ordinal": i, "version": "v1", "kind": "ConfigMap", "namespace": "app", "name": format!("c{i}")},
            "conditions": [{"type": "Applied", "status": "False", "reason": "Bad"}]}))
        .collect();
    let failed = work("web-work", 2, &[("Applied", "False", "SomeManifestsAreNotApplied")], Value::Array(manifests));
    let entry = fold(&binding("Bound", "web-2-snapshot"), &[failed], Some(2), 1);
    assert_eq!(entry.rest.get("failedPlacements").and_then(Value::as_array).map(Vec::len), Some(100));
}

#[test]
fn later_conditions_are_removed_when_an_earlier_one_turns_false() {
    let b = binding("Bound", "web-2-snapshot");
    let mut entry = fold(&b, &[work("web-work", 2, OK, json!([]))], Some(2), 1);
    assert_eq!(entry.conditions.len(), 6);
    let works = [work("web-work", 2, OK, json!([]))];
    let facts = ClusterRollout {
        cluster: "east",
        binding: &b,
        works: &works,
        latest_resource_index: Some(3),
        external: false,
        overrides_current: true,
        expected_works: 1,
        works_in_sync: true,
        rendering: &Rendering::NoOverrides,
    };
    fold_cluster(&mut entry, &facts, 6, "t2");
    assert_eq!(summary(&entry)[1..], [s("RolloutStarted", "False", "RolloutNotStartedYet")]);
}

#[test]
fn snapshot_index_from_name() {
    assert_eq!(snapshot_index_of_name("web-12-snapshot"), Some(12));
    assert_eq!(snapshot_index_of_name("my-web-0-snapshot"), Some(0));
    assert_eq!(snapshot_index_of_name("web-1-2"), None);
    assert_eq!(snapshot_index_of_name(""), None);
}

#[test]
fn drifts_and_diffs_reported_by_the_agent_become_drifted_and_diffed_placements() {
    let b = binding("Bound", "web-2-snapshot");
    let manifests = json!([
        {"identifier": {"ordinal": 0, "group": "", "version": "v1", "kind": "ConfigMap", "namespace": "app", "name": "cfg"},
         "conditions": [],
         "driftDetails": {"observationTime": "t9", "firstDriftedObservedTime": "t8", "observedInMemberClusterGeneration": 3,
                          "observedDrifts": [{"path": "/data/k", "valueInHub": "a", "valueInMember": "b"}]}},
        {"identifier": {"ordinal": 1, "group": "apps", "version": "v1", "kind": "Deployment", "namespace": "app", "name": "web"},
         "conditions": [],
         "diffDetails": {"observationTime": "t9", "firstDiffedObservedTime": "t7",
                         "observedDiffs": [{"path": "/spec/replicas", "valueInHub": "2", "valueInMember": "3"}]}},
        {"identifier": {"ordinal": 2, "group": "", "version": "v1", "kind": "Secret", "namespace": "app", "name": "s"},
         "conditions": [], "diffDetails": {"observationTime": "t9", "observedDiffs": []}}
    ]);
    let entry = fold(&b, &[work("web-work", 2, OK, manifests.clone())], Some(2), 1);
    let drifted = entry.rest["driftedPlacements"].as_array().unwrap();
    assert_eq!(drifted.len(), 1);
    assert_eq!(drifted[0]["kind"], "ConfigMap");
    assert_eq!(drifted[0]["firstDriftedObservedTime"], "t8");
    assert_eq!(drifted[0]["targetClusterObservedGeneration"], 3);
    assert_eq!(drifted[0]["observedDrifts"][0]["path"], "/data/k");
    assert!(!entry.rest.contains_key("diffedPlacements"), "diffs are shown only when applying failed, as KubeFleet");
    let refused = [("Applied", "False", "NotAllManifestsApplied")];
    let failing = fold(&b, &[work("web-work", 2, refused.as_slice(), manifests.clone())], Some(2), 1);
    let diffed = failing.rest["diffedPlacements"].as_array().unwrap();
    assert_eq!(diffed.len(), 1, "an empty diff list is not a diffed placement");
    assert_eq!(diffed[0]["name"], "web");
    // Once the agent stops reporting them, they are gone.
    let mut again = entry.clone();
    let facts_works = [work("web-work", 2, OK, json!([]))];
    let facts = ClusterRollout {
        cluster: "east",
        binding: &b,
        works: &facts_works,
        latest_resource_index: Some(2),
        external: false,
        overrides_current: true,
        expected_works: 1,
        works_in_sync: true,
        rendering: &Rendering::NoOverrides,
    };
    fold_cluster(&mut again, &facts, 5, "t2");
    assert!(!again.rest.contains_key("driftedPlacements") && !again.rest.contains_key("diffedPlacements"));
}

#[test]
fn failed_objects_wrapped_in_an_envelope_name_it_and_overrides_report_their_outcome() {
    let b = binding("Bound", "web-3-snapshot");
    let failed = json!([{"identifier": {"ordinal": 0, "group": "admissionregistration.k8s.io", "version": "v1",
        "kind": "ValidatingWebhookConfiguration", "name": "guard"},
        "conditions": [{"type": "Applied", "status": "False", "reason": "ManifestApplyFailed", "message": "no",
            "observedGeneration": 1, "lastTransitionTime": "t0"}]}]);
    let mut w = work("web-envelope-a3f995da6aee5302", 3, &[("Applied", "False", "SomeManifestsAreNotApplied")], failed);
    w.metadata.labels.insert("kubernetes-fleet.io/envelope-work".into(), "ClusterResourceEnvelope".into());
    w.metadata.labels.insert("kubernetes-fleet.io/envelope-name".into(), "guard".into());
    let entry = fold(&b, &[w], Some(3), 1);
    let list = entry.rest.get("failedPlacements").and_then(Value::as_array).cloned().unwrap_or_default();
    assert_eq!(list[0]["envelope"], json!({"name": "guard", "type": "ClusterResourceEnvelope"}));
    assert_eq!(list[0]["kind"], "ValidatingWebhookConfiguration");

    for (rendering, want) in [
        (Rendering::Overridden, ("True", "OverriddenSucceeded")),
        (Rendering::OverrideFailed("x failed".into()), ("False", "OverriddenFailed")),
        (Rendering::OverridePending, ("Unknown", "OverriddenPending")),
    ] {
        let mut entry = scheduled_entry();
        let works = [work("web-work", 3, OK, json!([]))];
        let facts = ClusterRollout {
            cluster: "east",
            binding: &b,
            works: &works,
            latest_resource_index: Some(3),
            external: false,
            overrides_current: true,
            expected_works: 1,
            works_in_sync: true,
            rendering: &rendering,
        };
        fold_cluster(&mut entry, &facts, 5, "t1");
        let c = find(&entry.conditions, "Overridden").cloned().unwrap_or_default();
        assert_eq!((c.status.as_str(), c.reason.as_str()), want, "{rendering:?}");
        if let Rendering::OverrideFailed(_) = rendering {
            assert_eq!(c.message, "Failed to apply the override rules on the resources: x failed");
            assert!(find(&entry.conditions, "WorkSynchronized").is_none(), "the chain stops");
        }
    }
    let mut entry = scheduled_entry();
    let facts = ClusterRollout {
        cluster: "east",
        binding: &b,
        works: &[],
        latest_resource_index: Some(3),
        external: false,
        overrides_current: true,
        expected_works: 1,
        works_in_sync: false,
        rendering: &Rendering::WorkFailed("cannot".into()),
    };
    fold_cluster(&mut entry, &facts, 5, "t1");
    let c = find(&entry.conditions, "WorkSynchronized").cloned().unwrap_or_default();
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "SyncWorkFailed"));
    assert_eq!(c.message, "Failed to synchronize the work to the latest: cannot");
}

/// SU-13: an External placement's cluster is Unknown until a run binds it,
/// and once bound is judged on its own snapshot, even an older one.
#[test]
fn su_13_external_clusters_stand_on_their_own_binding() {
    let fold_external = |binding: &Object, works: &[Object]| {
        let mut entry = scheduled_entry();
        let facts = ClusterRollout { external: true, ..rollout(binding, works, Some(3), &Rendering::NoOverrides) };
        fold_cluster(&mut entry, &facts, 5, "t1");
        entry
    };
    let waiting = fold_external(&binding("Scheduled", ""), &[]);
    assert_eq!(
        summary(&waiting),
        vec![s("Scheduled", "True", "Scheduled"), s("RolloutStarted", "Unknown", "RolloutStartedUnknown")]
    );
    assert_eq!(waiting.observed_resource_index, "");
    let mut moved = binding("Bound", "web-1-snapshot");
    moved.metadata.annotations.insert(fleet_api::binding::ROLLED_OUT_UNDER_ANNOTATION.into(), "web-old".into());
    let stale = fold_external(&moved, &[work("web-work", 1, OK, json!([]))]);
    assert_eq!(summary(&stale)[1], s("RolloutStarted", "Unknown", "RolloutStartedUnknown"), "moved since its run");
    assert_eq!(stale.observed_resource_index, "1");
    let older = fold_external(&binding("Bound", "web-1-snapshot"), &[work("web-work", 1, OK, json!([]))]);
    assert_eq!(older.observed_resource_index, "1");
    assert!(older.conditions.iter().all(Condition::is_true), "rolled out to index 1: {:?}", summary(&older));
    assert_eq!(older.conditions.len(), 6);
}

/// A Work that could not be made after the binding's overrides applied
/// reports them applied, then `WorkSynchronized` False `SyncWorkFailed`.
#[test]
fn a_work_failing_after_overrides_reports_them_applied() {
    let mut b = binding("Bound", "web-2-snapshot");
    b.rest["spec"]["clusterResourceOverrideSnapshots"] = json!(["cro-0"]);
    let mut entry = scheduled_entry();
    let rendering = Rendering::WorkFailed("the override rules leave Namespace \"ops\" an invalid object".into());
    let facts = ClusterRollout { works_in_sync: false, ..rollout(&b, &[], Some(2), &rendering) };
    fold_cluster(&mut entry, &facts, 5, "t1");
    let got = summary(&entry);
    assert_eq!(got[2], s("Overridden", "True", "OverriddenSucceeded"));
    assert_eq!(got[3], s("WorkSynchronized", "False", "SyncWorkFailed"));
}

/// OV-8: a binding on the latest snapshot whose recorded overrides are not
/// the ones that apply now has not started its rollout yet.
#[test]
fn stale_overrides_mean_the_rollout_has_not_started() {
    let b = binding("Bound", "web-2-snapshot");
    let works = [work("web-work", 2, OK, json!([]))];
    let mut entry = scheduled_entry();
    let facts = ClusterRollout { overrides_current: false, ..rollout(&b, &works, Some(2), &Rendering::NoOverrides) };
    fold_cluster(&mut entry, &facts, 5, "t1");
    assert_eq!(
        summary(&entry),
        vec![s("Scheduled", "True", "Scheduled"), s("RolloutStarted", "False", "RolloutNotStartedYet")]
    );
}
