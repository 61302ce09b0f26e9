//! The manifests of docs/spec/ocm.md, and one OCM-style manifest per kind the
//! spec describes in prose, accepted as written.

use serde_json::json;

use super::ok;
use crate::ocm::{addon_score, clusterset, manifestwork, placement, replicaset};
use crate::placement::IntOrString;

/// The Placement example of docs/spec/ocm.md. It is verbatim except for its two
/// placeholders, which no parser can read as written: `key: ...` became
/// `key: maintenance` and `labelSelector: {...}` became
/// `labelSelector: {matchLabels: {tier: canary}}`.
const PLACEMENT_EXAMPLE: &str = include_str!("placement-example.yaml");

#[test]
fn spec_placement_example_passes_and_is_defaulted() {
    let o = ok(PLACEMENT_EXAMPLE);
    let spec = placement::spec_of(&o);
    assert_eq!(spec.number_of_clusters, Some(2));
    assert_eq!(spec.cluster_sets, ["clusterset1"]);
    let policy = spec.prioritizer_policy.unwrap();
    assert_eq!(policy.mode(), "Additive");
    let weights: Vec<i64> = policy.configurations.iter().map(|c| c.weight()).collect();
    assert_eq!(weights, [1, 3, 1]);
    let types: Vec<&str> =
        policy.configurations.iter().filter_map(|c| c.score_coordinate.as_ref()).map(|c| c.type_()).collect();
    assert_eq!(types, ["BuiltIn", "BuiltIn", "AddOn"]);
    assert_eq!(spec.tolerations[0].operator(), "Exists");
    let groups = spec.decision_strategy.unwrap().group_strategy.unwrap();
    assert_eq!(groups.clusters_per_decision_group, Some(IntOrString::Str("25%".into())));
    assert_eq!(groups.decision_groups[0].group_name, "canary");
    // Preparing the prepared object again changes nothing.
    let mut again = o.clone();
    crate::typed::prepare(&mut again).unwrap();
    assert_eq!(again, o);
}

#[test]
fn v1alpha1_placement_and_empty_spec_are_accepted() {
    let o = ok("apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: Placement\nmetadata: {name: all, namespace: ns1}\n");
    assert_eq!(
        o.spec().unwrap(),
        &json!({"prioritizerPolicy": {"mode": "Additive"}, "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "100%"}}})
    );
    ok("apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: all, namespace: ns1}\nspec: {}\n");
}

#[test]
fn cluster_sets_of_the_spec() {
    // Default selection (the set label), written back explicitly.
    let o = ok("apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSet\nmetadata: {name: clusterset1}\nspec: {}\n");
    assert_eq!(clusterset::set_spec_of(&o).selector_type(), "ExclusiveClusterSetLabel");
    // A label selector decides.
    let o = ok(r#"apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: east}
spec:
  clusterSelector:
    selectorType: LabelSelector
    labelSelector: {matchLabels: {region: east}}
"#);
    let spec = clusterset::set_spec_of(&o);
    assert_eq!(spec.selector_type(), "LabelSelector");
    assert_eq!(spec.label_selector().unwrap().match_labels["region"], "east");
    // The binding is named after its set.
    ok("apiVersion: cluster.open-cluster-management.io/v1beta2\nkind: ManagedClusterSetBinding\nmetadata: {name: global, namespace: ns1}\nspec: {clusterSet: global}\n");
}

#[test]
fn addon_placement_score_and_decision_hold_status_only() {
    let o = ok("apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: AddOnPlacementScore\nmetadata: {name: default, namespace: cluster1}\n");
    assert_eq!(addon_score::status_of(&o), Default::default());
    ok("apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: PlacementDecision\nmetadata: {name: demo-decision-1, namespace: ns1, labels: {cluster.open-cluster-management.io/placement: demo}}\n");
}

#[test]
fn manifestwork_of_the_spec() {
    let o = ok(r#"apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: hello, namespace: cluster1}
spec:
  workload:
    manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: hello, namespace: default}
        data: {greeting: hi}
  deleteOption:
    propagationPolicy: SelectivelyOrphan
    selectivelyOrphans:
      orphaningRules: [{group: "", resource: configmaps, namespace: default, name: hello}]
  manifestConfigs:
    - resourceIdentifier: {group: "", resource: configmaps, namespace: default, name: hello}
      updateStrategy: {type: ServerSideApply, serverSideApply: {force: true}}
      feedbackRules: [{type: JSONPaths, jsonPaths: [{name: greeting, path: .data.greeting}]}]
    - resourceIdentifier: {group: apps, resource: deployments, namespace: default, name: web}
      updateStrategy: {type: ReadOnly}
"#);
    let spec = manifestwork::spec_of(&o);
    assert_eq!(spec.workload.manifests.len(), 1);
    assert_eq!(spec.manifest_configs[1].update_strategy.as_ref().and_then(|u| u.type_.as_deref()), Some("ReadOnly"));
    // Update and CreateOnly too; the type defaults to Update.
    let o = ok(r#"apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: hello, namespace: cluster1}
spec:
  workload: {manifests: []}
  deleteOption: {}
  manifestConfigs:
    - resourceIdentifier: {resource: configmaps, namespace: default, name: a}
      updateStrategy: {type: CreateOnly}
    - resourceIdentifier: {resource: configmaps, namespace: default, name: b}
      updateStrategy: {}
"#);
    let spec = manifestwork::spec_of(&o);
    assert_eq!(spec.delete_option.unwrap().propagation_policy.as_deref(), Some("Foreground"));
    assert_eq!(spec.manifest_configs[1].update_strategy.as_ref().and_then(|u| u.type_.as_deref()), Some("Update"));
}

#[test]
fn manifestworkreplicaset_of_the_spec() {
    let o = ok(r#"apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: web, namespace: ns1}
spec:
  placementRefs:
    - name: demo
      rolloutStrategy:
        type: Progressive
        progressive:
          maxConcurrency: 25%
          mandatoryDecisionGroups: [{groupName: canary}]
          minSuccessTime: 5m
          progressDeadline: 10m
          maxFailures: 2
    - name: per-group
      rolloutStrategy: {type: ProgressivePerGroup, progressivePerGroup: {mandatoryDecisionGroups: [{groupIndex: 0}]}}
    - name: everywhere
      rolloutStrategy: {type: All, all: {progressDeadline: None}}
    - name: defaulted
  manifestWorkTemplate:
    workload:
      manifests:
        - {apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: default}}
"#);
    let spec = replicaset::spec_of(&o);
    assert_eq!(spec.cascade_deletion_policy.as_deref(), Some("Background"));
    let strategy = spec.placement_refs[0].rollout_strategy.clone().unwrap();
    let config = strategy.config();
    assert_eq!((config.min_success_seconds(), config.progress_deadline_seconds()), (300, Some(600)));
    let all = spec.placement_refs[2].rollout_strategy.clone().unwrap().config();
    assert_eq!(all.progress_deadline_seconds(), None);
    assert_eq!(spec.placement_refs[3].rollout_strategy.as_ref().map(|s| s.type_()), Some("All"));
    for policy in ["Orphan", "Foreground"] {
        let text = format!(
            "apiVersion: work.open-cluster-management.io/v1alpha1\nkind: ManifestWorkReplicaSet\nmetadata: {{name: w, namespace: n}}\nspec: {{placementRefs: [{{name: p}}], cascadeDeletionPolicy: {policy}}}\n"
        );
        ok(&text);
    }
}
