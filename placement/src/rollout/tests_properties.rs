//! Property tests: simulated rollouts never take the ready count down
//! further than `maxUnavailable` allows, respect the surge, and converge.

use fleet_api::binding::{STATE_BOUND, STATE_SCHEDULED, STATE_UNSCHEDULED};
use fleet_api::placement::IntOrString;
use proptest::prelude::*;

use super::tests::{b, policy, strategy};
use super::*;

/// One simulated world step.
#[derive(Debug, Clone)]
enum Event {
    /// The binding at this position (mod len) becomes ready if it was in
    /// progress or applying.
    BecomeReady(usize),
    /// The binding at this position gets its Works rewritten and waits for
    /// its agent's verdict, if it was in progress.
    StartApplying(usize),
    /// The binding at this position fails.
    Fail(usize),
    /// A new resource snapshot.
    NewSnapshot,
    /// The scheduler adds a cluster.
    AddCluster,
    /// The scheduler drops the binding at this position (if active).
    Unschedule(usize),
    /// A rollout pass.
    Pass,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => any::<usize>().prop_map(Event::BecomeReady),
        2 => any::<usize>().prop_map(Event::StartApplying),
        1 => any::<usize>().prop_map(Event::Fail),
        1 => Just(Event::NewSnapshot),
        1 => Just(Event::AddCluster),
        1 => any::<usize>().prop_map(Event::Unschedule),
        4 => Just(Event::Pass),
    ]
}

fn amount() -> impl Strategy<Value = IntOrString> {
    prop_oneof![(1i64..5).prop_map(IntOrString::Int), (1i64..=100).prop_map(|p| IntOrString::Str(format!("{p}%")))]
}

