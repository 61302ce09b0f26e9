//! `describe` of a ClusterResourcePlacement or ResourcePlacement: the generic
//! header and spec, then a readable status (conditions, one block per
//! cluster, the selected resources), the latest scheduling policy snapshot's
//! decisions, and the events.

use std::time::SystemTime;

use fleet_api::placement::{CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT};
use fleet_api::snapshot::{
    index_of, is_latest, NUMBER_OF_CLUSTERS_ANNOTATION, PARENT_PLACEMENT_LABEL, POLICY_INDEX_LABEL,
};
use fleet_api::Object;
use serde_json::{Map, Value};

use super::lines::{scalar, Lines};
use super::{generic, render_events};
use crate::age::age;
use crate::table::{render_line, Table};

/// The `status` fields shown in their own sections (others are listed as the
/// generic describer would, so fields added later still show).
const KNOWN_STATUS: &[&str] = &["conditions", "observedResourceIndex", "placementStatuses", "selectedResources"];
/// The per-cluster fields shown specially.
const KNOWN_PER_CLUSTER: &[&str] = &[
    "clusterName",
    "conditions",
    "failedPlacements",
    "observedResourceIndex",
    "applicableClusterResourceOverrides",
    "applicableResourceOverrides",
];

/// Whether `kind` is a placement kind this describer handles.
pub fn is_placement_kind(kind: &str) -> bool {
    kind == CLUSTER_RESOURCE_PLACEMENT || kind == RESOURCE_PLACEMENT
}

/// The latest of `placement`'s policy snapshots among `snapshots`: the one
/// labelled latest with the highest index, else the highest index.
pub fn latest_policy_snapshot<'a>(placement: &Object, snapshots: &'a [Object]) -> Option<&'a Object> {
    let namespace = placement.metadata.namespace.as_deref().unwrap_or("");
    snapshots
        .iter()
        .filter(|s| s.metadata.labels.get(PARENT_PLACEMENT_LABEL) == Some(&placement.metadata.name))
        .filter(|s| s.metadata.namespace.as_deref().unwrap_or("") == namespace)
        .max_by_key(|s| (is_latest(s), index_of(s, POLICY_INDEX_LABEL)))
}

/// Renders `placement`, its latest policy snapshot (if any) and its `events`
/// (already filtered to it) at `now`.
pub fn render(placement: &Object, policy_snapshot: Option<&Object>, events: &[Object], now: SystemTime) -> String {
    let mut w = generic(placement, &["status"]);
    let empty = Map::new();
    let status = placement.status().and_then(Value::as_object).unwrap_or(&empty);
    status_section(&mut w, "Status", status, now);
    policy_snapshot_section(&mut w, policy_snapshot, now);
    let mut text = w.finish();
    text.push_str(&render_events(events, now));
    text
}

/// Renders a ClusterResourcePlacementStatus (the namespaced mirror of a
/// placement's status) and its `events`: when the hub last wrote it, then
/// the copied status laid out as `describe crp` lays out a placement's.
pub fn render_mirror(mirror: &Object, events: &[Object], now: SystemTime) -> String {
    let mut w = generic(mirror, &["sourceStatus", "lastUpdatedTime"]);
    let updated = mirror.rest.get("lastUpdatedTime").map(scalar).unwrap_or_default();
    w.field(0, "Last Updated Time", if updated.is_empty() { "<none>" } else { &updated });
    let empty = Map::new();
    let status = mirror.rest.get("sourceStatus").and_then(Value::as_object).unwrap_or(&empty);
    status_section(&mut w, "Source Status", status, now);
    let mut text = w.finish();
    text.push_str(&render_events(events, now));
    text
}

