//! The Work loop: watch the cluster's namespace on any hub node (resuming
//! from the last resourceVersion when moving to another node, relisting when
//! told the version expired), and reconcile each Work that changed — or that
//! is still settling — into the target and back into the Work's status.

pub mod apply;
pub mod ledger;
pub mod waves;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use fleet_api::member::member_namespace;
use fleet_api::{work, Object};
use fleet_proto::fleet::{KindRef, UpdateStatusRequest, WatchRequest};
use futures::StreamExt;
use tokio::sync::{Mutex, Notify};

use crate::hub::Hub;
use crate::target::Target;
use crate::AgentError;
use ledger::Ledger;

/// How soon a Work that is not settled (not applied, or not available yet) is looked at again.
const RECHECK: Duration = Duration::from_millis(500);
/// Pause before re-watching after an error.
const REWATCH: Duration = Duration::from_millis(200);

/// The Works of this cluster as last seen, and which need reconciling.
#[derive(Default)]
struct State {
    works: BTreeMap<String, Object>,
    queue: BTreeSet<String>,
    /// Whether a first full list arrived: until then a missing Work may just
    /// not be known yet, so nothing is reconciled.
    listed: bool,
}

/// Runs the Work loop until the cluster leaves the fleet or a fatal error.
pub async fn run<T: Target>(
    cluster: String,
    hub: Arc<Hub>,
    target: Arc<T>,
    data_dir: std::path::PathBuf,
) -> Result<(), AgentError> {
    let state = Arc::new(Mutex::new(State::default()));
    let wake = Arc::new(Notify::new());
    let mut ledger = Ledger::load(&data_dir)?;
    {
        // Works recorded before a restart are checked once the first list tells what still exists.
        let mut s = state.lock().await;
        s.queue.extend(ledger.works());
    }
    let mut watcher = tokio::spawn(watch(cluster.clone(), hub.clone(), state.clone(), wake.clone()));
    // Whichever ends first ends the loop, with its own reason (e.g. the cluster left).
    let result = tokio::select! {
        r = reconcile_forever(&hub, target.as_ref(), &mut ledger, &state, &wake) => r,
        r = &mut watcher => match r {
            Ok(r) => r,
            Err(e) => Err(AgentError::Hub(format!("the Work watch failed: {e}"))),
        },
    };
    watcher.abort();
    result
}

async fn reconcile_forever<T: Target>(
    hub: &Hub,
    target: &T,
    ledger: &mut Ledger,
    state: &Mutex<State>,
    wake: &Notify,
) -> Result<(), AgentError> {
    loop {
        let next = {
            let mut s = state.lock().await;
            if s.listed {
                s.queue.pop_first()
            } else {
                None
            }
        };
        let Some(name) = next else {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(RECHECK) => {}
            }
            continue;
        };
        let work = state.lock().await.works.get(&name).cloned();
        let settled = reconcile(hub, target, ledger, &name, work).await?;
        if !settled {
            tokio::select! {
                _ = tokio::time::sleep(RECHECK) => {}
                _ = wake.notified() => {}
            }
            state.lock().await.queue.insert(name);
        }
    }
}

