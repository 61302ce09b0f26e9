//! Properties of runs on random strategies and random event orders:
//! - re-running a pass on its own applied output gives no new action and
//!   no status change (idempotent: the stored status says everything);
//! - no cluster is bound to the run's snapshot before every cluster of the
//!   earlier stages succeeded and their after-stage tasks (wait elapsed,
//!   approval given) and its own stage's before-stage approval are done;
//! - clusters of a stage start in order, at most `maxConcurrency` at once,
//!   each exactly once; nothing starts while stopped;
//! - driven to the end, every run succeeds with every cluster bound once
//!   and every unchosen cluster's binding deleted.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Value};

use fleet_api::staged::{MaxConcurrency, StageUpdatingStatus, STARTED, SUCCEEDED};

use super::testkit::*;
use super::*;
use crate::rollout::Readiness;

/// One stage of a random strategy.
#[derive(Debug, Clone)]
struct StageShape {
    clusters: usize,
    concurrency: Value,
    before_approval: bool,
    wait: Option<i64>,
    after_approval: bool,
}

/// Something that happens between passes.
#[derive(Debug, Clone)]
enum Event {
    Ready(usize),
    Fail(usize),
    ApproveAll,
    Advance(i64),
    Stop,
    Run,
}

fn stage_shape() -> impl Strategy<Value = StageShape> {
    let concurrency = prop_oneof![Just(json!(1)), Just(json!(2)), Just(json!("50%")), Just(json!("100%"))];
    (0usize..4, concurrency, any::<bool>(), prop::option::of(1i64..900), any::<bool>()).prop_map(
        |(clusters, concurrency, before_approval, wait, after_approval)| StageShape {
            clusters,
            concurrency,
            before_approval,
            wait,
            after_approval,
        },
    )
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => (0usize..16).prop_map(Event::Ready),
        1 => (0usize..16).prop_map(Event::Fail),
        2 => Just(Event::ApproveAll),
        2 => (1i64..1200).prop_map(Event::Advance),
        1 => Just(Event::Stop),
        1 => Just(Event::Run),
    ]
}

fn world(shapes: &[StageShape], unchosen: usize) -> World {
    let mut clusters = Vec::new();
    let stages: Vec<Value> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            for k in 0..s.clusters {
                clusters
                    .push(cluster(&format!("s{i}-c{k}"), &[("stage", &format!("s{i}")), ("order", &format!("{k}"))]));
            }
            let mut after = Vec::new();
            if let Some(secs) = s.wait {
                after.push(json!({"type": "TimedWait", "waitTime": format!("{secs}s")}));
            }
            if s.after_approval {
                after.push(json!({"type": "Approval"}));
            }
            let before = if s.before_approval { vec![json!({"type": "Approval"})] } else { vec![] };
            json!({"name": format!("s{i}"), "labelSelector": {"matchLabels": {"stage": format!("s{i}")}},
                "sortingLabelKey": "order", "maxConcurrency": s.concurrency,
                "beforeStageTasks": before, "afterStageTasks": after})
        })
        .collect();
    let mut w = World::new(clusters, strategy_json(json!(stages)));
    for k in 0..unchosen {
        w.bindings.push(RunBinding { state: "Unscheduled".into(), ..binding(&format!("gone-{k}")) });
    }
    w
}

fn is_true(conditions: &[fleet_api::conditions::Condition], type_: &str) -> bool {
    conditions.iter().any(|c| c.type_ == type_ && c.is_true())
}

fn all_succeeded(stage: &StageUpdatingStatus) -> bool {
    stage.clusters.iter().all(|c| is_true(&c.conditions, SUCCEEDED))
}

/// What the test remembers across passes, independently of the planner.
#[derive(Default)]
struct Memory {
    /// When each stage's last cluster was first seen succeeded.
    clusters_done_at: BTreeMap<usize, i64>,
    /// How often each cluster was bound.
    binds: BTreeMap<String, usize>,
}

