//! `get` columns of the placement kinds: ClusterResourcePlacements and
//! ResourcePlacements (like KubeFleet's printer columns), their bindings, and
//! their scheduling policy and resource snapshots.

use crate::placement::{scheduled_condition_type, PER_CLUSTER_SCHEDULED, PICK_ALL, PICK_N};
use crate::snapshot::{
    index_of, is_latest, CONDITION_SCHEDULED, IS_LATEST_LABEL, NUMBER_OF_CLUSTERS_ANNOTATION, PARENT_PLACEMENT_LABEL,
    POLICY_INDEX_LABEL, RESOURCE_INDEX_LABEL, SUBINDEX_ANNOTATION,
};
use crate::Object;
use serde_json::Value;

use super::{age_column, name_column, str_field, Column, Lookups};

/// Per-cluster condition: the cluster's resources were applied.
pub const PER_CLUSTER_APPLIED: &str = "Applied";
/// Per-cluster condition: the cluster's resources are available.
pub const PER_CLUSTER_AVAILABLE: &str = "Available";
/// Per-cluster condition of a `ReportDiff` placement: the cluster reported its diffs.
pub const PER_CLUSTER_DIFF_REPORTED: &str = "DiffReported";

/// `NAME`, `RESOURCE-INDEX`, `LAST-UPDATED`, `AGE` of a
/// ClusterResourcePlacementStatus (KubeFleet's printer columns).
pub fn status_mirror_columns() -> Vec<Column> {
    vec![
        name_column(),
        Column { header: "RESOURCE-INDEX", value: |o, _| str_field(o, &["sourceStatus", "observedResourceIndex"]) },
        Column { header: "LAST-UPDATED", value: |o, _| str_field(o, &["lastUpdatedTime"]) },
        age_column(),
    ]
}

/// `NAME`, `GEN`, `SCHEDULED`, `SCHEDULED-GEN`, `AVAILABLE`, `AVAILABLE-GEN`,
/// `AGE` (KubeFleet's columns); wide adds `TYPE`, `N`, `CLUSTERS` (chosen
/// clusters), `APPLIED-CLUSTERS` and `AVAILABLE-CLUSTERS` (how many of them
/// have the resources applied / available), `DIFF-REPORTED-CLUSTERS`,
/// `RESOURCE-INDEX` and `POLICY-INDEX` before `AGE`. A `ReportDiff`
/// placement applies nothing: its applied/available counts are `-` and it
/// counts clusters whose diff is reported; any other placement has `-` there.
pub fn placement_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "GEN", value: |o, _| o.metadata.generation.to_string() },
        Column { header: "SCHEDULED", value: |o, _| condition_field(o, &scheduled_condition_type(&o.kind), "status") },
        Column {
            header: "SCHEDULED-GEN",
            value: |o, _| condition_field(o, &scheduled_condition_type(&o.kind), "observedGeneration"),
        },
        Column { header: "AVAILABLE", value: |o, _| condition_field(o, &available_condition_type(&o.kind), "status") },
        Column {
            header: "AVAILABLE-GEN",
            value: |o, _| condition_field(o, &available_condition_type(&o.kind), "observedGeneration"),
        },
    ];
    if wide {
        columns.extend([
            Column { header: "TYPE", value: |o, _| placement_type(o) },
            Column { header: "N", value: |o, _| number_of_clusters(o) },
            Column { header: "CLUSTERS", value: |o, _| scheduled_clusters(o).to_string() },
            Column { header: "APPLIED-CLUSTERS", value: |o, _| cluster_count(o, PER_CLUSTER_APPLIED, false) },
            Column { header: "AVAILABLE-CLUSTERS", value: |o, _| cluster_count(o, PER_CLUSTER_AVAILABLE, false) },
            Column {
                header: "DIFF-REPORTED-CLUSTERS",
                value: |o, _| cluster_count(o, PER_CLUSTER_DIFF_REPORTED, true),
            },
            Column { header: "RESOURCE-INDEX", value: |o, _| str_field(o, &["status", "observedResourceIndex"]) },
            Column {
                header: "POLICY-INDEX",
                value: |o, c| {
                    let key = (o.metadata.namespace.clone().unwrap_or_default(), o.metadata.name.clone());
                    c.lookups.latest_policy_index.get(&key).cloned().unwrap_or_default()
                },
            },
        ]);
    }
    columns.push(age_column());
    columns
}

