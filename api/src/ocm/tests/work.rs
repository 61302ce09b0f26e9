//! ManifestWork and ManifestWorkReplicaSet: what is refused.

use super::{has, ok, refused};

fn work(spec: &str) -> String {
    format!("apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {{name: w, namespace: cluster1}}\nspec:\n{spec}")
}

fn replicaset(spec: &str) -> String {
    format!("apiVersion: work.open-cluster-management.io/v1alpha1\nkind: ManifestWorkReplicaSet\nmetadata: {{name: w, namespace: ns1}}\nspec:\n{spec}")
}

#[test]
fn manifests_need_api_version_kind_and_metadata() {
    let e = refused(&work("  workload: {manifests: [{kind: ConfigMap, metadata: {}}, 5]}\n"));
    has(&e, &["spec.workload.manifests[0].apiVersion: Required value", "spec.workload.manifests[1]: Invalid value"]);
    has(&refused(&work("  workload: {manifest: []}\n")), &["spec.workload.manifest: Forbidden: unknown field"]);
}

#[test]
fn delete_option_rules() {
    let e = refused(&work("  deleteOption: {propagationPolicy: Delete, ttlSecondsAfterFinished: -1}\n"));
    has(
        &e,
        &[
            r#"spec.deleteOption.propagationPolicy: Unsupported value: "Delete": supported values: "Foreground", "Orphan", "SelectivelyOrphan""#,
            "spec.deleteOption.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
        ],
    );
    let e = refused(&work("  deleteOption: {propagationPolicy: Orphan, selectivelyOrphans: {orphaningRules: []}}\n"));
    has(
        &e,
        &["spec.deleteOption.selectivelyOrphans: Forbidden: only allowed when propagationPolicy is SelectivelyOrphan"],
    );
    let e = refused(&work("  deleteOption: {propagationPolicy: SelectivelyOrphan, selectivelyOrphans: {orphaningRules: [{group: apps}]}}\n"));
    has(
        &e,
        &[
            "spec.deleteOption.selectivelyOrphans.orphaningRules[0].resource: Required value: resource is required",
            "spec.deleteOption.selectivelyOrphans.orphaningRules[0].name: Required value",
        ],
    );
}

#[test]
fn manifest_config_rules() {
    let e = refused(&work(
        r#"  manifestConfigs:
    - resourceIdentifier: {resource: deployments, name: web, namespace: default}
      updateStrategy: {type: Replace, serverSideApply: {fieldManager: me, ignoreFields: [{condition: Sometimes}]}}
      feedbackRules: [{type: Everything}, {type: JSONPaths}]
      feedbackScrapeType: Push
      conditionRules: [{condition: Ready, type: CEL, celExpressions: ["true =="]}, {type: WellKnownConditions}]
"#,
    ));
    has(
        &e,
        &[
            r#"spec.manifestConfigs[0].updateStrategy.type: Unsupported value: "Replace": supported values: "Update", "CreateOnly", "ServerSideApply", "ReadOnly""#,
            r#"spec.manifestConfigs[0].updateStrategy.serverSideApply.fieldManager: Invalid value: "me": must start with "work-agent""#,
            r#"spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].condition: Unsupported value: "Sometimes""#,
            "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].jsonPaths: Required value: at least one JSON path (or JSON pointer, in jsonPointers) is required",
            r#"spec.manifestConfigs[0].feedbackRules[0].type: Unsupported value: "Everything""#,
            "spec.manifestConfigs[0].feedbackRules[1].jsonPaths: Required value: required when type is JSONPaths",
            r#"spec.manifestConfigs[0].feedbackScrapeType: Unsupported value: "Push""#,
            r#"spec.manifestConfigs[0].conditionRules[0].celExpressions[0]: Invalid value: "true ==": does not compile"#,
            "spec.manifestConfigs[0].conditionRules[1].condition: Required value",
        ],
    );
    let e = refused(&work("  manifestConfigs: [{updateStrategy: {type: Update}}]\n"));
    has(&e, &["spec.manifestConfigs[0].resourceIdentifier.resource: Required value"]);
}

#[test]
fn executor_rules() {
    ok(&work("  executor: {subject: {type: ServiceAccount, serviceAccount: {namespace: default, name: deployer}}}\n"));
    let e = refused(&work("  executor: {subject: {type: User}}\n"));
    has(
        &e,
        &[
            r#"spec.executor.subject.type: Unsupported value: "User": supported values: "ServiceAccount""#,
            "spec.executor.subject.serviceAccount: Required value",
        ],
    );
    let e = refused(&work(
        "  executor: {subject: {type: ServiceAccount, serviceAccount: {namespace: Bad_NS, name: \"\"}}}\n",
    ));
    has(
        &e,
        &[
            r#"spec.executor.subject.serviceAccount.namespace: Invalid value: "Bad_NS""#,
            "serviceAccount.name: Required value",
        ],
    );
}

