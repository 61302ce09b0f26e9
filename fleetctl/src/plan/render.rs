//! How a [`Plan`] prints: a headline and a table, or JSON.

use super::Plan;
use crate::error::Result;
use crate::output::to_json;
use crate::table::Table;

/// The plans as text: per placement, a headline (what and whether the
/// policy is fulfilled), then one row per cluster with its scores and reason.
pub fn render_text(plans: &[Plan]) -> String {
    let mut text = String::new();
    for (i, plan) in plans.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let name = match &plan.namespace {
            Some(ns) => format!("{ns}/{}", plan.name),
            None => plan.name.clone(),
        };
        let chosen = plan.clusters.iter().filter(|c| c.decision == super::Decision::Chosen).count();
        let verdict = if plan.fulfilled { "fulfilled" } else { "not fulfilled" };
        text.push_str(&format!("{} {name}: {chosen} cluster(s) chosen, {verdict}: {}\n", plan.kind, plan.message));
        if !plan.current.is_empty() {
            text.push_str(&format!("currently on {} cluster(s): {}\n", plan.current.len(), listed(&plan.current)));
        }
        let mut headers = vec!["CLUSTER".to_string(), "DECISION".to_string()];
        headers.extend(plan.score_names.iter().map(|n| score_header(n)));
        headers.push("REASON".to_string());
        let mut table = Table::new(headers);
        for c in &plan.clusters {
            let mut row = vec![c.cluster.clone(), c.decision.as_str().to_string()];
            for i in 0..plan.score_names.len() {
                row.push(c.scores.get(i).map_or_else(|| "-".to_string(), i64::to_string));
            }
            row.push(c.reason.clone());
            table.push(row);
        }
        text.push_str(&table.render());
        if let Some(omitted) = &plan.omitted {
            text.push_str(&format!("... and {} more cluster(s): {}\n", omitted.count, omitted.reason));
        }
    }
    text
}

/// Up to ten names, then how many more.
fn listed(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// A score's column header: `topologySpread` → `TOPOLOGY-SPREAD`,
/// `ResourceAllocatableCPU` → `RESOURCE-ALLOCATABLE-CPU`.
fn score_header(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for ch in name.chars() {
        if ch.is_ascii_uppercase() && previous_lower {
            out.push('-');
        }
        previous_lower = ch.is_ascii_lowercase();
        out.push(ch.to_ascii_uppercase());
    }
    out
}

/// The plans as JSON: one object, or `{"items": [...]}` for several.
pub fn render_json(plans: &[Plan]) -> Result<String> {
    match plans {
        [one] => to_json(one),
        many => to_json(&serde_json::json!({ "items": many })),
    }
}

#[cfg(test)]
pub(super) fn score_header_for_test(name: &str) -> String {
    score_header(name)
}
