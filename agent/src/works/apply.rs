//! Applying one Work to the target: manifests in waves, refusing
//! `generateName` and duplicates, deleting what the Work no longer holds, and
//! folding the per-manifest results into the Work's `Applied`/`Available`.

use std::collections::BTreeSet;

use fleet_api::conditions::{set_condition, Condition};
use fleet_api::work::{
    self, ManifestCondition, WorkResourceIdentifier, WorkStatus, CONDITION_APPLIED, CONDITION_AVAILABLE,
    REASON_ALL_APPLIED, REASON_ALL_AVAILABLE, REASON_NOT_TRACKABLE, REASON_SOME_NOT_APPLIED, REASON_SOME_NOT_AVAILABLE,
};
use fleet_api::Object;

use super::ledger::Entry;
use super::waves::wave;
use crate::target::availability::{availability, Availability};
use crate::target::{ApplyMode, ApplyRequest, ResourceId, Target, TargetError};

/// What applying a Work produced.
#[derive(Debug, Clone)]
pub struct WorkOutcome {
    /// The Work's new status.
    pub status: WorkStatus,
    /// The ledger record: what is placed now, and the generation if complete.
    pub entry: Entry,
    /// Whether anything still needs watching (not applied or not yet available).
    pub settled: bool,
}

struct Manifest {
    ordinal: usize,
    object: Option<Object>,
    identifier: WorkResourceIdentifier,
    refusal: Option<(String, String)>,
}

fn identifier(ordinal: usize, value: &serde_json::Value) -> WorkResourceIdentifier {
    let text = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    let api_version = text(value.get("apiVersion"));
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let meta = value.get("metadata");
    WorkResourceIdentifier {
        ordinal: ordinal as i64,
        group,
        version,
        kind: text(value.get("kind")),
        resource: String::new(),
        namespace: text(meta.and_then(|m| m.get("namespace"))),
        name: text(meta.and_then(|m| m.get("name"))),
    }
}

/// Reads the manifests, marking those that cannot be applied and why.
fn manifests(spec: &work::WorkSpec) -> Vec<Manifest> {
    let mut seen = BTreeSet::new();
    spec.workload
        .manifests
        .iter()
        .enumerate()
        .map(|(ordinal, value)| {
            let identifier = identifier(ordinal, value);
            let parsed: Result<Object, _> = serde_json::from_value(value.clone());
            let refusal = match &parsed {
                Err(e) => Some(("ManifestInvalid".to_string(), format!("manifest {ordinal} is not an object: {e}"))),
                Ok(o) if o.metadata.generate_name.is_some() && o.metadata.name.is_empty() => Some((
                    "GenerateNameNotSupported".to_string(),
                    format!("manifest {ordinal} uses metadata.generateName: Fleet places objects by name, give it metadata.name"),
                )),
                Ok(o) if !seen.insert(ResourceId::of(o)) => Some((
                    "DuplicateManifest".to_string(),
                    format!("manifest {ordinal} is the same object as an earlier manifest ({})", ResourceId::of(o)),
                )),
                Ok(_) => None,
            };
            Manifest { ordinal, object: parsed.ok(), identifier, refusal }
        })
        .collect()
}

fn mode(spec: &work::WorkSpec) -> ApplyMode {
    let strategy = spec.apply_strategy.clone().unwrap_or_default();
    match strategy.apply_type() {
        "ServerSideApply" => {
            ApplyMode::ServerSide { force: strategy.server_side_apply_config.map(|c| c.force).unwrap_or(false) }
        }
        _ => ApplyMode::ClientSide,
    }
}

