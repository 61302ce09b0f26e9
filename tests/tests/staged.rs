//! Staged updates on a real trio with real agents (docs/spec/staged-updates.md): the
//! worked example with waits of seconds, watched on the members — nothing
//! reaches a later stage before its gate opens, in the spec's order —,
//! approvals through a follower, `describe` and `rollout status` of the
//! run; a leader killed while a timed wait runs and again while a stage is
//! half done; a cluster that matches no stage; rollback to an older index.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleet_api::staged::{run_status_of, UpdateRunStatus};
use fleet_tests::fleet::{apply_yaml, fleet, list, member_yaml, Member, WAIT};
use fleet_tests::members::{configmap_value, Arrivals};
use fleet_tests::objects::get;
use fleet_tests::{eventually, Hub};

const APP: &str = include_str!("../../deploy/examples/staged/app.yaml");
const STRATEGY: &str = include_str!("../../deploy/examples/staged/strategy.yaml");
const RUN: &str = include_str!("../../deploy/examples/staged/run.yaml");

const STG_1: Member = Member { name: "stg-1", labels: &[("environment", "staging")], nodes: 1, cpu: 2 };
const CAN_1: Member = Member { name: "can-1", labels: &[("environment", "canary"), ("order", "2")], nodes: 1, cpu: 2 };
const CAN_2: Member = Member { name: "can-2", labels: &[("environment", "canary"), ("order", "1")], nodes: 1, cpu: 2 };
const PROD_A: Member =
    Member { name: "prod-a", labels: &[("environment", "production"), ("order", "1")], nodes: 1, cpu: 2 };
const PROD_B: Member =
    Member { name: "prod-b", labels: &[("environment", "production"), ("order", "1")], nodes: 1, cpu: 2 };
const PROD_C: Member =
    Member { name: "prod-c", labels: &[("environment", "production"), ("order", "3")], nodes: 1, cpu: 2 };

/// The staging wait of the test (the example says 1h).
const WAIT_SECONDS: u64 = 5;

/// The run's status as stored.
async fn run_status(hub: &Hub, kind: &str, name: &str) -> Result<UpdateRunStatus, String> {
    let mut admin = hub.client(hub.running()[0]).await;
    let run = get(&mut admin, kind, "", name).await.map_err(|e| e.to_string())?;
    Ok(run_status_of(&run))
}

/// The status of condition `type_` of `conditions` with its message.
fn condition(conditions: &[fleet_api::conditions::Condition], type_: &str) -> Option<(String, String)> {
    fleet_api::conditions::find(conditions, type_).map(|c| (c.status.clone(), c.message.clone()))
}

/// Waits until the run's condition `type_` has `status`; returns the run's
/// status and the condition's message.
async fn wait_run(hub: &Hub, name: &str, type_: &str, status: &str) -> (UpdateRunStatus, String) {
    eventually(&format!("{name} {type_}={status}"), WAIT * 2, || async {
        let run = run_status(hub, "csur", name).await?;
        match condition(&run.conditions, type_) {
            Some((s, m)) if s == status => Ok((run, m)),
            other => Err(format!("{type_} {other:?}, Progressing {:?}", condition(&run.conditions, "Progressing"))),
        }
    })
    .await
}

/// Waits until the run's `Succeeded` is True.
async fn wait_succeeded(hub: &Hub, name: &str) -> UpdateRunStatus {
    wait_run(hub, name, "Succeeded", "True").await.0
}

/// Waits until approval request `name` exists.
async fn wait_request(hub: &Hub, name: &str) {
    eventually(&format!("approval request {name} created"), WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        get(&mut admin, "careq", "", name).await.map(|_| ()).map_err(|e| e.to_string())
    })
    .await;
}

/// Waits until every one of `clusters` was seen holding the app (the
/// samplers may trail the hub's view a little).
async fn wait_all_seen(arrivals: &Arrivals, clusters: &[&str]) {
    eventually("every cluster seen holding the app", WAIT, || async {
        let seen = arrivals.seen();
        let missing: Vec<&&str> = clusters.iter().filter(|c| !seen.contains_key(**c)).collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("not yet on {missing:?}"))
        }
    })
    .await;
}

