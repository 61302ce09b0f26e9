//! A Work executor's permissions on a real cluster, decided by the
//! cluster's RBAC as OCM's work agent asks it: one SubjectAccessReview per
//! verb for the service account (its user name and groups), and for a role
//! or binding a dry-run create made as the service account
//! (`Impersonate-User`, `Impersonate-Group`), since only the API server's
//! own escalation check can tell whether it may grant what it holds. The
//! agent's identity needs `create` on `subjectaccessreviews` and
//! `impersonate` on service accounts for Works with an executor.

use http::header::HeaderValue;
use kube::api::PostParams;
use serde_json::{json, Value};

use super::errors::{is_not_found, map_error};
use super::{apply_configuration, not_served, KubernetesTarget};
use crate::targets::access::{Access, AccessRequest};
use crate::targets::{ResourceId, TargetError};

/// Where SubjectAccessReviews are created.
const SAR_PATH: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// The SubjectAccessReview asking whether the request's subject may `verb`
/// the object `id` of resource `resource`.
fn review(request: &AccessRequest<'_>, id: &ResourceId, resource: &str, verb: &str) -> Value {
    let sa = request.subject;
    json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": sa.user_name(),
            "groups": sa.groups(),
            "resourceAttributes": {
                "group": id.group, "version": id.version, "resource": resource,
                "namespace": id.namespace, "name": id.name, "verb": verb,
            },
        },
    })
}

fn header(value: &str) -> Result<HeaderValue, TargetError> {
    HeaderValue::from_str(value).map_err(|e| TargetError::Invalid(format!("cannot impersonate {value:?}: {e}")))
}

impl KubernetesTarget {
    /// Decides `request` by the cluster's RBAC (see the module doc).
    pub(super) async fn decide_access(&self, request: &AccessRequest<'_>) -> Result<Access, TargetError> {
        let id = ResourceId::of(request.manifest);
        let located = self.locate(&id, "apply").await?.ok_or_else(|| not_served(&id))?;
        let resource = located.resource.plural.clone();
        for verb in request.verbs {
            let body = serde_json::to_vec(&review(request, &id, &resource, verb))
                .map_err(|e| TargetError::Invalid(format!("cannot encode a SubjectAccessReview: {e}")))?;
            let http = kube::core::Request::new(SAR_PATH)
                .create(&PostParams::default(), body)
                .map_err(|e| TargetError::Invalid(format!("cannot build a SubjectAccessReview: {e}")))?;
            let answer: Value = self
                .client
                .request(http)
                .await
                .map_err(|e| map_error("cannot create a SubjectAccessReview for a Work's executor", e))?;
            let status = answer.get("status");
            if !status.and_then(|s| s.get("allowed")).and_then(Value::as_bool).unwrap_or(false) {
                let said = status.and_then(|s| s.get("reason")).and_then(Value::as_str).unwrap_or_default();
                let why = format!("{} may not {verb} {id}{}", request.subject.user_name(), reason_text(said));
                return Ok(Access::Refused { resource, escalation: false, why });
            }
        }
        if request.is_rbac() {
            // Only the object's rules matter to the escalation check: no record.
            let mode = super::ApplyMode::ServerSide { force: false };
            let body = apply_configuration(request.manifest, "", located.resource.namespaced, mode);
            let body = serde_json::to_vec(&body)
                .map_err(|e| TargetError::Invalid(format!("cannot encode {id} for a dry run: {e}")))?;
            let params = PostParams { dry_run: true, ..PostParams::default() };
            let mut http = kube::core::Request::new(&located.collection)
                .create(&params, body)
                .map_err(|e| TargetError::Invalid(format!("cannot build a dry run of {id}: {e}")))?;
            let headers = http.headers_mut();
            headers.insert("Impersonate-User", header(&request.subject.user_name())?);
            for group in request.subject.groups() {
                headers.append("Impersonate-Group", header(&group)?);
            }
            match self.client.request::<Value>(http).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 403 => {
                    return Ok(Access::Refused { resource, escalation: true, why: status.message });
                }
                // The API server checks escalation before existence.
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(map_error(&format!("cannot dry-run {id} as a Work's executor"), e)),
            }
        }
        Ok(Access::Allowed)
    }
}

fn reason_text(said: &str) -> String {
    if said.is_empty() {
        String::new()
    } else {
        format!(" ({said})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::ocm::manifestwork::ServiceAccountRef;
    use fleet_api::Object;

    #[test]
    fn a_review_names_the_service_account_its_groups_and_the_object() {
        let manifest: Object = serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "app"}}))
        .unwrap();
        let sa = ServiceAccountRef { namespace: "app".into(), name: "deployer".into() };
        let request = AccessRequest { subject: &sa, manifest: &manifest, verbs: &["create"] };
        let body = review(&request, &ResourceId::of(&manifest), "deployments", "patch");
        assert_eq!(body["spec"]["user"], "system:serviceaccount:app:deployer");
        assert_eq!(
            body["spec"]["groups"],
            json!(["system:serviceaccounts", "system:serviceaccounts:app", "system:authenticated"])
        );
        assert_eq!(
            body["spec"]["resourceAttributes"],
            json!({"group": "apps", "version": "v1", "resource": "deployments", "namespace": "app", "name": "web", "verb": "patch"})
        );
    }
}
