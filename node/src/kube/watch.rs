//! `?watch=true`: the same watch streams the gRPC service serves
//! ([`crate::watch`]), as Kubernetes `WatchEvent` lines. `resourceVersion`
//! unset or `0` starts with the current objects as ADDED; `N` resumes after
//! N; one that left the history gets an ERROR event with a 410 Expired.
//! Label-selector watches see objects enter (ADDED) and leave (DELETED).
//! Bookmarks are sent when `allowWatchBookmarks` is set.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use fleet_api::Object;
use fleet_proto::fleet::ReadOptions;
use futures::StreamExt;
use serde_json::{json, Value};

use super::context::Ctx;
use super::errors::KubeError;
use super::fields::FieldSelector;
use super::table;
use crate::objects::parse_selector;

/// How long a watch lasts without `timeoutSeconds` (clients re-watch).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

fn line(value: &Value) -> Result<Bytes, Infallible> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    Ok(Bytes::from(bytes))
}

/// GET `.../P?watch=true`.
pub async fn watch(ctx: Ctx) -> Result<Response, KubeError> {
    let (kind, view) = ctx.read_kind();
    let namespace = ctx.namespace.clone().unwrap_or_default();
    ctx.api.objects.member_scope(&ctx.caller, &kind, &namespace, "Watch").await.map_err(|s| ctx.fail(s))?;
    let labels = parse_selector(ctx.query.get("labelSelector").unwrap_or_default())
        .map_err(|s| KubeError::bad_request(format!("labelSelector: {}", s.message())))?;
    let mut fields = FieldSelector::parse(ctx.query.get("fieldSelector").unwrap_or_default())?;
    if let Some(name) = &ctx.name {
        // `.../P/NAME?watch=true` (the old form) watches one object.
        fields = FieldSelector::parse(&format!("metadata.name={name}"))?;
    }
    let from = match ctx.query.get("resourceVersion") {
        None | Some("0") => 0,
        Some(text) => text.parse::<u64>().map_err(|_| {
            KubeError::bad_request(format!("resourceVersion: Invalid value: {text:?}: must be a decimal number"))
        })?,
    };
    let timeout =
        ctx.query.get("timeoutSeconds").and_then(|t| t.parse().ok()).map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let bookmarks = ctx.query.flag("allowWatchBookmarks");
    let as_table = ctx.wants_table();
    ctx.api
        .objects
        .read_barrier(Some(&ReadOptions { consistent: false, min_resource_version: from }))
        .await
        .map_err(|s| ctx.fail(s))?;
    let mut query = kind.query(Some(namespace).filter(|n| !n.is_empty()));
    query.selector = labels;
    let member = match &ctx.caller.identity {
        fleet_proto::tls::Identity::Member(c) => Some((c.clone(), ctx.caller.serial.clone())),
        _ => None,
    };
    let store = ctx.api.objects.store();
    let started = crate::watch::start(store, query, from, ctx.api.stopping.clone(), member, view).await;
    let lookups = if as_table { table::lookups(&ctx).await } else { Default::default() };
    let kind_name = ctx.resource.kind.clone();
    let group_version = ctx.group_version();
    let events: futures::stream::BoxStream<'static, Result<Bytes, Infallible>> = match started {
        Err(status) => {
            let error = KubeError::from_status(&status, &ctx.subject());
            let error = if error.code == 410 { error } else { KubeError::expired(status.message().to_string()) };
            futures::stream::once(async move { line(&json!({"type": "ERROR", "object": error.to_json()})) }).boxed()
        }
        Ok(stream) => {
            let convert = move |event: Result<fleet_proto::fleet::WatchEvent, tonic::Status>| -> Option<Value> {
                let event = match event {
                    Ok(e) => e,
                    Err(status) if status.code() == tonic::Code::Unavailable => return None,
                    Err(status) => {
                        let error = KubeError::from_status(&status, &Default::default());
                        return Some(json!({"type": "ERROR", "object": error.to_json()}));
                    }
                };
                if event.r#type == "BOOKMARK" {
                    if !bookmarks {
                        return Some(Value::Null);
                    }
                    return Some(json!({"type": "BOOKMARK", "object": {"kind": kind_name, "apiVersion": group_version,
                        "metadata": {"resourceVersion": event.resource_version.to_string()}}}));
                }
                let object = Object::from_json(&event.object).ok()?;
                let mut shown = serde_json::to_value(&object).unwrap_or(Value::Null);
                shown["apiVersion"] = Value::String(group_version.clone());
                shown["kind"] = Value::String(kind_name.clone());
                if !fields.is_empty() && !fields.matches(&shown) {
                    return Some(Value::Null);
                }
                let body = if as_table { table::table(&kind_name, &[object], &lookups, None) } else { shown };
                Some(json!({"type": event.r#type, "object": body}))
            };
            // `None` ends the stream (node stopping), `Null` skips an event.
            let events = stream
                .map(convert)
                .take_while(|v| futures::future::ready(v.is_some()))
                .filter_map(|v| futures::future::ready(v.filter(|v| !v.is_null())))
                .map(|v| line(&v));
            let deadline = tokio::time::sleep(timeout);
            events.take_until(deadline).boxed()
        }
    };
    let mut response = Response::new(Body::from_stream(events));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}