/// A running node that does not lead.
async fn follower(hub: &Hub) -> u64 {
    let leader = hub.wait_leader().await;
    hub.running().into_iter().find(|id| *id != leader).unwrap_or(leader)
}

/// Runs fleetctl; panics with its stderr unless it succeeds; returns stdout.
fn fleetctl_ok(hub: &Hub, args: &[&str]) -> String {
    let out = hub.fleetctl(args);
    assert!(out.status.success(), "fleetctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Unix seconds of an RFC 3339 time as the hub writes them
/// (`YYYY-MM-DDTHH:MM:SSZ`); 0 when unreadable.
fn unix(text: &str) -> i64 {
    let parse = || -> Option<i64> {
        let (date, time) = text.trim_end_matches('Z').split_once('T')?;
        let d: Vec<i64> = date.split('-').map(|p| p.parse().ok()).collect::<Option<_>>()?;
        let t: Vec<i64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
        let (m, day) = (*d.get(1)?, *d.get(2)?);
        let y = if m <= 2 { d[0] - 1 } else { d[0] };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
        let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
        Some(days * 86_400 + t.first()? * 3600 + t.get(1)? * 60 + t.get(2)?)
    };
    parse().unwrap_or(0)
}

/// When a cluster's condition `type_` last changed, in Unix seconds.
fn cluster_time(status: &UpdateRunStatus, cluster: &str, type_: &str) -> i64 {
    let entry = status.stages_status.iter().flat_map(|s| &s.clusters).find(|c| c.cluster_name == cluster);
    let condition = entry.and_then(|c| fleet_api::conditions::find(&c.conditions, type_));
    condition.map(|c| unix(&c.last_transition_time)).unwrap_or(i64::MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worked_example_goes_stage_by_stage_through_a_wait_and_approvals() {
    let members = [&STG_1, &CAN_1, &CAN_2, &PROD_A, &PROD_B, &PROD_C];
    let hub = fleet(&members).await;
    let names: Vec<&str> = members.iter().map(|m| m.name).collect();
    let arrivals = Arrivals::start(&hub, &names, "app", "settings", "version", "1");

    apply_yaml(&hub, APP);
    let strategy = STRATEGY.replace("waitTime: 1h", &format!("waitTime: {WAIT_SECONDS}s"));
    apply_yaml(&hub, &format!("{strategy}---\n{RUN}"));

    // 1. The frozen stages, in the spec's order.
    let (status, _) = wait_run(&hub, "app-v1", "Initialized", "True").await;
    let stages: Vec<(String, Vec<String>)> = status
        .stages_status
        .iter()
        .map(|s| (s.stage_name.clone(), s.clusters.iter().map(|c| c.cluster_name.clone()).collect()))
        .collect();
    let want = |n: &str, cs: &[&str]| (n.to_string(), cs.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    assert_eq!(
        stages,
        [
            want("staging", &["stg-1"]),
            want("canary", &["can-2", "can-1"]),
            want("production", &["prod-a", "prod-b", "prod-c"])
        ]
    );
    assert_eq!(status.deletion_stage_status.as_ref().map(|d| d.clusters.len()), Some(0));

    // 2. stg-1 first; the canaries only once the wait is over.
    eventually("stg-1 holds the app", WAIT, || async { arrivals.at("stg-1").ok_or_else(|| "not yet".to_string()) })
        .await;
    let describe = fleetctl_ok(&hub, &["describe", "csur", "app-v1"]);
    assert!(describe.contains("Stage:") && describe.contains("staging"), "{describe}");
    let seen = eventually("both canaries hold the app", WAIT * 2, || async {
        let seen = arrivals.seen();
        if seen.contains_key("can-1") && seen.contains_key("can-2") {
            Ok(seen)
        } else {
            Err(format!("{:?}", seen.keys().collect::<Vec<_>>()))
        }
    })
    .await;
    // Polling may fail to prove an order, never proves a false one: these
    // assert that no violation was seen.
    let (stg, can_2, can_1) = (seen["stg-1"], seen["can-2"], seen["can-1"]);
    let waited = can_2.at_most_after(&stg);
    assert!(
        waited >= Duration::from_secs(WAIT_SECONDS - 1),
        "can-2 got the app at most {waited:?} after stg-1: before the {WAIT_SECONDS}s wait was over"
    );
    let status = run_status(&hub, "csur", "app-v1").await.expect("run");
    assert!(
        !can_1.proven_before(&can_2),
        "can-1 (order 2) got the app before can-2 (order 1): {seen:?}; status {:#?}",
        status.stages_status[1],
    );

    // 3. The after-canary approval gates production.
    wait_request(&hub, "app-v1-after-canary").await;
    let describe = fleetctl_ok(&hub, &["describe", "csur", "app-v1"]);
    assert!(describe.contains("waiting for approval request app-v1-after-canary"), "{describe}");
    let out = hub.fleetctl(&["rollout", "status", "crp", "app"]);
    assert!(!out.status.success(), "not rolled out yet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("app-v1-after-canary"), "rollout status names the gate: {stdout}");
    let listed = fleetctl_ok(&hub, &["get", "careq"]);
    assert!(listed.contains("app-v1-after-canary") && listed.contains("canary"), "{listed}");

    // 4. Approved through a follower: canary succeeds; production waits for its own approval.
    let node = follower(&hub).await;
    fleetctl_ok(&hub, &["--endpoints", &hub.endpoint(node), "approve", "app-v1-after-canary"]);
    wait_request(&hub, "app-v1-before-production").await;
    let status = run_status(&hub, "csur", "app-v1").await.expect("run");
    let canary = &status.stages_status[1];
    assert_eq!(condition(&canary.conditions, "Succeeded").map(|c| c.0), Some("True".into()));
    let mut admin = hub.client(node).await;
    let request = get(&mut admin, "careq", "", "app-v1-after-canary").await.expect("request");
    let accepted = fleet_api::staged::approval_status_of(&request);
    assert!(accepted.is_accepted(request.metadata.generation), "the run accepted the approval");
    for prod in ["prod-a", "prod-b", "prod-c"] {
        assert!(arrivals.at(prod).is_none(), "{prod} got the app before the before-production approval");
    }

    // 5. prod-a and prod-b together, then prod-c; the run succeeds.
    let node = follower(&hub).await;
    let gate_2 = Instant::now();
    fleetctl_ok(&hub, &["--endpoints", &hub.endpoint(node), "approve", "app-v1-before-production"]);
    let status = wait_succeeded(&hub, "app-v1").await;
    wait_all_seen(&arrivals, &names).await;
    let seen = arrivals.finish();
    for later in ["prod-a", "prod-b", "prod-c"] {
        assert!(seen[later].present_from > gate_2, "{later} got the app before the before-production approval");
        for earlier in ["stg-1", "can-2", "can-1"] {
            assert!(!seen[later].proven_before(&seen[earlier]), "{later} got the app before {earlier}");
        }
    }
    for canary in ["can-2", "can-1"] {
        assert!(!seen[canary].proven_before(&seen["stg-1"]), "{canary} got the app before stg-1");
    }
    let started = |c: &str| cluster_time(&status, c, "Started");
    let succeeded = |c: &str| cluster_time(&status, c, "Succeeded");
    assert!(started("prod-a") <= started("prod-c") && started("prod-b") <= started("prod-c"));
    assert!(
        started("prod-c") >= succeeded("prod-a").min(succeeded("prod-b")),
        "prod-c started only once prod-a or prod-b was available (maxConcurrency 2)"
    );
    assert_eq!(
        condition(&status.conditions, "Succeeded"),
        Some(("True".into(), "All stages are completed successfully".into()))
    );

    // The placement follows the run: every cluster at index 0, Available.
    let out = fleetctl_ok(&hub, &["rollout", "status", "crp", "app", "-w", "--timeout", "60s"]);
    assert!(out.contains("successfully rolled out (6/6 clusters available)"), "{out}");
    assert!(out.contains("run clusterstagedupdaterun \"app-v1\" (resource index 0): succeeded"), "{out}");
    let listed = fleetctl_ok(&hub, &["get", "csur"]);
    let row: Vec<&str> = listed.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(&row[..7], ["app-v1", "app", "0", "0", "True", "False", "True"], "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_leader_kills_during_a_timed_wait_and_a_half_done_stage() {
    const A: Member = Member { name: "a", labels: &[("ring", "first")], nodes: 1, cpu: 2 };
    const B: Member = Member { name: "b", labels: &[("ring", "second"), ("order", "1")], nodes: 1, cpu: 2 };
    const C: Member = Member { name: "c", labels: &[("ring", "second"), ("order", "2")], nodes: 1, cpu: 2 };
    const D: Member = Member { name: "d", labels: &[("ring", "second"), ("order", "3")], nodes: 1, cpu: 2 };
    let mut hub = fleet(&[&A, &B, &C, &D]).await;
    // Heartbeats every 3 s: pausing c's agent for a few seconds leaves it healthy.
    for m in [&A, &B, &C, &D] {
        apply_yaml(&hub, &member_yaml(m, "").replace("heartbeatPeriodSeconds: 1", "heartbeatPeriodSeconds: 3"));
    }
    let arrivals = Arrivals::start(&hub, &["a", "b", "c", "d"], "app", "settings", "version", "1");
    apply_yaml(&hub, APP);
    let strategy = "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateStrategy\nmetadata: {name: rings}\nspec:\n  stages:\n    - name: first\n      labelSelector: {matchLabels: {ring: first}}\n      afterStageTasks: [{type: TimedWait, waitTime: 6s}]\n    - name: second\n      labelSelector: {matchLabels: {ring: second}}\n      sortingLabelKey: order\n";
    let run = RUN.replace("three-stage", "rings");
    apply_yaml(&hub, &format!("{strategy}---\n{run}"));

    // The leader dies while the timed wait runs.
    let wait_started = eventually("the timed wait started", WAIT, || async {
        let status = run_status(&hub, "csur", "app-v1").await?;
        let task = status.stages_status.first().and_then(|s| s.after_stage_task_status.first());
        match task.and_then(|t| fleet_api::conditions::find(&t.conditions, "WaitTimeElapsed")) {
            Some(c) if c.status == "False" => Ok(unix(&c.last_transition_time)),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let first_leader = hub.wait_leader().await;
    hub.kill(first_leader);
    hub.wait_leader().await;
    hub.start_node(first_leader, false);
    hub.wait_leader().await;

    // b starts once the wait is over, exactly 6 s after it began.
    let status = eventually("b started", WAIT, || async {
        let status = run_status(&hub, "csur", "app-v1").await?;
        if cluster_time(&status, "b", "Started") < i64::MAX {
            Ok(status)
        } else {
            Err("not yet".into())
        }
    })
    .await;
    let task = &status.stages_status[0].after_stage_task_status[0];
    let elapsed = fleet_api::conditions::find(&task.conditions, "WaitTimeElapsed").expect("elapsed");
    assert_eq!(elapsed.status, "True");
    assert_eq!(unix(&elapsed.last_transition_time) - wait_started, 6, "the wait ended 6 s after it began");
    assert!(cluster_time(&status, "b", "Started") >= wait_started + 6);

    // c's agent is paused so that the second stage stays half done (b
    // succeeded, c updating, d waiting) while the leader dies again.
    hub.signal_agent("c", "STOP");
    eventually("b succeeded and c started", WAIT, || async {
        let status = run_status(&hub, "csur", "app-v1").await?;
        if cluster_time(&status, "b", "Succeeded") < i64::MAX && cluster_time(&status, "c", "Started") < i64::MAX {
            Ok(())
        } else {
            Err("not yet".into())
        }
    })
    .await;
    let second_leader = hub.wait_leader().await;
    hub.kill(second_leader);
    hub.wait_leader().await;
    let status = run_status(&hub, "csur", "app-v1").await.expect("run");
    assert_eq!(cluster_time(&status, "d", "Started"), i64::MAX, "d waits for c (maxConcurrency 1)");
    assert!(arrivals.at("d").is_none(), "nothing reached d while c updates");
    let resumed = Instant::now();
    hub.signal_agent("c", "CONT");

    let status = wait_succeeded(&hub, "app-v1").await;
    wait_all_seen(&arrivals, &["a", "b", "c", "d"]).await;
    let seen = arrivals.finish();
    let at = |c: &str| seen.get(c).copied().unwrap_or_else(|| panic!("{c} never seen holding the app: {seen:?}"));
    assert!(at("d").present_from > resumed, "d got the app only after c was available");
    for (earlier, later) in [("a", "b"), ("b", "c"), ("c", "d")] {
        assert!(!at(later).proven_before(&at(earlier)), "{later} got the app before {earlier}: {seen:?}");
    }
    let order: Vec<i64> = ["b", "c", "d"].iter().map(|c| cluster_time(&status, c, "Started")).collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "b, c, d in order: {order:?}");
    assert!(cluster_time(&status, "d", "Started") >= cluster_time(&status, "c", "Succeeded"));
    // Each cluster started once: one start event each, never repeated.
    let mut admin = hub.client(hub.running()[0]).await;
    let events = fleet_tests::objects::list_all(&mut admin, "event", "").await.expect("events");
    let mut starts: BTreeMap<String, i64> = BTreeMap::new();
    for e in events.iter().filter(|e| e.rest.get("reason").and_then(|r| r.as_str()) == Some("ClusterUpdatingStarted")) {
        let message = e.rest.get("message").and_then(|m| m.as_str()).unwrap_or_default().to_string();
        *starts.entry(message).or_default() += e.rest.get("count").and_then(|c| c.as_i64()).unwrap_or(1);
    }
    assert!(starts.values().all(|n| *n == 1), "every cluster started exactly once: {starts:?}");
    drop(hub);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_in_no_stage_fails_initialization_and_an_older_index_rolls_back() {
    const P1: Member = Member { name: "prod-1", labels: &[("environment", "production")], nodes: 1, cpu: 2 };
    const P2: Member = Member { name: "prod-2", labels: &[("environment", "production")], nodes: 1, cpu: 2 };
    const DEV: Member = Member { name: "dev-1", labels: &[("environment", "dev")], nodes: 1, cpu: 2 };
    let hub = fleet(&[&P1, &P2, &DEV]).await;
    apply_yaml(&hub, APP);
    let prod_only = "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateStrategy\nmetadata: {name: prod-only}\nspec:\n  stages:\n    - name: production\n      labelSelector: {matchLabels: {environment: production}}\n";
    apply_yaml(&hub, &format!("{prod_only}---\n{}", RUN.replace("three-stage", "prod-only")));
    let (_, message) = wait_run(&hub, "app-v1", "Initialized", "False").await;
    assert_eq!(
        message,
        "cannot continue the updateRun: failed to validate the updateRun: some clusters are not placed in any stage, total 1, showing up to 10: dev-1"
    );
    for m in [&P1, &P2, &DEV] {
        assert_eq!(configmap_value(&hub, m.name, "app", "settings", "version"), None, "nothing reached {}", m.name);
    }

    // One stage for every chosen cluster: index 0, then 1, then back to 0.
    let all = "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateStrategy\nmetadata: {name: all}\nspec:\n  stages:\n    - name: everyone\n      labelSelector: {}\n      maxConcurrency: 100%\n";
    let run = |name: &str, index: &str| {
        format!("apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata: {{name: {name}}}\nspec:\n  placementName: app\n  resourceSnapshotIndex: \"{index}\"\n  stagedRolloutStrategyName: all\n")
    };
    apply_yaml(&hub, &format!("{all}---\n{}", run("v0", "0")));
    wait_succeeded(&hub, "v0").await;
    let holds = |version: &'static str| {
        let hub = &hub;
        async move {
            eventually(&format!("every cluster holds version {version}"), WAIT, || async {
                let values: Vec<Option<String>> = ["prod-1", "prod-2", "dev-1"]
                    .iter()
                    .map(|c| configmap_value(hub, c, "app", "settings", "version"))
                    .collect();
                if values.iter().all(|v| v.as_deref() == Some(version)) {
                    Ok(())
                } else {
                    Err(format!("{values:?}"))
                }
            })
            .await
        }
    };
    holds("1").await;

    apply_yaml(&hub, &APP.replace("version: \"1\"", "version: \"2\""));
    eventually("resource snapshot 1 made", WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        get(&mut admin, "clusterresourcesnapshot", "", "app-1-snapshot").await.map(|_| ()).map_err(|e| e.to_string())
    })
    .await;
    // External: the new index waits for a run.
    assert_eq!(configmap_value(&hub, "prod-1", "app", "settings", "version").as_deref(), Some("1"));
    apply_yaml(&hub, &run("v1", "1"));
    wait_succeeded(&hub, "v1").await;
    holds("2").await;

    // Rollback: a new run naming the older, still kept, index.
    apply_yaml(&hub, &run("v0-again", "0"));
    wait_succeeded(&hub, "v0-again").await;
    holds("1").await;
    let out = fleetctl_ok(&hub, &["rollout", "status", "crp", "app", "-w", "--timeout", "60s"]);
    assert!(out.contains("successfully rolled out (3/3 clusters available)"), "{out}");
    assert!(out.contains("\"v0-again\" (resource index 0): succeeded"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespaced_run_rolls_out_a_resource_placement_after_its_approval() {
    const ONE: Member = Member { name: "one", labels: &[("environment", "production")], nodes: 1, cpu: 2 };
    const TWO: Member = Member { name: "two", labels: &[("environment", "production")], nodes: 1, cpu: 2 };
    let hub = fleet(&[&ONE, &TWO]).await;
    let team = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team}\ndata: {version: \"1\"}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterResourcePlacement\nmetadata: {name: team-ns}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: Namespace, name: team, selectionScope: NamespaceOnly}\n  policy: {placementType: PickAll}\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ResourcePlacement\nmetadata: {name: team-rp, namespace: team}\nspec:\n  resourceSelectors:\n    - {group: \"\", version: v1, kind: ConfigMap, name: settings}\n  policy: {placementType: PickAll}\n  strategy: {type: External}\n";
    apply_yaml(&hub, team);
    // The ResourcePlacement is scheduled once both clusters report its
    // namespace (namespace affinity); the run starts from there.
    eventually("team-rp scheduled on both clusters", WAIT, || async {
        let bindings = list(&hub, "rb", "kubernetes-fleet.io/parent-CRP=team-rp").await?;
        if bindings.len() == 2 {
            Ok(())
        } else {
            Err(format!("{} bindings", bindings.len()))
        }
    })
    .await;
    let run = "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: StagedUpdateStrategy\nmetadata: {name: gated, namespace: team}\nspec:\n  stages:\n    - name: all\n      labelSelector: {}\n      maxConcurrency: 100%\n      beforeStageTasks: [{type: Approval}]\n---\napiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: StagedUpdateRun\nmetadata: {name: r1, namespace: team}\nspec:\n  placementName: team-rp\n  stagedRolloutStrategyName: gated\n";
    apply_yaml(&hub, run);
    eventually("ApprovalRequest team/r1-before-all created", WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        get(&mut admin, "areq", "team", "r1-before-all").await.map(|_| ()).map_err(|e| e.to_string())
    })
    .await;
    let describe = fleetctl_ok(&hub, &["describe", "sur", "r1", "-n", "team"]);
    assert!(describe.contains("fleetctl approve r1-before-all -n team"), "{describe}");
    for m in ["one", "two"] {
        assert_eq!(configmap_value(&hub, m, "team", "settings", "version"), None, "{m} waits for the approval");
    }
    let node = follower(&hub).await;
    let out = fleetctl_ok(&hub, &["--endpoints", &hub.endpoint(node), "approve", "r1-before-all", "-n", "team"]);
    assert!(out.contains("approvalrequest/r1-before-all approved"), "{out}");
    let out = fleetctl_ok(&hub, &["rollout", "status", "rp", "team-rp", "-n", "team", "-w", "--timeout", "60s"]);
    assert!(out.contains("successfully rolled out (2/2 clusters available)"), "{out}");
    assert!(out.contains("run stagedupdaterun \"r1\" (resource index 0): succeeded"), "{out}");
    for m in ["one", "two"] {
        assert_eq!(configmap_value(&hub, m, "team", "settings", "version").as_deref(), Some("1"));
    }
}
