//! The Kubernetes target: a real member cluster, reached through kube-rs
//! (docs/spec/members.md, "The agent's targets").
//!
//! - Kinds are mapped to resources and scopes by discovery (`discovery.rs`),
//!   cached per group-version and re-read on a miss, so custom resources
//!   become appliable once their CustomResourceDefinition is served.
//! - Both apply modes use **server-side apply** (`PATCH` with
//!   `Content-Type: application/apply-patch+yaml`) with field manager
//!   [`FIELD_MANAGER`]. [`ApplyMode::ServerSide`] passes its `force`;
//!   [`ApplyMode::ClientSide`] always forces. That is how kubectl-apply
//!   semantics are had without a three-way merge: the API server's managed
//!   fields record what Fleet set last time, so fields the manifest no
//!   longer sets are removed, fields set by others (and by controllers) are
//!   kept, and Fleet's values win where both set a field. `ClientSide` also
//!   records the configuration in KubeFleet's annotation
//!   ([`last_applied`](super::last_applied)), for a cluster that moves to
//!   KubeFleet; nothing here reads it.
//! - Ownership follows the same rule as the embedded target: before
//!   applying, the live object is read; one with another Work's
//!   [`OWNER_ANNOTATION`], or without it unless the request takes it over
//!   ([`ApplyRequest::take_over`]), is a [`TargetError::Conflict`] and is not touched.
//! - Deletion uses `propagationPolicy: Background` ([`DELETE_PROPAGATION`]):
//!   the object goes at once and the garbage collector removes its dependents
//!   (ReplicaSets, Pods) afterwards, as `kubectl delete` does; a Work that
//!   puts the object back does not meet a half-deleted one.
//! - A Work with an executor is applied only where the cluster's RBAC lets
//!   the executor act (`access.rs`): SubjectAccessReviews, and a dry run
//!   as the service account for roles and bindings.
//! - Every kind it applied is watched (`changes.rs`): a change on the
//!   cluster to an object Fleet placed brings its Work back at once.
//! - Availability is judged by the shared [`crate::targets::availability`]
//!   function over the objects [`Target::get`] returns.
//! - The heartbeat report comes from the cluster's nodes and unfinished pods,
//!   plus its Kubernetes version, API server URL and certificate authority
//!   (`report.rs`).

pub(crate) mod access;
pub(crate) mod changes;
pub(crate) mod discovery;
pub(crate) mod errors;
pub(crate) mod report;

use std::path::Path;
use std::sync::Arc;

use fleet_api::member::{HeartbeatReport, CLUSTER_CA_DATA_PROPERTY, CLUSTER_ENTRYPOINT_PROPERTY, K8S_VERSION_PROPERTY};
use fleet_api::Object;
use http::header::{HeaderValue, USER_AGENT};
use kube::api::{DeleteParams, GetParams, Patch, PatchParams, PropagationPolicy};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use self::discovery::{ApiResource, Discovery};
use self::errors::{is_not_found, map_error};
use super::access::{Access, AccessRequest};
use super::{
    check_owner, last_applied, Applied, ApplyMode, ApplyOutcome, ApplyRequest, Change, ResourceId, Target, TargetError,
    OWNER_ANNOTATION,
};

/// The value of [`fleet_api::member::TARGET_PROPERTY`] and of [`Target::name`].
pub const TARGET_NAME: &str = "kubernetes";
/// The server-side apply field manager of every write: KubeFleet's, so a
/// cluster moved from KubeFleet to Fleet keeps one owner of what was placed
/// (a field either applied is removed when the manifest stops setting it).
pub const FIELD_MANAGER: &str = "work-api-agent";
/// The `User-Agent` of every request to the cluster.
pub const AGENT_USER_AGENT: &str = concat!("fleet-agent/", env!("CARGO_PKG_VERSION"));
/// The `propagationPolicy` of every delete.
pub const DELETE_PROPAGATION: &str = "Background";

/// A real Kubernetes cluster. Cheap to clone: the client and the caches
/// are shared.
#[derive(Clone)]
pub struct KubernetesTarget {
    client: kube::Client,
    discovery: Arc<Discovery>,
    version: Arc<report::VersionCache>,
    changes: Arc<changes::Changes>,
    /// The API server's URL, reported as a property (unknown for a target
    /// built from a bare client).
    entrypoint: Option<String>,
    /// The API server's certificate authority (base64 of its PEM), reported
    /// as a property when the configuration names one.
    ca_data: Option<String>,
}

