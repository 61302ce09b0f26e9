use fleet_api::conditions::find;
use fleet_api::conditions::Condition;
use fleet_api::ocm::manifestwork::{self, CONDITION_APPLIED, CONDITION_AVAILABLE, CONDITION_PROGRESSING};
use fleet_api::work::{self, ManifestCondition, WorkResourceIdentifier, WorkStatus};
use fleet_api::Object;
use serde_json::{json, Value};

use super::*;

fn cm(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "app"}, "data": {"v": value}})
}

fn mw(spec: Value, generation: i64) -> Object {
    let mut o: Object = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "web", "namespace": "east", "uid": "u1", "generation": generation},
        "spec": spec
    }))
    .unwrap();
    manifestwork::prepare(&mut o).unwrap();
    o
}

fn config(name: &str, strategy: Value) -> Value {
    json!({"resourceIdentifier": {"resource": "configmaps", "name": name, "namespace": "app"}, "updateStrategy": strategy})
}

#[test]
fn manifests_go_to_one_work_per_class_in_the_cluster_namespace() {
    let w = mw(
        json!({"workload": {"manifests": [cm("a", "1"), cm("b", "1"), cm("c", "1"), cm("d", "1")]},
            "deleteOption": {"propagationPolicy": "SelectivelyOrphan",
                "selectivelyOrphans": {"orphaningRules": [{"resource": "configmaps", "name": "d", "namespace": "app"}]}},
            "manifestConfigs": [config("b", json!({"type": "CreateOnly"})), config("c", json!({"type": "ReadOnly"}))]}),
        1,
    );
    let works = mirror_works(&w, &[]);
    let names: Vec<&str> = works.iter().map(|w| w.metadata.name.as_str()).collect();
    assert_eq!(names, ["mw.web", "mw.web.create-only", "mw.web.orphan", "mw.web.read-only"]);
    for work in &works {
        assert_eq!(work.metadata.namespace.as_deref(), Some("fleet-member-east"));
        assert_eq!(work.metadata.labels[MANIFESTWORK_LABEL], "web");
        assert_eq!(work.metadata.owner_references[0].uid, "u1");
    }
    let spec = |i: usize| work::spec_of(&works[i]);
    assert_eq!(spec(0).workload.manifests, vec![cm("a", "1")]);
    let create_only = spec(1).apply_strategy.unwrap();
    assert_eq!(create_only.when_to_apply.as_deref(), Some("IfNotDrifted"));
    assert_eq!(create_only.when_to_take_over.as_deref(), Some("Never"));
    assert!(spec(2).abandons_on_delete());
    assert_eq!(spec(3).apply_strategy.unwrap().apply_type(), "ReportDiff");
}

#[test]
fn a_create_only_manifest_keeps_its_first_content() {
    let spec = |value: &str| {
        json!({"workload": {"manifests": [cm("a", value), cm("b", value)]},
            "manifestConfigs": [config("b", json!({"type": "CreateOnly"}))]})
    };
    let first = mirror_works(&mw(spec("1"), 1), &[]);
    let second = mirror_works(&mw(spec("2"), 2), &first);
    assert_eq!(work::spec_of(&second[0]).workload.manifests, vec![cm("a", "2")], "Update follows the template");
    assert_eq!(work::spec_of(&second[1]).workload.manifests, vec![cm("b", "1")], "CreateOnly keeps the first");
}

fn reported(work: &mut Object, conditions: &[(&str, bool, &str)]) {
    let c: Vec<Condition> =
        conditions.iter().map(|(t, s, r)| Condition::new(t, *s, r, "").observing(work.metadata.generation)).collect();
    let status = WorkStatus {
        conditions: vec![Condition::new(work::CONDITION_APPLIED, true, "x", "").observing(work.metadata.generation)],
        manifest_conditions: vec![ManifestCondition {
            identifier: WorkResourceIdentifier { ordinal: 0, ..Default::default() },
            conditions: c,
            ..Default::default()
        }],
    };
    work::set_status(work, &status);
}

#[test]
fn status_folds_current_reports_under_the_manifestwork_ordinals() {
    let w = mw(
        json!({"workload": {"manifests": [cm("a", "1"), cm("b", "1")]},
            "manifestConfigs": [config("b", json!({"type": "CreateOnly"}))]}),
        3,
    );
    let mut works = mirror_works(&w, &[]);
    for work in &mut works {
        work.metadata.generation = 1;
    }
    // Nothing reported yet: progressing, nothing applied claimed.
    let status = fold_status(&w, &works, "t1");
    assert!(find(&status.conditions, CONDITION_PROGRESSING).unwrap().is_true());
    assert!(find(&status.conditions, CONDITION_APPLIED).is_none());

    reported(&mut works[0], &[(CONDITION_APPLIED, true, "ManifestApplied"), (CONDITION_AVAILABLE, true, "ok")]);
    reported(&mut works[1], &[(CONDITION_APPLIED, false, "FoundDrifts"), (CONDITION_AVAILABLE, true, "ok")]);
    let status = fold_status(&w, &works, "t2");
    let applied = find(&status.conditions, CONDITION_APPLIED).unwrap();
    assert!(applied.is_true(), "{applied:?}");
    assert_eq!(applied.observed_generation, Some(3));
    assert!(!find(&status.conditions, CONDITION_PROGRESSING).unwrap().is_true());
    let manifests = &status.resource_status.manifests;
    assert_eq!(manifests.len(), 2);
    assert_eq!((manifests[1].resource_meta.ordinal, manifests[1].resource_meta.name.as_str()), (1, "b"));
    assert_eq!(find(&manifests[1].conditions, CONDITION_APPLIED).unwrap().reason, "CreateOnly");

    reported(&mut works[0], &[(CONDITION_APPLIED, false, "NotTakenOver")]);
    let status = fold_status(&w, &works, "t3");
    assert!(!find(&status.conditions, CONDITION_APPLIED).unwrap().is_true());
    assert!(find(&status.conditions, "Degraded").unwrap().is_true());
}