fn is_ready(b: &RolloutBinding) -> bool {
    b.state != STATE_SCHEDULED && b.readiness == Readiness::Ready
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn passes_respect_max_unavailable_and_max_surge(
        start in 1usize..10,
        pick_n in any::<bool>(),
        unavailable in amount(),
        surge in amount(),
        events in prop::collection::vec(event(), 1..80),
    ) {
        let s = strategy(unavailable, surge, 60);
        let mut snapshot = 0u32;
        let latest = |i: u32| format!("web-{i}-snapshot");
        let mut bindings: Vec<RolloutBinding> =
            (0..start).map(|i| b(&format!("c{i:02}"), STATE_SCHEDULED, "", Readiness::InProgress)).collect();
        let mut next = start;
        let p = if pick_n { policy("PickN", Some(start as i64), 0) } else { policy("PickAll", None, 0) };
        for e in events {
            let len = bindings.len().max(1);
            match e {
                Event::BecomeReady(i) => if let Some(x) = bindings.get_mut(i % len) {
                    if x.state != STATE_SCHEDULED && matches!(x.readiness, Readiness::InProgress | Readiness::Applying) {
                        x.readiness = Readiness::Ready;
                    }
                },
                Event::StartApplying(i) => if let Some(x) = bindings.get_mut(i % len) {
                    if x.state != STATE_SCHEDULED && x.readiness == Readiness::InProgress { x.readiness = Readiness::Applying; }
                },
                Event::Fail(i) => if let Some(x) = bindings.get_mut(i % len) {
                    if x.state != STATE_SCHEDULED { x.readiness = Readiness::Failed; }
                },
                Event::NewSnapshot => snapshot += 1,
                Event::AddCluster => {
                    bindings.push(b(&format!("c{next:02}"), STATE_SCHEDULED, "", Readiness::InProgress));
                    next += 1;
                }
                Event::Unschedule(i) => if let Some(x) = bindings.get_mut(i % len) {
                    if x.state != STATE_UNSCHEDULED { x.state = STATE_UNSCHEDULED.into(); }
                },
                Event::Pass => {
                    let latest_name = latest(snapshot);
                    let input = RolloutInput {
                        policy: &p, number_of_clusters: None, strategy: &s,
                        latest_resource_snapshot: &latest_name, bindings: &bindings, now: 0,
                    };
                    let limits = limits_of(&input);
                    let plan = plan_rollout(&input);
                    let ready_before = bindings.iter().filter(|x| is_ready(x)).count();
                    let counted_before = bindings.iter()
                        .filter(|x| x.state != STATE_SCHEDULED)
                        .filter(|x| !matches!(x.readiness, Readiness::Failed | Readiness::Applying))
                        .count();
                    let mut binds = 0usize;
                    for action in &plan.actions {
                        match action {
                            RolloutAction::Bind { binding, resource_snapshot } => {
                                binds += 1;
                                let x = bindings.iter_mut().find(|x| &x.name == binding).unwrap();
                                prop_assert_eq!(x.state.as_str(), STATE_SCHEDULED);
                                x.state = STATE_BOUND.into();
                                x.resource_snapshot = resource_snapshot.clone();
                                x.readiness = Readiness::InProgress;
                            }
                            RolloutAction::Update { binding, resource_snapshot } => {
                                let x = bindings.iter_mut().find(|x| &x.name == binding).unwrap();
                                prop_assert_eq!(x.state.as_str(), STATE_BOUND);
                                prop_assert_ne!(&x.resource_snapshot, resource_snapshot);
                                x.resource_snapshot = resource_snapshot.clone();
                                x.readiness = Readiness::InProgress;
                            }
                            RolloutAction::Delete { binding } => {
                                let x = bindings.iter().position(|x| &x.name == binding).unwrap();
                                prop_assert_eq!(bindings[x].state.as_str(), STATE_UNSCHEDULED);
                                bindings.remove(x);
                            }
                        }
                    }
                    let ready_after = bindings.iter().filter(|x| is_ready(x)).count();
                    let floor = limits.min_available;
                    let chosen = bindings.iter().filter(|x| x.state != STATE_UNSCHEDULED).count();
                    prop_assert!(floor + limits.max_unavailable >= limits.target.min(chosen));
                    // Never takes down more ready bindings than maxToRemove allows.
                    prop_assert!(ready_after >= ready_before.min(floor),
                        "ready {} → {} with floor {}", ready_before, ready_after, floor);
                    // Binds stay within N + maxSurge.
                    if binds > 0 {
                        prop_assert!(counted_before + binds <= limits.target + limits.max_surge);
                    }
                }
            }
        }
        // Converges: with everything becoming ready after each pass and no more changes,
        // every binding ends up Bound on the latest snapshot and ready.
        for x in &mut bindings {
            if matches!(x.readiness, Readiness::Failed | Readiness::Applying) { x.readiness = Readiness::InProgress; }
        }
        let latest_name = latest(snapshot);
        for _ in 0..100 {
            let input = RolloutInput {
                policy: &p, number_of_clusters: None, strategy: &s,
                latest_resource_snapshot: &latest_name, bindings: &bindings, now: 0,
            };
            for action in plan_rollout(&input).actions {
                match action {
                    RolloutAction::Bind { binding, resource_snapshot }
                    | RolloutAction::Update { binding, resource_snapshot } => {
                        let x = bindings.iter_mut().find(|x| x.name == binding).unwrap();
                        x.state = STATE_BOUND.into();
                        x.resource_snapshot = resource_snapshot;
                        x.readiness = Readiness::InProgress;
                    }
                    RolloutAction::Delete { binding } => bindings.retain(|x| x.name != binding),
                }
            }
            for x in &mut bindings {
                if x.state != STATE_SCHEDULED { x.readiness = Readiness::Ready; }
            }
        }
        let done = bindings.iter().filter(|x| x.state == STATE_BOUND && x.resource_snapshot == latest_name).count();
        let active = bindings.iter().filter(|x| x.state != STATE_UNSCHEDULED).count();
        prop_assert!(bindings.iter().all(|x| x.state != STATE_UNSCHEDULED), "unscheduled ones are gone");
        // PickN with more chosen than N can leave the surplus Scheduled; otherwise all are rolled out.
        if !pick_n { prop_assert_eq!(done, active); }
    }
}
