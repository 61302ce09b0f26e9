//! Placement validation: one test per group of rules, each asserting the
//! path, the value and what is allowed.

use super::*;
use crate::ocm::tests::{has, ok, refused};

/// A Placement with the given spec lines (indented by two spaces).
fn placement(spec: &str) -> String {
    format!(
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {{name: demo, namespace: ns1}}\nspec:\n{spec}"
    )
}

#[test]
fn unknown_fields_are_refused_with_their_path() {
    has(
        &refused(&placement("  numberOfCluster: 3\n")),
        &[r#"Placement "demo" is invalid:"#, "spec.numberOfCluster: Forbidden: unknown field `numberOfCluster`"],
    );
    // Newer OCM fields Fleet does not implement are refused, not ignored.
    has(
        &refused(&placement("  predicates: [{requiredClusterSelector: {celSelector: {celExpression: [x]}}}]\n")),
        &["spec.predicates[0].requiredClusterSelector.celSelector.celExpression: Forbidden: unknown field"],
    );
    has(
        &refused(&placement(
            "  predicates: [{requiredClusterSelector: {celSelector: {celExpressions: [\"managedCluster.metadata.labels[\", \"isSorted(managedCluster.metadata.name)\"]}}}]\n",
        )),
        &[
            "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]: Invalid value",
            "does not compile",
            "celExpressions[1]: Invalid value",
            "calls isSorted, which this environment does not provide",
        ],
    );
    ok(&placement(
        "  predicates: [{requiredClusterSelector: {celSelector: {celExpressions: [\"managedCluster.metadata.labels['env'] == 'prod'\"]}}}]\n",
    ));
}

#[test]
fn sort_by_and_score_rate_limit() {
    ok(&placement("  sortBy: Score\n  scoreRateLimit: 30s\n"));
    ok(&placement("  sortBy: ClusterName\n  scoreRateLimit: 2h\n"));
    has(
        &refused(&placement("  sortBy: score\n")),
        &[r#"spec.sortBy: Unsupported value: "score": supported values: "ClusterName", "Score""#],
    );
    for bad in ["1m30s", "m", "-1m", "1d", "1.5m", "99999999999999999999h"] {
        has(
            &refused(&placement(&format!("  scoreRateLimit: \"{bad}\"\n"))),
            &[&format!(r#"spec.scoreRateLimit: Invalid value: "{bad}": must be a whole number followed by h, m or s"#)],
        );
    }
    assert_eq!(parse_rate_limit("0s"), Some(0));
    assert_eq!(parse_rate_limit("90s"), Some(90));
    assert_eq!(parse_rate_limit("2m"), Some(120));
    assert_eq!(parse_rate_limit("1h"), Some(3600));
    assert_eq!(parse_rate_limit(""), None);
    let defaulted = PlacementSpec::default();
    assert_eq!((defaulted.sort_by(), defaulted.score_rate_limit_seconds()), (SORT_BY_CLUSTER_NAME, Some(60)));
}

#[test]
fn number_of_clusters_and_cluster_sets() {
    has(
        &refused(&placement("  numberOfClusters: -1\n")),
        &["spec.numberOfClusters: Invalid value: -1: must be between 0 and 2147483647"],
    );
    ok(&placement("  numberOfClusters: 0\n"));
    has(
        &refused(&placement("  clusterSets: [good, Bad_Set, \"\"]\n")),
        &[r#"spec.clusterSets[1]: Invalid value: "Bad_Set""#, "spec.clusterSets[2]: Required value"],
    );
}

#[test]
fn predicate_selectors_are_checked() {
    let e = refused(&placement(
        r#"  predicates:
    - requiredClusterSelector:
        labelSelector: {matchExpressions: [{key: vendor, operator: In}]}
        claimSelector: {matchExpressions: [{key: "bad key", operator: Exists, values: [x]}]}
"#,
    ));
    let base = "spec.predicates[0].requiredClusterSelector";
    has(
        &e,
        &[
            &format!("{base}.labelSelector.matchExpressions[0].values: Required value"),
            &format!(r#"{base}.claimSelector.matchExpressions[0].key: Invalid value: "bad key""#),
            &format!("{base}.claimSelector.matchExpressions[0].values: Forbidden"),
        ],
    );
    // A type error is reported on its own (decoding stops there).
    let e = refused(&placement(
        "  predicates: [{}, {requiredClusterSelector: {claimSelector: {matchExpressions: [{key: region, operator: Near, values: [east]}]}}}]\n",
    ));
    has(
        &e,
        &[
            "spec.predicates[1].requiredClusterSelector.claimSelector.matchExpressions[0].operator: Invalid value",
            "unknown variant `Near`",
        ],
    );
    ok(&placement("  predicates: [{}, {requiredClusterSelector: {}}]\n"));
}

#[test]
fn prioritizer_rules() {
    let e = refused(&placement(
        r#"  prioritizerPolicy:
    mode: Fancy
    configurations:
      - weight: 2
      - {scoreCoordinate: {type: Magic}}
      - {scoreCoordinate: {builtIn: Cheapest}}
      - {scoreCoordinate: {type: BuiltIn}}
      - {scoreCoordinate: {type: AddOn}}
      - {scoreCoordinate: {type: AddOn, addOn: {resourceName: "", scoreName: ""}, builtIn: Steady}}
      - {scoreCoordinate: {builtIn: Steady, addOn: {resourceName: a, scoreName: b}}, weight: 11}
      - {scoreCoordinate: {builtIn: Balance}, weight: -11}
"#,
    ));
    let c = "spec.prioritizerPolicy.configurations";
    has(
        &e,
        &[
            r#"spec.prioritizerPolicy.mode: Unsupported value: "Fancy": supported values: "Additive", "Exact""#,
            &format!("{c}[0].scoreCoordinate: Required value"),
            &format!(
                r#"{c}[1].scoreCoordinate.type: Unsupported value: "Magic": supported values: "BuiltIn", "AddOn""#
            ),
            &format!(
                r#"{c}[2].scoreCoordinate.builtIn: Unsupported value: "Cheapest": supported values: "Balance", "Steady", "ResourceAllocatableCPU", "ResourceAllocatableMemory""#
            ),
            &format!("{c}[3].scoreCoordinate.builtIn: Required value"),
            &format!("{c}[4].scoreCoordinate.addOn: Required value: required when type is AddOn"),
            &format!("{c}[5].scoreCoordinate.addOn.resourceName: Required value"),
            &format!("{c}[5].scoreCoordinate.addOn.scoreName: Required value"),
            &format!("{c}[5].scoreCoordinate.builtIn: Forbidden: only allowed when type is BuiltIn"),
            &format!("{c}[6].weight: Invalid value: 11: must be between -10 and 10"),
            &format!("{c}[6].scoreCoordinate.addOn: Forbidden: only allowed when type is AddOn"),
            &format!("{c}[7].weight: Invalid value: -11: must be between -10 and 10"),
        ],
    );
    // The ends of the range and 0 (disabled) are fine; Exact mode too.
    let o = ok(&placement(
        "  prioritizerPolicy: {mode: Exact, configurations: [{scoreCoordinate: {builtIn: Steady}, weight: -10}, {scoreCoordinate: {builtIn: Balance}, weight: 10}, {scoreCoordinate: {builtIn: ResourceAllocatableCPU}, weight: 0}]}\n",
    ));
    let weights: Vec<Option<i64>> =
        spec_of(&o).prioritizer_policy.unwrap().configurations.iter().map(|c| c.weight).collect();
    assert_eq!(weights, [Some(-10), Some(10), Some(0)]);
}

#[test]
fn spread_rules() {
    let constraint = "{topologyKey: region, topologyKeyType: Label}";
    let nine = [constraint; 9].join(", ");
    has(
        &refused(&placement(&format!("  spreadPolicy: {{spreadConstraints: [{nine}]}}\n"))),
        &["spec.spreadPolicy.spreadConstraints: Too many: 9: must have at most 8 items"],
    );
    let e = refused(&placement(
        "  spreadPolicy: {spreadConstraints: [{topologyKeyType: Label}, {topologyKey: zone}, {topologyKey: \"-x\", topologyKeyType: Annotation, maxSkew: 0, whenUnsatisfiable: Never}]}\n",
    ));
    let s = "spec.spreadPolicy.spreadConstraints";
    has(
        &e,
        &[
            &format!("{s}[0].topologyKey: Required value"),
            &format!("{s}[1].topologyKeyType: Required value"),
            &format!(r#"{s}[2].topologyKey: Invalid value: "-x""#),
            &format!(r#"{s}[2].topologyKeyType: Unsupported value: "Annotation": supported values: "Label", "Claim""#),
            &format!("{s}[2].maxSkew: Invalid value: 0: must be greater than or equal to 1"),
            &format!(
                r#"{s}[2].whenUnsatisfiable: Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway""#
            ),
        ],
    );
    // Defaults: maxSkew 1, ScheduleAnyway (OCM's default).
    let o = ok(&placement("  spreadPolicy: {spreadConstraints: [{topologyKey: region, topologyKeyType: Claim}]}\n"));
    let c = spec_of(&o).spread_policy.unwrap().spread_constraints.remove(0);
    assert_eq!((c.max_skew, c.when_unsatisfiable.as_deref()), (Some(1), Some("ScheduleAnyway")));
}

#[test]
fn toleration_rules() {
    let e = refused(&placement(&format!(
        "  tolerations:\n    - {{value: x}}\n    - {{key: k, operator: Exists, value: v}}\n    - {{key: k, effect: NoSchedule, operator: Maybe}}\n    - {{key: k, tolerationSeconds: -5}}\n    - {{key: k, value: {}}}\n",
        "v".repeat(1025)
    )));
    has(
        &e,
        &[
            "spec.tolerations[0].key: Required value: key is required unless operator is Exists",
            "spec.tolerations[1].value: Forbidden: may not be specified when operator is Exists",
            r#"spec.tolerations[2].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists""#,
            r#"spec.tolerations[2].effect: Unsupported value: "NoSchedule": supported values: "NoSelect", "PreferNoSelect", "NoSelectIfNew""#,
            "spec.tolerations[3].tolerationSeconds: Invalid value: -5: must be greater than or equal to 0",
            "spec.tolerations[4].value: Too long: must have at most 1024 bytes",
        ],
    );
    let o = ok(&placement(
        "  tolerations: [{operator: Exists}, {key: cluster.open-cluster-management.io/unreachable, effect: NoSelect, tolerationSeconds: 300}, {key: gpu, value: \"a value with spaces\"}]\n",
    ));
    let tolerations = spec_of(&o).tolerations;
    assert_eq!(tolerations[1].toleration_seconds, Some(300));
    assert_eq!(tolerations[2].operator.as_deref(), Some("Equal"));
}

#[test]
fn decision_group_rules() {
    for (value, want) in [
        ("0", "must be greater than or equal to 1"),
        ("0%", "must be a percentage of at least 1%"),
        ("101%", "must be a percentage of at most 100%"),
        ("half", "must be an integer or a percentage"),
    ] {
        let e = refused(&placement(&format!(
            "  decisionStrategy: {{groupStrategy: {{clustersPerDecisionGroup: {value}}}}}\n"
        )));
        has(&e, &["spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup: Invalid value", want]);
    }
    let e = refused(&placement(
        r#"  decisionStrategy:
    groupStrategy:
      decisionGroups:
        - {groupClusterSelector: {}}
        - {groupName: canary}
        - {groupName: canary, groupClusterSelector: {labelSelector: {matchLabels: {a: b}}}}
        - {groupName: "-bad", groupClusterSelector: {claimSelector: {matchExpressions: [{key: k, operator: In}]}}}
"#,
    ));
    let g = "spec.decisionStrategy.groupStrategy.decisionGroups";
    has(
        &e,
        &[
            &format!("{g}[0].groupName: Required value"),
            &format!("{g}[1].groupClusterSelector: Required value"),
            &format!(r#"{g}[2].groupName: Duplicate value: "canary""#),
            &format!(r#"{g}[3].groupName: Invalid value: "-bad""#),
            &format!("{g}[3].groupClusterSelector.claimSelector.matchExpressions[0].values: Required value"),
        ],
    );
    ok(&placement("  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 3}}\n"));
    ok(&placement("  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: \"100%\"}}\n"));
}
