//! `get` columns of the Open Cluster Management kinds, as OCM's printer
//! columns show them (and `-o wide` adds what a Fleet user asks next).

use crate::Object;
use serde_json::Value;

use super::{age_column, condition_field, condition_status, labels_text, name_column, Column};

/// A field of `status` at a JSON pointer, as text (`""` if absent).
fn status_text(object: &Object, pointer: &str) -> String {
    match object.status().and_then(|s| s.pointer(pointer)) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The reason of condition `type_`, `""` when absent.
fn condition_reason(object: &Object, type_: &str) -> String {
    condition_field(object, type_, "reason").unwrap_or_default()
}

/// `NAME`, `SUCCEEDED`, `REASON`, `SELECTEDCLUSTERS`, `AGE` of a Placement;
/// wide adds `MISCONFIGURED`, `DECISIONGROUPS` and `SORTBY`.
pub fn placement_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "SUCCEEDED", value: |o, _| condition_status(o, "PlacementSatisfied") },
        Column { header: "REASON", value: |o, _| condition_reason(o, "PlacementSatisfied") },
        Column { header: "SELECTEDCLUSTERS", value: |o, _| status_text(o, "/numberOfSelectedClusters") },
    ];
    if wide {
        columns.push(Column { header: "MISCONFIGURED", value: |o, _| condition_status(o, "PlacementMisconfigured") });
        columns.push(Column {
            header: "DECISIONGROUPS",
            value: |o, _| {
                let groups = o.status().and_then(|s| s.get("decisionGroups")).and_then(Value::as_array);
                groups.map_or(0, Vec::len).to_string()
            },
        });
        columns
            .push(Column { header: "SORTBY", value: |o, _| crate::ocm::placement::spec_of(o).sort_by().to_string() });
    }
    columns.push(age_column());
    columns
}

/// The clusters a PlacementDecision page names.
fn decided(object: &Object) -> Vec<String> {
    let decisions = object.status().and_then(|s| s.get("decisions")).and_then(Value::as_array);
    decisions.into_iter().flatten().filter_map(|d| d["clusterName"].as_str().map(str::to_string)).collect()
}

/// `NAME`, `PLACEMENT`, `GROUP`, `DECISIONS`, `AGE` of a PlacementDecision;
/// wide adds the clusters.
pub fn decision_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "PLACEMENT", value: |o, _| label_of(o, crate::ocm::decision::PLACEMENT_LABEL) },
        Column {
            header: "GROUP",
            value: |o, _| {
                let name = label_of(o, crate::ocm::decision::DECISION_GROUP_NAME_LABEL);
                let index = label_of(o, crate::ocm::decision::DECISION_GROUP_INDEX_LABEL);
                if name.is_empty() {
                    index
                } else {
                    format!("{index} ({name})")
                }
            },
        },
        Column { header: "DECISIONS", value: |o, _| decided(o).len().to_string() },
    ];
    if wide {
        columns.push(Column {
            header: "CLUSTERS",
            value: |o, _| {
                let clusters = decided(o);
                if clusters.is_empty() {
                    "<none>".to_string()
                } else {
                    clusters.join(",")
                }
            },
        });
    }
    columns.push(age_column());
    columns
}

fn label_of(object: &Object, key: &str) -> String {
    object.metadata.labels.get(key).cloned().unwrap_or_default()
}

/// A resource of `status.allocatable`, or `<none>`.
fn allocatable(object: &Object, resource: &str) -> String {
    let value = object.status().and_then(|s| s.get("allocatable")).and_then(|a| a.get(resource));
    value.and_then(Value::as_str).unwrap_or("<none>").to_string()
}

/// `NAME`, `HUB ACCEPTED`, `JOINED`, `AVAILABLE`, `AGE` of a ManagedCluster;
/// wide adds allocatable CPU and memory, the Kubernetes version, taints and
/// labels.
pub fn managed_cluster_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column {
            header: "HUB ACCEPTED",
            value: |o, _| o.spec().and_then(|s| s.get("hubAcceptsClient")).map(|v| v.to_string()).unwrap_or_default(),
        },
        Column { header: "JOINED", value: |o, _| condition_status(o, "ManagedClusterJoined") },
        Column { header: "AVAILABLE", value: |o, _| condition_status(o, "ManagedClusterConditionAvailable") },
    ];
    if wide {
        columns.extend([
            Column { header: "CPU", value: |o, _| allocatable(o, "cpu") },
            Column { header: "MEMORY", value: |o, _| allocatable(o, "memory") },
            Column {
                header: "KUBERNETES",
                value: |o, _| {
                    let version = o.status().and_then(|s| s.pointer("/version/kubernetes")).and_then(Value::as_str);
                    version.unwrap_or("<none>").to_string()
                },
            },
            Column {
                header: "TAINTS",
                value: |o, _| {
                    let taints = o.spec().and_then(|s| s.get("taints")).and_then(Value::as_array);
                    let texts: Vec<String> = taints
                        .into_iter()
                        .flatten()
                        .map(|t| format!("{}:{}", t["key"].as_str().unwrap_or(""), t["effect"].as_str().unwrap_or("")))
                        .collect();
                    if texts.is_empty() {
                        "<none>".to_string()
                    } else {
                        texts.join(",")
                    }
                },
            },
            Column { header: "LABELS", value: |o, _| labels_text(o) },
        ]);
    }
    columns.push(age_column());
    columns
}