/// `NAME`, `CLUSTER`, `STATE`, `POLICY-SNAPSHOT`, `RESOURCE-SNAPSHOT`, `AGE`;
/// wide adds the placement and the decision's two scores before `AGE`.
pub fn binding_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "CLUSTER", value: |o, _| str_field(o, &["spec", "targetCluster"]) },
        Column { header: "STATE", value: |o, _| str_field(o, &["spec", "state"]) },
        Column { header: "POLICY-SNAPSHOT", value: |o, _| str_field(o, &["spec", "schedulingPolicySnapshotName"]) },
        Column { header: "RESOURCE-SNAPSHOT", value: |o, _| str_field(o, &["spec", "resourceSnapshotName"]) },
    ];
    if wide {
        columns.extend([
            placement_label_column(),
            Column {
                header: "AFFINITY-SCORE",
                value: |o, _| score(o, &["spec", "clusterDecision", "clusterScore", "affinityScore"]),
            },
            Column {
                header: "SPREAD-SCORE",
                value: |o, _| score(o, &["spec", "clusterDecision", "clusterScore", "priorityScore"]),
            },
        ]);
    }
    columns.push(age_column());
    columns
}

/// `NAME`, `INDEX`, `LATEST`, `CLUSTERS-FOR` (the PickN count, `-` for the
/// other types), `SCHEDULED`, `AGE`; wide adds the placement, the placement
/// generation scheduled for and the number of selected clusters before `AGE`.
pub fn policy_snapshot_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "INDEX", value: |o, _| label(o, POLICY_INDEX_LABEL) },
        Column { header: "LATEST", value: |o, _| label(o, IS_LATEST_LABEL) },
        Column {
            header: "CLUSTERS-FOR",
            value: |o, _| {
                o.metadata.annotations.get(NUMBER_OF_CLUSTERS_ANNOTATION).cloned().unwrap_or_else(|| "-".to_string())
            },
        },
        Column { header: "SCHEDULED", value: |o, _| condition_field(o, CONDITION_SCHEDULED, "status") },
    ];
    if wide {
        columns.extend([
            placement_label_column(),
            Column { header: "OBSERVED-GEN", value: |o, _| str_field(o, &["status", "observedCRPGeneration"]) },
            Column { header: "SELECTED", value: |o, _| selected_targets(o).to_string() },
        ]);
    }
    columns.push(age_column());
    columns
}

/// `NAME`, `INDEX`, `LATEST`, `RESOURCES` (how many objects the snapshot
/// holds), `AGE`; wide adds the placement and the sub-index before `AGE`.
pub fn resource_snapshot_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "INDEX", value: |o, _| label(o, RESOURCE_INDEX_LABEL) },
        Column { header: "LATEST", value: |o, _| label(o, IS_LATEST_LABEL) },
        Column { header: "RESOURCES", value: |o, _| selected_resources(o).to_string() },
    ];
    if wide {
        columns.extend([
            placement_label_column(),
            Column {
                header: "SUBINDEX",
                value: |o, _| {
                    o.metadata.annotations.get(SUBINDEX_ANNOTATION).cloned().unwrap_or_else(|| "-".to_string())
                },
            },
        ]);
    }
    columns.push(age_column());
    columns
}

/// The placement's availability condition type, which rollout will set
/// (`ClusterResourcePlacementAvailable` / `ResourcePlacementAvailable`).
pub fn available_condition_type(placement_kind: &str) -> String {
    format!("{placement_kind}Available")
}

/// The latest policy snapshot index of every placement the snapshots belong
/// to, keyed by (namespace, placement name). Only snapshots labelled the
/// latest count; if several are (briefly), the highest index wins.
pub fn latest_policy_indexes(snapshots: &[Object]) -> Lookups {
    let mut lookups = Lookups::default();
    let mut best: std::collections::BTreeMap<(String, String), u64> = Default::default();
    for snapshot in snapshots.iter().filter(|s| is_latest(s)) {
        let (Some(parent), Some(index)) =
            (snapshot.metadata.labels.get(PARENT_PLACEMENT_LABEL), index_of(snapshot, POLICY_INDEX_LABEL))
        else {
            continue;
        };
        let key = (snapshot.metadata.namespace.clone().unwrap_or_default(), parent.clone());
        if best.get(&key).is_none_or(|b| index > *b) {
            best.insert(key.clone(), index);
            lookups.latest_policy_index.insert(key, index.to_string());
        }
    }
    lookups
}

