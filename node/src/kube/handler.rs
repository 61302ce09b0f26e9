//! Dispatch: authenticate, route, authorize, then the verb's handler.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};

use super::context::Ctx;
use super::errors::KubeError;
use super::query::Query;
use super::route::{self, ResourcePath, Route};
use super::{discovery, openapi, patch, read, resources, respond, review, watch, write, KubeApi};
use crate::audit;
use crate::auth::{permit, Access, Caller};
use crate::blocking::blocking;

/// Largest request body read (objects are limited to 1.5 MiB by admission).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Handles one request from a connection whose client certificate made
/// `caller`, from `peer`.
pub async fn handle(
    api: Arc<KubeApi>,
    caller: Option<Result<Caller, String>>,
    peer: std::net::SocketAddr,
    request: Request,
) -> Response {
    let started = std::time::Instant::now();
    let verb = verb_of(&request);
    let audited = audit::Request {
        uri: request.uri().path_and_query().map_or_else(|| request.uri().path().to_string(), |p| p.to_string()),
        verb: verb.to_ascii_lowercase(),
        write: false,
        source_ip: Some(peer.ip().to_string()),
        user_agent: Some(header_text(&request, header::USER_AGENT)).filter(|a| !a.is_empty()),
        received: std::time::SystemTime::now(),
    };
    let user = match &caller {
        Some(Ok(caller)) => Some(crate::rbac::audit_user(&caller.identity)),
        _ => None,
    };
    let auditor = api.auditor.clone();
    let ((response, outcome), kind, note) = {
        let ((output, kind), note) = auditor
            .scope(crate::metrics::grpc::noting_kind(async {
                match dispatch(api, caller, request).await {
                    Ok(response) => {
                        let code = response.status().as_u16();
                        (response, audit::Outcome { code, message: None, reason: None })
                    }
                    Err(error) => {
                        let outcome = audit::Outcome {
                            code: error.code,
                            message: Some(error.message.clone()),
                            reason: Some(error.reason.to_string()),
                        };
                        (error.into_response(), outcome)
                    }
                }
            }))
            .await;
        (output, kind, note)
    };
    auditor.finish(&audited, user.as_ref(), note, &outcome).await;
    let code = response.status().as_u16();
    crate::metrics::record_request(crate::metrics::Api::Kube, verb, &kind, code, started.elapsed());
    response
}

/// The API server's verb for a request, for `/metrics`.
fn verb_of(request: &Request) -> &'static str {
    let query = request.uri().query().unwrap_or_default();
    let watch = query.split('&').any(|p| p == "watch=true" || p == "watch=1");
    let named = matches!(route::parse(request.uri().path()), Route::Resource(ref p) if p.name.is_some());
    match *request.method() {
        Method::GET | Method::HEAD if watch => "WATCH",
        Method::GET | Method::HEAD if named => "GET",
        Method::GET | Method::HEAD => "LIST",
        Method::POST => "CREATE",
        Method::PUT => "UPDATE",
        Method::PATCH if header_text(request, header::CONTENT_TYPE).starts_with("application/apply-patch") => "APPLY",
        Method::PATCH => "PATCH",
        Method::DELETE if named => "DELETE",
        Method::DELETE => "DELETECOLLECTION",
        _ => "OTHER",
    }
}

fn header_text(request: &Request, name: header::HeaderName) -> String {
    request.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
}

async fn dispatch(
    api: Arc<KubeApi>,
    caller: Option<Result<Caller, String>>,
    request: Request,
) -> Result<Response, KubeError> {
    let route = route::parse(request.uri().path());
    match route {
        Route::Version => return Ok(discovery::version()),
        Route::Health => return Ok(respond::ok(&serde_json::json!("ok"))),
        _ => {}
    }
    let caller = match caller {
        Some(Ok(caller)) => caller,
        Some(Err(why)) => return Err(KubeError::unauthorized(why)),
        None => {
            return Err(KubeError::unauthorized(
                "a client certificate signed by the fleet CA is required (fleetctl kubeconfig writes one in)",
            ))
        }
    };
    // Each user's share of the node, before anything else is done for it.
    let _seat = api.objects.seat(&caller).await.map_err(|s| KubeError::too_many_requests(s.message()))?;
    let accept = header_text(&request, header::ACCEPT);
    let is_read = matches!(*request.method(), Method::GET | Method::HEAD);
    let resource_route = matches!(route, Route::Resource(_));
    if !resource_route {
        if !is_read {
            return Err(KubeError::method_not_allowed(format!(
                "{} is not allowed on {}",
                request.method(),
                request.uri().path()
            )));
        }
        permit(caller.clone(), "kube discovery", Access::Read, true).map_err(|s| KubeError::forbidden(s.message()))?;
        let path = fleet_rbac::Attributes::path("get", request.uri().path());
        api.objects.authorizer().check(&caller, &path).await.map_err(|s| KubeError::forbidden(s.message()))?;
    }
    if let Route::Resource(p) = &route {
        let review = p.group == review::GROUP && p.name.is_none() && request.method() == Method::POST;
        if review && (p.plural == review::PLURAL || p.plural == review::RULES_PLURAL) {
            let content_type = header_text(&request, header::CONTENT_TYPE);
            let body = axum::body::to_bytes(request.into_body(), MAX_BODY)
                .await
                .map_err(|e| KubeError::bad_request(format!("reading the request body: {e}")))?;
            if p.plural == review::RULES_PLURAL {
                return review::rules_review(api, caller, &content_type, &body).await;
            }
            return review::review(api, caller, &content_type, &body).await;
        }
    }
    let store = api.objects.store();
    let all =
        blocking(move || resources::all(&store)).await.map_err(|s| KubeError::internal(s.message().to_string()))?;
    match route {
        Route::CoreVersions => Ok(discovery::core_versions(&all, &accept, &api.advertise)),
        Route::Groups => Ok(discovery::groups(&all, &accept)),
        Route::Group(group) => discovery::group(&all, &group),
        Route::GroupVersion { group, version } => discovery::group_version(&all, &group, &version),
        Route::OpenApiIndex => Ok(respond::ok(&openapi::index(&all))),
        Route::OpenApi { group, version } => Ok(respond::ok(&openapi::document(&all, &group, &version)?)),
        Route::Resource(path) => resource(api, caller, &all, path, request, accept).await,
        Route::Unknown | Route::Version | Route::Health => Err(KubeError::no_route(request.uri().path())),
    }
}

