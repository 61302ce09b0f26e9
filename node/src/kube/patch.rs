//! PATCH: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic
//! merge patch for built-in kinds ([`super::smp`]) and server-side apply
//! ([`super::apply`]). The patched document is admitted and written like
//! an update, conditional on the version it was computed from.

use axum::response::Response;
use fleet_api::Object;
use fleet_proto::fleet::ReadOptions;
use serde_json::Value;

use super::context::Ctx;
use super::errors::KubeError;
use super::{apply, fieldcheck, smp, write};

/// The patch types a kind without strategic merge patch accepts, as
/// Kubernetes lists them for custom resources.
const CUSTOM_ACCEPTED: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// The patch types accepted, for 415 messages.
const ACCEPTED: &str = "application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json (built-in kinds), application/apply-patch+yaml";

/// PATCH `.../P/NAME` and `.../P/NAME/status`.
pub async fn patch(ctx: &Ctx, body: &[u8]) -> Result<Response, KubeError> {
    let status = ctx.subresource.as_deref() == Some("status");
    if ctx.content_type == "application/apply-patch+yaml" {
        return apply::apply(ctx, body, status).await;
    }
    let current = current(ctx).await?.ok_or_else(|| KubeError::not_found(&ctx.subject()))?;
    let live = ctx.present(&current);
    let mut document = live.clone();
    apply_patch(ctx, &mut document, body)?;
    write::check_identity(ctx, &mut document)?;
    let warnings = fieldcheck::check(ctx, &mut document, Some(&live))?;
    if status {
        return Ok(fieldcheck::with_warnings(write::update_status_value(ctx, document).await?, &warnings));
    }
    apply::record_update(ctx, &current, &mut document);
    // Conditional on what was patched, unless the patch names its own version.
    let patched_version = document.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default();
    if patched_version.is_empty() {
        document["metadata"]["resourceVersion"] = Value::String(current.metadata.resource_version.clone());
    }
    Ok(fieldcheck::with_warnings(write::update_value(ctx, document, Some(&current)).await?, &warnings))
}

/// Applies the body, by its content type, to `document`.
pub fn apply_patch(ctx: &Ctx, document: &mut Value, body: &[u8]) -> Result<(), KubeError> {
    let parse = || -> Result<Value, KubeError> {
        serde_json::from_slice(body).map_err(|e| KubeError::bad_request(format!("the patch is not valid JSON: {e}")))
    };
    match ctx.content_type.as_str() {
        "application/merge-patch+json" => {
            json_patch::merge(document, &parse()?);
            Ok(())
        }
        "application/json-patch+json" => {
            let operations: json_patch::Patch = serde_json::from_value(parse()?)
                .map_err(|e| KubeError::bad_request(format!("the JSON patch is not a list of operations: {e}")))?;
            json_patch::patch(document, &operations)
                .map_err(|e| KubeError::unprocessable_patch(&ctx.subject(), &e.to_string()))
        }
        "application/strategic-merge-patch+json" => {
            if ctx.resource.fleet || !is_builtin(&ctx.resource.group, &ctx.resource.kind) {
                // Kubernetes' words for a custom resource, then why and what to use instead.
                return Err(KubeError::unsupported_media_type(format!(
                    "the body of the request was in an unknown format - accepted media types include: {CUSTOM_ACCEPTED} (strategic merge patch is served for built-in Kubernetes kinds only: {} takes a JSON merge patch or server-side apply, kubectl apply --server-side)",
                    ctx.resource.kind
                )));
            }
            smp::apply(document, &parse()?).map_err(|e| KubeError::bad_request(format!("strategic merge patch: {e}")))
        }
        other => Err(KubeError::unsupported_media_type(format!(
            "the body of the request was in an unknown format {other:?} - accepted media types include: {ACCEPTED}"
        ))),
    }
}

/// Whether a kind is one of Kubernetes' own (not a Fleet/OCM kind, not a CRD's).
fn is_builtin(group: &str, kind: &str) -> bool {
    fleet_api::kinds::lookup_group_kind(group, kind).is_some_and(|k| !k.typed)
        && group != fleet_api::kinds::FLEET_PLACEMENT_GROUP
}

/// The stored object a patch starts from, if it exists (server-side apply
/// creates), read at the newest version: a stale one would only make the
/// write conflict.
pub async fn current(ctx: &Ctx) -> Result<Option<Object>, KubeError> {
    let (kind, view) = ctx.read_kind();
    ctx.api
        .objects
        .read_barrier(Some(&ReadOptions { consistent: true, min_resource_version: 0 }))
        .await
        .map_err(|s| ctx.fail(s))?;
    let name = ctx.name.clone().unwrap_or_default();
    match ctx.api.objects.get(&kind, view, ctx.key(&name)).await {
        Ok((object, _)) => Ok(Some(object)),
        Err(crate::error::RequestError::NotFound(_)) => Ok(None),
        Err(s) => Err(ctx.fail(s)),
    }
}
