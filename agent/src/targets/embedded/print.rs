//! Tables like `kubectl get` / `fleetctl get` print them, for
//! `fleet-agent inspect`: uppercase headers, columns padded to their widest
//! cell and three spaces apart, kubectl's ages, and per-kind columns
//! (READY for workloads, TYPE/CLUSTER-IP for Services...).

use std::time::{Duration, SystemTime};

use fleet_api::Object;
use serde_json::Value;

use super::workload::field;

/// One column: header and how to compute a cell.
pub(crate) struct Column {
    /// The header, uppercase.
    pub header: &'static str,
    /// The cell of an object at "now" (for ages).
    pub cell: fn(&Object, SystemTime) -> String,
}

fn int(object: &Object, path: &[&str]) -> i64 {
    field(object, path).and_then(Value::as_i64).unwrap_or(0)
}

fn text(object: &Object, path: &[&str]) -> String {
    match field(object, path) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn or_none(s: String) -> String {
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

/// The columns after NAME and before AGE for a kind (`group`, `Kind`).
fn kind_columns(group: &str, kind: &str) -> Vec<Column> {
    let c = |header, cell| Column { header, cell };
    match (group, kind) {
        ("apps", "Deployment") => vec![
            c("READY", |o, _| format!("{}/{}", int(o, &["status", "readyReplicas"]), int(o, &["spec", "replicas"]))),
            c("UP-TO-DATE", |o, _| int(o, &["status", "updatedReplicas"]).to_string()),
            c("AVAILABLE", |o, _| int(o, &["status", "availableReplicas"]).to_string()),
        ],
        ("apps", "StatefulSet") => {
            vec![c("READY", |o, _| {
                format!("{}/{}", int(o, &["status", "readyReplicas"]), int(o, &["spec", "replicas"]))
            })]
        }
        ("apps", "ReplicaSet") => vec![
            c("DESIRED", |o, _| int(o, &["spec", "replicas"]).to_string()),
            c("CURRENT", |o, _| int(o, &["status", "replicas"]).to_string()),
            c("READY", |o, _| int(o, &["status", "readyReplicas"]).to_string()),
        ],
        ("apps", "DaemonSet") => vec![
            c("DESIRED", |o, _| int(o, &["status", "desiredNumberScheduled"]).to_string()),
            c("CURRENT", |o, _| int(o, &["status", "currentNumberScheduled"]).to_string()),
            c("READY", |o, _| int(o, &["status", "numberReady"]).to_string()),
            c("UP-TO-DATE", |o, _| int(o, &["status", "updatedNumberScheduled"]).to_string()),
            c("AVAILABLE", |o, _| int(o, &["status", "numberAvailable"]).to_string()),
        ],
        ("", "Pod") => vec![
            c("READY", |o, _| {
                let n = field(o, &["spec", "containers"]).and_then(Value::as_array).map_or(0, Vec::len);
                let ready = if text(o, &["status", "phase"]) == "Running" { n } else { 0 };
                format!("{ready}/{n}")
            }),
            c("STATUS", |o, _| text(o, &["status", "phase"])),
        ],
        ("batch", "Job") => vec![c("ACTIVE", |o, _| int(o, &["status", "active"]).to_string())],
        ("", "Service") => vec![
            c("TYPE", |o, _| text(o, &["spec", "type"])),
            c("CLUSTER-IP", |o, _| or_none(text(o, &["spec", "clusterIP"]))),
            c("EXTERNAL-IP", |o, _| {
                let ingress = field(o, &["status", "loadBalancer", "ingress"]).and_then(Value::as_array);
                let ips: Vec<String> = ingress
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).and_then(Value::as_str))
                    .map(str::to_string)
                    .collect();
                match (ips.is_empty(), text(o, &["spec", "type"]).as_str()) {
                    (false, _) => ips.join(","),
                    (true, "LoadBalancer") => "<pending>".to_string(),
                    (true, _) => "<none>".to_string(),
                }
            }),
            c("PORT(S)", |o, _| {
                let ports = field(o, &["spec", "ports"]).and_then(Value::as_array);
                let text: Vec<String> = ports
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        let port = p.get("port").map(Value::to_string).unwrap_or_default();
                        let node = p.get("nodePort").map(|n| format!(":{n}")).unwrap_or_default();
                        let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                        format!("{port}{node}/{protocol}")
                    })
                    .collect();
                or_none(text.join(","))
            }),
        ],
        ("", "Namespace") => vec![c("STATUS", |o, _| text(o, &["status", "phase"]))],
        _ => Vec::new(),
    }
}