/// Applies (or, with `reapply` false, only re-checks) a Work. `previous` is
/// what the ledger says this Work placed before; `now` stamps transitions.
pub async fn apply_work<T: Target>(
    target: &T,
    work_object: &Object,
    previous: Option<&Entry>,
    reapply: bool,
    now: &str,
) -> WorkOutcome {
    let spec = work::spec_of(work_object);
    let generation = work_object.metadata.generation;
    let owner =
        format!("{}/{}", work_object.metadata.namespace.as_deref().unwrap_or_default(), work_object.metadata.name);
    let mut items = manifests(&spec);
    items.sort_by_key(|m| {
        let id = &m.identifier;
        (wave(&id.group, &id.kind), m.ordinal)
    });
    let mode = mode(&spec);
    let old = work::status_of(work_object);
    let mut placed = Vec::new();
    let mut manifest_conditions = Vec::new();
    let (mut applied_all, mut any_pending, mut any_untrackable) = (true, false, false);
    for m in &items {
        let previous_conditions = old
            .manifest_conditions
            .iter()
            .find(|c| c.identifier == m.identifier)
            .map(|c| c.conditions.clone())
            .unwrap_or_default();
        let mut conditions = previous_conditions;
        let applied = match (&m.refusal, &m.object) {
            (Some((reason, message)), _) => Err((reason.clone(), message.clone())),
            (None, Some(object)) if reapply => {
                match target.apply(ApplyRequest { manifest: object, mode, owner: &owner }).await {
                    Ok(a) => Ok(a.live),
                    Err(e) => Err((failure_reason(&e).to_string(), e.to_string())),
                }
            }
            (None, Some(object)) => match target.get(&ResourceId::of(object)).await {
                Ok(Some(live)) => Ok(live),
                Ok(None) => {
                    Err(("ManifestMissing".into(), format!("{} is gone from the cluster", ResourceId::of(object))))
                }
                Err(e) => Err((failure_reason(&e).to_string(), e.to_string())),
            },
            (None, None) => Err(("ManifestInvalid".into(), "manifest could not be read".into())),
        };
        match applied {
            Ok(live) => {
                placed.push(ResourceId::of(&live));
                set_condition(
                    &mut conditions,
                    Condition::new(CONDITION_APPLIED, true, "ManifestApplied", "applied").observing(generation),
                    now,
                );
                let available = match availability(&live) {
                    Availability::Available => {
                        Condition::new(CONDITION_AVAILABLE, true, "ManifestAvailable", "available")
                    }
                    Availability::NotTrackable => {
                        any_untrackable = true;
                        Condition::new(
                            CONDITION_AVAILABLE,
                            true,
                            "ManifestNotTrackable",
                            "availability is not tracked for this kind",
                        )
                    }
                    Availability::NotYetAvailable(why) => {
                        any_pending = true;
                        Condition::new(CONDITION_AVAILABLE, false, "ManifestNotAvailableYet", why)
                    }
                };
                set_condition(&mut conditions, available.observing(generation), now);
            }
            Err((reason, message)) => {
                applied_all = false;
                set_condition(
                    &mut conditions,
                    Condition::new(CONDITION_APPLIED, false, &reason, message).observing(generation),
                    now,
                );
                conditions.retain(|c| c.type_ != CONDITION_AVAILABLE);
            }
        }
        manifest_conditions.push(ManifestCondition {
            identifier: m.identifier.clone(),
            conditions,
            ..Default::default()
        });
    }
    manifest_conditions.sort_by_key(|c| c.identifier.ordinal);

    // Delete what this Work placed before and holds no more (later waves first).
    let keep: BTreeSet<&ResourceId> = placed.iter().collect();
    let mut gone: Vec<ResourceId> =
        previous.map(|p| p.placed.iter().filter(|id| !keep.contains(id)).cloned().collect()).unwrap_or_default();
    gone.sort_by_key(|id| std::cmp::Reverse(wave(&id.group, &id.kind)));
    let mut still_placed = placed.clone();
    for id in gone {
        if let Err(e) = target.delete(&id).await {
            tracing::warn!(work = %owner, "could not delete {id}: {e}");
            still_placed.push(id);
            applied_all = false;
        }
    }

    let mut conditions = old.conditions.clone();
    let applied = if applied_all {
        Condition::new(CONDITION_APPLIED, true, REASON_ALL_APPLIED, "all manifests are applied")
    } else {
        let failed = manifest_conditions
            .iter()
            .filter(|c| !c.conditions.iter().any(|x| x.type_ == CONDITION_APPLIED && x.is_true()))
            .count();
        Condition::new(CONDITION_APPLIED, false, REASON_SOME_NOT_APPLIED, format!("{failed} manifests are not applied"))
    };
    set_condition(&mut conditions, applied.observing(generation), now);
    if applied_all {
        let available = if any_pending {
            Condition::new(
                CONDITION_AVAILABLE,
                false,
                REASON_SOME_NOT_AVAILABLE,
                "some manifests are not available yet",
            )
        } else if any_untrackable {
            Condition::new(
                CONDITION_AVAILABLE,
                true,
                REASON_NOT_TRACKABLE,
                "all trackable manifests are available; some are not trackable",
            )
        } else {
            Condition::new(CONDITION_AVAILABLE, true, REASON_ALL_AVAILABLE, "all manifests are available")
        };
        set_condition(&mut conditions, available.observing(generation), now);
    } else {
        conditions.retain(|c| c.type_ != CONDITION_AVAILABLE);
    }
    WorkOutcome {
        status: WorkStatus { conditions, manifest_conditions },
        entry: Entry {
            generation: if applied_all { generation } else { 0 },
            placed: still_placed,
            abandon_on_delete: spec.abandons_on_delete(),
        },
        settled: applied_all && !any_pending,
    }
}

