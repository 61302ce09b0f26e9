//! `fleet-bench members`: N simulated member clusters in one process. Each
//! has its own key, certificate and hub connection, and runs the agent's own
//! code (`fleet_agent::run`: heartbeats, the Work loop, renewal) against a
//! [`MemoryTarget`]. The command creates their MemberClusters and bootstrap
//! tokens with the admin identity, joins them (a few at a time), prints
//! `ready N` once every MemberCluster says `Joined` and `Healthy`, and runs
//! until `shutdown` resolves.

pub mod memory;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_agent::config::AgentConfig;
use fleet_agent::AgentError;
use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, CreateTokenRequest, ListRequest};
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tonic::transport::Channel;

use crate::cli::MembersArgs;
use crate::connect::{fleet_tls, open, parse_endpoints};
use crate::error::Error;
use crate::watching::{hub, kind};
pub use memory::MemoryTarget;

/// Label on every MemberCluster the command creates: its `--prefix`.
pub const PREFIX_LABEL: &str = "fleet-bench/members";
/// MemberClusters applied per request.
const APPLY_BATCH: usize = 100;
/// Joins (key generation, CSR, signing, one Raft write each) at a time.
const JOINS_AT_ONCE: usize = 16;
/// How often readiness is polled.
const READY_POLL: Duration = Duration::from_millis(500);
/// Pause before a member whose agent stopped on an error starts again.
const RESTART_PAUSE: Duration = Duration::from_secs(1);

/// The name of member `i` (1-based): `<prefix>0001`... `<prefix>99999`.
pub fn member_name(prefix: &str, i: usize) -> String {
    format!("{prefix}{i:04}")
}

/// The MemberCluster document of member `i`.
pub fn member_document(args: &MembersArgs, i: usize) -> Result<Value, Error> {
    let mut labels = serde_json::Map::new();
    labels.insert(PREFIX_LABEL.into(), json!(args.prefix.trim_end_matches('-')));
    for pair in &args.labels {
        let (k, v) = pair.split_once('=').ok_or_else(|| Error::Invalid {
            flag: "--labels",
            value: pair.clone(),
            reason: "expected key=value".into(),
        })?;
        labels.insert(k.trim().into(), json!(v.trim()));
    }
    if args.regions > 0 {
        labels.insert("region".into(), json!(format!("region-{}", (i - 1) % args.regions)));
    }
    let mut spec = serde_json::Map::new();
    if let Some(s) = args.heartbeat_seconds {
        spec.insert("heartbeatPeriodSeconds".into(), json!(s));
    }
    Ok(json!({
        "apiVersion": "cluster.kubernetes-fleet.io/v1beta1",
        "kind": "MemberCluster",
        "metadata": {"name": member_name(&args.prefix, i), "labels": labels},
        "spec": spec
    }))
}

/// The most members one process runs (names have up to five digits).
const MAX_MEMBERS: usize = 99_999;

fn check(args: &MembersArgs) -> Result<(), Error> {
    if args.count == 0 || args.count > MAX_MEMBERS {
        let reason = format!("1 to {MAX_MEMBERS}");
        return Err(Error::Invalid { flag: "--count", value: args.count.to_string(), reason });
    }
    let prefix_ok = !args.prefix.is_empty()
        && args.prefix.len() <= 40
        && args.prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && args.prefix.starts_with(|c: char| c.is_ascii_lowercase());
    if !prefix_ok {
        return Err(Error::Invalid {
            flag: "--prefix",
            value: args.prefix.clone(),
            reason: "lower-case letters, digits and '-', starting with a letter, at most 40 characters".into(),
        });
    }
    if args.heartbeat_seconds == Some(0) {
        return Err(Error::Invalid { flag: "--heartbeat-seconds", value: "0".into(), reason: "at least 1".into() });
    }
    Ok(())
}

/// Runs the members until `shutdown`.
pub async fn run(args: &MembersArgs, shutdown: impl std::future::Future<Output = ()>) -> Result<(), Error> {
    check(args)?;
    let endpoints = parse_endpoints(&args.hub)?;
    let pki = args.tls_dir.clone().ok_or(Error::TlsDirMissing)?;
    let channel = open(&endpoints[0], Some(fleet_tls(&pki)?), Duration::from_secs(30)).await?;
    let mut admin = FleetClient::new(channel).max_decoding_message_size(crate::connect::MAX_MESSAGE);
    let (_temp, root) = data_root(args.data_dir.as_deref())?;

    let started = Instant::now();
    let documents: Vec<Value> = (1..=args.count).map(|i| member_document(args, i)).collect::<Result<_, _>>()?;
    for chunk in documents.chunks(APPLY_BATCH) {
        let documents = chunk.iter().map(serde_json::to_vec).collect::<Result<Vec<_>, _>>()?;
        admin.apply(ApplyRequest { documents, sources: vec![] }).await.map_err(hub)?;
    }

    let joins = Arc::new(Semaphore::new(JOINS_AT_ONCE));
    let mut members = tokio::task::JoinSet::new();
    for i in 1..=args.count {
        let name = member_name(&args.prefix, i);
        // Spread the members' connections over the nodes.
        let mut hub_list = endpoints.clone();
        hub_list.rotate_left(i % endpoints.len());
        let config = AgentConfig {
            cluster: name.clone(),
            hub: hub_list,
            data_dir: root.join(&name),
            token: None,
            ca_file: Some(pki.join("ca.pem")),
            ca_fingerprint: None,
            kubeconfig: None,
            drift_check_interval: args.drift_check_interval,
            collect_namespaces: false,
        };
        let target = args.status_churn.map(MemoryTarget::with_status_churn).unwrap_or_default();
        members.spawn(member(config, target, admin.clone(), joins.clone()));
    }

    let ready = wait_ready(&mut admin, args, &mut members);
    tokio::pin!(shutdown);
    tokio::select! {
        r = ready => r?,
        _ = &mut shutdown => return Ok(()),
    }
    println!("ready {}", args.count);
    eprintln!("{} members joined in {:.1} s", args.count, started.elapsed().as_secs_f64());
    tokio::select! {
        _ = &mut shutdown => {}
        Some(ended) = members.join_next() => {
            return Err(Error::Task(format!("a simulated member stopped: {ended:?}")));
        }
    }
    members.abort_all();
    Ok(())
}

