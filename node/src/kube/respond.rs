//! Building responses: JSON bodies with the content types clients parse by.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;

/// `application/json`.
pub const JSON: &str = "application/json";

/// A JSON response with `code`.
pub fn json(code: StatusCode, value: &Value) -> Response {
    json_as(code, value, JSON)
}

/// A JSON response with `code` and a specific content type (aggregated
/// discovery names its shape in it).
pub fn json_as(code: StatusCode, value: &Value, content_type: &str) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = code;
    let content_type = HeaderValue::from_str(content_type).unwrap_or(HeaderValue::from_static(JSON));
    response.headers_mut().insert(header::CONTENT_TYPE, content_type);
    response
}

/// 200 with a JSON body.
pub fn ok(value: &Value) -> Response {
    json(StatusCode::OK, value)
}