/// `NAME`, `EMPTY`, `AGE` of a ManagedClusterSet (OCM's printer columns);
/// wide adds `SELECTED` (the condition's message) and the managed
/// namespaces.
pub fn cluster_set_columns(wide: bool) -> Vec<Column> {
    let mut columns =
        vec![name_column(), Column { header: "EMPTY", value: |o, _| condition_status(o, "ClusterSetEmpty") }];
    if wide {
        columns.push(Column {
            header: "SELECTED",
            value: |o, _| condition_field(o, "ClusterSetEmpty", "message").unwrap_or_default(),
        });
        columns.push(Column {
            header: "MANAGEDNAMESPACES",
            value: |o, _| {
                let names = crate::ocm::clusterset::set_spec_of(o).managed_namespaces;
                if names.is_empty() {
                    "<none>".to_string()
                } else {
                    names.into_iter().map(|n| n.name).collect::<Vec<_>>().join(",")
                }
            },
        });
    }
    columns.push(age_column());
    columns
}

/// `NAME`, `BOUND`, `AGE` of a ManagedClusterSetBinding; wide adds the
/// condition's reason.
pub fn set_binding_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![name_column(), Column { header: "BOUND", value: |o, _| condition_status(o, "Bound") }];
    if wide {
        columns.push(Column { header: "REASON", value: |o, _| condition_reason(o, "Bound") });
    }
    columns.push(age_column());
    columns
}

/// `NAME`, `PLACEMENT`, `FOUND`, `ROLLEDOUT`, `APPLIED`, `AGE` of a
/// ManifestWorkReplicaSet; wide adds the summary counts (with
/// `desiredTotal` and `updated`).
pub fn replica_set_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column {
            header: "PLACEMENTS",
            value: |o, _| {
                let refs = o.spec().and_then(|s| s.get("placementRefs")).and_then(Value::as_array);
                let names: Vec<&str> = refs.into_iter().flatten().filter_map(|r| r["name"].as_str()).collect();
                names.join(",")
            },
        },
        Column { header: "FOUND", value: |o, _| condition_status(o, "PlacementVerified") },
        Column { header: "ROLLEDOUT", value: |o, _| condition_status(o, "PlacementRolledOut") },
        Column { header: "APPLIED", value: |o, _| condition_status(o, "ManifestworkApplied") },
    ];
    if wide {
        columns.extend([
            Column { header: "TOTAL", value: |o, _| count(o, "total") },
            Column { header: "APPLIED#", value: |o, _| count(o, "applied") },
            Column { header: "AVAILABLE#", value: |o, _| count(o, "available") },
            Column { header: "DEGRADED#", value: |o, _| count(o, "degraded") },
            Column { header: "PROGRESSING#", value: |o, _| count(o, "progressing") },
            Column { header: "DESIRED#", value: |o, _| count(o, "desiredTotal") },
            Column { header: "UPDATED#", value: |o, _| count(o, "updated") },
        ]);
    }
    columns.push(age_column());
    columns
}

/// A count of `status.summary`, `0` when absent.
fn count(object: &Object, field: &str) -> String {
    let value = object.status().and_then(|s| s.pointer(&format!("/summary/{field}"))).and_then(Value::as_i64);
    value.unwrap_or(0).to_string()
}

