//! The minimal in-memory target of a simulated member: objects in a map,
//! the agent's ownership rule, a fixed size to report. Nothing is written to
//! disk, so a thousand members cost a thousand small maps.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fleet_agent::targets::OWNER_ANNOTATION;
use fleet_agent::targets::{check_owner, Applied, ApplyOutcome, ApplyRequest, ResourceId, Target, TargetError};
use fleet_api::member::HeartbeatReport;
use fleet_api::Object;

/// Node count every simulated member reports.
pub const NODES: &str = "3";
/// Allocatable (and available) CPU every simulated member reports.
pub const CPU: &str = "12";
/// Allocatable (and available) memory every simulated member reports.
pub const MEMORY: &str = "48Gi";

/// One simulated member's objects (clones share them).
#[derive(Default, Clone)]
pub struct MemoryTarget {
    objects: Arc<Mutex<BTreeMap<ResourceId, Object>>>,
    /// When set, every Deployment reads as available with a status whose
    /// `Available` condition's `lastUpdateTime` moves each period, as a
    /// workload whose pods come and go: the load of status back-reporting.
    status_churn: Option<Duration>,
}

impl MemoryTarget {
    /// A target whose Deployments' status changes every `period`.
    pub fn with_status_churn(period: Duration) -> MemoryTarget {
        MemoryTarget { status_churn: Some(period), ..MemoryTarget::default() }
    }

    /// The object as read: a Deployment gets its churning status.
    fn read(&self, mut object: Object) -> Object {
        let Some(period) = self.status_churn.filter(|p| !p.is_zero()) else { return object };
        if object.kind != "Deployment" || object.group() != "apps" {
            return object;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let tick = now.as_secs() - now.as_secs() % period.as_secs().max(1);
        let replicas = object.spec().and_then(|s| s.get("replicas")).and_then(serde_json::Value::as_i64).unwrap_or(1);
        let updated = fleet_api::time::rfc3339(i64::try_from(tick).unwrap_or(0));
        object.rest.insert(
            "status".into(),
            serde_json::json!({
                "observedGeneration": object.metadata.generation,
                "replicas": replicas, "updatedReplicas": replicas,
                "readyReplicas": replicas, "availableReplicas": replicas,
                "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                "lastUpdateTime": updated}]
            }),
        );
        object
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ResourceId, Object>> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

impl Target for MemoryTarget {
    fn name(&self) -> &'static str {
        "embedded"
    }

    async fn apply(&self, request: ApplyRequest<'_>) -> Result<Applied, TargetError> {
        let id = ResourceId::of(request.manifest);
        let mut objects = self.lock();
        let mut live = request.manifest.clone();
        live.metadata.annotations.insert(OWNER_ANNOTATION.into(), request.owner.into());
        let outcome = match objects.get(&id) {
            Some(existing) => {
                check_owner(existing, request.owner, request.take_over)?;
                live.metadata.generation = existing.metadata.generation;
                if existing.metadata.annotations == live.metadata.annotations
                    && existing.metadata.labels == live.metadata.labels
                    && existing.rest == live.rest
                {
                    return Ok(Applied { outcome: ApplyOutcome::Unchanged, live: self.read(existing.clone()) });
                }
                live.metadata.generation += 1;
                ApplyOutcome::Updated
            }
            None => {
                live.metadata.generation = 1;
                ApplyOutcome::Created
            }
        };
        objects.insert(id, live.clone());
        Ok(Applied { outcome, live: self.read(live) })
    }

    async fn get(&self, id: &ResourceId) -> Result<Option<Object>, TargetError> {
        Ok(self.lock().get(id).cloned().map(|o| self.read(o)))
    }

    async fn delete(&self, id: &ResourceId) -> Result<bool, TargetError> {
        Ok(self.lock().remove(id).is_some())
    }

    async fn report(&self, _with_namespaces: bool) -> Result<HeartbeatReport, TargetError> {
        let mut report = HeartbeatReport::default();
        report.properties.insert("kubernetes-fleet.io/node-count".into(), NODES.into());
        for (resource, value) in [("cpu", CPU), ("memory", MEMORY)] {
            report.resource_usage.capacity.insert(resource.into(), value.into());
            report.resource_usage.allocatable.insert(resource.into(), value.into());
            report.resource_usage.available.insert(resource.into(), value.into());
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use fleet_agent::targets::ApplyMode;

    use super::*;

    fn config_map(value: &str) -> Object {
        Object::from_json(
            format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c","namespace":"n"}},"data":{{"v":"{value}"}}}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    fn request<'a>(manifest: &'a Object, owner: &'a str) -> ApplyRequest<'a> {
        ApplyRequest { manifest, mode: ApplyMode::ClientSide, owner, take_over: false }
    }

    #[tokio::test]
    async fn applies_updates_refuses_other_owners_and_deletes() {
        let target = MemoryTarget::default();
        let first = config_map("1");
        assert_eq!(target.apply(request(&first, "ns/w")).await.unwrap().outcome, ApplyOutcome::Created);
        assert_eq!(target.apply(request(&first, "ns/w")).await.unwrap().outcome, ApplyOutcome::Unchanged);
        let second = config_map("2");
        let updated = target.apply(request(&second, "ns/w")).await.unwrap();
        assert_eq!((updated.outcome, updated.live.metadata.generation), (ApplyOutcome::Updated, 2));
        assert!(matches!(target.apply(request(&second, "ns/other")).await, Err(TargetError::Conflict(_))));
        let id = ResourceId::of(&second);
        assert!(target.delete(&id).await.unwrap());
        assert!(target.is_empty());
        assert!(target.report(false).await.unwrap().resource_usage.available.contains_key("cpu"));
    }

    #[tokio::test]
    async fn a_churning_target_shows_deployments_available_with_a_moving_status() {
        let deployment = Object::from_json(
            br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"n"},"spec":{"replicas":2}}"#,
        )
        .unwrap();
        let plain = MemoryTarget::default();
        assert!(plain.apply(request(&deployment, "ns/w")).await.unwrap().live.status().is_none());

        let churning = MemoryTarget::with_status_churn(Duration::from_secs(5));
        let live = churning.apply(request(&deployment, "ns/w")).await.unwrap().live;
        assert_eq!(
            fleet_agent::targets::availability::availability(&live),
            fleet_agent::targets::availability::Availability::Available
        );
        let updated = live.status().and_then(|s| s.pointer("/conditions/0/lastUpdateTime")).cloned();
        let seconds = updated.as_ref().and_then(|v| v.as_str()).and_then(fleet_api::time::unix_seconds);
        assert_eq!(seconds.map(|s| s % 5), Some(0), "a multiple of the period: {updated:?}");
        // Other kinds are left as they are.
        let cm = config_map("1");
        assert!(churning.apply(request(&cm, "ns/w")).await.unwrap().live.status().is_none());
    }
}
