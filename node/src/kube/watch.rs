//! `?watch=true`: the same watch streams the gRPC service serves
//! ([`crate::watch`]), as Kubernetes `WatchEvent` lines. `resourceVersion`
//! unset or `0` starts with the current objects as ADDED; `N` resumes with
//! every event of entry N and after (at least once: one Raft entry can
//! write several objects at version N, and a client resumes from the
//! version of the last event it saw); one that left the history gets an
//! ERROR event with a 410 Expired. Label-selector watches see objects
//! enter (ADDED) and leave (DELETED). With `allowWatchBookmarks=true`, a
//! BOOKMARK follows the initial list and comes periodically while the hub
//! moves on.

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

use crate::error::RequestError;

use super::context::Ctx;
use super::errors::KubeError;
use super::fields::FieldSelector;
use super::table;
use crate::objects::parse_selector;

/// How long a watch lasts without `timeoutSeconds` (clients re-watch).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How often a watch with `allowWatchBookmarks=true` gets a BOOKMARK when
/// the hub has moved on (Kubernetes sends them about once a minute).
const BOOKMARK_EVERY: Duration = Duration::from_secs(10);

fn line(value: &Value) -> Result<Bytes, Infallible> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    Ok(Bytes::from(bytes))
}

/// GET `.../P?watch=true`.
pub async fn watch(ctx: Ctx) -> Result<Response, KubeError> {
    let (kind, view) = ctx.read_kind();
    let namespace = ctx.namespace.clone().unwrap_or_default();
    let slot = ctx.api.objects.watch_slot(&ctx.caller).map_err(|s| KubeError::too_many_requests(s.message()))?;
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
    let every = bookmarks.then_some(BOOKMARK_EVERY);
    let start = |from: u64| {
        let (store, query, member) = (store.clone(), query.clone(), member.clone());
        crate::watch::start_with_bookmarks(store, query, from, ctx.api.stopping.clone(), member, view, every)
    };
    // Resuming from N replays all of entry N: one Raft entry can write
    // several objects at the same resourceVersion, and a client that saw
    // only the first of them resumes from N. Entry 1 is the cluster's
    // first membership entry (no objects), and from 0 lists first.
    let started = match from {
        0 | 1 => start(from).await,
        n => match start(n - 1).await {
            // N itself is the oldest version kept: nothing before it can be replayed.
            Err(RequestError::Expired(_)) => start(n).await,
            other => other,
        },
    };
    let lookups = if as_table { table::lookups(&ctx).await } else { Default::default() };
    let kind_name = ctx.resource.kind.clone();
    let group_version = ctx.group_version();
    let events: futures::stream::BoxStream<'static, Result<Bytes, Infallible>> = match started {
        Err(status) => {
            let error = KubeError::from_request(&status, &ctx.subject());
            let error = if error.code == 410 { error } else { KubeError::expired(status.message().to_string()) };
            futures::stream::once(async move { line(&json!({"type": "ERROR", "object": error.to_json()})) }).boxed()
        }
        Ok(stream) => {
            let convert = move |event: Result<fleet_proto::fleet::WatchEvent, RequestError>| -> Option<Value> {
                let event = match event {
                    Ok(e) => e,
                    Err(RequestError::Unavailable(_)) => return None,
                    Err(status) => {
                        let error = KubeError::from_request(&status, &Default::default());
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
            // The watch slot is given back when the stream ends.
            events
                .take_until(deadline)
                .map(move |line| {
                    let _open = &slot;
                    line
                })
                .boxed()
        }
    };
    let mut response = Response::new(Body::from_stream(events));
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}
