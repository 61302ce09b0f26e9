//! A Work's `executor` (mirrored from a ManifestWork's): before a manifest
//! is applied, its target says whether the service account may act on the
//! object ([`crate::targets::access`]). Refused, the manifest is not applied
//! and its `Applied` condition is False with OCM's reason and message, so
//! the ManifestWork reads as OCM's work agent would write it.
//!
//! The verbs are OCM's: `create`, `update`, `patch`, `get`, and `delete`
//! when the Work deletes its objects (checked in advance, so an object
//! applied can also be removed). A refused manifest leaves the Work
//! unsettled, so it is checked again and applied once the member's RBAC
//! allows it (a RoleBinding placed, say).

use fleet_api::ocm::manifestwork::ManifestWorkExecutor;
use fleet_api::Object;

use crate::targets::access::{Access, AccessRequest};
use crate::targets::Target;

/// OCM's reason of a manifest that failed to apply, the executor's refusal included.
pub const REASON_APPLY_FAILED: &str = "AppliedManifestFailed";

/// The verbs the executor needs on each object of a Work that deletes
/// its objects (`abandons` false) or leaves them (true).
pub fn verbs(abandons: bool) -> &'static [&'static str] {
    if abandons {
        &["create", "update", "patch", "get"]
    } else {
        &["create", "update", "patch", "get", "delete"]
    }
}

/// OCM's message for a refused manifest (`group resource, namespace
/// name`), then what the member said.
pub fn refusal_message(object: &Object, resource: &str, escalation: bool, why: &str) -> String {
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    let escalated = if escalation { ", error: permission escalation" } else { "" };
    format!(
        "Failed to apply manifest: not allowed to apply the resource {} {resource}, {namespace} {}{escalated}: {why}",
        object.group(),
        object.metadata.name,
    )
}

/// Whether `executor` may apply `object`: `Ok` if so (or if there is no
/// executor), else the condition's reason and message.
pub async fn check<T: Target>(
    target: &T,
    executor: Option<&ManifestWorkExecutor>,
    object: &Object,
    abandons: bool,
) -> Result<(), (String, String)> {
    let Some(executor) = executor else { return Ok(()) };
    let Some(subject) = executor.subject.service_account.as_ref() else {
        // Admission refuses this; a Work is checked again by the agent anyway.
        let message = "Failed to apply manifest: the executor service account is nil".to_string();
        return Err((REASON_APPLY_FAILED.into(), message));
    };
    let request = AccessRequest { subject, manifest: object, verbs: verbs(abandons) };
    match target.access(request).await {
        Ok(Access::Allowed) => Ok(()),
        Ok(Access::Refused { resource, escalation, why }) => {
            Err((REASON_APPLY_FAILED.into(), refusal_message(object, &resource, escalation, &why)))
        }
        Err(e) => Err((REASON_APPLY_FAILED.into(), format!("Failed to apply manifest: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::embedded::{EmbeddedTarget, SimConfig};
    use crate::works::apply::apply_work;
    use fleet_api::work::{WorkStatus, CONDITION_APPLIED};
    use serde_json::{json, Value};

    fn object(value: Value) -> Object {
        serde_json::from_value(value).unwrap()
    }

    fn work(manifests: Vec<Value>, abandon: bool) -> Object {
        let mut spec = json!({"workload": {"manifests": manifests},
            "executor": {"subject": {"type": "ServiceAccount", "serviceAccount": {"namespace": "app", "name": "deployer"}}}});
        if abandon {
            spec["deleteOptions"] = json!({"propagationPolicy": "Abandon"});
        }
        object(json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "fleet-member-a", "generation": 1}, "spec": spec}))
    }

    fn applied(status: &WorkStatus, ordinal: i64) -> (String, String, String) {
        let m = status.manifest_conditions.iter().find(|m| m.identifier.ordinal == ordinal).unwrap();
        let c = m.conditions.iter().find(|c| c.type_ == CONDITION_APPLIED).unwrap();
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    fn cluster() -> (tempfile::TempDir, EmbeddedTarget) {
        let dir = tempfile::tempdir().unwrap();
        let target = EmbeddedTarget::open(dir.path(), SimConfig::default()).unwrap();
        target
            .create_unmanaged(&object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}})))
            .unwrap();
        (dir, target)
    }

    fn grant(target: &EmbeddedTarget, name: &str, rules: Value) {
        let group = "rbac.authorization.k8s.io";
        target
            .create_unmanaged(&object(json!({"apiVersion": format!("{group}/v1"), "kind": "Role",
                "metadata": {"name": name, "namespace": "app"}, "rules": rules})))
            .unwrap();
        target
            .create_unmanaged(&object(json!({"apiVersion": format!("{group}/v1"), "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": "app"},
                "roleRef": {"apiGroup": group, "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": "app"}]})))
            .unwrap();
    }

    fn configmap() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "app"}})
    }

    #[tokio::test]
    async fn a_manifest_the_executor_may_not_apply_waits_for_a_binding() {
        let (_dir, target) = cluster();
        let w = work(vec![configmap()], false);
        let out = apply_work(&target, &w, None, true, "t").await;
        let (status, reason, message) = applied(&out.status, 0);
        assert_eq!((status.as_str(), reason.as_str()), ("False", REASON_APPLY_FAILED));
        assert!(
            message.starts_with("Failed to apply manifest: not allowed to apply the resource  configmaps, app c"),
            "{message}"
        );
        assert!(message.contains("system:serviceaccount:app:deployer"), "{message}");
        assert!(!out.settled);
        assert!(out.entry.placed.is_empty());
        // Without delete the Work that deletes its objects is still refused.
        grant(
            &target,
            "no-delete",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update", "patch", "get"]}]),
        );
        let out = apply_work(&target, &w, Some(&out.entry), true, "t").await;
        assert_eq!(applied(&out.status, 0).0, "False");
        assert!(applied(&out.status, 0).2.contains("delete"), "{}", applied(&out.status, 0).2);
        // ... and one that abandons them is not.
        let abandoning = work(vec![configmap()], true);
        let kept = apply_work(&target, &abandoning, None, true, "t").await;
        assert_eq!(applied(&kept.status, 0).0, "True");
        assert!(kept.settled);
    }

    #[tokio::test]
    async fn a_bound_role_lets_the_executor_apply() {
        let (_dir, target) = cluster();
        grant(&target, "deployer", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]));
        let out = apply_work(&target, &work(vec![configmap()], false), None, true, "t").await;
        assert_eq!(applied(&out.status, 0).1, "ManifestApplied");
        assert!(out.settled);
    }

    #[tokio::test]
    async fn a_role_granting_more_than_the_executor_holds_is_an_escalation() {
        let (_dir, target) = cluster();
        grant(
            &target,
            "deployer",
            json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
            "verbs": ["create", "update", "patch", "get", "delete"]}]),
        );
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "secrets", "namespace": "app"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
        let out = apply_work(&target, &work(vec![role], false), None, true, "t").await;
        let (status, reason, message) = applied(&out.status, 0);
        assert_eq!((status.as_str(), reason.as_str()), ("False", REASON_APPLY_FAILED));
        assert!(
            message.contains("rbac.authorization.k8s.io roles, app secrets, error: permission escalation"),
            "{message}"
        );
    }

    #[test]
    fn a_work_that_leaves_its_objects_needs_no_delete() {
        assert!(verbs(false).contains(&"delete"));
        assert!(!verbs(true).contains(&"delete"));
    }
}