impl std::fmt::Debug for KubernetesTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubernetesTarget").finish_non_exhaustive()
    }
}

/// A resolved object: where it lives and under which name.
struct Located {
    resource: ApiResource,
    /// The collection URL (in the object's namespace, if namespaced).
    collection: String,
    name: String,
}

impl KubernetesTarget {
    /// A target talking through an existing client (tests point one at an API double).
    pub fn from_client(client: kube::Client) -> KubernetesTarget {
        KubernetesTarget {
            client,
            discovery: Arc::new(Discovery::default()),
            version: Arc::new(report::VersionCache::default()),
            changes: Arc::new(changes::Changes::default()),
            entrypoint: None,
            ca_data: None,
        }
    }

    /// A target for the cluster described by `config`.
    pub fn from_config(mut config: kube::Config) -> Result<KubernetesTarget, TargetError> {
        // kube builds its TLS configuration with the process-wide rustls
        // provider; the workspace uses ring (harmless if already installed).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let entrypoint = config.cluster_url.to_string().trim_end_matches('/').to_string();
        let ca_data = certificate_authority_data(&config);
        // The cluster's audit log and metrics name the agent by this.
        config.headers.push((USER_AGENT, HeaderValue::from_static(AGENT_USER_AGENT)));
        let client = kube::Client::try_from(config)
            .map_err(|e| TargetError::Invalid(format!("cannot build a Kubernetes client: {e}")))?;
        Ok(KubernetesTarget { entrypoint: Some(entrypoint), ca_data, ..KubernetesTarget::from_client(client) })
    }

    /// A target for the cluster of the kubeconfig at `kubeconfig` (its
    /// current context), or, without a path, of the inferred configuration:
    /// `$KUBECONFIG` or `~/.kube/config` if present, else the in-cluster
    /// service account of the pod the agent runs in. Reads configuration
    /// only; the API server is first contacted by the first operation.
    pub async fn connect(kubeconfig: Option<&Path>) -> Result<KubernetesTarget, TargetError> {
        let config = match kubeconfig {
            Some(path) => {
                let file = Kubeconfig::read_from(path)
                    .map_err(|e| TargetError::Invalid(format!("cannot read the kubeconfig {}: {e}", path.display())))?;
                kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| TargetError::Invalid(format!("cannot use the kubeconfig {}: {e}", path.display())))?
            }
            None => kube::Config::infer().await.map_err(|e| {
                TargetError::Invalid(format!(
                    "no Kubernetes configuration found (give --kubeconfig, or run in a pod with a service account): {e}"
                ))
            })?,
        };
        KubernetesTarget::from_config(config)
    }

    /// Finds the resource of `id` by discovery and checks its namespace.
    async fn locate(&self, id: &ResourceId, verb: &str) -> Result<Option<Located>, TargetError> {
        let Some(resource) = self.discovery.resolve(&self.client, &id.group, &id.version, &id.kind).await? else {
            return Ok(None);
        };
        if resource.namespaced && id.namespace.is_empty() {
            return Err(TargetError::Invalid(format!(
                "cannot {verb} {id}: {} is namespaced, metadata.namespace: Required value",
                id.kind
            )));
        }
        let collection = resource.collection_path(&id.namespace);
        Ok(Some(Located { resource, collection, name: id.name.clone() }))
    }

    /// The live object at `located`, `None` if it does not exist.
    async fn read(&self, located: &Located, id: &ResourceId) -> Result<Option<Object>, TargetError> {
        let request = kube::core::Request::new(&located.collection)
            .get(&located.name, &GetParams::default())
            .map_err(|e| TargetError::Invalid(format!("cannot get {id}: {e}")))?;
        match self.client.request::<Object>(request).await {
            Ok(object) => Ok(Some(object)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(map_error(&format!("cannot get {id}"), e)),
        }
    }
}

