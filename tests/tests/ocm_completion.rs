//! A ManifestWork holding a Job, on a real trio with a real agent
//! (docs/spec/ocm.md): its `WellKnownConditions` rule reports the Job
//! `Complete` (per manifest and for the work) once the Job finishes on the
//! member, and `ttlSecondsAfterFinished` deletes the ManifestWork — and
//! the Job with it — that long after, even when the leader that saw it
//! complete is gone.

use fleet_tests::fleet::{apply_yaml, fleet_with, member_has, wait_member, Member};
use fleet_tests::objects::{condition, get};
use fleet_tests::{eventually, Hub};
use serde_json::Value;

const C: Member = Member { name: "jobs-1", labels: &[], nodes: 1, cpu: 2 };
/// The Job's status reaches the hub within the agent's back-report bound
/// (one mirrored status per Work per 30 s), so waits here are longer.
const COMPLETE_WAIT: std::time::Duration = std::time::Duration::from_secs(75);

const WORK: &str = "\
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: migrate, namespace: jobs-1}
spec:
  deleteOption: {propagationPolicy: Foreground, ttlSecondsAfterFinished: 8}
  workload:
    manifests:
      - apiVersion: v1
        kind: Namespace
        metadata: {name: batch}
      - apiVersion: batch/v1
        kind: Job
        metadata: {name: migrate, namespace: batch}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: migrate, image: busybox, command: [\"true\"]}]
  manifestConfigs:
    - resourceIdentifier: {group: batch, resource: jobs, name: migrate, namespace: batch}
      conditionRules: [{condition: Complete, type: WellKnownConditions}]
";

/// The ManifestWork, if it exists.
async fn manifest_work(hub: &Hub) -> Option<fleet_api::Object> {
    let mut admin = hub.client(hub.running()[0]).await;
    get(&mut admin, "manifestwork", "jobs-1", "migrate").await.ok()
}

/// The Job manifest's `Complete` condition (status, reason, message).
fn job_complete(mw: &fleet_api::Object) -> Option<(String, String, String)> {
    let manifests = mw.status()?.pointer("/resourceStatus/manifests")?.as_array()?.clone();
    let job = manifests.iter().find(|m| m["resourceMeta"]["kind"] == "Job")?;
    let c = job["conditions"].as_array()?.iter().find(|c| c["type"] == "Complete")?.clone();
    let text = |f: &str| c[f].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_completes_its_manifestwork_which_expires_after_its_ttl_across_a_leader_change() {
    let mut hub = fleet_with(&[&C], &["--drift-check-interval", "2s"]).await;
    apply_yaml(&hub, WORK);
    wait_member(&hub, "jobs-1", "job", "batch", "migrate", true).await;

    eventually("the ManifestWork is Complete", COMPLETE_WAIT, || async {
        let mw = manifest_work(&hub).await.ok_or("no ManifestWork")?;
        let work = condition(&mw, "Complete");
        let job = job_complete(&mw);
        let done = work.as_ref().is_some_and(|c| c.0 == "True" && c.1 == "ConditionRulesAggregated");
        if done && job == Some(("True".into(), "ConditionRuleEvaluated".into(), "Job is finished".into())) {
            Ok(())
        } else {
            Err(format!("work {work:?}, job {job:?}"))
        }
    })
    .await;
    assert!(member_has(&hub, "jobs-1", "job", "batch", "migrate"), "not deleted before its TTL");

    // The leader that saw the completion goes; the next one keeps the deadline.
    let leader = hub.wait_leader().await;
    hub.kill(leader);
    eventually("the ManifestWork expired", COMPLETE_WAIT, || async {
        match manifest_work(&hub).await {
            None => Ok(()),
            Some(mw) => Err(format!("{:?}", mw.status().map(|s| s["conditions"].clone()).unwrap_or(Value::Null))),
        }
    })
    .await;
    wait_member(&hub, "jobs-1", "job", "batch", "migrate", false).await;
}

const D: Member = Member { name: "cel-1", labels: &[], nodes: 1, cpu: 8 };

const CEL_WORK: &str = "\
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: web, namespace: cel-1}
spec:
  workload:
    manifests:
      - apiVersion: v1
        kind: Namespace
        metadata: {name: web}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: web}
        spec:
          replicas: 2
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: nginx}]}
  manifestConfigs:
    - resourceIdentifier: {group: apps, resource: deployments, name: web, namespace: web}
      conditionRules:
        - condition: TwoReady
          type: CEL
          celExpressions: [\"object.metadata.name == 'web'\", \"has(object.status.readyReplicas) && object.status.readyReplicas == 2\"]
          messageExpression: \"result ? 'both replicas ready' : 'waiting for replicas'\"
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cel_condition_rule_reads_the_members_status() {
    let hub = fleet_with(&[&D], &["--drift-check-interval", "2s"]).await;
    apply_yaml(&hub, CEL_WORK);
    eventually("TwoReady is True", COMPLETE_WAIT, || async {
        let mut admin = hub.client(hub.running()[0]).await;
        let mw = get(&mut admin, "manifestwork", "cel-1", "web").await.map_err(|e| e.to_string())?;
        let manifests = mw.status().and_then(|s| s.pointer("/resourceStatus/manifests")).cloned().unwrap_or_default();
        let deployment = manifests.as_array().into_iter().flatten().find(|m| m["resourceMeta"]["kind"] == "Deployment");
        let c = deployment.and_then(|d| d["conditions"].as_array()?.iter().find(|c| c["type"] == "TwoReady").cloned());
        match c {
            Some(c)
                if c["status"] == "True"
                    && c["message"] == "both replicas ready"
                    && c["reason"] == "ConditionRuleEvaluated" =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    // No Complete rule, no work-level Complete.
    let mut admin = hub.client(hub.running()[0]).await;
    let mw = get(&mut admin, "manifestwork", "cel-1", "web").await.unwrap();
    assert!(condition(&mw, "Complete").is_none(), "{:?}", mw.status());
}
