//! `get` columns of the staged update and eviction kinds (like KubeFleet's
//! printer columns): runs, approval requests, evictions (`NAME VALID
//! EXECUTED`, docs/spec/eviction.md) and disruption budgets.

use crate::Object;

use super::{age_column, condition_field, name_column, str_field, Column};

/// A condition's status, empty while it is not set.
fn condition(object: &Object, type_: &str) -> String {
    condition_field(object, type_, "status").unwrap_or_default()
}

/// `NAME`, `PLACEMENT`, `RESOURCE-SNAPSHOT-INDEX`, `POLICY-SNAPSHOT-INDEX`,
/// `INITIALIZED`, `PROGRESSING`, `SUCCEEDED`, `AGE`; wide adds `STRATEGY`
/// and `STATE`.
pub fn run_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "PLACEMENT", value: |o, _| str_field(o, &["spec", "placementName"]) },
        Column {
            header: "RESOURCE-SNAPSHOT-INDEX",
            value: |o, _| str_field(o, &["status", "resourceSnapshotIndexUsed"]),
        },
        Column { header: "POLICY-SNAPSHOT-INDEX", value: |o, _| str_field(o, &["status", "policySnapshotIndexUsed"]) },
        Column { header: "INITIALIZED", value: |o, _| condition(o, "Initialized") },
        Column { header: "PROGRESSING", value: |o, _| condition(o, "Progressing") },
        Column { header: "SUCCEEDED", value: |o, _| condition(o, "Succeeded") },
        age_column(),
    ];
    if wide {
        columns.push(Column { header: "STRATEGY", value: |o, _| str_field(o, &["spec", "stagedRolloutStrategyName"]) });
        columns.push(Column { header: "STATE", value: |o, _| str_field(o, &["spec", "state"]) });
    }
    columns
}

/// `NAME`, `UPDATE-RUN`, `STAGE`, `APPROVED`, `APPROVALACCEPTED`, `AGE`.
pub fn approval_request_columns() -> Vec<Column> {
    vec![
        name_column(),
        Column { header: "UPDATE-RUN", value: |o, _| str_field(o, &["spec", "parentStageRollout"]) },
        Column { header: "STAGE", value: |o, _| str_field(o, &["spec", "targetStage"]) },
        Column { header: "APPROVED", value: |o, _| condition(o, "Approved") },
        Column { header: "APPROVALACCEPTED", value: |o, _| condition(o, "ApprovalAccepted") },
        age_column(),
    ]
}

/// `NAME`, `VALID`, `EXECUTED`; wide adds `PLACEMENT`, `CLUSTER` and `AGE`.
pub fn eviction_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "VALID", value: |o, _| condition(o, "Valid") },
        Column { header: "EXECUTED", value: |o, _| condition(o, "Executed") },
    ];
    if wide {
        columns.extend([
            Column { header: "PLACEMENT", value: |o, _| str_field(o, &["spec", "placementName"]) },
            Column { header: "CLUSTER", value: |o, _| str_field(o, &["spec", "clusterName"]) },
            age_column(),
        ]);
    }
    columns
}

/// `NAME`, `MAX-UNAVAILABLE`, `MIN-AVAILABLE`, `AGE`.
pub fn budget_columns() -> Vec<Column> {
    vec![
        name_column(),
        Column { header: "MAX-UNAVAILABLE", value: |o, _| str_field(o, &["spec", "maxUnavailable"]) },
        Column { header: "MIN-AVAILABLE", value: |o, _| str_field(o, &["spec", "minAvailable"]) },
        age_column(),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{columns_for, headers, row, Lookups, RowContext};
    use crate::time::system_time;

    fn object(value: serde_json::Value) -> crate::Object {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn evictions_show_their_two_conditions_empty_while_unset() {
        let lookups = Lookups { latest_policy_index: BTreeMap::new() };
        let context = RowContext { now: system_time("2024-05-01T10:00:00Z").unwrap(), lookups: &lookups };
        let columns = columns_for("ClusterResourcePlacementEviction", false);
        assert_eq!(headers(&columns), ["NAME", "VALID", "EXECUTED"]);
        let pending = object(serde_json::json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ClusterResourcePlacementEviction", "metadata": {"name": "evict-b"},
            "spec": {"placementName": "web", "clusterName": "b"}}));
        assert_eq!(row(&columns, &pending, &context), ["evict-b", "", ""]);
        let mut blocked = pending.clone();
        blocked.rest.insert(
            "status".into(),
            serde_json::json!({"conditions": [
            {"type": "Valid", "status": "True"}, {"type": "Executed", "status": "False"}]}),
        );
        assert_eq!(row(&columns, &blocked, &context), ["evict-b", "True", "False"]);
    }

    #[test]
    fn runs_and_approval_requests_show_where_they_are() {
        let lookups = Lookups { latest_policy_index: BTreeMap::new() };
        let context = RowContext { now: system_time("2024-05-01T10:05:00Z").unwrap(), lookups: &lookups };
        let run = object(serde_json::json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ClusterStagedUpdateRun",
            "metadata": {"name": "app-v1", "creationTimestamp": "2024-05-01T10:00:00Z"},
            "spec": {"placementName": "app", "stagedRolloutStrategyName": "three-stage", "state": "Run"},
            "status": {"resourceSnapshotIndexUsed": "0", "policySnapshotIndexUsed": "1", "conditions": [
                {"type": "Initialized", "status": "True"}, {"type": "Progressing", "status": "False"}]}}));
        let columns = columns_for("ClusterStagedUpdateRun", true);
        assert_eq!(
            row(&columns, &run, &context),
            ["app-v1", "app", "0", "1", "True", "False", "", "5m", "three-stage", "Run"]
        );
        let request = object(serde_json::json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1",
            "kind": "ClusterApprovalRequest",
            "metadata": {"name": "app-v1-after-canary", "creationTimestamp": "2024-05-01T10:04:00Z"},
            "spec": {"parentStageRollout": "app-v1", "targetStage": "canary"},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]}}));
        let columns = columns_for("ClusterApprovalRequest", false);
        assert_eq!(row(&columns, &request, &context), ["app-v1-after-canary", "app-v1", "canary", "True", "", "60s"]);
    }
}
