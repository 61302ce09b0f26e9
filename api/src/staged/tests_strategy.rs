//! Strategy validation: every row of the strategy table, the spec's example.

use serde_json::{json, Value};

use super::strategy::wait_time_millis;
use super::*;
use crate::testing::{err, has, object};

fn strategy(stages: Value) -> Object {
    object(CLUSTER_STAGED_UPDATE_STRATEGY, "three-stage", json!({ "stages": stages }))
}

/// The three documents of docs/spec/staged-updates.md, verbatim.
const SPEC_EXAMPLE: &str = r#"apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: app}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: app}]
  policy: {placementType: PickAll}
  strategy: {type: External}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata: {name: three-stage}
spec:
  stages:
    - name: staging
      labelSelector: {matchLabels: {environment: staging}}
      afterStageTasks: [{type: TimedWait, waitTime: 1h}]
    - name: canary
      labelSelector: {matchLabels: {environment: canary}}
      sortingLabelKey: order
      afterStageTasks: [{type: Approval}]
    - name: production
      labelSelector: {matchLabels: {environment: production}}
      sortingLabelKey: order
      maxConcurrency: 2
      beforeStageTasks: [{type: Approval}]
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: app-v1}
spec:
  placementName: app
  resourceSnapshotIndex: "0"
  stagedRolloutStrategyName: three-stage
  state: Run
"#;

#[test]
fn spec_example_validates_unchanged() {
    let mut objects = crate::parse::parse_documents("staged-updates.md", SPEC_EXAMPLE).unwrap();
    assert_eq!(objects.len(), 3);
    for o in &mut objects {
        crate::typed::prepare(o).unwrap_or_else(|e| panic!("{e}"));
    }
    let strategy = strategy_spec_of(&objects[1]);
    assert_eq!(strategy.stages.len(), 3);
    assert_eq!(strategy.stages[0].timed_wait_seconds(), Some(3600));
    assert_eq!(strategy.stages[0].max_concurrency(), MaxConcurrency::Count(1), "defaulted");
    assert_eq!(strategy.stages[2].max_concurrency(), MaxConcurrency::Count(2));
    assert!(strategy.stages[1].has_approval(false) && strategy.stages[2].has_approval(true));
    let run = run_spec_of(&objects[2]);
    assert_eq!(run.resource_snapshot_index(), Some(0));
    assert_eq!(run.state(), STATE_RUN);
}

#[test]
fn stages_count() {
    has(&err(strategy(json!([]))), "spec.stages: Required value");
    has(&err(object(CLUSTER_STAGED_UPDATE_STRATEGY, "s", json!({}))), "spec.stages: Required value");
    let many: Vec<Value> = (0..32).map(|i| json!({"name": format!("s{i}")})).collect();
    has(&err(strategy(json!(many))), "spec.stages: Too many: 32: must have at most 31 items");
    let ok: Vec<Value> = (0..31).map(|i| json!({"name": format!("s{i}")})).collect();
    crate::typed::prepare(&mut strategy(json!(ok))).unwrap();
}

