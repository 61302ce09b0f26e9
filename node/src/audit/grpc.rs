//! Audits the calls of the `Fleet` gRPC service: a tower layer around the
//! node's server runs each call in an audit scope and records it when its
//! response starts (a watch, when its stream starts).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};

use super::{Auditor, Outcome, Request};

/// The layer: add it to the node's gRPC server.
#[derive(Clone)]
pub struct AuditLayer {
    auditor: Arc<Auditor>,
}

impl AuditLayer {
    /// Audits calls with `auditor`.
    pub fn new(auditor: Arc<Auditor>) -> AuditLayer {
        AuditLayer { auditor }
    }
}

impl<S> tower_layer::Layer<S> for AuditLayer {
    type Service = Audited<S>;

    fn layer(&self, inner: S) -> Audited<S> {
        Audited { inner, auditor: self.auditor.clone() }
    }
}

/// A service whose `Fleet` calls are audited.
#[derive(Clone)]
pub struct Audited<S> {
    inner: S,
    auditor: Arc<Auditor>,
}

/// The RPC name of a `Fleet` service call's path; `None` for the peer
/// service (Raft traffic between nodes is not audited).
fn fleet_rpc(path: &str) -> Option<&str> {
    path.strip_prefix('/')?.strip_prefix(fleet_proto::fleet::fleet_server::SERVICE_NAME)?.strip_prefix('/')
}

/// The calls that write without an object decision of their own.
fn writes_without_decision(rpc: &str) -> bool {
    matches!(rpc, "Join" | "RenewCertificate")
}

impl<S, B, RB> tower_service::Service<http::Request<B>> for Audited<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    RB: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let rpc = match fleet_rpc(request.uri().path()) {
            Some(rpc) if self.auditor.enabled() && rpc != "Heartbeat" => rpc.to_string(),
            _ => return Box::pin(self.inner.call(request)),
        };
        let connection = request.extensions().get::<TlsConnectInfo<TcpConnectInfo>>();
        let user = connection
            .and_then(TlsConnectInfo::peer_certs)
            .and_then(|certs| certs.first().and_then(|c| crate::auth::caller_of_certificate(c.as_ref()).ok()))
            .map(|caller| crate::rbac::audit_user(&caller.identity));
        let audited = Request {
            uri: request.uri().path().to_string(),
            verb: rpc.to_ascii_lowercase(),
            write: writes_without_decision(&rpc),
            source_ip: connection.and_then(|c| c.get_ref().remote_addr()).map(|a| a.ip().to_string()),
            user_agent: request
                .headers()
                .get(http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            received: SystemTime::now(),
        };
        let call = self.inner.call(request);
        let auditor = self.auditor.clone();
        Box::pin(async move {
            let (result, note) = auditor.scope(call).await;
            let outcome = match &result {
                Ok(response) => outcome(response.headers()),
                Err(_) => Outcome { code: 500, message: None, reason: Some("InternalError".into()) },
            };
            auditor.finish(&audited, user.as_ref(), note, &outcome).await;
            result
        })
    }
}

/// The outcome a response's headers tell (an error's status is in them; a
/// success's comes later, in trailers).
fn outcome(headers: &http::HeaderMap) -> Outcome {
    let code = headers.get("grpc-status").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<i32>().ok());
    let code = match code.map(tonic::Code::from_i32) {
        None | Some(tonic::Code::Ok) => return Outcome { code: 200, message: None, reason: None },
        Some(code) => code,
    };
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| percent_encoding::percent_decode_str(m).decode_utf8_lossy().to_string());
    Outcome { code: crate::metrics::grpc::grpc_to_http(code), message, reason: Some(reason(code).into()) }
}

/// The Kubernetes reason for a gRPC code.
fn reason(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::PermissionDenied => "Forbidden",
        Code::Unauthenticated => "Unauthorized",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::Aborted | Code::FailedPrecondition => "Conflict",
        Code::InvalidArgument | Code::OutOfRange => "Invalid",
        Code::ResourceExhausted => "TooManyRequests",
        Code::Unavailable => "ServiceUnavailable",
        Code::DeadlineExceeded => "Timeout",
        _ => "InternalError",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_in_the_headers_is_a_failure_with_its_message() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(outcome(&headers).code, 200);
        headers.insert("grpc-status", http::HeaderValue::from_static("7"));
        headers.insert("grpc-message", http::HeaderValue::from_static("alice%20may%20not"));
        let refused = outcome(&headers);
        assert_eq!(
            (refused.code, refused.message.as_deref(), refused.reason.as_deref()),
            (403, Some("alice may not"), Some("Forbidden"))
        );
        assert_eq!(fleet_rpc("/fleet.peer.v1.RaftPeer/Vote"), None);
    }
}
