//! `drain CLUSTER` and `uncordon CLUSTER`, as KubeFleet's kubectl plugin
//! does them (docs/spec/eviction.md EV-7): drain taints the member cluster
//! `NoSchedule` first (a write conditional on the version read, retried
//! when it lost a race), then creates one eviction per
//! ClusterResourcePlacement on it (what to write comes from
//! `fleet_placement::eviction::drain`), waits until the hub judged each,
//! and reports which placements could not be evicted and why — failing
//! when any could not. Uncordon removes the taint.

use std::collections::BTreeMap;

use fleet_api::eviction::{eviction_spec_of, CLUSTER_RESOURCE_PLACEMENT_EVICTION};
use fleet_api::member::{self, Taint};
use fleet_api::Object;
use fleet_placement::eviction::drain::{drain_outcome, plan_drain, uncordoned, DrainOutcome, DrainPlan};
use tokio::time::{sleep, Duration, Instant};
use tonic::Code;

use crate::cli::{DrainArgs, UncordonArgs};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::KindArg;
use crate::types::ListQuery;

/// Most attempts at the taint write when the cluster keeps changing.
const ATTEMPTS: usize = 10;
/// How often drain looks at its evictions while they are judged.
const POLL: Duration = Duration::from_millis(200);

/// Runs `drain`.
pub async fn drain(client: &Client, args: &DrainArgs, io: &mut Io) -> Result<()> {
    let cluster = &args.cluster;
    let plan = cordon(client, cluster, io).await?;
    let eviction_kind = KindArg::resolve(CLUSTER_RESOURCE_PLACEMENT_EVICTION);
    for name in &plan.delete_first {
        match client.delete(&eviction_kind, "", name, None).await {
            Err(e) if !e.is_not_found() => return Err(e),
            _ => {}
        }
    }
    if !plan.create.is_empty() {
        let documents = plan.create.iter().map(|e| ("drain".to_string(), e.clone())).collect();
        client.apply(documents).await?;
    }
    let mut pending: Vec<String> = plan.waiting.clone();
    pending.extend(plan.create.iter().map(|e| e.metadata.name.clone()));
    let decided = wait_for_judgements(client, &pending, args.timeout).await?;
    let mut failures = Vec::new();
    for (placement, outcome) in &decided {
        let line = match outcome {
            DrainOutcome::Executed => format!("evicted clusterresourceplacement/{placement} from cluster {cluster}\n"),
            DrainOutcome::Blocked(why) | DrainOutcome::Invalid(why) => {
                failures.push(placement.clone());
                format!("cannot evict clusterresourceplacement/{placement} from cluster {cluster}: {why}\n")
            }
            DrainOutcome::Pending => {
                failures.push(placement.clone());
                let waited = humantime::format_duration(args.timeout);
                format!("cannot evict clusterresourceplacement/{placement} from cluster {cluster}: not judged within {waited}\n")
            }
        };
        io.out(&line)?;
    }
    for (placement, why) in &plan.skipped {
        failures.push(placement.clone());
        io.out(&format!("skipped clusterresourceplacement/{placement} on cluster {cluster}: {why}\n"))?;
    }
    let total = decided.len() + plan.skipped.len();
    if failures.is_empty() {
        return io.out(&format!("cluster {cluster} drained ({total} placements evicted)\n"));
    }
    Err(Error::DrainIncomplete(format!(
        "drain of cluster {cluster} incomplete: {} of {total} placements could not be evicted ({})",
        failures.len(),
        failures.join(", ")
    )))
}

