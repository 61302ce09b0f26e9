//! What the hub keeps current about cluster sets, outside scheduling:
//! a set's `ClusterSetEmpty` condition, a binding's `Bound` condition, and
//! the namespaces a set's `spec.managedNamespaces` puts on its members.
//!
//! Membership here is the scheduler's ([`super::sets`]): the set label
//! names the set (`default` also takes clusters without the label), or a
//! label selector decides (an empty one takes every cluster), and the
//! built-in `global` takes every cluster. Every MemberCluster counts, as
//! every ManagedCluster counts in OCM, including one that has not joined
//! yet or is leaving.
//!
//! Managed namespaces reach a member as one Fleet Work per cluster,
//! [`MANAGED_NAMESPACES_WORK`] in its hub namespace, holding a Namespace
//! for every managed namespace of every set the cluster is in (one Work,
//! so two sets naming the same namespace do not fight over it). The Work
//! abandons its objects when deleted: a namespace stays on a cluster that
//! leaves the set, as in OCM, which never deletes one.

use std::collections::BTreeMap;

use fleet_api::conditions::Condition;
use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::member::member_namespace;
use fleet_api::ocm::clusterset::{
    ManagedClusterSetSpec, CLUSTER_SET_LABEL, CONDITION_BOUND, CONDITION_EMPTY, DEFAULT_SET, GLOBAL_SET, REASON_BOUND,
    REASON_CLUSTERS_SELECTED, REASON_NO_CLUSTER_MATCHED, REASON_SET_NOT_FOUND, SELECTOR_LABEL_SELECTOR,
};
use fleet_api::typed::encode;
use fleet_api::work::{DeleteOptions, WorkSpec, Workload};
use fleet_api::{Object, ObjectMeta};
use serde_json::json;

use crate::cluster::ClusterInfo;

/// The name of the Work holding a cluster's managed namespaces.
pub const MANAGED_NAMESPACES_WORK: &str = "mcs.managed-namespaces";
/// Label on that Work, so the controller lists them all at once.
pub const MANAGED_NAMESPACES_LABEL: &str = "ocm.kubernetes-fleet.io/managed-namespaces";
/// Label on every managed namespace on a member, value `true` (OCM's
/// agent labels its namespaces `clusterset.open-cluster-management.io/<hub>`).
pub const MANAGED_NAMESPACE_MARK: &str = "clusterset.open-cluster-management.io/fleet-hub";
/// Label on every managed namespace on a member: the set that asked for it
/// (the first by name when several did).
pub const MANAGED_NAMESPACE_SET_LABEL: &str = "clusterset.open-cluster-management.io/managed-by";

/// Whether a cluster with `labels` is in the set `name`, whose stored spec
/// is `spec` (`None` for the built-in `default` and `global`).
pub fn is_member(name: &str, spec: Option<&ManagedClusterSetSpec>, labels: &BTreeMap<String, String>) -> bool {
    let by_label = || match labels.get(CLUSTER_SET_LABEL) {
        Some(set) => set == name,
        None => name == DEFAULT_SET,
    };
    match spec {
        None if name == GLOBAL_SET => true,
        None => by_label(),
        Some(spec) if spec.selector_type() == SELECTOR_LABEL_SELECTOR => {
            spec.label_selector().is_none_or(|selector| selector.matches(labels))
        }
        Some(_) => by_label(),
    }
}

/// The clusters in the set `name`, by name.
pub fn members<'a>(name: &str, spec: Option<&ManagedClusterSetSpec>, clusters: &'a [ClusterInfo]) -> Vec<&'a str> {
    clusters.iter().filter(|c| is_member(name, spec, &c.labels.to_map())).map(|c| c.name.as_str()).collect()
}

/// `ClusterSetEmpty` for a set of `count` clusters (OCM's reasons and
/// messages).
pub fn empty_condition(count: usize) -> Condition {
    if count == 0 {
        Condition::new(CONDITION_EMPTY, true, REASON_NO_CLUSTER_MATCHED, "No ManagedCluster selected")
    } else {
        Condition::new(CONDITION_EMPTY, false, REASON_CLUSTERS_SELECTED, format!("{count} ManagedClusters selected"))
    }
}

