//! Which columns `get` prints for a kind (fleetctl's tables and the hub's Kubernetes Table responses). Per-kind column sets are added here
//! (one match arm each); the printer only asks [`columns_for`]. The placement
//! kinds' columns live in [`placement`], the OCM kinds' in [`ocm`], the
//! staged update and eviction kinds' in [`staged`].

pub mod ocm;
pub mod overrides;
pub mod placement;
pub mod staged;

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::Object;
use serde_json::Value;

use crate::age::age;

/// Computes one cell of a row.
pub type CellFn = fn(&Object, &RowContext<'_>) -> String;

/// Facts about other objects that some columns show, fetched once per `get`
/// (empty when the command did not need them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lookups {
    /// The policy-index label of each placement's latest scheduling policy
    /// snapshot, keyed by the placement's (namespace, name); the namespace is
    /// empty for ClusterResourcePlacements.
    pub latest_policy_index: BTreeMap<(String, String), String>,
}

/// What a cell is computed with besides its object.
#[derive(Debug, Clone, Copy)]
pub struct RowContext<'a> {
    /// "Now", for ages.
    pub now: SystemTime,
    /// Facts fetched from other objects.
    pub lookups: &'a Lookups,
}

/// One column of a `get` table.
#[derive(Clone, Copy)]
pub struct Column {
    /// The header, uppercase.
    pub header: &'static str,
    /// The cell of an object, given "now" (for ages) and the lookups.
    pub value: CellFn,
}

impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Column").field("header", &self.header).finish()
    }
}

/// The columns of `get KIND` (canonical Kind, e.g. `ConfigMap`), `wide` for
/// `-o wide`. `NAMESPACE` is not included: the printer adds it with `-A`.
pub fn columns_for(kind: &str, wide: bool) -> Vec<Column> {
    match kind {
        "Event" => event_columns(),
        "MemberCluster" => member_cluster_columns(wide),
        "ClusterResourcePlacement" | "ResourcePlacement" => placement::placement_columns(wide),
        "ClusterResourcePlacementStatus" => placement::status_mirror_columns(),
        "ClusterResourceBinding" | "ResourceBinding" => placement::binding_columns(wide),
        "ClusterSchedulingPolicySnapshot" | "SchedulingPolicySnapshot" => placement::policy_snapshot_columns(wide),
        "ClusterResourceSnapshot" | "ResourceSnapshot" => placement::resource_snapshot_columns(wide),
        "ClusterStagedUpdateRun" | "StagedUpdateRun" => staged::run_columns(wide),
        "ClusterApprovalRequest" | "ApprovalRequest" => staged::approval_request_columns(),
        "ClusterResourcePlacementEviction" | "ResourcePlacementEviction" => staged::eviction_columns(wide),
        "ClusterResourcePlacementDisruptionBudget" | "ResourcePlacementDisruptionBudget" => staged::budget_columns(),
        "ClusterResourceOverride" | "ResourceOverride" => overrides::override_columns(),
        "ClusterResourceOverrideSnapshot" | "ResourceOverrideSnapshot" => overrides::override_snapshot_columns(),
        "ClusterResourceEnvelope" | "ResourceEnvelope" => overrides::envelope_columns(),
        "Placement" => ocm::placement_columns(wide),
        "PlacementDecision" => ocm::decision_columns(wide),
        "ManagedCluster" => ocm::managed_cluster_columns(wide),
        "ManagedClusterSet" => ocm::cluster_set_columns(wide),
        "ManagedClusterSetBinding" => ocm::set_binding_columns(wide),
        "ManifestWorkReplicaSet" => ocm::replica_set_columns(wide),
        "ManifestWork" => ocm::manifest_work_columns(wide),
        _ => generic_columns(wide),
    }
}

/// The `NAMESPACE` column the printer puts first for `-A`.
pub fn namespace_column() -> Column {
    Column { header: "NAMESPACE", value: |o, _| o.metadata.namespace.clone().unwrap_or_default() }
}

/// `NAME`, `AGE`; wide adds `GENERATION` and `LABELS`.
fn generic_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![name_column(), age_column()];
    if wide {
        columns.push(Column { header: "GENERATION", value: |o, _| o.metadata.generation.to_string() });
        columns.push(Column { header: "LABELS", value: |o, _| labels_text(o) });
    }
    columns
}

