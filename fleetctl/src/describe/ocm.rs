//! `describe` of an OCM Placement: the generic header and spec, then the
//! status as a person reads it — how many clusters were selected, when the
//! decision scores were last written, the conditions, the decision groups,
//! the decisions page by page with their scores, and every
//! candidate's score per prioritizer and total (the controller records them
//! in `status.candidateScores`) — then the events (`DecisionCreate`,
//! `DecisionUpdate`, `ScoreUpdate`).

use std::time::SystemTime;

use fleet_api::ocm::decision::{self, DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PLACEMENT_LABEL};
use fleet_api::ocm::placement::{self as placement_api, KIND};
use fleet_api::ocm::CLUSTER_GROUP;
use fleet_api::Object;

use super::lines::Lines;
use super::placement::conditions;
use super::{generic, render_events};
use crate::table::Table;

/// Whether `object` is an OCM Placement.
pub fn is_ocm_placement(object: &Object) -> bool {
    object.group() == CLUSTER_GROUP && object.kind == KIND
}

/// The label selector of a Placement's PlacementDecision pages.
pub fn pages_selector(placement: &Object) -> String {
    format!("{PLACEMENT_LABEL}={}", placement.metadata.name)
}

/// Renders the Placement, its decision `pages` and its `events` at `now`.
pub fn render(placement: &Object, pages: &[Object], events: &[Object], now: SystemTime) -> String {
    let mut w = generic(placement, &["status"]);
    let status = placement_api::status_of(placement);
    w.header(0, "Status");
    w.field(1, "Number Of Selected Clusters", &status.number_of_selected_clusters.to_string());
    w.field(1, "Last Score Update Time", status.last_score_update_time.as_deref().unwrap_or("<none>"));
    let raw_conditions = placement.status().and_then(|s| s.get("conditions"));
    conditions(&mut w, 1, raw_conditions, now);
    if status.decision_groups.is_empty() {
        w.field(1, "Decision Groups", "<none>");
    } else {
        w.header(1, "Decision Groups");
        let mut table = Table::new(["INDEX", "NAME", "CLUSTERS", "DECISIONS"]);
        for g in &status.decision_groups {
            table.push(vec![
                g.decision_group_index.to_string(),
                g.decision_group_name.clone(),
                g.cluster_count.to_string(),
                g.decisions.join(","),
            ]);
        }
        w.table(2, &table);
    }
    decisions(&mut w, pages);
    scores(&mut w, &status);
    let mut text = w.finish();
    text.push_str(&render_events(events, now));
    text
}

/// `Decisions:` and a table of PAGE GROUP CLUSTER SCORE, pages in name
/// order, decisions in page order.
fn decisions(w: &mut Lines, pages: &[Object]) {
    let mut sorted: Vec<&Object> = pages.iter().collect();
    sorted.sort_by_key(|p| page_number(&p.metadata.name));
    let mut table = Table::new(["PAGE", "GROUP", "CLUSTER", "SCORE"]);
    for page in sorted {
        let label = |k: &str| page.metadata.labels.get(k).cloned().unwrap_or_default();
        let group = match label(DECISION_GROUP_NAME_LABEL) {
            name if name.is_empty() => label(DECISION_GROUP_INDEX_LABEL),
            name => format!("{} ({name})", label(DECISION_GROUP_INDEX_LABEL)),
        };
        for d in decision::status_of(page).decisions {
            table.push(vec![page.metadata.name.clone(), group.clone(), d.cluster_name, d.score.to_string()]);
        }
    }
    if table.is_empty() {
        w.field(0, "Decisions", "<none>");
    } else {
        w.header(0, "Decisions");
        w.table(1, &table);
    }
}

/// The `n` of `<placement>-decision-<n>`, for ordering.
fn page_number(name: &str) -> u64 {
    name.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or(u64::MAX)
}

/// `Scores:` and a table of CLUSTER, one column per prioritizer
/// (`Name(weight)`), TOTAL and SELECTED, best first.
fn scores(w: &mut Lines, status: &placement_api::PlacementStatus) {
    let Some(scores) = status.candidate_scores.as_ref().filter(|s| !s.candidates.is_empty()) else {
        w.field(0, "Scores", "<none>");
        return;
    };
    let mut headers = vec!["CLUSTER".to_string()];
    headers.extend(scores.prioritizers.iter().map(|p| format!("{}({})", p.name, p.weight)));
    headers.extend(["TOTAL".to_string(), "SELECTED".to_string()]);
    let mut table = Table::new(headers);
    for c in &scores.candidates {
        let mut row = vec![c.cluster_name.clone()];
        row.extend(c.scores.iter().map(i64::to_string));
        row.extend([c.total.to_string(), if c.selected { "yes" } else { "no" }.to_string()]);
        table.push(row);
    }
    w.header(0, "Scores");
    w.table(1, &table);
    if scores.omitted > 0 {
        w.plain(1, &format!("... and {} more candidates", scores.omitted));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::time::system_time;
    use serde_json::json;

    #[test]
    fn shows_decisions_scores_and_events() {
        let placement: Object = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "demo", "namespace": "ns1"},
            "spec": {"numberOfClusters": 1},
            "status": {"numberOfSelectedClusters": 1, "lastScoreUpdateTime": "2024-05-01T10:00:00Z",
                "decisionGroups": [{"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["demo-decision-1"], "clusterCount": 1}],
                "conditions": [{"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled"}],
                "candidateScores": {"prioritizers": [{"name": "Balance", "weight": 1}, {"name": "ResourceAllocatableMemory", "weight": 2}],
                    "candidates": [{"clusterName": "big", "scores": [100, 100], "total": 300, "selected": true},
                                   {"clusterName": "small", "scores": [100, -100], "total": -100, "selected": false}]}}
        }))
        .unwrap();
        let page: Object = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
            "metadata": {"name": "demo-decision-1", "namespace": "ns1", "labels": {
                PLACEMENT_LABEL: "demo", DECISION_GROUP_INDEX_LABEL: "0", DECISION_GROUP_NAME_LABEL: ""}},
            "status": {"decisions": [{"clusterName": "big", "reason": "", "score": 300}]}
        }))
        .unwrap();
        let now = system_time("2024-05-01T10:10:00Z").unwrap();
        let out = render(&placement, &[page], &[], now);
        assert!(out.contains("Number Of Selected Clusters:  1"), "{out}");
        assert!(out.contains("Last Score Update Time:       2024-05-01T10:00:00Z"), "{out}");
        assert!(out.contains("demo-decision-1   0       big       300"), "{out}");
        assert!(out.contains("CLUSTER   Balance(1)   ResourceAllocatableMemory(2)   TOTAL   SELECTED"), "{out}");
        assert!(out.contains("small     100          -100                           -100    no"), "{out}");
        assert!(out.ends_with("Events:  <none>\n"), "{out}");
    }
}
