//! `fleet-agent`: the member side of Fleet. Joins the hub with a one-time
//! token, then over mTLS to any hub node: heartbeats with the cluster's
//! properties, watches its Work, applies it to its target (the embedded
//! simulated cluster, or a real Kubernetes cluster) and reports conditions.
//! On an embedded target it also takes out-of-band edits ([`edits`]).

pub mod config;
mod durable;
pub mod edits;
pub mod error;
pub mod heartbeat;
pub mod hub;
pub mod identity;
pub mod inspect;
pub mod targets;
pub mod works;

use std::sync::Arc;

pub use error::AgentError;

use config::AgentConfig;
use hub::Hub;
use targets::Target;

/// Runs the agent against `target` until `shutdown` resolves or the cluster
/// leaves the fleet (both end it cleanly).
pub async fn run<T: Target>(
    config: AgentConfig,
    target: T,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), AgentError> {
    let identity = match identity::load(&config.data_dir)? {
        Some(identity) => identity,
        None => identity::join(&config).await?,
    };
    let hub = Arc::new(Hub::new(config.hub.clone(), identity.tls()));
    let target = Arc::new(target);
    tracing::info!(cluster = %config.cluster, target = target.name(), "fleet-agent running");
    // The Work loop nudges the heartbeat when a namespace it placed comes or
    // goes, so ResourcePlacements into it need not wait a heartbeat period.
    let nudge = Arc::new(tokio::sync::Notify::new());
    let heartbeats =
        heartbeat::run(config.cluster.clone(), hub.clone(), target.clone(), nudge.clone(), config.collect_namespaces);
    let works = works::run(
        config.cluster.clone(),
        hub.clone(),
        target.clone(),
        config.data_dir.clone(),
        config.drift_check_interval,
        nudge,
        config.collect_namespaces,
    );
    let renewals = renew_forever(config.data_dir.clone(), hub.clone(), identity);
    let outcome = tokio::select! {
        r = heartbeats => r,
        r = works => r,
        r = renewals => r,
        _ = shutdown => Ok(()),
    };
    match outcome {
        Err(AgentError::Left(why)) => {
            tracing::warn!("{why}: stopping");
            Ok(())
        }
        other => other,
    }
}

/// Renews the certificate when two thirds of its life have passed.
async fn renew_forever(
    data_dir: std::path::PathBuf,
    hub: Arc<Hub>,
    mut identity: identity::Identity,
) -> Result<(), AgentError> {
    loop {
        let wait = identity.renewal_due().duration_since(std::time::SystemTime::now()).unwrap_or_default();
        tokio::time::sleep(wait.max(std::time::Duration::from_secs(1))).await;
        match identity::renew(&data_dir, &hub).await {
            Ok(renewed) => {
                hub.set_tls(renewed.tls());
                identity = renewed;
            }
            Err(AgentError::Left(why)) => return Err(AgentError::Left(why)),
            Err(e) => {
                tracing::warn!("certificate renewal failed, retrying: {e}");
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
        }
    }
}