/// Reconciles one Work (or its removal). Returns whether it is settled.
async fn reconcile<T: Target>(
    hub: &Hub,
    target: &T,
    ledger: &mut Ledger,
    name: &str,
    work: Option<Object>,
) -> Result<bool, AgentError> {
    let Some(work) = work else {
        if let Some(previous) = ledger.get(name).cloned() {
            let left = apply::remove_work(target, &previous).await;
            if left.is_empty() {
                tracing::info!(work = name, "work deleted: removed everything it placed");
                ledger.set(name, None)?;
            } else {
                ledger.set(name, Some(ledger::Entry { generation: 0, placed: left }))?;
                return Ok(false);
            }
        }
        return Ok(true);
    };
    let previous = ledger.get(name).cloned();
    let reapply = previous.as_ref().is_none_or(|p| p.generation != work.metadata.generation);
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let outcome = apply::apply_work(target, &work, previous.as_ref(), reapply, &now).await;
    ledger.set(name, Some(outcome.entry.clone()))?;
    if work::status_of(&work) != outcome.status {
        let mut updated = work.clone();
        work::set_status(&mut updated, &outcome.status);
        let request = UpdateStatusRequest { object: updated.to_json() };
        match hub
            .call(|mut c| {
                let request = request.clone();
                async move { c.update_status(request).await }
            })
            .await
        {
            Ok(_) => {}
            // The Work changed meanwhile: its new version is on its way through the watch.
            Err(AgentError::Stale(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(outcome.settled)
}

/// Keeps `state` equal to the Works of the cluster's namespace.
async fn watch(cluster: String, hub: Arc<Hub>, state: Arc<Mutex<State>>, wake: Arc<Notify>) -> Result<(), AgentError> {
    let namespace = member_namespace(&cluster);
    let mut resource_version = 0u64;
    loop {
        let (index, mut client) = hub.client()?;
        let request = WatchRequest {
            kind: Some(KindRef { kind: "works".into(), api_version: String::new() }),
            namespace: namespace.clone(),
            all_namespaces: false,
            label_selector: String::new(),
            resource_version,
            min_resource_version: resource_version,
        };
        let relisting = resource_version == 0;
        let mut seen_in_list = BTreeSet::new();
        let stream = client.watch(request).await;
        let mut stream = match stream {
            Ok(s) => s.into_inner(),
            Err(status) => {
                handle_watch_error(&hub, index, &status, &mut resource_version)?;
                tokio::time::sleep(REWATCH).await;
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    resource_version = resource_version.max(event.resource_version);
                    let mut s = state.lock().await;
                    match event.r#type.as_str() {
                        "BOOKMARK" => {
                            if relisting {
                                // Works that vanished while we were not watching.
                                let gone: Vec<String> =
                                    s.works.keys().filter(|k| !seen_in_list.contains(*k)).cloned().collect();
                                for name in gone {
                                    s.works.remove(&name);
                                    s.queue.insert(name);
                                }
                                s.listed = true;
                            }
                        }
                        kind => {
                            let Ok(object) = Object::from_json(&event.object) else { continue };
                            let name = object.metadata.name.clone();
                            if kind == "DELETED" {
                                s.works.remove(&name);
                            } else {
                                seen_in_list.insert(name.clone());
                                s.works.insert(name.clone(), object);
                            }
                            s.queue.insert(name);
                        }
                    }
                    drop(s);
                    wake.notify_one();
                }
                Err(status) => {
                    handle_watch_error(&hub, index, &status, &mut resource_version)?;
                    break;
                }
            }
        }
        tokio::time::sleep(REWATCH).await;
    }
}

/// Decides how to go on after a watch error: relist on "expired", move to
/// another node when this one is gone, stop when the cluster left the fleet.
fn handle_watch_error(
    hub: &Hub,
    index: usize,
    status: &tonic::Status,
    resource_version: &mut u64,
) -> Result<(), AgentError> {
    match status.code() {
        tonic::Code::FailedPrecondition if status.message().contains("expired") => {
            tracing::info!("work watch expired at {resource_version}: relisting");
            *resource_version = 0;
            Ok(())
        }
        tonic::Code::PermissionDenied => Err(AgentError::from_status(status)),
        _ => {
            tracing::info!(endpoint = hub.endpoint(), "work watch interrupted ({}): moving on", status.message());
            hub.rotate(index);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expired_watch_relists_a_lost_node_moves_on_and_a_revoked_member_stops() {
        let hub = Hub::new(vec!["a:1".into(), "b:2".into()], tonic::transport::ClientTlsConfig::new());
        let mut rv = 42;
        let expired = tonic::Status::failed_precondition("resourceVersion 42 is too old ...: expired, relist");
        handle_watch_error(&hub, 0, &expired, &mut rv).unwrap();
        assert_eq!(rv, 0, "expired: relist from scratch");
        let mut rv = 42;
        handle_watch_error(&hub, 0, &tonic::Status::unavailable("node down"), &mut rv).unwrap();
        assert_eq!((rv, hub.endpoint()), (42, "b:2"), "resume from the same version on the next node");
        let left = tonic::Status::permission_denied("member cluster \"a\" has left the fleet");
        assert!(matches!(handle_watch_error(&hub, 1, &left, &mut rv), Err(AgentError::Left(_))));
    }
}
