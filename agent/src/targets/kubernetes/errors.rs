//! How API server answers become [`TargetError`]s: the server's own message
//! is kept (it says what is wrong with the manifest), prefixed with what the
//! agent was doing.

use crate::targets::TargetError;

/// Maps a `kube` error met while doing `what` (e.g. `cannot apply Deployment.apps "web" in namespace "demo"`).
///
/// - 409 (a server-side apply field conflict, a concurrent change) → [`TargetError::Conflict`];
/// - 401, 408, 429 and 5xx (credentials to refresh, an overloaded or failing
///   server) and every transport error → [`TargetError::Unavailable`], worth retrying;
/// - any other 4xx (400 Bad Request, 403 Forbidden, 404 such as a missing
///   namespace, 415, 422 Invalid) → [`TargetError::Invalid`]: the manifest is
///   not acceptable to this cluster as it stands.
pub(crate) fn map_error(what: &str, error: kube::Error) -> TargetError {
    match error {
        kube::Error::Api(status) => {
            let code = status.code;
            let reason = if status.reason.is_empty() { String::new() } else { format!(" {}", status.reason) };
            let message = if status.message.is_empty() { "no message".to_string() } else { status.message.clone() };
            let text = format!("{what}: {message} (HTTP {code}{reason})");
            match code {
                409 => TargetError::Conflict(text),
                401 | 408 | 429 => TargetError::Unavailable(text),
                400..=499 => TargetError::Invalid(text),
                _ => TargetError::Unavailable(text),
            }
        }
        kube::Error::BuildRequest(e) => TargetError::Invalid(format!("{what}: {e}")),
        other => TargetError::Unavailable(format!("{what}: the Kubernetes API server could not be reached: {other}")),
    }
}

/// Whether `error` is the API server's 404 Not Found.
pub(crate) fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        let mut status = Status::failure(message, reason).with_code(code);
        status.reason = reason.to_string();
        kube::Error::Api(status.boxed())
    }

    #[test]
    fn codes_map_to_kinds_of_failure() {
        let invalid = map_error("cannot apply X", api(422, "Invalid", "spec.selector: Required value"));
        assert_eq!(
            invalid,
            TargetError::Invalid("cannot apply X: spec.selector: Required value (HTTP 422 Invalid)".to_string())
        );
        assert!(matches!(map_error("x", api(404, "NotFound", "namespaces \"a\" not found")), TargetError::Invalid(_)));
        assert!(matches!(map_error("x", api(403, "Forbidden", "no")), TargetError::Invalid(_)));
        assert!(matches!(map_error("x", api(409, "Conflict", "conflict")), TargetError::Conflict(_)));
        for code in [401, 429, 500, 503] {
            assert!(matches!(map_error("x", api(code, "", "down")), TargetError::Unavailable(_)), "{code}");
        }
        assert!(is_not_found(&api(404, "NotFound", "gone")));
        assert!(!is_not_found(&api(409, "Conflict", "gone")));
    }
}