/// `Bound` for a binding of the set `set`, which exists or not.
pub fn bound_condition(set: &str, exists: bool) -> Condition {
    if exists {
        Condition::new(CONDITION_BOUND, true, REASON_BOUND, format!("ManagedClusterSet {set:?} exists"))
    } else {
        Condition::new(
            CONDITION_BOUND,
            false,
            REASON_SET_NOT_FOUND,
            format!("ManagedClusterSet {set:?} not found; placements in this namespace cannot use it"),
        )
    }
}

/// Whether the set `name` exists: stored, or built in.
pub fn set_exists(name: &str, stored: &[(String, ManagedClusterSetSpec)]) -> bool {
    name == DEFAULT_SET || name == GLOBAL_SET || stored.iter().any(|(n, _)| n == name)
}

/// The managed namespaces of each cluster (not leaving) that has any:
/// namespace → the first set (by name) asking for it.
pub fn managed_namespaces(
    sets: &[(String, ManagedClusterSetSpec)],
    clusters: &[ClusterInfo],
) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut sorted: Vec<&(String, ManagedClusterSetSpec)> =
        sets.iter().filter(|(_, spec)| !spec.managed_namespaces.is_empty()).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for cluster in clusters.iter().filter(|c| !c.leaving) {
        let labels = cluster.labels.to_map();
        for (name, spec) in sorted.iter().copied() {
            if !is_member(name, Some(spec), &labels) {
                continue;
            }
            let wanted = out.entry(cluster.name.clone()).or_default();
            for namespace in &spec.managed_namespaces {
                wanted.entry(namespace.name.clone()).or_insert_with(|| name.clone());
            }
        }
    }
    out
}

/// The Work putting `namespaces` (namespace → set) on `cluster`.
pub fn managed_namespaces_work(cluster: &str, namespaces: &BTreeMap<String, String>) -> Object {
    let manifests = namespaces
        .iter()
        .map(|(namespace, set)| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": {
                MANAGED_NAMESPACE_MARK: "true", MANAGED_NAMESPACE_SET_LABEL: set}}})
        })
        .collect();
    let spec = WorkSpec {
        workload: Workload { manifests },
        apply_strategy: None,
        // OCM never deletes a managed namespace: neither does Fleet.
        delete_options: Some(DeleteOptions { propagation_policy: Some("Abandon".into()) }),
        report_back_strategy: None,
        ..WorkSpec::default()
    };
    let mut work = Object {
        api_version: format!("{FLEET_PLACEMENT_GROUP}/v1beta1"),
        kind: "Work".into(),
        metadata: ObjectMeta {
            name: MANAGED_NAMESPACES_WORK.into(),
            namespace: Some(member_namespace(cluster)),
            ..ObjectMeta::default()
        },
        rest: Default::default(),
    };
    work.metadata.labels.insert(MANAGED_NAMESPACES_LABEL.into(), "true".into());
    work.rest.insert("spec".into(), encode(&spec));
    work
}

#[cfg(test)]
mod tests {
    use fleet_api::ocm::clusterset::ManagedNamespaceConfig;
    use fleet_api::LabelSelector;

    use super::*;

    fn cluster(name: &str, labels: &[(&str, &str)]) -> ClusterInfo {
        ClusterInfo { name: name.into(), labels: labels.iter().copied().collect(), ..Default::default() }
    }

    fn by_selector(selector: &str, namespaces: &[&str]) -> ManagedClusterSetSpec {
        ManagedClusterSetSpec {
            cluster_selector: Some(fleet_api::ocm::clusterset::ManagedClusterSelector {
                selector_type: Some(SELECTOR_LABEL_SELECTOR.into()),
                label_selector: Some(LabelSelector::parse(selector).unwrap()),
            }),
            managed_namespaces: namespaces.iter().map(|n| ManagedNamespaceConfig { name: n.to_string() }).collect(),
        }
    }

