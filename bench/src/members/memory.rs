//! The minimal in-memory target of a simulated member: objects in a map,
//! the agent's ownership rule, a fixed size to report. Nothing is written to
//! disk, so a thousand members cost a thousand small maps.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

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
}

impl MemoryTarget {
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
                    return Ok(Applied { outcome: ApplyOutcome::Unchanged, live: existing.clone() });
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
        Ok(Applied { outcome, live })
    }

    async fn get(&self, id: &ResourceId) -> Result<Option<Object>, TargetError> {
        Ok(self.lock().get(id).cloned())
    }

    async fn delete(&self, id: &ResourceId) -> Result<bool, TargetError> {
        Ok(self.lock().remove(id).is_some())
    }

    async fn report(&self) -> Result<HeartbeatReport, TargetError> {
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
        assert!(target.report().await.unwrap().resource_usage.available.contains_key("cpu"));
    }
}
