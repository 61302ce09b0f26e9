//! Eligibility: only joined, healthy, non-leaving clusters get new placements.

use crate::scheduler::framework::FilterPlugin;
use crate::scheduler::table::ClusterTable;

/// Filters out clusters that are not eligible (docs/spec/members.md), with the reason
/// `cluster is not eligible: <why>`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Eligibility;

impl FilterPlugin for Eligibility {
    fn name(&self) -> &'static str {
        "Eligibility"
    }

    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        match table.info(cluster).ineligible_reason() {
            Some(why) => Err(format!("cluster is not eligible: {why}")),
            None => Ok(()),
        }
    }
}