/// `LAST SEEN`, `TYPE`, `REASON`, `OBJECT`, `MESSAGE` (as kubectl).
fn event_columns() -> Vec<Column> {
    vec![
        Column { header: "LAST SEEN", value: |o, c| age(Some(&event_time(o)), c.now) },
        Column { header: "TYPE", value: |o, _| str_field(o, &["type"]) },
        Column { header: "REASON", value: |o, _| str_field(o, &["reason"]) },
        Column { header: "OBJECT", value: |o, _| involved_object(o) },
        Column { header: "MESSAGE", value: |o, _| str_field(o, &["message"]) },
    ]
}

/// `NAME`, `JOINED`, `AGE` (KubeFleet's printer columns); wide adds health,
/// the target, size and usage, and the age of the last heartbeat.
fn member_cluster_columns(wide: bool) -> Vec<Column> {
    let mut columns = vec![name_column(), Column { header: "JOINED", value: |o, _| condition_status(o, "Joined") }];
    if wide {
        columns.extend([
            Column { header: "HEALTHY", value: |o, _| condition_status(o, "Healthy") },
            Column { header: "TARGET", value: |o, _| property(o, crate::member::TARGET_PROPERTY) },
            Column { header: "NODE-COUNT", value: |o, _| property(o, "kubernetes-fleet.io/node-count") },
            Column { header: "CPU (AVAIL/ALLOC)", value: |o, _| usage(o, "cpu") },
            Column { header: "MEMORY (AVAIL/ALLOC)", value: |o, _| usage(o, "memory") },
            Column { header: "LAST-HEARTBEAT", value: |o, c| last_heartbeat(o, c.now) },
        ]);
    }
    columns.push(age_column());
    columns
}

/// The status of condition `type_` in `status.conditions`, or `Unknown`.
fn condition_status(object: &Object, type_: &str) -> String {
    condition_field(object, type_, "status").unwrap_or_else(|| "Unknown".to_string())
}

/// A text field (`status`, `reason`, ...) of condition `type_` in `status.conditions`.
fn condition_field(object: &Object, type_: &str, field: &str) -> Option<String> {
    object
        .status()
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .and_then(|c| c[field].as_str())
        .map(str::to_string)
}

fn property(object: &Object, name: &str) -> String {
    let value =
        object.status().and_then(|s| s.get("properties")).and_then(|p| p.get(name)).and_then(|p| p.get("value"));
    value.and_then(Value::as_str).unwrap_or("<none>").to_string()
}

/// `AVAILABLE/ALLOCATABLE` of `resource` from `status.resourceUsage`, both
/// in one unit as `kubectl top` prints them (CPU in millicores, memory in
/// Mi), whatever units the agent reported them in.
fn usage(object: &Object, resource: &str) -> String {
    let usage = object.status().and_then(|s| s.get("resourceUsage"));
    let get = |part: &str| {
        usage
            .and_then(|u| u.get(part))
            .and_then(|p| p.get(resource))
            .and_then(Value::as_str)
            .map_or_else(|| "?".to_string(), |text| in_column_unit(resource, text))
    };
    if usage.is_none() {
        return "<none>".to_string();
    }
    format!("{}/{}", get("available"), get("allocatable"))
}

/// A quantity in its column's unit: CPU in millicores (rounded up, as
/// `kubectl top`), memory in Mi (rounded down); other resources, and text
/// that is not a quantity, as written.
fn in_column_unit(resource: &str, text: &str) -> String {
    const NANOS_PER_MI: i128 = 1_000_000_000 * 1024 * 1024;
    match (resource, crate::quantity::Quantity::parse(text)) {
        ("cpu", Ok(q)) => format!("{}m", q.millis_ceil()),
        ("memory", Ok(q)) => format!("{}Mi", q.nanos().div_euclid(NANOS_PER_MI)),
        _ => text.to_string(),
    }
}

fn last_heartbeat(object: &Object, now: SystemTime) -> String {
    let agents = object.status().and_then(|s| s.get("agentStatus")).and_then(Value::as_array);
    let time = agents
        .and_then(|a| a.iter().find(|x| x["type"] == "MemberAgent"))
        .and_then(|a| a["lastReceivedHeartbeat"].as_str())
        .map(str::to_string);
    match time {
        Some(t) => age(Some(&t), now),
        None => "<none>".to_string(),
    }
}

pub(crate) fn name_column() -> Column {
    Column { header: "NAME", value: |o, _| o.metadata.name.clone() }
}

pub(crate) fn age_column() -> Column {
    Column { header: "AGE", value: |o, c| age(o.metadata.creation_timestamp.as_deref(), c.now) }
}