/// `title:` (`Status:`) with the placement's conditions, per-cluster blocks
/// and the selected resources.
fn status_section(w: &mut Lines, title: &str, status: &Map<String, Value>, now: SystemTime) {
    w.header(0, title);
    let resource_index = status.get("observedResourceIndex").map(scalar).unwrap_or_default();
    w.field(1, "Observed Resource Index", if resource_index.is_empty() { "<none>" } else { &resource_index });
    conditions(w, 1, status.get("conditions"), now);

    let clusters = status.get("placementStatuses").and_then(Value::as_array).filter(|a| !a.is_empty());
    match clusters {
        None => w.field(1, "Placement Statuses", "<none>"),
        Some(clusters) => {
            w.header(1, "Placement Statuses");
            for cluster in clusters {
                per_cluster(w, cluster, now);
            }
        }
    }

    let resources = status.get("selectedResources").and_then(Value::as_array).filter(|a| !a.is_empty());
    match resources {
        None => w.field(1, "Selected Resources", "<none>"),
        Some(resources) => {
            w.header(1, "Selected Resources");
            for line in selected_resource_lines(resources) {
                w.plain(2, &line);
            }
        }
    }

    let others: Map<String, Value> = status
        .iter()
        .filter(|(k, _)| !KNOWN_STATUS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    w.content(1, &others);
}

/// One `status.placementStatuses` entry: `Cluster:  NAME`, the resource
/// index it has, its conditions (whose `Scheduled` message carries the
/// scores), the objects that failed there, then any other fields.
fn per_cluster(w: &mut Lines, entry: &Value, now: SystemTime) {
    let field = |name: &str| entry.get(name).map(scalar).unwrap_or_default();
    w.field(2, "Cluster", &field("clusterName"));
    let resource_index = field("observedResourceIndex");
    w.field(3, "Observed Resource Index", if resource_index.is_empty() { "<none>" } else { &resource_index });
    let overrides = applied_overrides(entry);
    w.field(3, "Applied Overrides", if overrides.is_empty() { "<none>" } else { &overrides });
    conditions(w, 3, entry.get("conditions"), now);
    match entry.get("failedPlacements").and_then(Value::as_array).filter(|f| !f.is_empty()) {
        None => w.field(3, "Failed Placements", "<none>"),
        Some(failed) => {
            w.header(3, "Failed Placements");
            w.table(4, &failed_placement_table(failed));
        }
    }
    if let Some(map) = entry.as_object() {
        let others: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| !KNOWN_PER_CLUSTER.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        w.content(3, &others);
    }
}

/// The override snapshots a cluster's copy went through, in the order they
/// apply: `ClusterResourceOverrideSnapshot/reader-extra-verb-0,
/// ResourceOverrideSnapshot/web/frontend-0`.
fn applied_overrides(entry: &Value) -> String {
    let list = |field: &str| entry.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
    let cro = list("applicableClusterResourceOverrides")
        .into_iter()
        .map(|n| format!("ClusterResourceOverrideSnapshot/{}", scalar(&n)));
    let ro = list("applicableResourceOverrides").into_iter().map(|n| {
        let field = |f: &str| n.get(f).map(scalar).unwrap_or_default();
        format!("ResourceOverrideSnapshot/{}/{}", field("namespace"), field("name"))
    });
    cro.chain(ro).collect::<Vec<_>>().join(", ")
}

/// `Conditions:` and a table of TYPE STATUS REASON GEN LAST TRANSITION
/// MESSAGE (the transition as an age), or `Conditions:  <none>`.
pub(crate) fn conditions(w: &mut Lines, level: usize, conditions: Option<&Value>, now: SystemTime) {
    let Some(conditions) = conditions.and_then(Value::as_array).filter(|c| !c.is_empty()) else {
        w.field(level, "Conditions", "<none>");
        return;
    };
    w.header(level, "Conditions");
    let mut table = Table::new(["TYPE", "STATUS", "REASON", "GEN", "LAST TRANSITION", "MESSAGE"]);
    for condition in conditions {
        let field = |name: &str| condition.get(name).map(scalar).unwrap_or_default();
        let transition = field("lastTransitionTime");
        table.push(vec![
            field("type"),
            field("status"),
            field("reason"),
            field("observedGeneration"),
            if transition.is_empty() { String::new() } else { age(Some(&transition), now) },
            field("message"),
        ]);
    }
    w.table(level + 1, &table);
}

/// `group/version/kind   namespace/name` per selected resource, aligned
/// (`v1/Namespace` for the core group, no namespace for cluster-scoped ones).
pub fn selected_resource_lines(resources: &[Value]) -> Vec<String> {
    let rows: Vec<Vec<String>> = resources.iter().map(|r| vec![gvk_of(r), namespaced_name_of(r)]).collect();
    let width = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    rows.iter().map(|r| render_line(r, &[width])).collect()
}

/// `group/version/kind` of a resource identifier (`v1/Kind` for the core
/// group, just `Kind` without a version).
pub fn gvk_of(resource: &Value) -> String {
    let field = |name: &str| resource.get(name).map(scalar).unwrap_or_default();
    let (group, version, kind) = (field("group"), field("version"), field("kind"));
    match (group.is_empty(), version.is_empty()) {
        (_, true) => kind,
        (true, false) => format!("{version}/{kind}"),
        (false, false) => format!("{group}/{version}/{kind}"),
    }
}

/// `namespace/name` of a resource identifier, `name` when cluster-scoped.
pub fn namespaced_name_of(resource: &Value) -> String {
    let field = |name: &str| resource.get(name).map(scalar).unwrap_or_default();
    let namespace = field("namespace");
    if namespace.is_empty() {
        field("name")
    } else {
        format!("{namespace}/{}", field("name"))
    }
}

/// KIND NAMESPACE/NAME CONDITION REASON MESSAGE, one row per failed
/// placement (`CONDITION` as `Type=Status`, e.g. `Applied=False`).
pub fn failed_placement_table(failed: &[Value]) -> Table {
    let enveloped = failed.iter().any(|o| o.get("envelope").is_some());
    let mut headers = vec!["KIND", "NAMESPACE/NAME"];
    if enveloped {
        headers.push("ENVELOPE");
    }
    headers.extend(["CONDITION", "REASON", "MESSAGE"]);
    let mut table = Table::new(headers);
    for object in failed {
        let condition = |name: &str| object.get("condition").and_then(|c| c.get(name)).map(scalar).unwrap_or_default();
        let (type_, status) = (condition("type"), condition("status"));
        let mut row = vec![gvk_of(object), namespaced_name_of(object)];
        if enveloped {
            row.push(envelope_of(object));
        }
        row.extend([
            if status.is_empty() { type_ } else { format!("{type_}={status}") },
            condition("reason"),
            condition("message"),
        ]);
        table.push(row);
    }
    table
}

/// `ResourceEnvelope ops/quota` for an object wrapped in an envelope, `""` otherwise.
fn envelope_of(object: &Value) -> String {
    let Some(envelope) = object.get("envelope") else { return String::new() };
    let field = |f: &str| envelope.get(f).map(scalar).unwrap_or_default();
    let namespace = field("namespace");
    let place = if namespace.is_empty() { field("name") } else { format!("{namespace}/{}", field("name")) };
    format!("{} {place}", field("type"))
}

/// `Latest Policy Snapshot:` with its name, index, PickN count, the
/// generation it was scheduled for, its conditions and its decisions.
fn policy_snapshot_section(w: &mut Lines, snapshot: Option<&Object>, now: SystemTime) {
    let Some(snapshot) = snapshot else {
        w.field(0, "Latest Policy Snapshot", "<none>");
        return;
    };
    w.header(0, "Latest Policy Snapshot");
    w.field(1, "Name", &snapshot.metadata.name);
    w.field(1, "Index", snapshot.metadata.labels.get(POLICY_INDEX_LABEL).map_or("<none>", String::as_str));
    if let Some(n) = snapshot.metadata.annotations.get(NUMBER_OF_CLUSTERS_ANNOTATION) {
        w.field(1, "Number Of Clusters", n);
    }
    let status = snapshot.status();
    let generation = status.and_then(|s| s.get("observedCRPGeneration")).map(scalar).unwrap_or_default();
    w.field(1, "Observed Placement Generation", if generation.is_empty() { "<none>" } else { &generation });
    conditions(w, 1, status.and_then(|s| s.get("conditions")), now);
    let targets = status.and_then(|s| s.get("targetClusters")).and_then(Value::as_array).filter(|t| !t.is_empty());
    match targets {
        None => w.field(1, "Decisions", "<none>"),
        Some(targets) => {
            w.header(1, "Decisions");
            w.table(2, &decision_table(targets));
        }
    }
}

/// CLUSTER SELECTED AFFINITY SCORE TOPOLOGY SPREAD SCORE REASON, one row per
/// target cluster in the scheduler's order (scores `-` when not scored).
pub fn decision_table(targets: &[Value]) -> Table {
    let mut table = Table::new(["CLUSTER", "SELECTED", "AFFINITY SCORE", "TOPOLOGY SPREAD SCORE", "REASON"]);
    for target in targets {
        let score = |name: &str| match target.get("clusterScore") {
            Some(Value::Object(s)) => s.get(name).map(scalar).unwrap_or_else(|| "0".to_string()),
            _ => "-".to_string(),
        };
        let topology = match target.get("clusterScore").and_then(|s| s.get("topologySpreadScore")) {
            Some(_) => score("topologySpreadScore"),
            None => score("priorityScore"),
        };
        table.push(vec![
            target.get("clusterName").map(scalar).unwrap_or_default(),
            target.get("selected").and_then(Value::as_bool).unwrap_or(false).to_string(),
            score("affinityScore"),
            topology,
            target.get("reason").map(scalar).unwrap_or_default(),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::time::system_time;
    use serde_json::json;

    fn obj(value: Value) -> Object {
        serde_json::from_value(value).unwrap()
    }

    fn crp() -> Object {
        obj(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "web", "generation": 2, "creationTimestamp": "2024-05-01T10:00:00Z"},
            "spec": {"policy": {"placementType": "PickN", "numberOfClusters": 1},
                     "resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}]},
            "status": {
                "observedResourceIndex": "0",
                "selectedResources": [
                    {"group": "", "version": "v1", "kind": "Namespace", "name": "app"},
                    {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "app", "name": "web"}
                ],
                "conditions": [{
                    "type": "ClusterResourcePlacementScheduled", "status": "True",
                    "reason": "SchedulingPolicyFulfilled", "observedGeneration": 2,
                    "message": "found all the clusters needed as specified by the scheduling policy",
                    "lastTransitionTime": "2024-05-01T10:01:00Z"
                }],
                "placementStatuses": [{
                    "clusterName": "east-1",
                    "conditions": [{
                        "type": "Scheduled", "status": "True", "reason": "Scheduled", "observedGeneration": 2,
                        "message": "Successfully scheduled resources for placement in east-1 (affinity score: 5, topology spread score: 0): picked by scheduling policy",
                        "lastTransitionTime": "2024-05-01T10:01:00Z"
                    }]
                }]
            }
        }))
    }

    fn policy_snapshot(index: u64, latest: bool) -> Object {
        obj(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterSchedulingPolicySnapshot",
            "metadata": {"name": format!("web-{index}"),
                         "labels": {PARENT_PLACEMENT_LABEL: "web", POLICY_INDEX_LABEL: index.to_string(),
                                    "kubernetes-fleet.io/is-latest-snapshot": latest.to_string()},
                         "annotations": {NUMBER_OF_CLUSTERS_ANNOTATION: "1"}},
            "spec": {"policyHash": "abc"},
            "status": {
                "observedCRPGeneration": 2,
                "conditions": [{"type": "Scheduled", "status": "True", "reason": "SchedulingPolicyFulfilled",
                                "message": "found all the clusters needed as specified by the scheduling policy",
                                "observedGeneration": 1, "lastTransitionTime": "2024-05-01T10:01:00Z"}],
                "targetClusters": [
                    {"clusterName": "east-1", "selected": true,
                     "clusterScore": {"affinityScore": 5, "topologySpreadScore": 0},
                     "reason": "picked by scheduling policy"},
                    {"clusterName": "west-1", "selected": false,
                     "clusterScore": {"affinityScore": 1, "priorityScore": -1},
                     "reason": "does not score high enough (affinity score: 1, topology spread score: -1)"},
                    {"clusterName": "north-1", "selected": false,
                     "reason": "cluster is not in the list of cluster names"}
                ]
            }
        }))
    }

    #[test]
    fn picks_the_latest_policy_snapshot_of_the_placement() {
        let mut other = policy_snapshot(7, true);
        other.metadata.labels.insert(PARENT_PLACEMENT_LABEL.into(), "api".into());
        let snapshots = [policy_snapshot(0, false), policy_snapshot(1, true), other, policy_snapshot(2, false)];
        assert_eq!(latest_policy_snapshot(&crp(), &snapshots).map(|s| s.metadata.name.as_str()), Some("web-1"));
        let unlabelled = [policy_snapshot(0, false), policy_snapshot(3, false)];
        assert_eq!(latest_policy_snapshot(&crp(), &unlabelled).map(|s| s.metadata.name.as_str()), Some("web-3"));
        assert!(latest_policy_snapshot(&crp(), &[]).is_none());
    }

    #[test]
    fn describes_status_decisions_and_events() {
        let event = obj(json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "ClusterResourcePlacement", "name": "web"},
            "type": "Normal", "reason": "ClusterScheduled", "message": "scheduled to east-1",
            "lastTimestamp": "2024-05-01T10:01:00Z", "source": {"component": "scheduler"}
        }));
        let now = system_time("2024-05-01T10:10:00Z").unwrap();
        let text = render(&crp(), Some(&policy_snapshot(1, true)), &[event], now);
        let expected = "\
Name:         web
Namespace:
Labels:       <none>
Annotations:  <none>
API Version:  placement.kubernetes-fleet.io/v1beta1
Kind:         ClusterResourcePlacement
Metadata:
  Creation Timestamp:  2024-05-01T10:00:00Z
  Generation:          2
