//! Kubernetes `Status` errors: the reason, code, message and field causes
//! kubectl and client libraries act on, made from the request layer's
//! refusals ([`RequestError`]: admission, the state machine, authorization)
//! that the gRPC service returns as statuses.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::error::RequestError;

/// One field problem of an `Invalid` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldManagerConflict`, ...
    pub reason: String,
    pub message: String,
    pub field: String,
}

/// A refused request, as Kubernetes' `Status` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeError {
    pub code: u16,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...
    pub reason: &'static str,
    pub message: String,
    /// `details`: the object's name, group and kind (or plural); boxed to
    /// keep the error small.
    pub details: Option<Box<(String, String, String)>>,
    pub causes: Vec<Cause>,
}

/// What an error is about: names the object in messages and `details`.
#[derive(Debug, Clone, Default)]
pub struct Subject {
    /// `plural.group` (or `plural` in the core group).
    pub qualified: String,
    pub group: String,
    pub plural: String,
    /// `Kind.group`, for Invalid messages.
    pub kind_qualified: String,
    pub kind: String,
    pub name: String,
}

impl KubeError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> KubeError {
        KubeError { code, reason, message: message.into(), details: None, causes: Vec::new() }
    }

    fn about(mut self, subject: &Subject, by_kind: bool) -> KubeError {
        let what = if by_kind { subject.kind.clone() } else { subject.plural.clone() };
        self.details = Some(Box::new((subject.name.clone(), subject.group.clone(), what)));
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> KubeError {
        KubeError::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized(message: impl Into<String>) -> KubeError {
        KubeError::new(401, "Unauthorized", message)
    }

    /// 403 Forbidden.
    pub fn forbidden(message: impl Into<String>) -> KubeError {
        KubeError::new(403, "Forbidden", message)
    }

    /// 404 NotFound for a path the API does not serve.
    pub fn no_route(path: &str) -> KubeError {
        KubeError::new(404, "NotFound", format!("the server could not find the requested resource ({path})"))
    }

    /// 404 NotFound for one object.
    pub fn not_found(subject: &Subject) -> KubeError {
        KubeError::new(404, "NotFound", format!("{} {:?} not found", subject.qualified, subject.name))
            .about(subject, false)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> KubeError {
        KubeError::new(405, "MethodNotAllowed", message)
    }

    /// 409 Conflict from a stale resourceVersion.
    pub fn conflict(subject: &Subject, detail: &str) -> KubeError {
        KubeError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {:?}: the object has been modified; please apply your changes to the latest version and try again ({detail})",
                subject.qualified, subject.name
            ),
        )
        .about(subject, false)
    }

    /// 409 Conflict of server-side apply: fields another manager owns.
    pub fn apply_conflicts(subject: &Subject, conflicts: &[(String, String)]) -> KubeError {
        let listed: Vec<String> =
            conflicts.iter().map(|(manager, field)| format!("conflict with {manager:?}: {field}")).collect();
        let mut error = KubeError::new(
            409,
            "Conflict",
            format!(
                "Apply failed with {} conflict{}: {}",
                conflicts.len(),
                if conflicts.len() == 1 { "" } else { "s" },
                listed.join("\n")
            ),
        )
        .about(subject, false);
        error.causes = conflicts
            .iter()
            .map(|(manager, field)| Cause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with {manager:?}"),
                field: field.clone(),
            })
            .collect();
        error
    }

    /// 409 AlreadyExists.
    pub fn already_exists(subject: &Subject) -> KubeError {
        KubeError::new(409, "AlreadyExists", format!("{} {:?} already exists", subject.qualified, subject.name))
            .about(subject, false)
    }

    /// 410 Expired: a watch's resourceVersion left the history.
    pub fn expired(message: impl Into<String>) -> KubeError {
        KubeError::new(410, "Expired", message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> KubeError {
        KubeError::new(415, "UnsupportedMediaType", message)
    }

    /// 422 Invalid, with a cause per problem of a validation message
    /// (`Kind "name" is invalid:` then one `field: Reason: detail` a line).
    pub fn invalid(subject: &Subject, text: &str) -> KubeError {
        let causes = causes_of(text);
        let listed: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let summary = match listed.len() {
            0 => text.trim().to_string(),
            1 => listed[0].clone(),
            _ => format!("[{}]", listed.join(", ")),
        };
        let mut error = KubeError::new(
            422,
            "Invalid",
            format!("{} {:?} is invalid: {summary}", subject.kind_qualified, subject.name),
        )
        .about(subject, true);
        error.causes = causes;
        error
    }

    /// 422 Invalid: a JSON patch that cannot be applied (a failed `test`, a missing path).
    pub fn unprocessable_patch(subject: &Subject, detail: &str) -> KubeError {
        // No details, as Kubernetes: kubectl then prints the message itself
        // ("The request is invalid: ..."), which here says what failed.
        KubeError::new(
            422,
            "Invalid",
            format!("{} {:?}: the JSON patch could not be applied: {detail}", subject.kind_qualified, subject.name),
        )
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> KubeError {
        KubeError::new(500, "InternalError", message)
    }

    /// 503 ServiceUnavailable (no leader, node stopping): retry.
    pub fn unavailable(message: impl Into<String>) -> KubeError {
        KubeError::new(503, "ServiceUnavailable", message)
    }

    /// 429 TooManyRequests: the user's seats and queue are full
    /// ([`crate::fairness`]); `Retry-After` says when to retry.
    pub fn too_many_requests(message: impl Into<String>) -> KubeError {
        KubeError::new(429, "TooManyRequests", message)
    }

    /// The HTTP edge of the request layer: the Kubernetes error each of its
    /// refusals is, about `subject`.
    pub fn from_request(error: &RequestError, subject: &Subject) -> KubeError {
        let message = error.message();
        match error {
            RequestError::NotFound(_) if !subject.name.is_empty() => KubeError::not_found(subject),
            RequestError::NotFound(_) => KubeError::new(404, "NotFound", message),
            RequestError::AlreadyExists(_) => KubeError::already_exists(subject),
            RequestError::Conflict(_) => KubeError::conflict(subject, message),
            RequestError::Invalid(_) => KubeError::invalid(subject, message),
            RequestError::Forbidden(_) => KubeError::forbidden(message),
            RequestError::Unauthenticated(_) => KubeError::unauthorized(message),
            RequestError::Expired(_) => KubeError::expired(message),
            // Kubernetes' 500 for a server that cannot do this as it is set
            // up (no retry helps); not 410, which tells a client to list again.
            RequestError::Precondition(_) => KubeError::internal(message),
            RequestError::Unavailable(_) => KubeError::unavailable(message),
            RequestError::TooManyRequests(_) => KubeError::too_many_requests(message),
            RequestError::Internal(_) => KubeError::internal(message),
        }
    }

    /// The `Status` object.
    pub fn to_json(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let mut details = serde_json::Map::new();
        if let Some((name, group, kind)) = self.details.as_deref() {
            details.insert("name".into(), json!(name));
            if !group.is_empty() {
                details.insert("group".into(), json!(group));
            }
            details.insert("kind".into(), json!(kind));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let type_ = if c.reason == "FieldManagerConflict" { "type" } else { "reason" };
                    json!({ type_: c.reason, "message": c.message, "field": c.field })
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if self.code == 429 {
            details.insert("retryAfterSeconds".into(), json!(crate::fairness::RETRY_AFTER_SECONDS));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl IntoResponse for KubeError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = super::respond::json(code, &self.to_json());
        if code == StatusCode::SERVICE_UNAVAILABLE || code == StatusCode::TOO_MANY_REQUESTS {
            // client-go (kubectl) retries a 503 or 429 that says when.
            let after = crate::fairness::RETRY_AFTER_SECONDS.to_string();
            if let Ok(value) = axum::http::HeaderValue::from_str(&after) {
                response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
            }
        }
        response
    }
}

/// The field problems of a validation message: every line shaped
/// `field: Reason: detail` (after the first, which names the object).
pub fn causes_of(text: &str) -> Vec<Cause> {
    text.lines()
        .map(str::trim)
        .filter_map(|line| {
            let line = line.strip_prefix("- ").unwrap_or(line);
            let (field, message) = line.split_once(": ")?;
            if field.contains(' ') || field.is_empty() || field.ends_with(':') {
                return None;
            }
            let reason = [
                ("Invalid value", "FieldValueInvalid"),
                ("Required value", "FieldValueRequired"),
                ("Unsupported value", "FieldValueNotSupported"),
                ("Forbidden", "FieldValueForbidden"),
                ("Duplicate value", "FieldValueDuplicate"),
                ("Too long", "FieldValueTooLong"),
                ("Too many", "FieldValueTooMany"),
                ("unknown field", "FieldValueInvalid"),
            ]
            .iter()
            .find(|(prefix, _)| message.starts_with(prefix))
            .map_or("FieldValueInvalid", |(_, reason)| reason);
            Some(Cause { reason: reason.to_string(), message: message.to_string(), field: field.to_string() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crp(name: &str) -> Subject {
        Subject {
            qualified: "clusterresourceplacements.placement.kubernetes-fleet.io".into(),
            group: "placement.kubernetes-fleet.io".into(),
            plural: "clusterresourceplacements".into(),
            kind_qualified: "ClusterResourcePlacement.placement.kubernetes-fleet.io".into(),
            kind: "ClusterResourcePlacement".into(),
            name: name.into(),
        }
    }

    #[test]
    fn validation_lines_become_causes() {
        let text = "ClusterResourcePlacement \"web\" is invalid:\n  spec.policy.numberOfClusters: Invalid value: -1: must be greater than or equal to 0\n  spec.policy.clusterNames: Forbidden: only allowed with placementType PickFixed";
        let error = KubeError::invalid(&crp("web"), text);
        assert_eq!(error.code, 422);
        assert_eq!(error.causes.len(), 2);
        assert_eq!(error.causes[0].field, "spec.policy.numberOfClusters");
        assert_eq!(error.causes[1].reason, "FieldValueForbidden");
        assert!(error
            .message
            .starts_with("ClusterResourcePlacement.placement.kubernetes-fleet.io \"web\" is invalid: ["));
        let json = error.to_json();
        assert_eq!(json["details"]["kind"], "ClusterResourcePlacement");
        assert_eq!(json["details"]["causes"][0]["reason"], "FieldValueInvalid");
    }

    #[test]
    fn store_refusals_map_to_kubernetes_reasons() {
        let subject = crp("web");
        assert_eq!(KubeError::from_request(&RequestError::not_found("x"), &subject).reason, "NotFound");
        let conflict = KubeError::from_request(&RequestError::conflict("at 7"), &subject);
        assert_eq!((conflict.code, conflict.reason), (409, "Conflict"));
        assert!(conflict.message.contains("the object has been modified"));
        assert_eq!(KubeError::from_request(&RequestError::already_exists("x"), &subject).reason, "AlreadyExists");
        assert_eq!(KubeError::from_request(&RequestError::expired("old"), &subject).code, 410);
        // A hub that cannot do this as set up is not a watch to restart.
        let precondition = KubeError::from_request(&RequestError::precondition("no CA key"), &subject);
        assert_eq!((precondition.code, precondition.reason), (500, "InternalError"));
        let busy = KubeError::from_request(&RequestError::too_many("slow down"), &subject);
        assert_eq!((busy.code, busy.to_json()["details"]["retryAfterSeconds"].is_number()), (429, true));
    }

    #[test]
    fn apply_conflicts_name_manager_and_field() {
        let error = KubeError::apply_conflicts(&crp("web"), &[("kubectl".into(), ".spec.policy".into())]);
        assert_eq!(error.message, "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.policy");
        assert_eq!(error.to_json()["details"]["causes"][0]["type"], "FieldManagerConflict");
    }
}