#[test]
fn a_read_only_manifest_reads_back_from_the_diff_report() {
    let w = mw(
        json!({"workload": {"manifests": [cm("a", "1")]},
            "manifestConfigs": [config("a", json!({"type": "ReadOnly"}))]}),
        1,
    );
    let mut works = mirror_works(&w, &[]);
    works[0].metadata.generation = 1;
    let diff =
        |status: bool, reason: &str| Condition::new(work::CONDITION_DIFF_REPORTED, status, reason, "").observing(1);
    let status = WorkStatus {
        conditions: vec![diff(true, "AllManifestsDiffReported")],
        manifest_conditions: vec![ManifestCondition {
            identifier: WorkResourceIdentifier { ordinal: 0, ..Default::default() },
            conditions: vec![diff(true, "FoundDiff")],
            ..Default::default()
        }],
    };
    work::set_status(&mut works[0], &status);
    let folded = fold_status(&w, &works, "t1");
    let applied = find(&folded.conditions, CONDITION_APPLIED).unwrap();
    assert!(applied.is_true() && find(&folded.conditions, CONDITION_AVAILABLE).unwrap().is_true(), "{folded:?}");
    let manifest = &folded.resource_status.manifests[0].conditions;
    assert_eq!(find(manifest, CONDITION_APPLIED).unwrap().reason, "FoundDiff");
}

#[test]
fn ignore_fields_go_with_their_manifests_as_pointers_one_work_per_distinct_set() {
    let ssa = |ignore: Value| json!({"type": "ServerSideApply", "serverSideApply": {"ignoreFields": ignore}});
    let size = json!([{"jsonPaths": [".data.size", ".metadata.annotations['example.com/x']"]}]);
    let w = mw(
        json!({"workload": {"manifests": [cm("a", "1"), cm("b", "1"), cm("c", "1"), cm("d", "1")]},
            "manifestConfigs": [
                config("a", ssa(size.clone())),
                config("b", ssa(size)),
                config("c", ssa(json!([{"condition": "OnSpokeChange", "jsonPointers": ["/data/v"]}]))),
                config("d", json!({"type": "ServerSideApply"}))]}),
        1,
    );
    let works = mirror_works(&w, &[]);
    let names: Vec<&str> = works.iter().map(|w| w.metadata.name.as_str()).collect();
    assert_eq!(
        names,
        ["mw.web.server-side-apply", "mw.web.server-side-apply.options-1", "mw.web.server-side-apply.options-2"]
    );
    let spec = work::spec_of(&works[1]);
    assert_eq!(spec.workload.manifests.len(), 2, "a and b share their set");
    assert_eq!(spec.ignore_fields[0].condition, "OnSpokePresent", "the default condition");
    assert_eq!(spec.ignore_fields[0].json_pointers, ["/data/size", "/metadata/annotations/example.com~1x"]);
    let changed = work::spec_of(&works[2]);
    assert_eq!(
        (changed.ignore_fields[0].condition.as_str(), changed.ignore_fields[0].json_pointers[0].as_str()),
        ("OnSpokeChange", "/data/v")
    );
    assert!(work::spec_of(&works[0]).ignore_fields.is_empty());
}