#[test]
fn stage_names() {
    let e = err(strategy(json!([{"name": "pre-prod"}])));
    has(&e, r#"spec.stages[0].name: Invalid value: "pre-prod": must match ^[a-z0-9]+$ (at most 63 characters)"#);
    let e = err(strategy(json!([{"name": "a".repeat(64)}])));
    has(&e, "spec.stages[0].name: Invalid value:");
    crate::typed::prepare(&mut strategy(json!([{"name": "a".repeat(63)}]))).unwrap();
    let e = err(strategy(json!([{"name": "canary"}, {"name": "prod"}, {"name": "canary"}])));
    has(&e, r#"spec.stages[2].name: Duplicate value: "canary""#);
    has(&err(strategy(json!([{"labelSelector": {}}]))), "spec.stages[0].name: Required value");
}

#[test]
fn selectors_and_sorting_key_syntax() {
    let e = err(strategy(
        json!([{"name": "a", "labelSelector": {"matchLabels": {"bad key": "x"}}, "sortingLabelKey": "no way"}]),
    ));
    has(&e, r#"spec.stages[0].labelSelector.matchLabels: Invalid value: "bad key""#);
    has(&e, r#"spec.stages[0].sortingLabelKey: Invalid value: "no way""#);
}

#[test]
fn max_concurrency_values() {
    let e = err(strategy(json!([{"name": "a", "maxConcurrency": 0}])));
    has(&e, "spec.stages[0].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1");
    for bad in ["0%", "101%", "05%", "3", "%", "50"] {
        let e = err(strategy(json!([{"name": "a", "maxConcurrency": bad}])));
        has(&e, &format!(r#"spec.stages[0].maxConcurrency: Invalid value: "{bad}": must match ^(100|[1-9][0-9]?)%$"#));
    }
    for good in [json!(1), json!(7), json!("1%"), json!("50%"), json!("100%")] {
        crate::typed::prepare(&mut strategy(json!([{"name": "a", "maxConcurrency": good}]))).unwrap();
    }
}

#[test]
fn max_concurrency_arithmetic_rounds_down_at_least_one() {
    let p = |v: Value| MaxConcurrency::parse(&serde_json::from_value(v).unwrap()).unwrap();
    assert_eq!(p(json!(2)).of(3), 2);
    assert_eq!(p(json!(5)).of(3), 5, "more than the stage has is fine");
    assert_eq!(p(json!("50%")).of(3), 1, "1.5 rounds down");
    assert_eq!(p(json!("50%")).of(4), 2);
    assert_eq!(p(json!("10%")).of(5), 1, "0.5 rounds down to 0, then at least 1");
    assert_eq!(p(json!("100%")).of(7), 7);
    assert_eq!(p(json!("34%")).of(9), 3);
    assert_eq!(p(json!("1%")).of(0), 1);
}

#[test]
fn before_stage_tasks() {
    let e = err(strategy(json!([{"name": "a", "beforeStageTasks": [{"type": "Approval"}, {"type": "Approval"}]}])));
    has(&e, "spec.stages[0].beforeStageTasks: Too many: 2: must have at most 1 items");
    let e = err(strategy(json!([{"name": "a", "beforeStageTasks": [{"type": "TimedWait", "waitTime": "1h"}]}])));
    has(
        &e,
        r#"spec.stages[0].beforeStageTasks[0].type: Unsupported value: "TimedWait": BeforeStageTaskType cannot be TimedWait"#,
    );
    let e = err(strategy(json!([{"name": "a", "beforeStageTasks": [{"type": "Manual"}]}])));
    has(&e, r#"spec.stages[0].beforeStageTasks[0].type: Unsupported value: "Manual": supported values: "Approval""#);
}

#[test]
fn after_stage_tasks() {
    let three = json!([{"type": "Approval"}, {"type": "TimedWait", "waitTime": "1m"}, {"type": "Approval"}]);
    let e = err(strategy(json!([{"name": "a", "afterStageTasks": three}])));
    has(&e, "spec.stages[0].afterStageTasks: Too many: 3: must have at most 2 items");
    let e = err(strategy(json!([{"name": "a", "afterStageTasks": [{"type": "Approval"}, {"type": "Approval"}]}])));
    has(&e, r#"spec.stages[0].afterStageTasks[1].type: Duplicate value: "Approval""#);
    let both = json!([{"type": "TimedWait", "waitTime": "1h30m"}, {"type": "Approval"}]);
    crate::typed::prepare(&mut strategy(json!([{"name": "a", "afterStageTasks": both}]))).unwrap();
    has(
        &err(strategy(json!([{"name": "a", "afterStageTasks": [{}]}]))),
        "spec.stages[0].afterStageTasks[0].type: Required value",
    );
}

#[test]
fn wait_times() {
    let e = err(strategy(json!([{"name": "a", "afterStageTasks": [{"type": "TimedWait"}]}])));
    has(&e, "spec.stages[0].afterStageTasks[0].waitTime: Required value: AfterStageTaskType is TimedWait, waitTime is required");
    let e = err(strategy(json!([{"name": "a", "afterStageTasks": [{"type": "Approval", "waitTime": "1h"}]}])));
    has(&e, "spec.stages[0].afterStageTasks[0].waitTime: Forbidden: AfterStageTaskType is Approval, waitTime is not allowed");
    let e = err(strategy(json!([{"name": "a", "beforeStageTasks": [{"type": "Approval", "waitTime": "1h"}]}])));
    has(&e, "spec.stages[0].beforeStageTasks[0].waitTime: Forbidden: AfterStageTaskType is Approval, waitTime is not allowed");
    let e = err(strategy(json!([{"name": "a", "afterStageTasks": [{"type": "TimedWait", "waitTime": "1d"}]}])));
    has(&e, r#"spec.stages[0].afterStageTasks[0].waitTime: Invalid value: "1d": only h, m, s"#);
    let e = err(strategy(json!([{"name": "a", "afterStageTasks": [{"type": "TimedWait", "waitTime": "0s"}]}])));
    has(&e, r#"spec.stages[0].afterStageTasks[0].waitTime: Invalid value: "0s": waitTime must be greater than 0"#);
}

#[test]
fn wait_time_syntax() {
    assert_eq!(wait_time_millis("1h"), Ok(3_600_000));
    assert_eq!(wait_time_millis("1h30m"), Ok(5_400_000));
    assert_eq!(wait_time_millis("0.5h"), Ok(1_800_000));
    assert_eq!(wait_time_millis("90s"), Ok(90_000));
    assert_eq!(wait_time_millis("1.5s"), Ok(1_500));
    assert_eq!(wait_time_millis("0.05h"), Ok(180_000));
    assert_eq!(wait_time_millis("2m3s"), Ok(123_000));
    for bad in ["", "1", "h", "1.h", "1d", "1h-", "-1h", " 1h", "1H", "1ms"] {
        assert!(wait_time_millis(bad).is_err(), "{bad}");
    }
    assert!(wait_time_millis(&format!("{}h", "9".repeat(30))).is_err());
    let stage = StageConfig {
        after_stage_tasks: vec![StageTask { type_: TASK_TIMED_WAIT.into(), wait_time: Some("1.5s".into()) }],
        ..Default::default()
    };
    assert_eq!(stage.timed_wait_seconds(), Some(2), "a wait ends on the next whole second");
}

#[test]
fn unknown_fields_are_refused() {
    let e = err(strategy(json!([{"name": "a", "maxConcurency": 2}])));
    has(&e, "spec.stages[0].maxConcurency: Forbidden: unknown field `maxConcurency`");
    let e =
        err(strategy(json!([{"name": "a", "afterStageTasks": [{"type": "TimedWait", "waitTime": "1h", "wait": 1}]}])));
    has(&e, "unknown field `wait`");
}

#[test]
fn namespaced_strategy_prepares_the_same() {
    let mut o = object(STAGED_UPDATE_STRATEGY, "s", json!({"stages": [{"name": "a"}]}));
    crate::typed::prepare(&mut o).unwrap();
    assert_eq!(o.spec().unwrap()["stages"][0]["maxConcurrency"], 1);
    has(
        &err(object(STAGED_UPDATE_STRATEGY, "s", json!({"stages": [{"name": "A"}]}))),
        "spec.stages[0].name: Invalid value",
    );
}