Spec:
  Policy:
    Number Of Clusters:  1
    Placement Type:      PickN
  Resource Selectors:
    Group:
    Kind:     Namespace
    Name:     app
    Version:  v1
Status:
  Observed Resource Index:  0
  Conditions:
    TYPE                                STATUS   REASON                      GEN   LAST TRANSITION   MESSAGE
    ClusterResourcePlacementScheduled   True     SchedulingPolicyFulfilled   2     9m                found all the clusters needed as specified by the scheduling policy
  Placement Statuses:
    Cluster:                    east-1
      Observed Resource Index:  <none>
      Applied Overrides:        <none>
      Conditions:
        TYPE        STATUS   REASON      GEN   LAST TRANSITION   MESSAGE
        Scheduled   True     Scheduled   2     9m                Successfully scheduled resources for placement in east-1 (affinity score: 5, topology spread score: 0): picked by scheduling policy
      Failed Placements:  <none>
  Selected Resources:
    v1/Namespace         app
    apps/v1/Deployment   app/web
Latest Policy Snapshot:
  Name:                           web-1
  Index:                          1
  Number Of Clusters:             1
  Observed Placement Generation:  2
  Conditions:
    TYPE        STATUS   REASON                      GEN   LAST TRANSITION   MESSAGE
    Scheduled   True     SchedulingPolicyFulfilled   1     9m                found all the clusters needed as specified by the scheduling policy
  Decisions:
    CLUSTER   SELECTED   AFFINITY SCORE   TOPOLOGY SPREAD SCORE   REASON
    east-1    true       5                0                       picked by scheduling policy
    west-1    false      1                -1                      does not score high enough (affinity score: 1, topology spread score: -1)
    north-1   false      -                -                       cluster is not in the list of cluster names