    fn by_label(namespaces: &[&str]) -> ManagedClusterSetSpec {
        ManagedClusterSetSpec {
            managed_namespaces: namespaces.iter().map(|n| ManagedNamespaceConfig { name: n.to_string() }).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn membership_by_set_label_selector_and_built_in_sets() {
        let clusters = [
            cluster("a", &[(CLUSTER_SET_LABEL, "prod"), ("env", "prod")]),
            cluster("b", &[("env", "dev")]),
            cluster("c", &[(CLUSTER_SET_LABEL, "dev")]),
        ];
        assert_eq!(members("prod", Some(&by_label(&[])), &clusters), ["a"]);
        assert_eq!(members("default", None, &clusters), ["b"], "no set label: in default");
        assert_eq!(members("global", None, &clusters), ["a", "b", "c"]);
        assert_eq!(members("envs", Some(&by_selector("env", &[])), &clusters), ["a", "b"]);
        assert_eq!(members("all", Some(&by_selector("", &[])), &clusters), ["a", "b", "c"], "empty selector: all");
        assert!(members("none", Some(&by_label(&[])), &clusters).is_empty());
    }

    #[test]
    fn conditions_say_what_ocm_says() {
        let empty = empty_condition(0);
        assert_eq!((empty.status.as_str(), empty.reason.as_str()), ("True", "NoClusterMatched"));
        assert_eq!(empty.message, "No ManagedCluster selected");
        let two = empty_condition(2);
        assert_eq!((two.status.as_str(), two.reason.as_str()), ("False", "ClustersSelected"));
        assert_eq!(two.message, "2 ManagedClusters selected");
        let bound = bound_condition("prod", true);
        assert_eq!(
            (bound.type_.as_str(), bound.status.as_str(), bound.reason.as_str()),
            ("Bound", "True", "ClusterSetBound")
        );
        let unbound = bound_condition("prod", false);
        assert_eq!((unbound.status.as_str(), unbound.reason.as_str()), ("False", "ClusterSetNotFound"));
        let stored = [("prod".to_string(), by_label(&[]))];
        assert!(set_exists("prod", &stored) && set_exists("default", &[]) && set_exists("global", &[]));
        assert!(!set_exists("dev", &stored));
    }

    #[test]
    fn managed_namespaces_are_the_union_over_a_clusters_sets() {
        let mut leaving = cluster("gone", &[(CLUSTER_SET_LABEL, "prod")]);
        leaving.leaving = true;
        let clusters =
            [cluster("a", &[(CLUSTER_SET_LABEL, "prod"), ("env", "prod")]), cluster("b", &[("env", "dev")]), leaving];
        let sets = [
            ("prod".to_string(), by_label(&["team-a", "shared"])),
            ("envs".to_string(), by_selector("env", &["shared", "obs"])),
            ("empty".to_string(), by_label(&[])),
        ];
        let wanted = managed_namespaces(&sets, &clusters);
        let names = |c: &str| wanted[c].iter().map(|(n, s)| format!("{n}:{s}")).collect::<Vec<_>>();
        assert_eq!(names("a"), ["obs:envs", "shared:envs", "team-a:prod"], "the first set by name names it");
        assert_eq!(names("b"), ["obs:envs", "shared:envs"]);
        assert!(!wanted.contains_key("gone"), "a leaving cluster gets nothing new");

        let work = managed_namespaces_work("a", &wanted["a"]);
        assert_eq!(work.metadata.namespace.as_deref(), Some("fleet-member-a"));
        let spec = fleet_api::work::spec_of(&work);
        assert_eq!(spec.workload.manifests.len(), 3);
        assert_eq!(spec.workload.manifests[2]["metadata"]["labels"][MANAGED_NAMESPACE_SET_LABEL], "prod");
        assert_eq!(spec.workload.manifests[2]["metadata"]["labels"][MANAGED_NAMESPACE_MARK], "true");
        assert_eq!(spec.delete_options.and_then(|d| d.propagation_policy).as_deref(), Some("Abandon"));
    }
}
