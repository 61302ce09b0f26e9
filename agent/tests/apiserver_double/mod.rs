//! An in-process double of the Kubernetes API server, serving plain HTTP on
//! 127.0.0.1, for testing the agent's Kubernetes target without a cluster.
//!
//! It records every request (method, path, query, content type, body) and
//! answers as a real API server does, within what the agent uses:
//! - discovery: `/api`, `/apis` (APIVersions, APIGroupList) and `/api/v1`,
//!   `/apis/<group>/<version>` (APIResourceList, with `…/status`
//!   subresources), 404 Status for group-versions it does not serve;
//! - GET of one object (404 `Status` NotFound when absent) and of
//!   collections (`<Kind>List`, across namespaces or in one, `fieldSelector`
//!   with `=`/`!=`, `limit`/`continue` paging);
//! - `PATCH` with `application/apply-patch+yaml` only (server-side apply:
//!   `fieldManager` required, per-manager field ownership, 409 conflicts
//!   unless `force=true`, see [`ssa`]), creating (201) or updating (200) the
//!   object, setting `uid`, `creationTimestamp`, `managedFields`, bumping
//!   `resourceVersion` only when something changed and `generation` when
//!   anything but metadata and status changed; it checks names, namespaces
//!   (404 when the namespace does not exist), and validates the result by
//!   one rule (a Deployment needs `spec.selector`: 422 Invalid);
//! - DELETE, answering 200 with the deleted object: it goes at once, as with
//!   `propagationPolicy: Background` and no finalizers, and a namespace takes
//!   its objects with it (the `DeleteOptions` sent, in the body or the
//!   query, are in the recorded request for tests to check).
//!
//! Tests play the other actors: controllers writing status ([`ApiServerDouble::set_status`]),
//! users creating objects ([`ApiServerDouble::create`]) or applying with another field
//! manager, new CRDs being served ([`ApiServerDouble::serve`]), and failures
//! ([`ApiServerDouble::fail_next`]).

pub mod api;
pub mod ssa;

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Body;
use axum::extract::{Request, State as AxumState};
use axum::response::Response;
use serde_json::{json, Value};

/// One kind the double serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The name in URLs (`deployments`).
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl ResourceType {
    /// A kind in `group` (empty: core) `version`.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceType {
        ResourceType {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        }
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The kinds served from the start.
fn builtin_resources() -> Vec<ResourceType> {
    vec![
        ResourceType::new("", "v1", "Namespace", "namespaces", false),
        ResourceType::new("", "v1", "Node", "nodes", false),
        ResourceType::new("", "v1", "ConfigMap", "configmaps", true),
        ResourceType::new("", "v1", "Secret", "secrets", true),
        ResourceType::new("", "v1", "Service", "services", true),
        ResourceType::new("", "v1", "ServiceAccount", "serviceaccounts", true),
        ResourceType::new("", "v1", "Pod", "pods", true),
        ResourceType::new("apps", "v1", "Deployment", "deployments", true),
        ResourceType::new("apps", "v1", "StatefulSet", "statefulsets", true),
        ResourceType::new("apps", "v1", "DaemonSet", "daemonsets", true),
    ]
}

/// One request as the double received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Decoded query parameters.
    pub query: BTreeMap<String, String>,
    pub content_type: Option<String>,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

/// Identifies a stored object: group, plural, namespace (empty if cluster-scoped), name.
pub type Key = (String, String, String, String);

/// A stored object and the configuration each field manager last applied.
#[derive(Debug, Clone)]
pub struct Stored {
    pub object: Value,
    pub managers: BTreeMap<String, Value>,
}

/// Everything the double holds.
#[derive(Debug)]
pub struct State {
    pub resources: Vec<ResourceType>,
    pub objects: BTreeMap<Key, Stored>,
    pub resource_version: u64,
    pub requests: Vec<Recorded>,
    /// Injected failures: (path, code, reason, message), each for the next
    /// request to that path (other requests, such as the target's own
    /// watches in the background, do not take them).
    pub failures: VecDeque<(String, u16, String, String)>,
    pub address: String,
}

impl State {
    /// The next resourceVersion.
    pub fn next_version(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }
}

/// The running double.
pub struct ApiServerDouble {
    address: SocketAddr,
    state: Arc<Mutex<State>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for ApiServerDouble {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve_request(AxumState(state): AxumState<Arc<Mutex<State>>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 16 << 20).await.map(|b| b.to_vec()).unwrap_or_default();
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: api::parse_query(parts.uri.query().unwrap_or("")),
        content_type: parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        authorization: parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body,
    };
    let (code, answer) = {
        let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
        state.requests.push(recorded.clone());
        match state.failures.iter().position(|(path, ..)| *path == recorded.path) {
            Some(i) => {
                let (_, code, reason, message) = state.failures.remove(i).unwrap_or_default();
                (code, api::status(code, &reason, &message, json!({})))
            }
            None => api::handle(&mut state, &recorded),
        }
    };
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&answer).unwrap_or_default()))
        .unwrap_or_default()
}