/// `NAME`, `APPLIED`, `AVAILABLE`, `AGE` of a ManifestWork; wide adds
/// `DEGRADED`, `PROGRESSING`, `COMPLETE` (from condition rules) and the
/// manifest count.
pub fn manifest_work_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![
        name_column(),
        Column { header: "APPLIED", value: |o, _| condition_status(o, "Applied") },
        Column { header: "AVAILABLE", value: |o, _| condition_status(o, "Available") },
    ];
    if wide {
        columns.extend([
            Column { header: "DEGRADED", value: |o, _| condition_status(o, "Degraded") },
            Column { header: "PROGRESSING", value: |o, _| condition_status(o, "Progressing") },
            Column { header: "COMPLETE", value: |o, _| condition_status(o, "Complete") },
            Column {
                header: "MANIFESTS",
                value: |o, _| {
                    let manifests = o.spec().and_then(|s| s.pointer("/workload/manifests")).and_then(Value::as_array);
                    manifests.map_or(0, Vec::len).to_string()
                },
            },
        ]);
    }
    columns.push(age_column());
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{headers, row, Lookups, RowContext};
    use std::collections::BTreeMap;
    use std::time::SystemTime;

    fn at() -> RowContext<'static> {
        static NONE: Lookups = Lookups { latest_policy_index: BTreeMap::new() };
        RowContext { now: SystemTime::UNIX_EPOCH, lookups: &NONE }
    }

    #[test]
    fn placement_and_replica_set_rows() {
        let placement: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "demo", "namespace": "ns1"},
            "spec": {"sortBy": "Score"},
            "status": {"numberOfSelectedClusters": 2, "decisionGroups": [{}],
                "conditions": [{"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled"},
                               {"type": "PlacementMisconfigured", "status": "False"}]}
        }))
        .unwrap();
        let columns = placement_columns(true);
        assert_eq!(
            headers(&columns),
            ["NAME", "SUCCEEDED", "REASON", "SELECTEDCLUSTERS", "MISCONFIGURED", "DECISIONGROUPS", "SORTBY", "AGE"]
        );
        assert_eq!(
            row(&columns, &placement, &at())[..7],
            ["demo", "True", "AllDecisionsScheduled", "2", "False", "1", "Score"]
        );
        let mwrs: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": "web", "namespace": "ns1"},
            "spec": {"placementRefs": [{"name": "demo"}]},
            "status": {"summary": {"total": 3, "applied": 2, "available": 1, "degraded": 0, "progressing": 1,
                "desiredTotal": 4, "updated": 2},
                "conditions": [{"type": "PlacementVerified", "status": "True"}]}
        }))
        .unwrap();
        let cells = row(&replica_set_columns(true), &mwrs, &at());
        assert_eq!(cells[..12], ["web", "demo", "True", "Unknown", "Unknown", "3", "2", "1", "0", "1", "4", "2"]);
    }

    #[test]
    fn manifest_work_and_managed_cluster_rows() {
        let mw: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "migrate", "namespace": "c1"},
            "spec": {"workload": {"manifests": [{}]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}, {"type": "Complete", "status": "True"}]}
        }))
        .unwrap();
        let columns = manifest_work_columns(true);
        assert_eq!(
            headers(&columns),
            ["NAME", "APPLIED", "AVAILABLE", "DEGRADED", "PROGRESSING", "COMPLETE", "MANIFESTS", "AGE"]
        );
        assert_eq!(row(&columns, &mw, &at())[5..7], ["True", "1"]);
        let mc: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "kube-1"}, "spec": {},
            "status": {"version": {"kubernetes": "v1.36.1"}}
        }))
        .unwrap();
        let columns = managed_cluster_columns(true);
        let at_version = headers(&columns).iter().position(|h| *h == "KUBERNETES").unwrap();
        assert_eq!(row(&columns, &mc, &at())[at_version], "v1.36.1");
    }

    #[test]
    fn set_and_binding_rows() {
        let set: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
            "metadata": {"name": "prod"}, "spec": {"managedNamespaces": [{"name": "a"}, {"name": "b"}]},
            "status": {"conditions": [{"type": "ClusterSetEmpty", "status": "False", "reason": "ClustersSelected",
                "message": "2 ManagedClusters selected"}]}
        }))
        .unwrap();
        let columns = cluster_set_columns(true);
        assert_eq!(headers(&columns), ["NAME", "EMPTY", "SELECTED", "MANAGEDNAMESPACES", "AGE"]);
        assert_eq!(row(&columns, &set, &at())[..4], ["prod", "False", "2 ManagedClusters selected", "a,b"]);
        let binding: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "prod", "namespace": "ns1"}, "spec": {"clusterSet": "prod"},
            "status": {"conditions": [{"type": "Bound", "status": "False", "reason": "ClusterSetNotFound"}]}
        }))
        .unwrap();
        assert_eq!(row(&set_binding_columns(true), &binding, &at())[..3], ["prod", "False", "ClusterSetNotFound"]);
    }
}
