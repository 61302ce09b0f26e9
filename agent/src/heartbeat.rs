//! Heartbeats: every `heartbeatPeriodSeconds` (as the hub tells it) or a
//! little sooner, jittered so a fleet of agents does not beat in lockstep
//! and never later than the period, so a changed property reaches the hub
//! within one period as KubeFleet's agent reports it; carrying the
//! target's properties, resource usage and (with `--collect-namespaces`, as
//! KubeFleet's namespace collection is opt-in) namespaces, to any hub node. A
//! nudge (a namespace Fleet withdrew) beats at once, at most once per
//! [`MIN_NUDGED_GAP`]; the Work loop also beats itself ([`beat`]) before it
//! reports a Work that placed a namespace, so the hub knows the namespace
//! is there by the time the placement shows it applied.

use std::sync::Arc;
use std::time::Duration;

use fleet_proto::fleet::HeartbeatRequest;

use crate::hub::Hub;
use crate::targets::Target;
use crate::AgentError;

/// Until the hub says otherwise.
const INITIAL_PERIOD: Duration = Duration::from_secs(5);
/// The shortest time between two heartbeats when nudged: a burst of
/// namespace changes costs one heartbeat a second at most.
pub const MIN_NUDGED_GAP: Duration = Duration::from_secs(1);

/// 80 to 100 % of `period`, from a random draw.
pub fn jittered(period: Duration) -> Duration {
    let draw = (uuid::Uuid::new_v4().as_u128() % 1001) as f64 / 1000.0; // 0.0 ..= 1.0
    period.mul_f64(1.0 - 0.2 * draw)
}

/// Heartbeats until the cluster leaves the fleet.
pub async fn run<T: Target>(
    cluster: String,
    hub: Arc<Hub>,
    target: Arc<T>,
    nudge: Arc<tokio::sync::Notify>,
    collect_namespaces: bool,
) -> Result<(), AgentError> {
    let mut period = INITIAL_PERIOD;
    loop {
        match beat(&cluster, &hub, target.as_ref(), collect_namespaces).await {
            Ok(seconds) => period = Duration::from_secs(seconds.max(1)),
            Err(AgentError::Left(why)) => return Err(AgentError::Left(why)),
            Err(e) => tracing::warn!("heartbeat failed: {e}"),
        }
        let next = jittered(period);
        let sent = tokio::time::Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(next) => {}
            _ = nudge.notified() => tokio::time::sleep_until(sent + MIN_NUDGED_GAP.min(next)).await,
        }
    }
}

/// One heartbeat with the target's current report (its namespaces only
/// when `with_namespaces`); the hub's heartbeat period in seconds. The hub
/// has recorded the report when this returns.
pub async fn beat<T: Target>(cluster: &str, hub: &Hub, target: &T, with_namespaces: bool) -> Result<u64, AgentError> {
    let report = match target.report(with_namespaces).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("collecting properties failed: {e}");
            fleet_api::member::HeartbeatReport::default()
        }
    };
    let request =
        HeartbeatRequest { cluster: cluster.to_string(), report: serde_json::to_vec(&report).unwrap_or_default() };
    let reply = hub
        .call(|mut c| {
            let request = request.clone();
            async move { c.heartbeat(request).await }
        })
        .await?;
    tracing::trace!(properties = ?report.properties, allocatable = ?report.resource_usage.allocatable, "heartbeat recorded");
    Ok(reply.heartbeat_period_seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_never_waits_past_the_period() {
        let draws: Vec<Duration> = (0..1000).map(|_| jittered(Duration::from_secs(10))).collect();
        for d in &draws {
            assert!(*d >= Duration::from_secs(8) && *d <= Duration::from_secs(10), "{d:?}");
        }
        assert!(draws.iter().any(|d| *d < Duration::from_millis(9_500)), "the draws spread");
    }
}
