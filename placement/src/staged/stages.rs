//! Which chosen cluster goes to which stage (SU-4) and in what order it
//! updates there (SU-5).

use std::collections::BTreeMap;

use fleet_api::staged::StageConfig;

use super::inputs::ClusterLabels;

/// Most cluster names listed in the "not placed in any stage" error.
const MAX_LISTED: usize = 10;

/// The clusters of each stage, in strategy order, each stage's clusters by
/// name: the membership without the ordering rule, so a run can compare it
/// with what it froze without being upset by a changed sorting label.
pub fn assign_stages(stages: &[StageConfig], clusters: &[ClusterLabels]) -> Result<Vec<Vec<String>>, String> {
    let mut sorted: Vec<&ClusterLabels> = clusters.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut stage_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(stages.len());
    for (i, stage) in stages.iter().enumerate() {
        let mut members = Vec::new();
        for cluster in &sorted {
            let selected = stage.label_selector.as_ref().is_some_and(|s| s.matches(&cluster.labels));
            if !selected {
                continue;
            }
            if stage_of.insert(&cluster.name, i).is_some() {
                return Err(format!("cluster \"{}\" appears in more than one stages", cluster.name));
            }
            members.push(cluster.name.clone());
        }
        out.push(members);
    }
    let unplaced: Vec<&str> =
        sorted.iter().map(|c| c.name.as_str()).filter(|name| !stage_of.contains_key(name)).collect();
    if !unplaced.is_empty() {
        let shown: Vec<&str> = unplaced.iter().copied().take(MAX_LISTED).collect();
        return Err(format!(
            "some clusters are not placed in any stage, total {}, showing up to {MAX_LISTED}: {}",
            unplaced.len(),
            shown.join(", ")
        ));
    }
    Ok(out)
}

/// Orders one stage's `members` (names) for update: ascending integer value
/// of the stage's `sortingLabelKey`, then name; without a key, by name. A
/// member whose value is missing or not an integer is an error.
pub fn order_stage(stage: &StageConfig, members: &[String], clusters: &[ClusterLabels]) -> Result<Vec<String>, String> {
    let Some(key) = &stage.sorting_label_key else {
        let mut names = members.to_vec();
        names.sort();
        return Ok(names);
    };
    let mut keyed = Vec::with_capacity(members.len());
    for name in members {
        let value = clusters.iter().find(|c| &c.name == name).and_then(|c| c.labels.get(key));
        let text = value.map(String::as_str).unwrap_or("");
        match text.parse::<i64>() {
            Ok(n) => keyed.push((n, name.clone())),
            Err(_) => return Err(format!("the sorting label \"{key}:{text}\" on cluster \"{name}\" is not valid")),
        }
    }
    keyed.sort();
    Ok(keyed.into_iter().map(|(_, name)| name).collect())
}

/// The frozen stages: membership (SU-4), then each stage ordered (SU-5).
pub fn compute_stages(stages: &[StageConfig], clusters: &[ClusterLabels]) -> Result<Vec<Vec<String>>, String> {
    let members = assign_stages(stages, clusters)?;
    stages.iter().zip(&members).map(|(stage, m)| order_stage(stage, m, clusters)).collect()
}