/// Checks one applied pass against the rules; `before` is the world it was planned on.
fn check_pass(before: &World, plan: &RunPlan, after: &World, shapes: &[StageShape], memory: &mut Memory) {
    let stopped = before.spec.state.as_deref() == Some("Stop");
    let stages = &plan.status.stages_status;
    for action in &plan.actions {
        match action {
            RunAction::Bind { cluster, .. } => {
                assert!(!stopped, "bound {cluster} while stopped");
                *memory.binds.entry(cluster.clone()).or_default() += 1;
                assert_eq!(memory.binds[cluster], 1, "{cluster} bound twice");
                let i = stages.iter().position(|s| s.clusters.iter().any(|c| &c.cluster_name == cluster)).unwrap();
                for (j, earlier) in stages[..i].iter().enumerate() {
                    assert!(is_true(&earlier.conditions, SUCCEEDED), "{cluster} bound before stage {j} succeeded");
                    if let Some(secs) = shapes[j].wait {
                        let done = memory.clusters_done_at[&j];
                        assert!(before.now >= done + secs, "{cluster} bound before stage {j}'s wait ended");
                    }
                    if shapes[j].after_approval {
                        let name = format!("app-v1-after-s{j}");
                        assert!(before.approvals.iter().any(|a| a.name == name && a.approved), "{name} not approved");
                    }
                }
                if shapes[i].before_approval {
                    let name = format!("app-v1-before-s{i}");
                    assert!(before.approvals.iter().any(|a| a.name == name && a.approved), "{name} not approved");
                }
            }
            RunAction::CreateApprovalRequest { .. } | RunAction::DeleteBinding { .. } => {
                assert!(!stopped, "{action:?} while stopped")
            }
            _ => {}
        }
    }
    for (i, stage) in stages.iter().enumerate() {
        let started: Vec<bool> = stage.clusters.iter().map(|c| is_true(&c.conditions, STARTED)).collect();
        assert!(started.windows(2).all(|w| w[0] || !w[1]), "stage {i} started out of order: {started:?}");
        let limit = MaxConcurrency::parse(&serde_json::from_value(shapes[i].concurrency.clone()).unwrap())
            .unwrap()
            .of(stage.clusters.len());
        let updating = stage
            .clusters
            .iter()
            .filter(|c| is_true(&c.conditions, STARTED) && !is_true(&c.conditions, SUCCEEDED))
            .count();
        assert!(updating <= limit, "stage {i}: {updating} updating, limit {limit}");
        // An empty stage's clusters are done once the run reaches it (its
        // first condition); its tasks still run.
        let reached = !stage.clusters.is_empty() || !stage.conditions.is_empty();
        if all_succeeded(stage) && reached {
            memory.clusters_done_at.entry(i).or_insert(before.now);
        }
    }
    // Idempotence: the same pass on its own applied output does nothing.
    let again = after.plan();
    assert!(again.actions.is_empty(), "re-run produced {:?}", again.actions);
    assert_eq!(again.status, after.status, "re-run changed the status");
}

fn step_checked(w: &mut World, shapes: &[StageShape], memory: &mut Memory) {
    let before = w.clone();
    let plan = w.step();
    check_pass(&before, &plan, w, shapes, memory);
}

fn apply_event(w: &mut World, event: &Event) {
    let clusters: Vec<String> = w.clusters.iter().map(|c| c.name.clone()).collect();
    let in_sync = |w: &World, name: &str| {
        w.bindings.iter().any(|b| b.cluster == name && b.state == "Bound" && b.resource_snapshot == "app-0-snapshot")
    };
    match event {
        Event::Ready(k) | Event::Fail(k) if !clusters.is_empty() => {
            let name = &clusters[k % clusters.len()];
            if in_sync(w, name) {
                let readiness = if matches!(event, Event::Ready(_)) { Readiness::Ready } else { Readiness::Failed };
                for b in w.bindings.iter_mut().filter(|b| &b.cluster == name) {
                    b.readiness = readiness;
                }
            }
        }
        Event::ApproveAll => w.approvals.iter_mut().for_each(|a| a.approved = true),
        Event::Advance(secs) => w.now += secs,
        Event::Stop => w.spec.state = Some("Stop".into()),
        Event::Run => w.spec.state = Some("Run".into()),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn runs_are_idempotent_ordered_gated_and_finish(
        shapes in prop::collection::vec(stage_shape(), 1..4),
        unchosen in 0usize..3,
        events in prop::collection::vec(event(), 0..40),
    ) {
        let mut w = world(&shapes, unchosen);
        prop_assume!(!w.clusters.is_empty() || unchosen > 0);
        let mut memory = Memory::default();
        step_checked(&mut w, &shapes, &mut memory);
        for e in &events {
            apply_event(&mut w, e);
            step_checked(&mut w, &shapes, &mut memory);
        }
        // Drive to the end: resume, make everything available, approve, wait.
        w.spec.state = Some("Run".into());
        for _ in 0..200 {
            if w.succeeded() {
                break;
            }
            let bound = w.bound_to(0);
            for name in bound {
                w.ready(&name);
            }
            w.approvals.iter_mut().for_each(|a| a.approved = true);
            w.now += 900;
            step_checked(&mut w, &shapes, &mut memory);
        }
        prop_assert!(w.succeeded(), "the run did not finish: {:?}", w.status.conditions);
        let total: usize = shapes.iter().map(|s| s.clusters).sum();
        prop_assert_eq!(memory.binds.len(), total);
        prop_assert!(memory.binds.values().all(|n| *n == 1));
        prop_assert!(w.bindings.iter().all(|b| !b.cluster.starts_with("gone-")), "unchosen bindings deleted");
    }
}