/// The certificate authority the configuration trusts for the API server,
/// as KubeFleet reports it: base64 of the PEM (the in-cluster CA file as
/// it is, or the kubeconfig's certificates encoded as PEM).
fn certificate_authority_data(config: &kube::Config) -> Option<String> {
    use base64::Engine;
    let pem_text = match (&config.root_cert_file, &config.root_cert) {
        (Some(path), _) => std::fs::read(path).ok()?,
        (None, Some(certificates)) if !certificates.is_empty() => {
            let lf = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);
            let blocks: String = certificates
                .iter()
                .map(|der| pem::encode_config(&pem::Pem::new("CERTIFICATE", der.clone()), lf))
                .collect();
            blocks.into_bytes()
        }
        _ => return None,
    };
    Some(base64::engine::general_purpose::STANDARD.encode(pem_text))
}

/// Why a kind cannot be applied: the API server does not serve it.
fn not_served(id: &ResourceId) -> TargetError {
    let api_version = if id.group.is_empty() { id.version.clone() } else { format!("{}/{}", id.group, id.version) };
    TargetError::NotServed(format!(
        "cannot apply {id}: the cluster serves no kind {:?} in version {api_version:?} \
         (if a CustomResourceDefinition defines it, it may not be established yet)",
        id.kind
    ))
}

/// The apply configuration: the manifest without server-set fields and
/// `status`, with the owner annotation, in the namespace of its scope; for
/// [`ApplyMode::ClientSide`], with its own record
/// ([`last_applied`](super::last_applied)).
fn apply_configuration(manifest: &Object, owner: &str, namespaced: bool, mode: ApplyMode) -> Object {
    let mut desired = manifest.clone();
    desired.strip_server_fields();
    desired.metadata.resource_version.clear();
    if !namespaced || desired.metadata.namespace.as_deref() == Some("") {
        desired.metadata.namespace = None;
    }
    desired.metadata.annotations.insert(OWNER_ANNOTATION.to_string(), owner.to_string());
    if mode == ApplyMode::ClientSide {
        last_applied::record(&mut desired);
    }
    desired
}