async fn resource(
    api: Arc<KubeApi>,
    caller: Caller,
    all: &[resources::Resource],
    path: ResourcePath,
    request: Request,
    accept: String,
) -> Result<Response, KubeError> {
    let uri_path = request.uri().path().to_string();
    let resource = resources::find(all, &path.group, &path.version, &path.plural)
        .ok_or_else(|| {
            KubeError::no_route(&resources::unserved(all, &path.group, &path.version, &path.plural, &uri_path))
        })?
        .clone();
    crate::metrics::note_kind(&resource.kind);
    if path.namespace.is_some() && !resource.namespaced() {
        return Err(KubeError::no_route(&uri_path));
    }
    match path.subresource.as_deref() {
        None => {}
        Some("status") if resource.status => {}
        Some(other) => {
            return Err(KubeError::no_route(&format!("{uri_path} ({} has no {other:?} subresource)", resource.plural)))
        }
    }
    let query = Query::parse(request.uri().query());
    let content_type =
        header_text(&request, header::CONTENT_TYPE).split(';').next().unwrap_or_default().trim().to_string();
    let method = request.method().clone();
    let verb = match (&method, path.name.is_some()) {
        (&Method::GET | &Method::HEAD, _) if query.flag("watch") => "watch",
        (&Method::GET | &Method::HEAD, true) => "get",
        (&Method::GET | &Method::HEAD, false) => "list",
        (&Method::POST, false) => "create",
        (&Method::PUT, true) => "update",
        (&Method::PATCH, true) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) if path.subresource.is_none() => "deletecollection",
        _ => {
            return Err(KubeError::method_not_allowed(format!(
                "{method} is not supported on {uri_path} (verbs: {})",
                resources::VERBS.join(", ")
            )))
        }
    };
    let access = if matches!(verb, "get" | "list" | "watch") { Access::Read } else { Access::Write };
    let rpc = format!("{verb} {}", resource.plural);
    // Member agents keep their narrow rights: reads of their own objects only.
    let caller = permit(caller, &rpc, access, access == Access::Read).map_err(|s| KubeError::forbidden(s.message()))?;
    let attributes = fleet_rbac::Attributes::resource(
        verb,
        &resource.group,
        &resource.plural,
        path.namespace.as_deref().unwrap_or_default(),
        path.name.as_deref().unwrap_or_default(),
    )
    .on_subresource(path.subresource.as_deref().unwrap_or_default());
    api.objects.authorizer().check(&caller, &attributes).await.map_err(|s| {
        // As the Kubernetes API server words it: `<plural> "<name>" is forbidden: ...`.
        let what = match (&path.name, &path.subresource) {
            (Some(name), Some(sub)) => format!("{}/{sub} {name:?}", resource.plural),
            (Some(name), None) => format!("{} {name:?}", resource.plural),
            _ => resource.plural.clone(),
        };
        KubeError::forbidden(format!("{what} is forbidden: {}", s.message()))
    })?;
    let ctx = Ctx {
        api,
        caller,
        resource,
        version: path.version,
        namespace: path.namespace,
        name: path.name,
        subresource: path.subresource,
        query,
        accept,
        content_type,
    };
    let body = if matches!(verb, "create" | "update" | "patch" | "delete" | "deletecollection") {
        axum::body::to_bytes(request.into_body(), MAX_BODY)
            .await
            .map_err(|e| KubeError::bad_request(format!("reading the request body: {e}")))?
    } else {
        drop(request.into_body());
        Default::default()
    };
    match verb {
        "watch" => watch::watch(ctx).await,
        "get" => read::get(&ctx).await,
        "list" => read::list(&ctx).await,
        "create" => write::create(&ctx, &body).await,
        "update" if ctx.subresource.is_some() => write::update_status(&ctx, &body).await,
        "update" => write::update(&ctx, &body).await,
        "patch" => patch::patch(&ctx, &body).await,
        "deletecollection" => write::delete_collection(&ctx).await,
        _ => write::delete(&ctx, &body).await,
    }
}
