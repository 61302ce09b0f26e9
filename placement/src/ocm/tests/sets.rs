//! Cluster sets and bindings: the default set label, label-selector sets,
//! the built-in `default` and `global` sets, `clusterSets`, and clusters
//! being deleted.

use fleet_api::ocm::clusterset::{ManagedClusterSelector, ManagedClusterSetSpec, CLUSTER_SET_LABEL};
use fleet_api::LabelSelector;
use serde_json::json;

use super::*;

fn in_set(name: &str, set: &str, labels: &[(&str, &str)]) -> ClusterInfo {
    let mut c = cluster(name, labels);
    c.labels.insert(CLUSTER_SET_LABEL, set);
    c
}

fn fleet() -> Vec<ClusterInfo> {
    vec![
        in_set("a1", "alpha", &[("region", "east")]),
        in_set("a2", "alpha", &[("region", "west")]),
        in_set("b1", "beta", &[("region", "east")]),
        in_set("d1", "default", &[]),
        cluster("n1", &[("region", "east")]),
    ]
}

fn label_set(name: &str, labels: &[(&str, &str)]) -> ClusterSet {
    let selector = LabelSelector {
        match_labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    ClusterSet {
        name: name.into(),
        spec: ManagedClusterSetSpec {
            cluster_selector: Some(ManagedClusterSelector {
                selector_type: Some("LabelSelector".into()),
                label_selector: Some(selector),
            }),
            ..Default::default()
        },
    }
}

fn label_set_of(name: &str) -> ClusterSet {
    ClusterSet { name: name.into(), spec: ManagedClusterSetSpec::default() }
}

fn with_bindings(sets: Vec<ClusterSet>, bound: &[&str]) -> Fixture {
    let mut f = Fixture::new(fleet());
    f.sets = sets;
    f.bound = bound.iter().map(|s| s.to_string()).collect();
    f
}

#[test]
fn the_set_label_decides_by_default() {
    let f = with_bindings(vec![label_set_of("alpha"), label_set_of("beta")], &["alpha"]);
    let outcome = f.run_json(json!({}));
    assert_eq!(outcome.chosen, ["a1", "a2"]);
    assert_eq!(outcome.eligible_sets, ["alpha"]);
    assert_eq!(outcome.outside_sets, 3);
}

#[test]
fn default_holds_unlabelled_clusters_and_global_holds_all() {
    let f = with_bindings(Vec::new(), &["default"]);
    assert_eq!(f.run_json(json!({})).chosen, ["d1", "n1"]);
    let f = with_bindings(Vec::new(), &["global"]);
    assert_eq!(f.run_json(json!({})).chosen.len(), 5);
}

#[test]
fn a_label_selector_set_takes_what_it_selects() {
    let f = with_bindings(vec![label_set("east", &[("region", "east")])], &["east"]);
    assert_eq!(f.run_json(json!({})).chosen, ["a1", "b1", "n1"]);
    // Two bound sets: their union.
    let f = with_bindings(vec![label_set("east", &[("region", "east")]), label_set_of("alpha")], &["east", "alpha"]);
    assert_eq!(f.run_json(json!({})).chosen, ["a1", "a2", "b1", "n1"]);
}

#[test]
fn cluster_sets_narrow_the_bound_sets() {
    let sets = vec![label_set_of("alpha"), label_set_of("beta")];
    let f = with_bindings(sets.clone(), &["alpha", "beta"]);
    assert_eq!(f.run_json(json!({"clusterSets": ["beta", "gamma"]})).chosen, ["b1"]);
    let outcome = f.run_json(json!({"clusterSets": ["gamma"]}));
    assert!(outcome.chosen.is_empty());
    assert_eq!(outcome.satisfied.reason, "NoIntersection");
    assert_eq!(outcome.satisfied.message, "None of ManagedClusterSets [gamma] is bound to placement namespace");
    let outcome = f.run_json(json!({"clusterSets": ["gamma", "delta"]}));
    assert_eq!(outcome.satisfied.message, "None of ManagedClusterSets [gamma,delta] is bound to placement namespace");
    // Still one empty page, so consumers see that nothing is decided.
    assert_eq!(outcome.pages.len(), 1);
    assert!(outcome.pages[0].decisions.is_empty());
}

#[test]
fn bindings_must_name_existing_sets() {
    for bound in [&[][..], &["missing"][..]] {
        let outcome = with_bindings(Vec::new(), bound).run_json(json!({}));
        assert!(outcome.candidates.is_empty());
        assert_eq!(
            (outcome.satisfied.reason.as_str(), outcome.satisfied.message.as_str()),
            ("NoManagedClusterSetBindings", "No valid ManagedClusterSetBindings found in placement namespace")
        );
    }
}

#[test]
fn empty_sets_and_unmatched_predicates() {
    let f = with_bindings(vec![label_set_of("gamma")], &["gamma"]);
    let outcome = f.run_json(json!({}));
    assert_eq!(outcome.satisfied.reason, "AllManagedClusterSetsEmpty");
    assert_eq!(outcome.satisfied.message, "All ManagedClusterSets [gamma] have no member ManagedCluster");
    let f = with_bindings(Vec::new(), &["global"]);
    let outcome = f.run_json(
        json!({"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"region": "north"}}}}]}),
    );
    assert_eq!(outcome.satisfied.reason, "NoManagedClusterMatched");
    assert_eq!(outcome.satisfied.message, "No ManagedCluster matches any of the cluster predicate");
    assert_eq!(outcome.excluded_total, 5);
    assert_eq!(outcome.excluded[0].reason, crate::ocm::REASON_NO_PREDICATE_MATCHES);
}

#[test]
fn predicates_are_or_ed_and_each_ands_labels_and_claims() {
    let clusters = vec![
        with_claims(cluster("a", &[("vendor", "OpenShift")]), &[("region", "east")]),
        with_claims(cluster("b", &[("vendor", "OpenShift")]), &[("region", "west")]),
        with_claims(cluster("c", &[("vendor", "EKS")]), &[("region", "east")]),
        with_claims(cluster("d", &[("tier", "gold")]), &[]),
    ];
    let outcome = Fixture::new(clusters).run_json(json!({"predicates": [
        {"requiredClusterSelector": {
            "labelSelector": {"matchLabels": {"vendor": "OpenShift"}},
            "claimSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["east"]}]}}},
        {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}
    ]}));
    assert_eq!(outcome.chosen, ["a", "d"]);
    // A label with the claim's name does not count as a claim.
    let outcome = Fixture::new(vec![cluster("x", &[("region", "east")])]).run_json(json!({"predicates": [
        {"requiredClusterSelector": {"claimSelector": {"matchExpressions": [{"key": "region", "operator": "Exists"}]}}}
    ]}));
    assert!(outcome.chosen.is_empty());
}

#[test]
fn a_cel_selector_sees_labels_claims_version_and_resources() {
    let clusters = vec![
        with_property(
            with_claims(cluster("a", &[("env", "prod")]), &[("k8s.io/k8s-version", "v1.36.1"), ("region", "east")]),
            crate::ocm::ALLOCATABLE_CPU,
            "8",
        ),
        with_claims(cluster("b", &[("env", "prod")]), &[("region", "west")]),
        cluster("c", &[("env", "dev")]),
    ];
    let cel = |expressions: serde_json::Value| json!({"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": expressions}}}]});
    let fixture = Fixture::new(clusters);
    let prod = fixture.run_json(cel(json!(["managedCluster.metadata.labels['env'] == 'prod'"])));
    assert_eq!(prod.chosen, ["a", "b"]);
    let east = fixture.run_json(cel(json!([
        "managedCluster.metadata.labels['env'] == 'prod'",
        "managedCluster.status.clusterClaims.exists(c, c.name == 'region' && c.value == 'east')"
    ])));
    assert_eq!(east.chosen, ["a"], "every expression must hold");
    let versioned = fixture.run_json(cel(json!(["managedCluster.status.version.kubernetes.startsWith('v1.36')"])));
    assert_eq!(versioned.chosen, ["a"]);
    let why = versioned.excluded.iter().find(|e| e.cluster == "b").unwrap();
    assert!(why.reason.contains("celSelector"), "a missing field says so: {}", why.reason);
    let cpu = fixture.run_json(cel(json!(["managedCluster.status.allocatable.cpu == '8'"])));
    assert_eq!(cpu.chosen, ["a"]);
    // With a label selector in the same predicate, both must hold.
    let both = fixture.run_json(json!({"predicates": [{"requiredClusterSelector": {
        "labelSelector": {"matchLabels": {"env": "dev"}},
        "celSelector": {"celExpressions": ["managedCluster.metadata.name != 'x'"]}}}]}));
    assert_eq!(both.chosen, ["c"]);
}

#[test]
fn a_cel_selector_compares_versions_and_quantities_and_reads_scores() {
    use fleet_api::ocm::addon_score::{AddOnPlacementScoreItem, AddOnPlacementScoreStatus};
    let clusters = vec![
        with_property(
            with_claims(cluster("a", &[]), &[("k8s.io/k8s-version", "v1.36.1")]),
            crate::ocm::ALLOCATABLE_CPU,
            "7800m",
        ),
        with_property(
            with_claims(cluster("b", &[]), &[("k8s.io/k8s-version", "v1.9.0")]),
            crate::ocm::ALLOCATABLE_CPU,
            "16",
        ),
        cluster("c", &[]),
    ];
    let cel = |expression: &str| json!({"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}]});
    let mut fixture = Fixture::new(clusters);
    // Textually "v1.9.0" > "v1.36.1"; as versions it is older.
    let newer = fixture
        .run_json(cel("semver(managedCluster.status.version.kubernetes.substring(1)).isGreaterThan(semver('1.20.0'))"));
    assert_eq!(newer.chosen, ["a"]);
    // As text "16" < "7800m"; as quantities 16 cores > 7.8.
    let big = fixture.run_json(cel("quantity(managedCluster.status.allocatable.cpu).compareTo(quantity('8')) > 0"));
    assert_eq!(big.chosen, ["b"]);
    let usage = |value: i64| AddOnPlacementScoreStatus {
        scores: vec![AddOnPlacementScoreItem { name: "cpu".into(), value }],
        ..Default::default()
    };
    fixture.addon.insert("a", "usage", usage(20));
    fixture.addon.insert("b", "usage", usage(80));
    let idle = fixture.run_json(cel("managedCluster.scores('usage').exists(s, s.name == 'cpu' && s.value < 50)"));
    assert_eq!(idle.chosen, ["a"]);
    let why = idle.excluded.iter().find(|e| e.cluster == "c").unwrap();
    assert!(why.reason.contains("not found"), "a cluster without the score says so: {}", why.reason);
}

#[test]
fn clusters_being_deleted_are_left_out() {
    let mut clusters = plain(2);
    clusters[1].leaving = true;
    clusters[1].ineligible = Some("cluster is leaving".into());
    let outcome = Fixture::new(clusters).run_json(json!({}));
    assert_eq!(outcome.chosen, ["c00"]);
    assert_eq!(outcome.excluded[0].reason, "cluster is being deleted");
}