/// `k=v,k2=v2`, or `<none>`.
pub fn labels_text(object: &Object) -> String {
    if object.metadata.labels.is_empty() {
        return "<none>".to_string();
    }
    object.metadata.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// A string field at `path` under the object's top-level fields (`""` if absent);
/// numbers and booleans are printed as text.
pub fn str_field(object: &Object, path: &[&str]) -> String {
    let Some((first, rest)) = path.split_first() else {
        return String::new();
    };
    let mut value = object.rest.get(*first);
    for part in rest {
        value = value.and_then(|v| v.get(part));
    }
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// When an Event last happened: `lastTimestamp`, else `eventTime`, else
/// `firstTimestamp`, else its creation.
pub fn event_time(event: &Object) -> String {
    ["lastTimestamp", "eventTime", "firstTimestamp"]
        .iter()
        .map(|f| str_field(event, &[f]))
        .find(|t| !t.is_empty())
        .or_else(|| event.metadata.creation_timestamp.clone())
        .unwrap_or_default()
}

/// `kind/name` (lowercase kind) of an Event's involved object.
fn involved_object(event: &Object) -> String {
    let kind = str_field(event, &["involvedObject", "kind"]).to_ascii_lowercase();
    let name = str_field(event, &["involvedObject", "name"]);
    format!("{kind}/{name}")
}

/// Every column's header, in order.
pub fn headers(columns: &[Column]) -> Vec<String> {
    columns.iter().map(|c| c.header.to_string()).collect()
}

/// One row of cells for `object`.
pub fn row(columns: &[Column], object: &Object, context: &RowContext<'_>) -> Vec<String> {
    columns.iter().map(|c| (c.value)(object, context)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::system_time;

    fn cm() -> Object {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "app", "generation": 2,
                         "creationTimestamp": "2024-05-01T10:00:00Z", "labels": {"x": "1", "y": "2"}}
        }))
        .unwrap()
    }

    fn at(now: SystemTime) -> RowContext<'static> {
        static NONE: Lookups = Lookups { latest_policy_index: BTreeMap::new() };
        RowContext { now, lookups: &NONE }
    }

    #[test]
    fn generic_and_wide_columns() {
        let now = at(system_time("2024-05-01T10:12:00Z").unwrap());
        assert_eq!(headers(&columns_for("ConfigMap", false)), ["NAME", "AGE"]);
        assert_eq!(row(&columns_for("ConfigMap", false), &cm(), &now), ["a", "12m"]);
        assert_eq!(headers(&columns_for("ConfigMap", true)), ["NAME", "AGE", "GENERATION", "LABELS"]);
        assert_eq!(row(&columns_for("ConfigMap", true), &cm(), &now), ["a", "12m", "2", "x=1,y=2"]);
        assert_eq!((namespace_column().value)(&cm(), &now), "app");
    }

    #[test]
    fn member_usage_is_in_one_unit_per_column() {
        let mc: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": "east", "creationTimestamp": "2024-05-01T10:00:00Z"},
            "status": {"resourceUsage": {
                "available": {"cpu": "15", "memory": "61312Mi"},
                "allocatable": {"cpu": "15200m", "memory": "60Gi"}
            }}
        }))
        .unwrap();
        let now = at(system_time("2024-05-01T10:12:00Z").unwrap());
        let columns = columns_for("MemberCluster", true);
        let cell = |header: &str| {
            let i = headers(&columns).iter().position(|h| h == header).unwrap();
            row(&columns, &mc, &now)[i].clone()
        };
        assert_eq!(cell("CPU (AVAIL/ALLOC)"), "15000m/15200m");
        assert_eq!(cell("MEMORY (AVAIL/ALLOC)"), "61312Mi/61440Mi");
        assert_eq!(in_column_unit("cpu", "0.0005"), "1m");
        assert_eq!(in_column_unit("memory", "1G"), "953Mi");
        assert_eq!(in_column_unit("memory", "lots"), "lots");
        assert_eq!(in_column_unit("nvidia.com/gpu", "2"), "2");
    }

    #[test]
    fn event_columns_read_the_event() {
        let ev: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": "default"},
            "type": "Normal", "reason": "Scheduled", "message": "picked 2 clusters",
            "involvedObject": {"kind": "ClusterResourcePlacement", "name": "web"},
            "lastTimestamp": "2024-05-01T10:11:00Z"
        }))
        .unwrap();
        let now = at(system_time("2024-05-01T10:12:00Z").unwrap());
        assert_eq!(
            row(&columns_for("Event", false), &ev, &now),
            ["60s", "Normal", "Scheduled", "clusterresourceplacement/web", "picked 2 clusters"]
        );
    }
}