fn failure_reason(e: &TargetError) -> &'static str {
    match e {
        TargetError::Invalid(_) => "ManifestApplyFailed",
        TargetError::Conflict(_) => "ManifestConflict",
        TargetError::Unavailable(_) => "ClusterUnavailable",
    }
}

/// Deletes everything a removed Work placed (later waves first); returns
/// what could not be deleted. Only for Works deleted with `propagationPolicy:
/// Delete`: an abandoning Work's objects are never passed here
/// (see [`super::forget_work`]).
pub async fn remove_work<T: Target>(target: &T, previous: &Entry) -> Vec<ResourceId> {
    let mut ids = previous.placed.clone();
    ids.sort_by_key(|id| std::cmp::Reverse(wave(&id.group, &id.kind)));
    let mut left = Vec::new();
    for id in ids {
        if let Err(e) = target.delete(&id).await {
            tracing::warn!("could not delete {id}: {e}");
            left.push(id);
        }
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::embedded::{EmbeddedTarget, SimConfig};
    use serde_json::json;

    fn work(manifests: Vec<serde_json::Value>) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "fleet-member-a", "generation": 1},
            "spec": {"workload": {"manifests": manifests}}
        }))
        .unwrap()
    }

    fn applied(status: &WorkStatus, ordinal: i64) -> (String, String) {
        let m = status.manifest_conditions.iter().find(|m| m.identifier.ordinal == ordinal).unwrap();
        let c = m.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).unwrap();
        (c.status.clone(), c.reason.clone())
    }

    #[tokio::test]
    async fn generate_name_and_duplicates_are_refused_with_reasons_and_the_rest_applies_in_waves() {
        let dir = tempfile::tempdir().unwrap();
        let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
        // The ConfigMap comes before its Namespace in the Work: waves fix the order.
        let w = work(vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g-", "namespace": "n"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}),
        ]);
        let out = apply_work(&target, &w, None, true, "t").await;
        assert_eq!(applied(&out.status, 0), ("True".into(), "ManifestApplied".into()));
        assert_eq!(applied(&out.status, 1), ("True".into(), "ManifestApplied".into()));
        assert_eq!(applied(&out.status, 2), ("False".into(), "GenerateNameNotSupported".into()));
        assert_eq!(applied(&out.status, 3), ("False".into(), "DuplicateManifest".into()));
        let work_applied = out.status.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).unwrap();
        assert_eq!((work_applied.status.as_str(), work_applied.reason.as_str()), ("False", REASON_SOME_NOT_APPLIED));
        assert!(!out.settled);
        assert_eq!(out.entry.placed.len(), 2, "{:?}", out.entry.placed);
    }

    #[tokio::test]
    async fn manifests_dropped_from_a_work_are_deleted_in_reverse_waves() {
        let dir = tempfile::tempdir().unwrap();
        let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}});
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}});
        let first = apply_work(&target, &work(vec![ns.clone(), cm]), None, true, "t").await;
        assert!(first.settled);
        let second = apply_work(&target, &work(vec![ns]), Some(&first.entry), true, "t").await;
        assert_eq!(second.entry.placed.len(), 1);
        let id = ResourceId {
            group: "".into(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "n".into(),
            name: "c".into(),
        };
        assert!(target.get(&id).await.unwrap().is_none());
    }
}