/// The columns of a listing of one kind: NAMESPACE (with `-A`), NAME, the
/// kind's own columns, AGE.
pub(crate) fn columns_for(group: &str, kind: &str, show_namespace: bool) -> Vec<Column> {
    let mut columns = Vec::new();
    if show_namespace {
        columns.push(Column { header: "NAMESPACE", cell: |o, _| o.metadata.namespace.clone().unwrap_or_default() });
    }
    columns.push(Column { header: "NAME", cell: |o, _| o.metadata.name.clone() });
    columns.extend(kind_columns(group, kind));
    columns.push(age_column());
    columns
}

/// KIND, NAMESPACE, NAME, AGE: the summary of everything.
pub(crate) fn summary_columns() -> Vec<Column> {
    vec![
        Column { header: "KIND", cell: |o, _| kind_label(o) },
        Column { header: "NAMESPACE", cell: |o, _| o.metadata.namespace.clone().unwrap_or_default() },
        Column { header: "NAME", cell: |o, _| o.metadata.name.clone() },
        age_column(),
    ]
}

/// `Kind` for core and well-known kinds, `Kind.group` for others.
fn kind_label(object: &Object) -> String {
    let group = object.group();
    if group.is_empty() || fleet_api::kinds::lookup_group_kind(group, &object.kind).is_some() {
        object.kind.clone()
    } else {
        format!("{}.{group}", object.kind)
    }
}

fn age_column() -> Column {
    Column { header: "AGE", cell: |o, now| age(o.metadata.creation_timestamp.as_deref(), now) }
}

/// Renders rows under headers, kubectl style.
pub(crate) fn render(columns: &[Column], objects: &[Object], now: SystemTime) -> String {
    let rows: Vec<Vec<String>> = std::iter::once(columns.iter().map(|c| c.header.to_string()).collect())
        .chain(objects.iter().map(|o| columns.iter().map(|c| (c.cell)(o, now)).collect()))
        .collect();
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("   ");
            }
            line.push_str(cell);
            let pad = widths.get(i).copied().unwrap_or(0).saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// kubectl's age of an RFC 3339 timestamp at `now` (`45s`, `2m30s`, `3h`, `5d`).
pub(crate) fn age(timestamp: Option<&str>, now: SystemTime) -> String {
    let Some(then) = timestamp.and_then(fleet_api::time::system_time) else {
        return "<unknown>".to_string();
    };
    match now.duration_since(then) {
        Ok(d) => human_duration(d),
        Err(_) => "0s".to_string(),
    }
}

/// kubectl's `HumanDuration`: two significant units at most, coarser as it grows.
pub(crate) fn human_duration(d: Duration) -> String {
    let seconds = d.as_secs();
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    let (days, years) = (hours / 24, hours / (24 * 365));
    let two = |big: u64, big_unit: &str, small: u64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        two(minutes, "m", seconds % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        two(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        two(days, "d", hours % 24, "h")
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        two(years, "y", days % 365, "d")
    } else {
        format!("{years}y")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ages_like_kubectl() {
        let s = |n| human_duration(Duration::from_secs(n));
        assert_eq!(s(45), "45s");
        assert_eq!(s(150), "2m30s");
        assert_eq!(s(12 * 60), "12m");
        assert_eq!(s(3 * 3600 + 1200), "3h20m");
        assert_eq!(s(20 * 3600), "20h");
        assert_eq!(s(5 * 86400 + 3 * 3600), "5d3h");
        assert_eq!(s(30 * 86400), "30d");
        let now = fleet_api::time::system_time("2024-05-01T10:00:45Z").unwrap();
        assert_eq!(age(Some("2024-05-01T10:00:00Z"), now), "45s");
        assert_eq!(age(None, now), "<unknown>");
    }

    #[test]
    fn deployment_table() {
        let d: Object = serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "app", "creationTimestamp": "2024-05-01T10:00:00Z"},
            "spec": {"replicas": 2}, "status": {"readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2}}))
        .unwrap();
        let now = fleet_api::time::system_time("2024-05-01T10:00:45Z").unwrap();
        let text = render(&columns_for("apps", "Deployment", true), &[d], now);
        assert_eq!(
            text,
            "NAMESPACE   NAME   READY   UP-TO-DATE   AVAILABLE   AGE\napp         web    2/2     2            2           45s\n"
        );
    }
}
