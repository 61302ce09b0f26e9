//! `kubectl auth can-i`: POST of a SelfSubjectAccessReview to
//! `/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, and of a
//! SelfSubjectRulesReview (`can-i --list`) to `.../selfsubjectrulesreviews`.
//! A user's review is answered by the RBAC evaluator that decides its real
//! requests ([`crate::rbac`]); a member agent's by the checks its requests
//! meet (its own Work only).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use fleet_rbac::Attributes;
use serde_json::{json, Value};

use super::errors::KubeError;
use super::resources::{self, Resource};
use super::{respond, KubeApi};
use crate::auth::{permit, Access, Caller};

/// The group and plural the review is posted to.
pub const GROUP: &str = "authorization.k8s.io";
/// The review's plural.
pub const PLURAL: &str = "selfsubjectaccessreviews";
/// The rules review's plural.
pub const RULES_PLURAL: &str = "selfsubjectrulesreviews";

fn access_of(verb: &str) -> Access {
    if matches!(verb, "get" | "list" | "watch") {
        Access::Read
    } else {
        Access::Write
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// What a review's spec asks about.
fn attributes_of(spec: &Value) -> Attributes {
    if let Some(attributes) = spec.get("nonResourceAttributes") {
        return Attributes::path(&text(attributes, "verb"), &text(attributes, "path"));
    }
    let a = spec.get("resourceAttributes").cloned().unwrap_or(Value::Null);
    Attributes::resource(
        &text(&a, "verb"),
        &text(&a, "group"),
        &text(&a, "resource"),
        &text(&a, "namespace"),
        &text(&a, "name"),
    )
    .on_subresource(&text(&a, "subresource"))
}

/// Whether a member agent may do what `spec` asks, and why not.
async fn decide_member(api: &KubeApi, caller: &Caller, all: &[Resource], spec: &Value) -> Result<(), String> {
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
        return Err(format!("the server does not serve {plural:?} in group {group:?}"));
    };
    let (kind, _) = crate::objects::read_view(resource.resolved());
    let namespace = text(&attributes, "namespace");
    api.objects.member_scope(&caller, &kind, &namespace, &rpc).await.map_err(|s| s.message().to_string())
}

/// The review posted, as JSON.
fn parse_body(content_type: &str, body: &[u8], kind: &str) -> Result<Value, KubeError> {
    if content_type.starts_with(super::protobuf::MEDIA_TYPE) {
        super::protobuf::to_json(body)
    } else {
        serde_json::from_slice(body)
            .map_err(|e| KubeError::bad_request(format!("the request body is not a {kind}: {e}")))
    }
}

/// POST `.../selfsubjectaccessreviews` (JSON or, as kubectl sends it,
/// protobuf): the review with its `status`, in JSON.
pub async fn review(api: Arc<KubeApi>, caller: Caller, content_type: &str, body: &[u8]) -> Result<Response, KubeError> {
    let mut review = parse_body(content_type, body, "SelfSubjectAccessReview")?;
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    if spec.get("resourceAttributes").is_none() && spec.get("nonResourceAttributes").is_none() {
        return Err(KubeError::invalid(
            &Default::default(),
            "SelfSubjectAccessReview is invalid:\nspec: Required value: exactly one of resourceAttributes or nonResourceAttributes",
        ));
    }
    let status = match crate::rbac::user_of(&caller.identity) {
        Some(user) => {
            let policy = api.objects.authorizer().policy().await.map_err(|s| KubeError::internal(s.message()))?;
            let decision = policy.authorize(&user, &attributes_of(&spec));
            if decision.allowed {
                json!({"allowed": true, "reason": decision.reason})
            } else {
                json!({"allowed": false, "reason": decision.reason})
            }
        }
        None => {
            let store = api.objects.store();
            let all = crate::blocking::blocking(move || resources::all(&store))
                .await
                .map_err(|s| KubeError::internal(s.message().to_string()))?;
            match decide_member(&api, &caller, &all, &spec).await {
                Ok(()) => json!({"allowed": true, "reason": format!("{} may do this", caller.identity)}),
                Err(why) => json!({"allowed": false, "reason": why}),
            }
        }
    };
    review["kind"] = json!("SelfSubjectAccessReview");
    review["apiVersion"] = json!(format!("{GROUP}/v1"));
    review["status"] = status;
    Ok(respond::json(StatusCode::CREATED, &review))
}

/// POST `.../selfsubjectrulesreviews`: every rule the caller holds in
/// `spec.namespace` (cluster-wide ones included). Member agents get an
/// incomplete, empty answer: their rights are not RBAC rules.
pub async fn rules_review(
    api: Arc<KubeApi>,
    caller: Caller,
    content_type: &str,
    body: &[u8],
) -> Result<Response, KubeError> {
    let mut review = parse_body(content_type, body, "SelfSubjectRulesReview")?;
    let namespace = review.get("spec").map(|s| text(s, "namespace")).unwrap_or_default();
    let status = match crate::rbac::user_of(&caller.identity) {
        Some(user) => {
            let policy = api.objects.authorizer().policy().await.map_err(|s| KubeError::internal(s.message()))?;
            let rules = policy.rules_for(&user, &namespace);
            json!({
                "resourceRules": rules.resource_rules,
                "nonResourceRules": rules.non_resource_rules,
                "incomplete": false,
            })
        }
        None => json!({
            "resourceRules": [],
            "nonResourceRules": [],
            "incomplete": true,
            "evaluationError": format!("{} is not governed by RBAC", caller.identity),
        }),
    };
    review["kind"] = json!("SelfSubjectRulesReview");
    review["apiVersion"] = json!(format!("{GROUP}/v1"));
    review["status"] = status;
    Ok(respond::json(StatusCode::CREATED, &review))
}