/// A field (`status`, `observedGeneration`, ...) of condition `type_` in
/// `status.conditions`, as text; empty when the condition or field is absent.
fn condition_field(object: &Object, type_: &str, field: &str) -> String {
    let condition = object
        .status()
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_));
    match condition.and_then(|c| c.get(field)) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// `spec.policy.placementType`, `PickAll` when unset.
fn placement_type(object: &Object) -> String {
    let value = str_field(object, &["spec", "policy", "placementType"]);
    if value.is_empty() {
        PICK_ALL.to_string()
    } else {
        value
    }
}

/// `spec.policy.numberOfClusters` of a PickN placement, `-` otherwise.
fn number_of_clusters(object: &Object) -> String {
    let n = str_field(object, &["spec", "policy", "numberOfClusters"]);
    if placement_type(object) == PICK_N && !n.is_empty() {
        n
    } else {
        "-".to_string()
    }
}

/// How many clusters have `type_` True, when the placement's mode
/// (`ReportDiff` or not) is `report_diff`; `-` in the other mode.
fn cluster_count(object: &Object, type_: &str, report_diff: bool) -> String {
    if crate::placement::reports_diff(object) == report_diff {
        clusters_with_true_condition(object, type_).to_string()
    } else {
        "-".to_string()
    }
}

/// How many `status.placementStatuses` entries have a True `Scheduled` condition.
pub fn scheduled_clusters(object: &Object) -> usize {
    clusters_with_true_condition(object, PER_CLUSTER_SCHEDULED)
}

