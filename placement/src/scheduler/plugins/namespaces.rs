//! Namespace affinity: a ResourcePlacement is scheduled only onto clusters
//! where its namespace exists, as the cluster's agent reports it
//! (`status.namespaces` of the MemberCluster), as KubeFleet's scheduler
//! does. ClusterResourcePlacements are not concerned, nor are clusters
//! whose agent does not collect namespaces (`fleet-agent
//! --collect-namespaces`, off by default as in KubeFleet).

use crate::scheduler::framework::FilterPlugin;
use crate::scheduler::table::ClusterTable;

/// Why a cluster whose agent has not reported its namespaces is filtered (KubeFleet's text).
pub const REASON_NO_NAMESPACES: &str = "cluster has no namespace information available";
/// Why a cluster without the placement's namespace is filtered (KubeFleet's text).
pub const REASON_NAMESPACE_MISSING: &str = "target namespace does not exist on cluster";

/// Filters out clusters that do not have the placement's namespace.
#[derive(Debug, Clone, Copy)]
pub struct NamespaceAffinity<'a> {
    namespace: &'a str,
}

impl<'a> NamespaceAffinity<'a> {
    /// The filter for a ResourcePlacement in `namespace`.
    pub fn new(namespace: &'a str) -> NamespaceAffinity<'a> {
        NamespaceAffinity { namespace }
    }
}

impl FilterPlugin for NamespaceAffinity<'_> {
    fn name(&self) -> &'static str {
        "NamespaceAffinity"
    }

    fn filter(&self, table: &ClusterTable, cluster: usize) -> Result<(), String> {
        let info = table.info(cluster);
        // As KubeFleet: a cluster whose agent does not collect namespaces
        // is not filtered by them.
        if !info.collects_namespaces() {
            return Ok(());
        }
        match info.has_namespace(self.namespace) {
            None => Err(REASON_NO_NAMESPACES.to_string()),
            Some(false) => Err(REASON_NAMESPACE_MISSING.to_string()),
            Some(true) => Ok(()),
        }
    }
}