#[test]
fn condition_rules_mirror_the_status_and_complete_the_work() {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "app"},
        "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "busybox"}], "restartPolicy": "Never"}}}});
    let rule = json!({"resourceIdentifier": {"group": "batch", "resource": "jobs", "name": "migrate", "namespace": "app"},
        "conditionRules": [{"condition": "Complete", "type": "WellKnownConditions"}]});
    let w = mw(json!({"workload": {"manifests": [cm("a", "1"), job]}, "manifestConfigs": [rule]}), 1);
    let mut works = mirror_works(&w, &[]);
    let names: Vec<&str> = works.iter().map(|w| w.metadata.name.as_str()).collect();
    assert_eq!(names, ["mw.web", "mw.web.status"]);
    assert!(work::spec_of(&works[1]).report_back_strategy.is_some_and(|r| r.mirrors()), "the Job's status comes back");
    assert!(work::spec_of(&works[0]).report_back_strategy.is_none());

    let mirrored = |work: &mut Object, job_status: Value| {
        let generation = work.metadata.generation;
        let ok = |t: &str| Condition::new(t, true, "ok", "").observing(generation);
        let status = WorkStatus {
            conditions: vec![ok(work::CONDITION_APPLIED)],
            manifest_conditions: vec![ManifestCondition {
                identifier: WorkResourceIdentifier { ordinal: 0, ..Default::default() },
                conditions: vec![ok(CONDITION_APPLIED), ok(CONDITION_AVAILABLE)],
                back_reported_status: Some(work::BackReportedStatus {
                    observed_status: json!({"apiVersion": "batch/v1", "kind": "Job", "status": job_status}),
                    observation_time: "2026-11-27T10:00:00Z".into(),
                }),
                ..Default::default()
            }],
        };
        work::set_status(work, &status);
    };
    for work in &mut works {
        work.metadata.generation = 1;
    }
    mirrored(&mut works[0], json!({}));
    mirrored(&mut works[1], json!({"active": 1}));
    let status = fold_status(&w, &works, "2026-11-27T10:00:01Z");
    let job_conditions = &status.resource_status.manifests[1].conditions;
    let complete = find(job_conditions, "Complete").unwrap();
    assert_eq!((complete.status.as_str(), complete.reason.as_str()), ("False", "ConditionRuleEvaluated"));
    assert!(find(&status.resource_status.manifests[0].conditions, "Complete").is_none(), "no rule, no condition");
    assert!(!find(&status.conditions, "Complete").unwrap().is_true());

    let mut done = w.clone();
    manifestwork::set_status(&mut done, &status);
    mirrored(&mut works[1], json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}));
    let status = fold_status(&done, &works, "2026-11-27T10:00:30Z");
    let work_complete = find(&status.conditions, "Complete").unwrap();
    assert_eq!((work_complete.status.as_str(), work_complete.reason.as_str()), ("True", "ConditionRulesAggregated"));
    assert_eq!(work_complete.last_transition_time, "2026-11-27T10:00:30Z", "the ttl counts from here");
    assert!(find(&status.resource_status.manifests[1].conditions, "Complete").unwrap().is_true());
}

#[test]
fn feedback_rules_reach_the_work_and_its_values_the_manifestwork() {
    let rules = json!([{"type": "WellKnownStatus"}]);
    let w = mw(
        json!({"workload": {"manifests": [cm("a", "1")]},
            "manifestConfigs": [{"resourceIdentifier": {"resource": "configmaps", "name": "a", "namespace": "app"},
                "feedbackRules": rules}]}),
        1,
    );
    let mut works = mirror_works(&w, &[]);
    assert_eq!(works[0].metadata.name, "mw.web.options-1");
    assert_eq!(work::spec_of(&works[0]).feedback_rules[0].type_, "WellKnownStatus");
    works[0].metadata.generation = 1;
    let value = manifestwork::FeedbackValue {
        name: "Replicas".into(),
        field_value: manifestwork::FieldValue { type_: "Integer".into(), integer: Some(3), ..Default::default() },
    };
    let ok = |t: &str| Condition::new(t, true, "ok", "").observing(1);
    let status = WorkStatus {
        conditions: vec![ok(work::CONDITION_APPLIED)],
        manifest_conditions: vec![ManifestCondition {
            identifier: WorkResourceIdentifier { ordinal: 0, ..Default::default() },
            conditions: vec![ok(CONDITION_APPLIED), ok(CONDITION_AVAILABLE), ok("StatusFeedbackSynced")],
            status_feedback: Some(work::WorkStatusFeedback {
                values: vec![value.clone()],
                observation_time: "t".into(),
            }),
            ..Default::default()
        }],
    };
    work::set_status(&mut works[0], &status);
    let folded = fold_status(&w, &works, "t1");
    let manifest = &folded.resource_status.manifests[0];
    assert_eq!(manifest.status_feedback.values, vec![value]);
    assert!(find(&manifest.conditions, "StatusFeedbackSynced").unwrap().is_true());
}

#[test]
fn every_work_carries_the_executor() {
    let w = mw(
        json!({"workload": {"manifests": [cm("a", "1"), cm("b", "1")]},
            "executor": {"subject": {"type": "ServiceAccount", "serviceAccount": {"namespace": "app", "name": "deployer"}}},
            "manifestConfigs": [config("b", json!({"type": "CreateOnly"}))]}),
        1,
    );
    let works = mirror_works(&w, &[]);
    assert_eq!(works.len(), 2);
    for work in &works {
        let executor = work::spec_of(work).executor.expect("the executor");
        let sa = executor.subject.service_account.expect("a service account");
        assert_eq!(
            (executor.subject.type_.as_str(), sa.namespace.as_str(), sa.name.as_str()),
            ("ServiceAccount", "app", "deployer")
        );
    }
    let without = mw(json!({"workload": {"manifests": [cm("a", "1")]}}), 1);
    assert!(work::spec_of(&mirror_works(&without, &[])[0]).executor.is_none());
}