/// How many `status.placementStatuses` entries have a True condition of
/// type `type_` (`Scheduled`, `Applied`, `Available`, ...), whatever its
/// observed generation.
pub fn clusters_with_true_condition(object: &Object, type_: &str) -> usize {
    let entries = object.status().and_then(|s| s.get("placementStatuses")).and_then(Value::as_array);
    entries
        .into_iter()
        .flatten()
        .filter(|entry| {
            entry["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == type_ && c["status"] == "True"))
        })
        .count()
}

/// How many `status.targetClusters` of a policy snapshot are selected.
fn selected_targets(object: &Object) -> usize {
    let targets = object.status().and_then(|s| s.get("targetClusters")).and_then(Value::as_array);
    targets.into_iter().flatten().filter(|t| t["selected"] == true).count()
}

/// How many objects a resource snapshot's `spec.selectedResources` holds.
fn selected_resources(object: &Object) -> usize {
    object.spec().and_then(|s| s.get("selectedResources")).and_then(Value::as_array).map_or(0, Vec::len)
}

/// A label's value, or empty.
fn label(object: &Object, key: &str) -> String {
    object.metadata.labels.get(key).cloned().unwrap_or_default()
}

/// A score at `path`, `0` when the decision has a score object without it,
/// empty without a score at all.
fn score(object: &Object, path: &[&str]) -> String {
    let score_object = str_field(object, &path[..path.len().saturating_sub(1)]);
    let value = str_field(object, path);
    if value.is_empty() && !score_object.is_empty() {
        "0".to_string()
    } else {
        value
    }
}

/// `PLACEMENT`: the parent placement label.
fn placement_label_column() -> Column {
    Column { header: "PLACEMENT", value: |o, _| label(o, PARENT_PLACEMENT_LABEL) }
}

#[cfg(test)]
mod tests {
    use super::super::{columns_for, headers, row, RowContext};
    use super::*;
    use crate::time::system_time;
    use serde_json::json;

    fn obj(value: Value) -> Object {
        serde_json::from_value(value).unwrap()
    }

    fn crp() -> Object {
        obj(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "web", "generation": 3, "creationTimestamp": "2024-05-01T10:00:00Z"},
            "spec": {"policy": {"placementType": "PickN", "numberOfClusters": 2}},
            "status": {
                "observedResourceIndex": "1",
                "conditions": [{"type": "ClusterResourcePlacementScheduled", "status": "True",
                                "reason": "SchedulingPolicyFulfilled", "observedGeneration": 3}],
                "placementStatuses": [
                    {"clusterName": "east-1", "conditions": [{"type": "Scheduled", "status": "True"},
                                                             {"type": "Applied", "status": "True"},
                                                             {"type": "Available", "status": "True"}]},
                    {"clusterName": "west-1", "conditions": [{"type": "Scheduled", "status": "False"}]},
                    {"clusterName": "west-2", "conditions": [{"type": "Scheduled", "status": "True"},
                                                             {"type": "Applied", "status": "True"},
                                                             {"type": "Available", "status": "False"}]}
                ]
            }
        }))
    }

    fn snapshot(kind: &str, name: &str, labels: Value, rest: Value) -> Object {
        let mut value = json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
            "metadata": {"name": name, "labels": labels, "creationTimestamp": "2024-05-01T10:00:00Z"}
        });
        if let (Some(v), Some(extra)) = (value.as_object_mut(), rest.as_object()) {
            v.extend(extra.clone());
        }
        obj(value)
    }

    fn now() -> std::time::SystemTime {
        system_time("2024-05-01T10:12:00Z").unwrap()
    }

    #[test]
    fn placement_table_like_kubefleet() {
        let lookups = Lookups::default();
        let c = RowContext { now: now(), lookups: &lookups };
        let columns = columns_for("ClusterResourcePlacement", false);
        assert_eq!(
            headers(&columns),
            ["NAME", "GEN", "SCHEDULED", "SCHEDULED-GEN", "AVAILABLE", "AVAILABLE-GEN", "AGE"]
        );
        assert_eq!(row(&columns, &crp(), &c), ["web", "3", "True", "3", "", "", "12m"]);
    }

    #[test]
    fn wide_placement_table_uses_the_latest_policy_index() {
        let snapshots = [
            snapshot(
                "ClusterSchedulingPolicySnapshot",
                "web-1",
                json!({PARENT_PLACEMENT_LABEL: "web", POLICY_INDEX_LABEL: "1", IS_LATEST_LABEL: "true"}),
                json!({}),
            ),
            snapshot(
                "ClusterSchedulingPolicySnapshot",
                "web-0",
                json!({PARENT_PLACEMENT_LABEL: "web", POLICY_INDEX_LABEL: "0", IS_LATEST_LABEL: "false"}),
                json!({}),
            ),
        ];
        let lookups = latest_policy_indexes(&snapshots);
        assert_eq!(lookups.latest_policy_index.len(), 1);
        let c = RowContext { now: now(), lookups: &lookups };
        let columns = columns_for("ClusterResourcePlacement", true);
        assert_eq!(
            headers(&columns),
            [
                "NAME",
                "GEN",
                "SCHEDULED",
                "SCHEDULED-GEN",
                "AVAILABLE",
                "AVAILABLE-GEN",
                "TYPE",
                "N",
                "CLUSTERS",
                "APPLIED-CLUSTERS",
                "AVAILABLE-CLUSTERS",
                "DIFF-REPORTED-CLUSTERS",
                "RESOURCE-INDEX",
                "POLICY-INDEX",
                "AGE"
            ]
        );
        assert_eq!(
            row(&columns, &crp(), &c),
            ["web", "3", "True", "3", "", "", "PickN", "2", "2", "2", "1", "-", "1", "1", "12m"]
        );
        // ReportDiff: diff-reported clusters, no applied or available ones.
        let mut report_diff = crp();
        report_diff.rest["spec"]["strategy"] = json!({"applyStrategy": {"type": "ReportDiff"}});
        report_diff.rest["status"]["placementStatuses"][0]["conditions"] =
            json!([{"type": "Scheduled", "status": "True"}, {"type": "DiffReported", "status": "True"}]);
        assert_eq!(
            row(&columns, &report_diff, &c),
            ["web", "3", "True", "3", "", "", "PickN", "2", "2", "-", "-", "1", "1", "1", "12m"]
        );
        let bare = obj(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourcePlacement",
            "metadata": {"name": "app", "namespace": "ns", "generation": 1, "creationTimestamp": "2024-05-01T10:00:00Z"},
            "spec": {},
            "status": {"conditions": [{"type": "ResourcePlacementAvailable", "status": "False", "observedGeneration": 1}]}
        }));
        assert_eq!(
            row(&columns_for("ResourcePlacement", true), &bare, &c),
            ["app", "1", "", "", "False", "1", "PickAll", "-", "0", "0", "0", "-", "", "", "12m"]
        );
    }

    #[test]
    fn highest_latest_index_wins_per_namespace() {
        let mut a = snapshot(
            "SchedulingPolicySnapshot",
            "app-2",
            json!({PARENT_PLACEMENT_LABEL: "app", POLICY_INDEX_LABEL: "2", IS_LATEST_LABEL: "true"}),
            json!({}),
        );
        a.metadata.namespace = Some("ns".into());
        let mut b = a.clone();
        b.metadata.labels.insert(POLICY_INDEX_LABEL.into(), "10".into());
        let mut other_ns = a.clone();
        other_ns.metadata.namespace = Some("other".into());
        let lookups = latest_policy_indexes(&[b, a, other_ns]);
        assert_eq!(lookups.latest_policy_index[&("ns".to_string(), "app".to_string())], "10");
        assert_eq!(lookups.latest_policy_index[&("other".to_string(), "app".to_string())], "2");
    }

    #[test]
    fn binding_and_snapshot_tables() {
        let lookups = Lookups::default();
        let c = RowContext { now: now(), lookups: &lookups };
        let binding = snapshot(
            "ClusterResourceBinding",
            "web-east-1-abcde",
            json!({PARENT_PLACEMENT_LABEL: "web"}),
            json!({"spec": {"state": "Scheduled", "targetCluster": "east-1", "schedulingPolicySnapshotName": "web-1",
                   "clusterDecision": {"clusterName": "east-1", "selected": true,
                                       "clusterScore": {"affinityScore": 5}}}}),
        );
        let columns = columns_for("ClusterResourceBinding", false);
        assert_eq!(headers(&columns), ["NAME", "CLUSTER", "STATE", "POLICY-SNAPSHOT", "RESOURCE-SNAPSHOT", "AGE"]);
        assert_eq!(row(&columns, &binding, &c), ["web-east-1-abcde", "east-1", "Scheduled", "web-1", "", "12m"]);
        assert_eq!(
            row(&columns_for("ResourceBinding", true), &binding, &c),
            ["web-east-1-abcde", "east-1", "Scheduled", "web-1", "", "web", "5", "0", "12m"]
        );

        let policy = snapshot(
            "ClusterSchedulingPolicySnapshot",
            "web-1",
            json!({PARENT_PLACEMENT_LABEL: "web", POLICY_INDEX_LABEL: "1", IS_LATEST_LABEL: "true"}),
            json!({"status": {"observedCRPGeneration": 2,
                              "conditions": [{"type": "Scheduled", "status": "False"}],
                              "targetClusters": [{"clusterName": "a", "selected": true},
                                                 {"clusterName": "b", "selected": false}]}}),
        );
        let mut pick_n = policy.clone();
        pick_n.metadata.annotations.insert(NUMBER_OF_CLUSTERS_ANNOTATION.into(), "3".into());
        let columns = columns_for("ClusterSchedulingPolicySnapshot", false);
        assert_eq!(headers(&columns), ["NAME", "INDEX", "LATEST", "CLUSTERS-FOR", "SCHEDULED", "AGE"]);
        assert_eq!(row(&columns, &policy, &c), ["web-1", "1", "true", "-", "False", "12m"]);
        assert_eq!(row(&columns, &pick_n, &c), ["web-1", "1", "true", "3", "False", "12m"]);
        assert_eq!(
            row(&columns_for("SchedulingPolicySnapshot", true), &policy, &c),
            ["web-1", "1", "true", "-", "False", "web", "2", "1", "12m"]
        );

        let resources = snapshot(
            "ClusterResourceSnapshot",
            "web-0-snapshot",
            json!({PARENT_PLACEMENT_LABEL: "web", RESOURCE_INDEX_LABEL: "0", IS_LATEST_LABEL: "false"}),
            json!({"spec": {"selectedResources": [{"kind": "Namespace"}, {"kind": "ConfigMap"}]}}),
        );
        let columns = columns_for("ClusterResourceSnapshot", false);
        assert_eq!(headers(&columns), ["NAME", "INDEX", "LATEST", "RESOURCES", "AGE"]);
        assert_eq!(row(&columns, &resources, &c), ["web-0-snapshot", "0", "false", "2", "12m"]);
        assert_eq!(
            row(&columns_for("ResourceSnapshot", true), &resources, &c),
            ["web-0-snapshot", "0", "false", "2", "web", "-", "12m"]
        );
    }
}
