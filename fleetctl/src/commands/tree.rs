//! `get placements --tree`: OCM Placements with their decisions as a tree,
//! as `clusteradm get placements` shows them — each Placement (namespace,
//! name, whether it is satisfied, how many clusters it selected), its
//! decision groups in index order, and the clusters of each.

use std::collections::BTreeMap;

use fleet_api::conditions::find;
use fleet_api::ocm::decision::{self, DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL, PLACEMENT_LABEL};
use fleet_api::ocm::placement;
use fleet_api::Object;

/// The tree of `placements`, their decisions read from `pages` (the
/// PlacementDecision pages of their namespaces).
pub fn render(placements: &[Object], pages: &[Object]) -> String {
    let mut out = String::new();
    for p in placements {
        let namespace = p.metadata.namespace.clone().unwrap_or_default();
        let status = placement::status_of(p);
        let satisfied = find(&status.conditions, "PlacementSatisfied")
            .map(|c| if c.is_true() { "Satisfied".to_string() } else { format!("NotSatisfied: {}", c.reason) })
            .unwrap_or_else(|| "not decided yet".to_string());
        out.push_str(&format!(
            "{namespace}/{} ({satisfied}, {} selected)\n",
            p.metadata.name, status.number_of_selected_clusters
        ));
        // Decision groups by index: (name, clusters).
        let mut groups: BTreeMap<i64, (String, Vec<String>)> = BTreeMap::new();
        let mine = pages.iter().filter(|d| {
            d.metadata.namespace.as_deref() == Some(namespace.as_str())
                && d.metadata.labels.get(PLACEMENT_LABEL) == Some(&p.metadata.name)
        });
        for page in mine {
            let index = page.metadata.labels.get(DECISION_GROUP_INDEX_LABEL).and_then(|i| i.parse().ok()).unwrap_or(0);
            let name = page.metadata.labels.get(DECISION_GROUP_NAME_LABEL).cloned().unwrap_or_default();
            let group = groups.entry(index).or_insert_with(|| (name, Vec::new()));
            group.1.extend(decision::status_of(page).decisions.into_iter().map(|d| d.cluster_name));
        }
        let count = groups.len();
        for (i, (index, (name, mut clusters))) in groups.into_iter().enumerate() {
            let last_group = i + 1 == count;
            let (branch, indent) = if last_group { ("└── ", "    ") } else { ("├── ", "│   ") };
            let label = if name.is_empty() { format!("group {index}") } else { format!("group {index} {name}") };
            out.push_str(&format!("{branch}{label}\n"));
            clusters.sort();
            let n = clusters.len();
            for (j, cluster) in clusters.iter().enumerate() {
                let leaf = if j + 1 == n { "└── " } else { "├── " };
                out.push_str(&format!("{indent}{leaf}{cluster}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: serde_json::Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn groups_in_index_order_with_their_clusters() {
        let placement = object(json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "web", "namespace": "ops"},
            "status": {"numberOfSelectedClusters": 3, "conditions": [
                {"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        let page = |n: u32, index: u32, name: &str, clusters: &[&str]| {
            let decisions: Vec<_> = clusters.iter().map(|c| json!({"clusterName": c, "reason": ""})).collect();
            object(json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
                "metadata": {"name": format!("web-decision-{n}"), "namespace": "ops", "labels": {
                    PLACEMENT_LABEL: "web", DECISION_GROUP_INDEX_LABEL: index.to_string(), DECISION_GROUP_NAME_LABEL: name}},
                "status": {"decisions": decisions}}))
        };
        let other =
            object(json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
            "metadata": {"name": "db-decision-1", "namespace": "ops", "labels": {PLACEMENT_LABEL: "db"}},
            "status": {"decisions": [{"clusterName": "x", "reason": ""}]}}));
        let pages = [page(2, 1, "", &["west", "north"]), page(1, 0, "canary", &["east"]), other];
        assert_eq!(
            render(&[placement], &pages),
            "ops/web (Satisfied, 3 selected)\n\
             ├── group 0 canary\n\
             │   └── east\n\
             └── group 1\n    \
                 ├── north\n    \
                 └── west\n"
        );
    }
}
