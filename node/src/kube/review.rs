//! `kubectl auth can-i`: POST of a SelfSubjectAccessReview to
//! `/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, answered from
//! the caller's Fleet role by the same checks a real request of that verb
//! would meet (admin writes, viewer reads, a member agent its own Work;
//! the internal kinds admin only).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::errors::KubeError;
use super::resources::{self, Resource};
use super::{respond, KubeApi};
use crate::auth::{permit, Access, Caller};

/// The group and plural the review is posted to.
pub const GROUP: &str = "authorization.k8s.io";
/// The review's plural.
pub const PLURAL: &str = "selfsubjectaccessreviews";

fn access_of(verb: &str) -> Access {
    if matches!(verb, "get" | "list" | "watch") {
        Access::Read
    } else {
        Access::Write
    }
}

/// Whether `caller` may do what `spec` asks, and why not.
async fn decide(api: &KubeApi, caller: &Caller, all: &[Resource], spec: &Value) -> Result<(), String> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(attributes) = spec.get("nonResourceAttributes") {
        let verb = text(attributes, "verb");
        let rpc = format!("{verb} {}", text(attributes, "path"));
        return permit(caller.clone(), &rpc, access_of(&verb), false).map(drop).map_err(|s| s.message().to_string());
    }
    let attributes = spec.get("resourceAttributes").cloned().unwrap_or(Value::Null);
    let (verb, group, plural) = (text(&attributes, "verb"), text(&attributes, "group"), text(&attributes, "resource"));
    let access = access_of(&verb);
    let rpc = format!("{verb} {plural}");
    let caller = permit(caller.clone(), &rpc, access, access == Access::Read).map_err(|s| s.message().to_string())?;
    let Some(resource) = all.iter().find(|r| r.group == group && r.plural == plural) else {
        // `*` or a resource the hub does not serve: only what the role allows everywhere.
        return match (plural.as_str(), &caller.identity) {
            ("*", fleet_proto::tls::Identity::Admin) => Ok(()),
            ("*", _) => Err(format!("{rpc}: the role does not cover every resource")),
            _ => Err(format!("the server does not serve {plural:?} in group {group:?}")),
        };
    };
    let (kind, _) = crate::objects::read_view(resource.resolved());
    let namespace = text(&attributes, "namespace");
    api.objects.member_scope(&caller, &kind, &namespace, &rpc).await.map_err(|s| s.message().to_string())
}

/// POST `.../selfsubjectaccessreviews` (JSON or, as kubectl sends it,
/// protobuf): the review with its `status`, in JSON.
pub async fn review(api: Arc<KubeApi>, caller: Caller, content_type: &str, body: &[u8]) -> Result<Response, KubeError> {
    let mut review: Value = if content_type.starts_with(super::protobuf::MEDIA_TYPE) {
        super::protobuf::to_json(body)?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| KubeError::bad_request(format!("the request body is not a SelfSubjectAccessReview: {e}")))?
    };
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    if spec.get("resourceAttributes").is_none() && spec.get("nonResourceAttributes").is_none() {
        return Err(KubeError::invalid(
            &Default::default(),
            "SelfSubjectAccessReview is invalid:\nspec: Required value: exactly one of resourceAttributes or nonResourceAttributes",
        ));
    }
    let store = api.objects.store();
    let all = crate::service::blocking(move || resources::all(&store))
        .await
        .map_err(|s| KubeError::internal(s.message().to_string()))?;
    let status = match decide(&api, &caller, &all, &spec).await {
        Ok(()) => json!({"allowed": true, "reason": format!("the {} role allows it", caller.identity)}),
        Err(why) => json!({"allowed": false, "reason": why}),
    };
    review["kind"] = json!("SelfSubjectAccessReview");
    review["apiVersion"] = json!(format!("{GROUP}/v1"));
    review["status"] = status;
    Ok(respond::json(StatusCode::CREATED, &review))
}
