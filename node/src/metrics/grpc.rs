//! Measures every call of the `Fleet` gRPC service: a tower layer around the
//! node's server times the call and reads its status; the handler names the
//! kind it resolved with [`note_kind`] (the layer cannot see inside the
//! protobuf body). A watch is measured until its stream starts.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::{record_request, Api};

tokio::task_local! {
    /// The kind the request being measured is about.
    static KIND: RefCell<String>;
}

/// Notes the kind of the request being measured (a no-op outside one).
pub(super) fn note_kind(kind: &str) {
    let _ = KIND.try_with(|k| {
        let mut k = k.borrow_mut();
        if k.is_empty() {
            k.push_str(kind);
        } else if k.as_str() != kind {
            // One request about several kinds (an apply of a mixed file).
            k.clear();
            k.push('*');
        }
    });
}

/// Runs `request` with a kind slot [`note_kind`] fills (the Kubernetes API
/// measures its requests with it); returns the output and the kind noted.
pub async fn noting_kind<F: Future>(request: F) -> (F::Output, String) {
    KIND.scope(RefCell::new(String::new()), async move {
        let output = request.await;
        (output, KIND.with(|k| k.borrow().clone()))
    })
    .await
}

/// The layer: add it to the node's gRPC server.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrpcMetricsLayer;

impl<S> tower_layer::Layer<S> for GrpcMetricsLayer {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Measured<S> {
        Measured { inner }
    }
}

/// A service whose `Fleet` calls are measured.
#[derive(Clone, Debug)]
pub struct Measured<S> {
    inner: S,
}

/// The RPC name of a `Fleet` service call's path (`/fleet.v1.Fleet/Get` →
/// `Get`); `None` for other services (peer Raft calls are not measured here).
fn fleet_rpc(path: &str) -> Option<&str> {
    path.strip_prefix('/')?.strip_prefix(fleet_proto::fleet::fleet_server::SERVICE_NAME)?.strip_prefix('/')
}

impl<S, B, RB> tower_service::Service<http::Request<B>> for Measured<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    RB: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let Some(rpc) = fleet_rpc(request.uri().path()).map(str::to_string) else {
            return Box::pin(self.inner.call(request));
        };
        let started = Instant::now();
        let call = self.inner.call(request);
        Box::pin(KIND.scope(RefCell::new(String::new()), async move {
            let result = call.await;
            let kind = KIND.with(|k| k.borrow().clone());
            let code = match &result {
                Ok(response) => http_code(response.headers()),
                Err(_) => 500,
            };
            record_request(Api::Grpc, &verb(&rpc), &kind, code, started.elapsed());
            result
        }))
    }
}

/// The API server's verb for an RPC; other calls keep their name, uppercased.
fn verb(rpc: &str) -> String {
    match rpc {
        "Get" => "GET".into(),
        "List" => "LIST".into(),
        "Watch" => "WATCH".into(),
        "Apply" => "APPLY".into(),
        "Delete" => "DELETE".into(),
        "UpdateStatus" => "UPDATE".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// The HTTP status equivalent to a response's gRPC status (in its headers
/// for an error; a successful call's status comes later, in trailers).
fn http_code(headers: &http::HeaderMap) -> u16 {
    let code = headers.get("grpc-status").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<i32>().ok());
    match code.map(tonic::Code::from_i32) {
        None | Some(tonic::Code::Ok) => 200,
        Some(code) => grpc_to_http(code),
    }
}

/// The usual HTTP status for a gRPC code (as grpc-gateway maps them).
pub fn grpc_to_http(code: tonic::Code) -> u16 {
    use tonic::Code;
    match code {
        Code::Ok => 200,
        Code::Cancelled => 499,
        Code::InvalidArgument | Code::OutOfRange => 400,
        Code::FailedPrecondition => 400,
        Code::DeadlineExceeded => 504,
        Code::NotFound => 404,
        Code::AlreadyExists | Code::Aborted => 409,
        Code::PermissionDenied => 403,
        Code::Unauthenticated => 401,
        Code::ResourceExhausted => 429,
        Code::Unimplemented => 501,
        Code::Unavailable => 503,
        Code::Unknown | Code::Internal | Code::DataLoss => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_status_in_headers_maps_to_http() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(http_code(&headers), 200);
        headers.insert("grpc-status", http::HeaderValue::from_static("5"));
        assert_eq!(http_code(&headers), 404);
        headers.insert("grpc-status", http::HeaderValue::from_static("7"));
        assert_eq!(http_code(&headers), 403);
    }

    #[test]
    fn only_fleet_service_paths_are_measured() {
        assert_eq!(fleet_rpc("/fleet.v1.Fleet/Apply"), Some("Apply"));
        assert_eq!(fleet_rpc("/fleet.peer.v1.RaftPeer/Vote"), None);
        assert_eq!(fleet_rpc("/fleet.v1.FleetX/Apply"), None);
    }

    #[test]
    fn object_rpcs_use_api_server_verbs() {
        assert_eq!(verb("List"), "LIST");
        assert_eq!(verb("Heartbeat"), "HEARTBEAT");
    }

    #[tokio::test]
    async fn kinds_noted_inside_a_request_are_kept_and_mixed_kinds_collapse() {
        let seen = KIND
            .scope(RefCell::new(String::new()), async {
                note_kind("MemberCluster");
                note_kind("MemberCluster");
                KIND.with(|k| k.borrow().clone())
            })
            .await;
        assert_eq!(seen, "MemberCluster");
        let mixed = KIND
            .scope(RefCell::new(String::new()), async {
                note_kind("A");
                note_kind("B");
                KIND.with(|k| k.borrow().clone())
            })
            .await;
        assert_eq!(mixed, "*");
        // Outside a measured request: nothing happens.
        note_kind("A");
    }
}