impl ApiServerDouble {
    /// Starts serving on 127.0.0.1 on a free port.
    pub async fn start() -> ApiServerDouble {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let address = listener.local_addr().expect("local address");
        let state = Arc::new(Mutex::new(State {
            resources: builtin_resources(),
            objects: BTreeMap::new(),
            resource_version: 1000,
            requests: Vec::new(),
            failures: VecDeque::new(),
            address: address.to_string(),
        }));
        let app = axum::Router::new().fallback(serve_request).with_state(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ApiServerDouble { address, state, server }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A kube client for the double (plain HTTP, no retries so that injected
    /// failures surface at once).
    pub fn client(&self) -> kube::Client {
        let mut config = kube::Config::new(self.url().parse().expect("a valid URL"));
        config.default_retry = false;
        config.connect_timeout = Some(std::time::Duration::from_secs(5));
        config.read_timeout = Some(std::time::Duration::from_secs(5));
        kube::Client::try_from(config).expect("a client for the double")
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// Every request so far, forgetting them.
    pub fn take_requests(&self) -> Vec<Recorded> {
        std::mem::take(&mut self.lock().requests)
    }

    /// The next `count` requests to `path` fail with this status.
    pub fn fail_next(&self, path: &str, count: usize, code: u16, reason: &str, message: &str) {
        let mut state = self.lock();
        for _ in 0..count {
            state.failures.push_back((path.to_string(), code, reason.to_string(), message.to_string()));
        }
    }

    /// Creates (or updates) an object as another client would, by a forced
    /// server-side apply with field manager `manager` (taking over the fields
    /// it sets), without recording a request. Panics if its kind is not
    /// served or the apply fails.
    pub fn create(&self, object: Value, manager: &str) -> Value {
        let mut state = self.lock();
        let (resource, namespace, name) = api::identify(&state, &object).expect("a served kind");
        let path = api::object_path(&resource, &namespace, &name);
        let request = Recorded {
            method: "PATCH".into(),
            path,
            query: [("fieldManager", manager), ("force", "true")]
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            content_type: Some(api::APPLY_PATCH.into()),
            authorization: None,
            body: serde_json::to_vec(&object).expect("JSON"),
        };
        let (code, answer) = api::handle(&mut state, &request);
        assert!(code == 200 || code == 201, "creating {object} failed: {answer}");
        answer
    }

    /// Replaces an object's status, as its controller would (status
    /// subresource: resourceVersion bumps, generation does not).
    pub fn set_status(&self, group: &str, plural: &str, namespace: &str, name: &str, status: Value) -> Value {
        let mut state = self.lock();
        let version = state.next_version();
        let key = (group.to_string(), plural.to_string(), namespace.to_string(), name.to_string());
        let stored = state.objects.get_mut(&key).expect("the object exists");
        stored.object["status"] = status;
        stored.object["metadata"]["resourceVersion"] = Value::String(version);
        stored.object.clone()
    }
}