Events:
  TYPE     REASON             AGE   FROM        MESSAGE
  Normal   ClusterScheduled   9m    scheduler   scheduled to east-1
";
        assert_eq!(text, expected, "\n{text}");
    }

    #[test]
    fn a_new_placement_shows_none_everywhere() {
        let rp = obj(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourcePlacement",
            "metadata": {"name": "app", "namespace": "ns"},
            "spec": {}
        }));
        assert!(is_placement_kind(&rp.kind));
        let text = render(&rp, None, &[], SystemTime::now());
        assert!(
            text.ends_with(
                "\
Status:
  Observed Resource Index:  <none>
  Conditions:               <none>
  Placement Statuses:       <none>
  Selected Resources:       <none>
Latest Policy Snapshot:     <none>
Events:  <none>
"
            ),
            "{text}"
        );
    }

    #[test]
    fn unknown_status_fields_are_still_shown() {
        let mut placement = crp();
        placement.rest["status"]["placementStatuses"][0]["driftedPlacements"] = json!([{"kind": "ConfigMap"}]);
        placement.rest["status"]["rolloutNote"] = json!("later");
        let text = render(&placement, None, &[], SystemTime::now());
        assert!(text.contains("      Drifted Placements:\n        Kind:  ConfigMap\n"), "{text}");
        assert!(text.contains("\n  Rollout Note:") && text.contains(" later\nLatest Policy Snapshot:"), "{text}");
    }

    #[test]
    fn per_cluster_blocks_show_every_condition_the_index_and_failed_placements() {
        let condition = |type_: &str, status: &str, reason: &str| {
            json!({"type": type_, "status": status, "reason": reason, "observedGeneration": 2,
                   "lastTransitionTime": "2024-05-01T10:05:00Z", "message": ""})
        };
        let mut placement = crp();
        placement.rest["status"]["placementStatuses"][0] = json!({
            "clusterName": "east-1",
            "observedResourceIndex": "3",
            "conditions": [
                condition("Scheduled", "True", "Scheduled"),
                condition("RolloutStarted", "True", "RolloutStarted"),
                condition("Overridden", "True", "NoOverrideSpecified"),
                condition("WorkSynchronized", "True", "WorkSynchronized"),
                condition("Applied", "False", "ApplyFailed"),
            ],
            "failedPlacements": [
                {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "app", "name": "web",
                 "condition": {"type": "Applied", "status": "False", "reason": "ManifestApplyFailed",
                               "message": "field is immutable"}},
                {"version": "v1", "kind": "Namespace", "name": "app",
                 "condition": {"type": "Available", "status": "Unknown"}}
            ]
        });
        let now = system_time("2024-05-01T10:10:00Z").unwrap();
        let text = render(&placement, None, &[], now);
        let expected = "\
  Placement Statuses:
    Cluster:                    east-1
      Observed Resource Index:  3
      Applied Overrides:        <none>
      Conditions:
        TYPE               STATUS   REASON                GEN   LAST TRANSITION   MESSAGE
        Scheduled          True     Scheduled             2     5m
        RolloutStarted     True     RolloutStarted        2     5m
        Overridden         True     NoOverrideSpecified   2     5m
        WorkSynchronized   True     WorkSynchronized      2     5m
        Applied            False    ApplyFailed           2     5m
      Failed Placements:
        KIND                 NAMESPACE/NAME   CONDITION           REASON                MESSAGE
        apps/v1/Deployment   app/web          Applied=False       ManifestApplyFailed   field is immutable
        v1/Namespace         app              Available=Unknown
  Selected Resources:
";
        assert!(text.contains(expected), "{text}");
    }

    #[test]
    fn a_status_mirror_is_described_like_a_placement_status() {
        let mirror = obj(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacementStatus",
            "metadata": {"name": "web", "namespace": "app"},
            "lastUpdatedTime": "2024-05-01T10:05:00Z",
            "sourceStatus": {
                "observedResourceIndex": "0",
                "selectedResources": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
                "conditions": [{"type": "ClusterResourcePlacementScheduled", "status": "True", "reason": "SchedulingPolicyFulfilled",
                                "message": "found all", "observedGeneration": 1, "lastTransitionTime": "2024-05-01T10:00:00Z"}]
            }
        }));
        let now = system_time("2024-05-01T10:10:00Z").unwrap();
        let text = render_mirror(&mirror, &[], now);
        for want in [
            "Kind:               ClusterResourcePlacementStatus\n",
            "Last Updated Time:  2024-05-01T10:05:00Z\n",
            "Source Status:\n  Observed Resource Index:  0\n",
            "ClusterResourcePlacementScheduled   True     SchedulingPolicyFulfilled   1     10m",
            "  Selected Resources:\n    v1/Namespace   app\n",
            "Events:  <none>\n",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }
}
