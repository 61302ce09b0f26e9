//! GET of one object and of a collection (label and field selectors,
//! Table output). An unset `resourceVersion` is a linearizable read, as in
//! Kubernetes; `resourceVersion=0` reads what this node has.

use axum::response::Response;
use fleet_proto::fleet::ReadOptions;
use serde_json::{json, Value};

use super::context::Ctx;
use super::errors::KubeError;
use super::fields::FieldSelector;
use super::{paging, respond, table};
use crate::objects::parse_selector;

/// How fresh a read must be, from `resourceVersion`.
pub fn read_options(ctx: &Ctx) -> Result<ReadOptions, KubeError> {
    match ctx.query.get("resourceVersion") {
        None => Ok(ReadOptions { consistent: true, min_resource_version: 0 }),
        Some(text) => {
            let min_resource_version = text.parse::<u64>().map_err(|_| {
                KubeError::bad_request(format!("resourceVersion: Invalid value: {text:?}: must be a decimal number"))
            })?;
            Ok(ReadOptions { consistent: false, min_resource_version })
        }
    }
}

/// Checks a member's scope for `rpc`, then waits until this node may serve the read.
async fn prepare_read(ctx: &Ctx, kind: &crate::admission::ResolvedKind, rpc: &str) -> Result<(), KubeError> {
    let namespace = ctx.namespace.as_deref().unwrap_or_default();
    ctx.api.objects.member_scope(&ctx.caller, kind, namespace, rpc).await.map_err(|s| ctx.fail(s))?;
    ctx.api.objects.read_barrier(Some(&read_options(ctx)?)).await.map_err(|s| ctx.fail(s))
}

/// GET `.../P/NAME` (and `.../P/NAME/status`).
pub async fn get(ctx: &Ctx) -> Result<Response, KubeError> {
    let name = ctx.name.clone().unwrap_or_default();
    let (kind, view) = ctx.read_kind();
    prepare_read(ctx, &kind, "Get").await?;
    let (object, index) = ctx.api.objects.get(&kind, view, ctx.key(&name)).await.map_err(|s| ctx.fail(s))?;
    if ctx.wants_table() {
        let lookups = table::lookups(ctx).await;
        return Ok(respond::ok(&table::table(&ctx.resource.kind, &[object], &lookups, Some(index))));
    }
    Ok(respond::ok(&ctx.present(&object)))
}

/// The objects a collection request selects, with the index read at.
pub async fn select(ctx: &Ctx) -> Result<(Vec<fleet_api::Object>, u64), KubeError> {
    let (kind, view) = ctx.read_kind();
    let labels = parse_selector(ctx.query.get("labelSelector").unwrap_or_default())
        .map_err(|s| KubeError::bad_request(format!("labelSelector: {}", s.message())))?;
    let fields = FieldSelector::parse(ctx.query.get("fieldSelector").unwrap_or_default())?;
    prepare_read(ctx, &kind, "List").await?;
    let (items, index) =
        ctx.api.objects.list(&kind, view, ctx.namespace.clone(), labels).await.map_err(|s| ctx.fail(s))?;
    let items =
        if fields.is_empty() { items } else { items.into_iter().filter(|o| fields.matches(&ctx.present(o))).collect() };
    Ok((items, index))
}

/// GET `.../P` (list; `-A` when the path names no namespace), a page at
/// a time with `limit` and `continue` ([`super::paging`]).
pub async fn list(ctx: &Ctx) -> Result<Response, KubeError> {
    let token = ctx.query.get("continue").map(paging::Token::decode).transpose()?;
    let limit = paging::limit(ctx)?;
    let (mut items, index) = select(ctx).await?;
    let page = match &token {
        Some(token) => {
            let (kind, _) = ctx.read_kind();
            let mut query = kind.query(ctx.namespace.clone().filter(|n| !n.is_empty()));
            query.selector = parse_selector(ctx.query.get("labelSelector").unwrap_or_default())
                .map_err(|s| KubeError::bad_request(format!("labelSelector: {}", s.message())))?;
            token.check_unchanged(&ctx.api.objects.store(), &query)?;
            paging::page(&mut items, Some(token), limit, token.resource_version)
        }
        None => paging::page(&mut items, None, limit, index),
    };
    let shown_version = token.as_ref().map_or(index, |t| t.resource_version);
    let selected = ["labelSelector", "fieldSelector"].iter().any(|k| ctx.query.get(k).is_some_and(|v| !v.is_empty()));
    if ctx.wants_table() {
        let lookups = table::lookups(ctx).await;
        let mut table = table::table(&ctx.resource.kind, &items, &lookups, Some(shown_version));
        page.annotate(&mut table["metadata"], selected);
        return Ok(respond::ok(&table));
    }
    let items: Vec<Value> = items.iter().map(|o| ctx.present(o)).collect();
    let mut metadata = json!({"resourceVersion": shown_version.to_string()});
    page.annotate(&mut metadata, selected);
    Ok(respond::ok(&json!({
        "kind": format!("{}List", ctx.resource.kind),
        "apiVersion": ctx.group_version(),
        "metadata": metadata,
        "items": items,
    })))
}
