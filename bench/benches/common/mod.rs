//! The deterministic fleet the scheduling benchmarks share (KubeFleet's and
//! OCM's passes run over the same clusters).

use fleet_api::member::Taint;
use fleet_api::quantity::Quantity;
use fleet_placement::cluster::ClusterInfo;

/// The node-count property.
pub const NODES: &str = "kubernetes-fleet.io/node-count";
/// The available-CPU property.
pub const CPU: &str = "resources.kubernetes-fleet.io/available-cpu";

/// A deterministic fleet: 10 regions, 30 zones (3 per region), labels for
/// the selectors, properties, some taints and some unhealthy clusters.
pub fn fleet(count: usize) -> Vec<ClusterInfo> {
    (0..count)
        .map(|i| {
            let mut c = ClusterInfo { name: format!("member-{i:05}"), ..Default::default() };
            let labels = [
                ("region", format!("r{}", i % 10)),
                ("zone", format!("z{}", i % 30)),
                ("env", if i % 4 == 0 { "dev" } else { "prod" }.to_string()),
                ("tier", if i % 3 == 0 { "gold" } else { "silver" }.to_string()),
                ("kubernetes-fleet.io/member-name", format!("member-{i:05}")),
            ];
            c.labels = labels.into_iter().collect();
            c.properties = [
                (NODES, Quantity::from_units(1 + (i % 20) as i64)),
                (CPU, Quantity::from_units(((i * 7919) % 1000) as i64)),
            ]
            .into_iter()
            .collect();
            if i % 20 == 7 {
                c.taints.push(Taint::new("maintenance", "true", "NoSchedule"));
            }
            if i % 50 == 3 {
                c.taints.push(Taint::new("dedicated", "gpu", "NoSchedule"));
            }
            if i % 97 == 5 {
                c.ineligible = Some("cluster is not healthy (HeartbeatTimeout)".into());
            }
            c
        })
        .collect()
}