/// Runs `uncordon`.
pub async fn uncordon(client: &Client, args: &UncordonArgs, io: &mut Io) -> Result<()> {
    let cluster = &args.cluster;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let object = member_cluster(client, cluster).await?;
        let Some(taints) = uncordoned(&member::spec_of(&object).taints) else {
            return io.out(&format!("membercluster/{cluster} is not cordoned\n"));
        };
        match client.apply(vec![("uncordon".to_string(), with_taints(object, &taints))]).await {
            Ok(_) => return io.out(&format!("membercluster/{cluster} uncordoned\n")),
            Err(e) if is_conflict(&e) && attempt < ATTEMPTS => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Taints the cluster (unless it is already) and plans its evictions
/// from what the hub holds now (consistent reads).
async fn cordon(client: &Client, cluster: &str, io: &mut Io) -> Result<DrainPlan> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let object = member_cluster(client, cluster).await?;
        let taints = member::spec_of(&object).taints;
        let placements = list(client, "ClusterResourcePlacement").await?;
        let bindings = list(client, "ClusterResourceBinding").await?;
        let evictions = list(client, CLUSTER_RESOURCE_PLACEMENT_EVICTION).await?;
        let plan = plan_drain(cluster, &taints, &placements, &bindings, &evictions);
        let Some(new_taints) = &plan.taints else {
            io.out(&format!("membercluster/{cluster} already cordoned\n"))?;
            return Ok(plan);
        };
        match client.apply(vec![("drain".to_string(), with_taints(object, new_taints))]).await {
            Ok(_) => {
                io.out(&format!("membercluster/{cluster} cordoned\n"))?;
                return Ok(plan);
            }
            Err(e) if is_conflict(&e) && attempt < ATTEMPTS => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Polls the evictions named `pending` until each is judged or `timeout`
/// passes; returns each one's placement and outcome, by placement.
async fn wait_for_judgements(
    client: &Client,
    pending: &[String],
    timeout: Duration,
) -> Result<BTreeMap<String, DrainOutcome>> {
    let deadline = Instant::now() + timeout;
    loop {
        let evictions = list(client, CLUSTER_RESOURCE_PLACEMENT_EVICTION).await?;
        let mine: Vec<&Object> = evictions.iter().filter(|e| pending.contains(&e.metadata.name)).collect();
        let decided: BTreeMap<String, DrainOutcome> =
            mine.iter().map(|e| (eviction_spec_of(e).placement_name, drain_outcome(e))).collect();
        let all_judged = mine.len() == pending.len() && decided.values().all(|o| *o != DrainOutcome::Pending);
        if all_judged || Instant::now() >= deadline {
            return Ok(decided);
        }
        sleep(POLL).await;
    }
}

async fn member_cluster(client: &Client, cluster: &str) -> Result<Object> {
    client.get(&KindArg::resolve("MemberCluster"), "", cluster, true).await
}

async fn list(client: &Client, kind: &str) -> Result<Vec<Object>> {
    let query = ListQuery { consistent: true, ..ListQuery::new(KindArg::resolve(kind), String::new()) };
    Ok(client.list(&query).await?.items)
}

/// The MemberCluster as read (its resourceVersion kept: the write is
/// conditional on it) with `taints`.
fn with_taints(mut object: Object, taints: &[Taint]) -> Object {
    let mut spec = object.spec().and_then(|s| s.as_object().cloned()).unwrap_or_default();
    if taints.is_empty() {
        spec.remove("taints");
    } else {
        spec.insert("taints".into(), serde_json::to_value(taints).unwrap_or_default());
    }
    object.rest.insert("spec".into(), serde_json::Value::Object(spec));
    object
}

fn is_conflict(error: &Error) -> bool {
    matches!(error.code(), Some(Code::Aborted | Code::FailedPrecondition)) && !error.is_expired()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_placement::eviction::drain::cordon_taint;

    #[test]
    fn the_taint_write_keeps_the_version_read_and_the_rest_of_the_spec() {
        let object: Object = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": "b", "resourceVersion": "42"},
            "spec": {"heartbeatPeriodSeconds": 5, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        }))
        .unwrap();
        let mut taints = member::spec_of(&object).taints;
        taints.push(cordon_taint());
        let cordoned = with_taints(object, &taints);
        assert_eq!(cordoned.metadata.resource_version, "42", "the write is conditional on what was read");
        assert_eq!(member::spec_of(&cordoned).heartbeat_period_seconds, Some(5));
        assert_eq!(member::spec_of(&cordoned).taints, taints);
        let cleared = with_taints(cordoned, &[]);
        assert!(cleared.spec().and_then(|s| s.get("taints")).is_none());
    }
}