/// The directory the members keep their identities and ledgers in: the
/// one given, or a temporary one removed when the command ends.
fn data_root(given: Option<&Path>) -> Result<(Option<tempfile::TempDir>, PathBuf), Error> {
    match given {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| Error::ReadFile { path: dir.to_path_buf(), source })?;
            Ok((None, dir.to_path_buf()))
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("fleet-bench-members-")
                .tempdir()
                .map_err(|source| Error::ReadFile { path: std::env::temp_dir(), source })?;
            let path = temp.path().to_path_buf();
            Ok((Some(temp), path))
        }
    }
}

/// One member: a token and a join (unless its data dir has an identity),
/// then the agent, restarted after an error until the cluster leaves.
async fn member(
    config: AgentConfig,
    target: MemoryTarget,
    mut admin: FleetClient<Channel>,
    joins: Arc<Semaphore>,
) -> Result<(), String> {
    // One target for the agent's restarts: what it applied stays.
    loop {
        if fleet_agent::identity::load(&config.data_dir).map_err(|e| e.to_string())?.is_none() {
            let permit = joins.acquire().await.map_err(|e| e.to_string())?;
            let joined = join(&config, &mut admin).await;
            drop(permit);
            if let Err(e) = joined {
                eprintln!("{}: join failed, retrying: {e}", config.cluster);
                tokio::time::sleep(RESTART_PAUSE).await;
                continue;
            }
        }
        match fleet_agent::run(config.clone(), target.clone(), std::future::pending()).await {
            Ok(()) => return Err(format!("{} left the fleet", config.cluster)),
            Err(e) => eprintln!("{}: agent stopped, restarting: {e}", config.cluster),
        }
        tokio::time::sleep(RESTART_PAUSE).await;
    }
}

async fn join(config: &AgentConfig, admin: &mut FleetClient<Channel>) -> Result<(), AgentError> {
    std::fs::create_dir_all(&config.data_dir).map_err(|e| AgentError::io(&config.data_dir, e))?;
    let request = CreateTokenRequest { cluster: config.cluster.clone(), ttl_seconds: 3600 };
    let token = admin.create_token(request).await.map_err(|s| AgentError::from_status(&s))?.into_inner().token;
    let config = AgentConfig { token: Some(token), ..config.clone() };
    fleet_agent::identity::join(&config).await.map(|_| ())
}

/// Polls the MemberClusters until all `count` are `Joined` and `Healthy`
/// (failing if a member task ends first).
async fn wait_ready(
    admin: &mut FleetClient<Channel>,
    args: &MembersArgs,
    members: &mut tokio::task::JoinSet<Result<(), String>>,
) -> Result<(), Error> {
    let selector = format!("{PREFIX_LABEL}={}", args.prefix.trim_end_matches('-'));
    loop {
        let request = ListRequest {
            kind: kind("memberclusters"),
            namespace: String::new(),
            all_namespaces: false,
            label_selector: selector.clone(),
            read: None,
        };
        let items = admin.list(request).await.map_err(hub)?.into_inner().items;
        let mut ready = 0;
        for item in &items {
            let mc =
                Object::from_json(item).map_err(|source| Error::Decode { what: "a MemberCluster".into(), source })?;
            if is_true(&mc, "Joined") && is_true(&mc, "Healthy") {
                ready += 1;
            }
        }
        if ready >= args.count {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(READY_POLL) => {}
            Some(ended) = members.join_next() => {
                return Err(Error::Task(format!("a simulated member stopped before all joined: {ended:?}")));
            }
        }
    }
}

/// Whether condition `type_` of an object's status is True.
pub fn is_true(object: &Object, type_: &str) -> bool {
    let conditions = object.status().and_then(|s| s.get("conditions")).and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| c["type"] == type_ && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> MembersArgs {
        MembersArgs {
            hub: vec!["127.0.0.1:1".into()],
            tls_dir: None,
            count: 3,
            prefix: "sim-".into(),
            labels: vec!["env=bench".into()],
            heartbeat_seconds: Some(5),
            regions: 4,
            data_dir: None,
            status_churn: None,
            drift_check_interval: None,
        }
    }

    #[test]
    fn documents_name_label_and_spread_the_members() {
        let doc = member_document(&args(), 6).unwrap();
        assert_eq!(doc["metadata"]["name"], "sim-0006");
        assert_eq!(doc["metadata"]["labels"][PREFIX_LABEL], "sim");
        assert_eq!(doc["metadata"]["labels"]["env"], "bench");
        assert_eq!(doc["metadata"]["labels"]["region"], "region-1");
        assert_eq!(doc["spec"]["heartbeatPeriodSeconds"], 5);
        let bad = MembersArgs { labels: vec!["nope".into()], ..args() };
        assert!(member_document(&bad, 1).is_err());
        assert!(check(&MembersArgs { prefix: "Sim".into(), ..args() }).is_err());
        assert!(check(&MembersArgs { count: 0, ..args() }).is_err());
        assert!(check(&args()).is_ok());
    }
}