#[test]
fn replicaset_references_and_policies() {
    let e = refused(&replicaset("  placementRefs: []\n  cascadeDeletionPolicy: Delete\n"));
    has(
        &e,
        &[
            "spec.placementRefs: Required value: at least one placement reference is required",
            r#"spec.cascadeDeletionPolicy: Unsupported value: "Delete": supported values: "Background", "Foreground", "Orphan""#,
        ],
    );
    let e = refused(&replicaset("  placementRefs: [{name: a}, {name: a}, {name: \"\"}]\n"));
    has(&e, &[r#"spec.placementRefs[1].name: Duplicate value: "a""#, "spec.placementRefs[2].name: Required value"]);
    // The template is validated under its own path.
    let e =
        refused(&replicaset("  placementRefs: [{name: a}]\n  manifestWorkTemplate: {workload: {manifests: [{}]}}\n"));
    has(&e, &["spec.manifestWorkTemplate.workload.manifests[0].apiVersion: Required value"]);
}

#[test]
fn replicaset_rollout_rules() {
    let refs = |strategy: &str| replicaset(&format!("  placementRefs: [{{name: p, rolloutStrategy: {strategy}}}]\n"));
    let base = "spec.placementRefs[0].rolloutStrategy";
    let e = refused(&refs("{type: Canary}"));
    has(
        &e,
        &[&format!(
            r#"{base}.type: Unsupported value: "Canary": supported values: "All", "Progressive", "ProgressivePerGroup""#
        )],
    );
    let e = refused(&refs("{type: All, progressive: {maxConcurrency: 1}}"));
    has(&e, &[&format!("{base}.progressive: Forbidden: only allowed when type is Progressive")]);
    let e = refused(&refs("{type: All, all: {maxConcurrency: 1, mandatoryDecisionGroups: [{groupIndex: 0}]}}"));
    has(
        &e,
        &[
            &format!("{base}.all.maxConcurrency: Forbidden: not used by rollout type All"),
            &format!("{base}.all.mandatoryDecisionGroups: Forbidden: not used by rollout type All"),
        ],
    );
    let e = refused(&refs(
        "{type: Progressive, progressive: {maxConcurrency: 101%, maxFailures: -1, minSuccessTime: 5d, progressDeadline: soon, mandatoryDecisionGroups: [{}, {groupIndex: -1}]}}",
    ));
    has(&e, &[
        &format!(r#"{base}.progressive.maxConcurrency: Invalid value: "101%": must be a percentage of at most 100%"#),
        &format!("{base}.progressive.maxFailures: Invalid value: -1: must be greater than or equal to 0"),
        &format!(r#"{base}.progressive.minSuccessTime: Invalid value: "5d": must be a duration"#),
        &format!(r#"{base}.progressive.progressDeadline: Invalid value: "soon": must be "None" or a duration"#),
        &format!("{base}.progressive.mandatoryDecisionGroups[0]: Required value: a groupName or a groupIndex is required"),
        &format!("{base}.progressive.mandatoryDecisionGroups[1].groupIndex: Invalid value: -1"),
    ]);
    let e = refused(&refs("{type: ProgressivePerGroup, progressivePerGroup: {maxConcurrency: 2}}"));
    has(
        &e,
        &[&format!(
            "{base}.progressivePerGroup.maxConcurrency: Forbidden: not used by rollout type ProgressivePerGroup"
        )],
    );
    // Percentages and counts within range, and 0, are fine.
    ok(&refs("{type: Progressive, progressive: {maxConcurrency: 0, maxFailures: 100%}}"));
    ok(&refs("{type: ProgressivePerGroup, progressivePerGroup: {maxFailures: 0%, minSuccessTime: 1h30m}}"));
}

#[test]
fn ignore_fields_take_plain_json_paths_and_pointers() {
    let with = |ignore: &str| {
        work(&format!(
            "  manifestConfigs:\n    - resourceIdentifier: {{resource: configmaps, name: c, namespace: app}}\n      updateStrategy: {{type: ServerSideApply, serverSideApply: {{ignoreFields: {ignore}}}}}\n"
        ))
    };
    has(
        &refused(&with(r#"[{jsonPaths: [".spec.containers[*].image"], jsonPointers: ["spec/replicas", "/a~2"]}]"#)),
        &[
            r#"ignoreFields[0].jsonPaths[0]: Invalid value: ".spec.containers[*].image": only plain paths are supported"#,
            r#"ignoreFields[0].jsonPointers[0]: Invalid value: "spec/replicas": a JSON pointer starts with '/'"#,
            r#"ignoreFields[0].jsonPointers[1]: Invalid value: "/a~2""#,
        ],
    );
    ok(&with(
        r#"[{condition: OnSpokeChange, jsonPointers: [/spec/replicas]}, {jsonPaths: [".metadata.annotations['a/b']"]}]"#,
    ));
}

#[test]
fn feedback_json_paths_are_plain_named_once_and_bounded() {
    let with = |paths: &str| {
        work(&format!(
            "  manifestConfigs:\n    - resourceIdentifier: {{group: apps, resource: deployments, name: web, namespace: app}}\n      feedbackRules: [{{type: JSONPaths, jsonPaths: {paths}}}]\n"
        ))
    };
    has(
        &refused(&with(r#"[{name: a, path: ".status.items[*].x"}, {name: a, path: ".status.replicas"}]"#)),
        &[
            r#"feedbackRules[0].jsonPaths[0].path: Invalid value: ".status.items[*].x": wildcards"#,
            r#"feedbackRules[0].jsonPaths[1].name: Duplicate value: "a""#,
        ],
    );
    let many: Vec<String> = (0..33).map(|i| format!("{{name: v{i}, path: .status.replicas}}")).collect();
    has(
        &refused(&with(&format!("[{}]", many.join(", ")))),
        &["feedbackRules[0].jsonPaths: Too many: 33: must have at most 32 items"],
    );
    ok(&with(r#"[{name: ready, path: '.status.conditions[?(@.type=="Available")].status'}]"#));
}