impl Target for KubernetesTarget {
    fn name(&self) -> &'static str {
        TARGET_NAME
    }

    async fn apply(&self, request: ApplyRequest<'_>) -> Result<Applied, TargetError> {
        let manifest = request.manifest;
        let id = ResourceId::of(manifest);
        if manifest.metadata.name.is_empty() {
            return Err(TargetError::Invalid(format!(
                "cannot apply {}: metadata.name: Required value (Fleet places objects by name)",
                manifest.kind
            )));
        }
        let located = self.locate(&id, "apply").await?.ok_or_else(|| not_served(&id))?;
        let before = self.read(&located, &id).await?;
        if let Some(live) = &before {
            check_owner(live, request.owner, request.take_over)?;
        }
        let force = match request.mode {
            ApplyMode::ServerSide { force } => force,
            // kubectl-apply semantics through server-side apply (see the module doc).
            ApplyMode::ClientSide => true,
        };
        let mut params = PatchParams::apply(FIELD_MANAGER);
        params.force = force;
        let body = apply_configuration(manifest, request.owner, located.resource.namespaced, request.mode);
        let patch = kube::core::Request::new(&located.collection)
            .patch(&located.name, &params, &Patch::Apply(&body))
            .map_err(|e| TargetError::Invalid(format!("cannot apply {id}: {e}")))?;
        let live: Object = match self.client.request(patch).await {
            Ok(live) => live,
            Err(e) => {
                if is_not_found(&e) {
                    // Perhaps the resource itself is gone (a CRD deleted): rediscover next time.
                    self.discovery.forget(&id.group, &id.version);
                }
                return Err(map_error(&format!("cannot apply {id}"), e));
            }
        };
        // From now on a change to any object of this kind comes back as an event.
        self.changes.wrote(id.clone(), &live.metadata.resource_version);
        self.changes.follow(&self.client, &located.resource);
        let outcome = match &before {
            None => ApplyOutcome::Created,
            Some(old) if old.metadata.resource_version == live.metadata.resource_version => ApplyOutcome::Unchanged,
            Some(_) => ApplyOutcome::Updated,
        };
        Ok(Applied { outcome, live })
    }

    async fn get(&self, id: &ResourceId) -> Result<Option<Object>, TargetError> {
        match self.locate(id, "get").await? {
            Some(located) => self.read(&located, id).await,
            None => Ok(None),
        }
    }

    async fn get_for(&self, id: &ResourceId, work: &str) -> Result<Option<Object>, TargetError> {
        let Some(located) = self.locate(id, "get").await? else { return Ok(None) };
        let live = self.read(&located, id).await?;
        self.changes.look_after(id.clone(), work);
        self.changes.follow(&self.client, &located.resource);
        Ok(live)
    }

    async fn serves(&self, id: &ResourceId) -> Result<bool, TargetError> {
        Ok(self.discovery.resolve(&self.client, &id.group, &id.version, &id.kind).await?.is_some())
    }

    async fn access(&self, request: AccessRequest<'_>) -> Result<Access, TargetError> {
        self.decide_access(&request).await
    }

    async fn delete(&self, id: &ResourceId) -> Result<bool, TargetError> {
        let Some(located) = self.locate(id, "delete").await? else {
            // The kind is not served (its CRD is gone): nothing of it exists.
            return Ok(false);
        };
        let params =
            DeleteParams { propagation_policy: Some(PropagationPolicy::Background), ..DeleteParams::default() };
        let request = kube::core::Request::new(&located.collection)
            .delete(&located.name, &params)
            .map_err(|e| TargetError::Invalid(format!("cannot delete {id}: {e}")))?;
        // The answer is the object (possibly still finalizing) or a Status.
        match self.client.request::<Value>(request).await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(map_error(&format!("cannot delete {id}"), e)),
        }
    }

    fn take_changes(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Change>> {
        self.changes.take()
    }

    async fn report(&self, with_namespaces: bool) -> Result<HeartbeatReport, TargetError> {
        let mut report = report::report(&self.client, with_namespaces).await?;
        if let Some(version) = self.version.get(&self.client).await {
            report.properties.insert(K8S_VERSION_PROPERTY.to_string(), version);
        }
        if let Some(entrypoint) = &self.entrypoint {
            report.properties.insert(CLUSTER_ENTRYPOINT_PROPERTY.to_string(), entrypoint.clone());
        }
        if let Some(ca_data) = &self.ca_data {
            report.properties.insert(CLUSTER_CA_DATA_PROPERTY.to_string(), ca_data.clone());
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_configuration_strips_server_fields_and_sets_the_owner() {
        let manifest: Object = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "demo", "namespace": "ignored", "uid": "u", "resourceVersion": "7", "generation": 2,
                         "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"a": "b"}},
            "status": {"phase": "Active"}
        }))
        .unwrap();
        let body =
            apply_configuration(&manifest, "fleet-member-east/app-work", false, ApplyMode::ServerSide { force: true });
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo", "labels": {"a": "b"},
                   "annotations": {OWNER_ANNOTATION: "fleet-member-east/app-work"}}})
        );
    }

    #[test]
    fn client_side_apply_records_the_configuration_as_kubefleet_does() {
        let manifest: Object = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "demo"}, "data": {"k": "v"}
        }))
        .unwrap();
        let body = apply_configuration(&manifest, "ns/w", true, ApplyMode::ClientSide);
        let recorded: Value =
            serde_json::from_str(&body.metadata.annotations[last_applied::LAST_APPLIED_ANNOTATION]).unwrap();
        assert_eq!(recorded["data"], json!({"k": "v"}));
        assert_eq!(recorded["metadata"]["annotations"], json!({OWNER_ANNOTATION: "ns/w"}));
        let server_side = apply_configuration(&manifest, "ns/w", true, ApplyMode::ServerSide { force: false });
        assert!(!server_side.metadata.annotations.contains_key(last_applied::LAST_APPLIED_ANNOTATION));
    }

    #[test]
    fn only_the_owning_work_may_apply() {
        let mut live: Object = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "demo"}}),
        )
        .unwrap();
        let e = check_owner(&live, "ns/a", false).unwrap_err();
        assert!(matches!(&e, TargetError::Conflict(m) if m.contains("not created by Fleet")), "{e}");
        check_owner(&live, "ns/a", true).unwrap();
        live.metadata.annotations.insert(OWNER_ANNOTATION.into(), "ns/b".into());
        for take_over in [false, true] {
            let e = check_owner(&live, "ns/a", take_over).unwrap_err();
            assert!(matches!(&e, TargetError::Conflict(m) if m.contains("\"ns/b\"")), "{e}");
        }
        check_owner(&live, "ns/b", false).unwrap();
    }
}
