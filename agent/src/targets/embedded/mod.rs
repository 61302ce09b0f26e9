//! The embedded target: a simulated member cluster kept in the agent's data
//! dir, in the spirit of Kubernetes' KWOK (docs/spec/members.md, "The agent's
//! targets").
//!
//! It behaves like an API server with controllers that always succeed:
//! - objects are validated ([`validate`]), given `uid`, `resourceVersion`,
//!   `generation` (bumped when anything but metadata and status changes) and
//!   `creationTimestamp`; namespaced objects need their Namespace; the
//!   namespaces `default`, `kube-system`, `kube-public` and `kube-node-lease`
//!   exist from the start (not created by Fleet, and not deletable);
//! - both apply modes do the same three-way merge ([`merge`]): the manifest's
//!   fields win, fields Fleet set last time and no longer sets are removed,
//!   server-set fields are kept. With Fleet as the only writer there are no
//!   other field managers, so server-side apply's `force` changes nothing.
//!   `ClientSideApply` records the configuration in KubeFleet's annotation,
//!   as on a real cluster ([`super::last_applied`]);
//! - an object is applied only by the Work that created it
//!   ([`OWNER_ANNOTATION`]), or taken over when the request says so
//!   ([`ApplyRequest::take_over`]); anything else is a [`TargetError::Conflict`];
//! - workloads "run" ([`workload`]): their pods' requests are taken from the
//!   allocatable CPU and memory, and they become available
//!   [`SimConfig::ready_delay`] after their latest generation was applied
//!   ([`simulate`]); Services get cluster IPs at once and LoadBalancers an
//!   ingress address when ready; CRDs are established at once;
//! - a Work executor's permissions are decided by the RBAC objects placed
//!   on it ([`access`]);
//! - objects are kept durably, one file each ([`store`]), and can be read by
//!   `fleet-agent inspect` while the agent runs;
//! - someone other than Fleet can create, change and delete objects
//!   ([`edit`]), through the running agent (`fleet-agent apply|patch|delete`,
//!   see [`crate::edits`]).

pub(crate) mod access;
pub mod config;
pub mod edit;
pub(crate) mod merge;
pub(crate) mod print;
pub(crate) mod simulate;
pub(crate) mod store;
pub(crate) mod validate;
pub(crate) mod workload;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use fleet_api::kinds::Scope;
use fleet_api::member::{HeartbeatReport, ResourceUsage, TARGET_PROPERTY};
use fleet_api::quantity::Quantity;
use fleet_api::{Object, ObjectKey};
use serde_json::{Map, Value};

pub use config::{SimArgs, SimConfig};
pub use edit::{Edit, EditOutcome, Edited};
pub use store::STORE_DIR;

use self::simulate::{live_view, server_defaults, Allocated};
use self::store::{format_time, Record, Store};
use super::access::{Access, AccessRequest};
use super::{
    check_owner, Applied, ApplyMode, ApplyOutcome, ApplyRequest, ResourceId, Target, TargetError, OWNER_ANNOTATION,
};

/// The value of [`TARGET_PROPERTY`] and of [`Target::name`].
pub const TARGET_NAME: &str = "embedded";
/// Property: the number of nodes.
pub const NODE_COUNT_PROPERTY: &str = "kubernetes-fleet.io/node-count";
/// Property: the hourly cost of one CPU core.
pub const CPU_COST_PROPERTY: &str = "kubernetes.azure.com/per-cpu-core-cost";
/// Property: the hourly cost of one GiB of memory.
pub const MEMORY_COST_PROPERTY: &str = "kubernetes.azure.com/per-gb-memory-cost";
/// Namespaces every cluster has from the start (not created by Fleet).
pub const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The simulated member cluster. Cheap to share: all state is behind an `Arc`.
#[derive(Clone)]
pub struct EmbeddedTarget {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    config: SimConfig,
    state: Mutex<State>,
}

struct State {
    records: BTreeMap<ObjectKey, Record>,
    /// The last resourceVersion handed out.
    resource_version: u64,
}

impl std::fmt::Debug for EmbeddedTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedTarget").field("store", &self.inner.store.root()).finish()
    }
}

fn key_of(id: &ResourceId) -> ObjectKey {
    ObjectKey::new(&id.group, &id.kind, &id.namespace, &id.name)
}

fn namespace_key(name: &str) -> ObjectKey {
    ObjectKey::new("", "Namespace", "", name)
}

fn internal(what: &str, e: impl std::fmt::Display) -> TargetError {
    TargetError::Unavailable(format!("embedded target: {what}: {e}"))
}

impl EmbeddedTarget {
    /// Opens (creating if needed) the simulated cluster kept in the
    /// directory `dir` — the agent uses `DATA_DIR/embedded` ([`STORE_DIR`]),
    /// which is where `fleet-agent inspect --data-dir DATA_DIR` looks — with
    /// the size in `config` (which may differ from the last run: status and
    /// resources follow the new one).
    pub fn open(dir: &Path, config: SimConfig) -> Result<EmbeddedTarget, TargetError> {
        config.validate()?;
        let store = Store::new(dir);
        store.create()?;
        store.write_config(&(&config).into())?;
        let mut records = BTreeMap::new();
        let mut resource_version = store.read_resource_version()?;
        for record in store.load_all()? {
            resource_version = resource_version.max(record.object.metadata.resource_version_number().unwrap_or(0));
            records.insert(ObjectKey::of(&record.object), record);
        }
        let target = EmbeddedTarget {
            inner: Arc::new(Inner { store, config, state: Mutex::new(State { records, resource_version }) }),
        };
        for name in SYSTEM_NAMESPACES {
            if target.inner.lock().records.contains_key(&namespace_key(name)) {
                continue;
            }
            let namespace = Object {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                metadata: fleet_api::ObjectMeta { name: name.to_string(), ..Default::default() },
                rest: Map::new(),
            };
            target.inner.create_unmanaged(&namespace)?;
        }
        Ok(target)
    }

    /// The configuration the cluster was opened with.
    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// The directory the cluster is kept in (as given to [`EmbeddedTarget::open`]).
    pub fn store_dir(&self) -> &Path {
        self.inner.store.root()
    }

    /// Every object, as [`Target::get`] would return it, in key order.
    pub fn list(&self) -> Vec<Object> {
        let now = SystemTime::now();
        let state = self.inner.lock();
        state.records.values().map(|r| live_view(r, self.inner.config.nodes, now)).collect()
    }

    /// Creates an object as someone other than Fleet would (e.g. `kubectl`
    /// on the member cluster): no owner annotation, so Fleet applies over it
    /// only if a Work's `whenToTakeOver` lets it take the object over. Fails
    /// if the object exists. For tests and demos.
    pub fn create_unmanaged(&self, object: &Object) -> Result<Object, TargetError> {
        self.inner.create_unmanaged(object)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The scope a stored CRD declares for `group`/`kind`.
    fn crd_scope(state: &State, group: &str, kind: &str) -> Option<Scope> {
        state.records.values().find_map(|r| {
            let o = &r.object;
            let spec = o.spec()?;
            let is_crd = o.group() == "apiextensions.k8s.io" && o.kind == "CustomResourceDefinition";
            let matches = spec.get("group")?.as_str()? == group && spec.pointer("/names/kind")?.as_str()? == kind;
            (is_crd && matches).then(|| match spec.get("scope").and_then(Value::as_str) {
                Some("Cluster") => Scope::Cluster,
                _ => Scope::Namespaced,
            })
        })
    }

    /// Validates, checks the namespace and returns the object's key.
    fn admit(&self, state: &State, manifest: &Object) -> Result<ObjectKey, TargetError> {
        let scope = validate::scope_of(manifest, |g, k| Inner::crd_scope(state, g, k));
        validate::validate(manifest, scope)?;
        let key = ObjectKey::of(manifest);
        if scope == Scope::Namespaced && !state.records.contains_key(&namespace_key(&key.namespace)) {
            return Err(TargetError::Invalid(format!(
                "cannot apply {}: namespaces {:?} not found (the Namespace must be applied first)",
                ResourceId::of(manifest),
                key.namespace
            )));
        }
        Ok(key)
    }

    /// The next resourceVersion.
    fn next_version(state: &mut State) -> u64 {
        state.resource_version += 1;
        state.resource_version
    }

    /// Cluster IPs and node ports taken by objects other than `except`
    /// (only Services allocate, so nothing is gathered for other kinds).
    fn allocated(state: &State, except: &ObjectKey) -> Allocated {
        let mut allocated = Allocated::default();
        if !except.group.is_empty() || except.kind != "Service" {
            return allocated;
        }
        for (key, record) in &state.records {
            if key != except {
                allocated.add(&record.object);
            }
        }
        allocated
    }

    /// Stores a new object; `last_applied` is `None` for objects not created by Fleet.
    fn create(
        &self,
        state: &mut State,
        key: ObjectKey,
        desired: &Map<String, Value>,
        last_applied: Option<Value>,
        now: SystemTime,
    ) -> Result<Object, TargetError> {
        let mut fresh = Map::new();
        merge::three_way(&mut fresh, &Map::new(), desired);
        let mut object: Object = serde_json::from_value(Value::Object(fresh)).map_err(|e| internal("decode", e))?;
        server_defaults(&mut object, None, &Inner::allocated(state, &key))?;
        object.metadata.uid = uuid::Uuid::new_v4().to_string();
        object.metadata.creation_timestamp = Some(fleet_api::time::rfc3339_of(now));
        object.metadata.generation = 1;
        object.metadata.set_resource_version(Inner::next_version(state));
        let record = Record { object, last_applied, ready_at: format_time(now + self.config.ready_delay) };
        self.store.write(&record)?;
        let live = live_view(&record, self.config.nodes, now);
        state.records.insert(key, record);
        Ok(live)
    }

    fn create_unmanaged(&self, object: &Object) -> Result<Object, TargetError> {
        let mut state = self.lock();
        let key = self.admit(&state, object)?;
        if state.records.contains_key(&key) {
            return Err(TargetError::Conflict(format!("{} already exists", ResourceId::of(object))));
        }
        let desired = desired_fields(object, None)?;
        self.create(&mut state, key, &desired, None, SystemTime::now())
    }

    fn apply(&self, manifest: &Object, mode: ApplyMode, owner: &str, take_over: bool) -> Result<Applied, TargetError> {
        // Both modes merge the same way (see the module doc): the simulated
        // cluster has no field manager but Fleet, so `force` has nothing to
        // override.
        let mut state = self.lock();
        let key = self.admit(&state, manifest)?;
        let desired = desired_fields(manifest, Some((owner, mode)))?;
        let now = SystemTime::now();
        let Some(record) = state.records.get(&key).cloned() else {
            let live = self.create(&mut state, key, &desired, Some(Value::Object(desired.clone())), now)?;
            return Ok(Applied { outcome: ApplyOutcome::Created, live });
        };
        check_owner(&record.object, owner, take_over)?;
        let mut merged = object_map(&record.object)?;
        let last = match &record.last_applied {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        merge::three_way(&mut merged, &last, &desired);
        let (outcome, live) = self.update(&mut state, &key, record, merged, Some(Value::Object(desired)), now)?;
        Ok(Applied { outcome, live })
    }

    /// Stores `merged` as the new version of the object `record` holds, as
    /// an API server would: server defaults kept or filled in, `uid` and
    /// `creationTimestamp` kept, `generation` bumped when anything but
    /// metadata and status changed (restarting its readiness delay),
    /// `resourceVersion` bumped when anything changed. `last_applied` is
    /// what Fleet last applied (kept as it was by writers other than Fleet).
    /// Every write to an existing object goes through here: Fleet's applies
    /// and out-of-band edits ([`edit`](self::edit)).
    fn update(
        &self,
        state: &mut State,
        key: &ObjectKey,
        record: Record,
        merged: Map<String, Value>,
        last_applied: Option<Value>,
        now: SystemTime,
    ) -> Result<(ApplyOutcome, Object), TargetError> {
        let current = &record.object;
        let mut object: Object = serde_json::from_value(Value::Object(merged)).map_err(|e| internal("decode", e))?;
        server_defaults(&mut object, Some(current), &Inner::allocated(state, key))?;
        object.metadata.uid = current.metadata.uid.clone();
        object.metadata.creation_timestamp = current.metadata.creation_timestamp.clone();
        object.metadata.generation = current.metadata.generation;
        object.metadata.resource_version = current.metadata.resource_version.clone();
        let mut ready_at = record.ready_at.clone();
        if !object.same_spec(current) {
            object.metadata.generation += 1;
            ready_at = format_time(now + self.config.ready_delay);
        }
        let outcome = if object == *current {
            if record.last_applied != last_applied {
                let updated = Record { last_applied, ..record };
                self.store.write(&updated)?;
                state.records.insert(key.clone(), updated);
            }
            ApplyOutcome::Unchanged
        } else {
            object.metadata.set_resource_version(Inner::next_version(state));
            let updated = Record { object, last_applied, ready_at };
            self.store.write(&updated)?;
            state.records.insert(key.clone(), updated);
            ApplyOutcome::Updated
        };
        let live = state
            .records
            .get(key)
            .map(|r| live_view(r, self.config.nodes, now))
            .ok_or_else(|| internal("apply", "the object vanished"))?;
        Ok((outcome, live))
    }

    fn delete(&self, id: &ResourceId) -> Result<bool, TargetError> {
        let mut state = self.lock();
        let key = key_of(id);
        let Some(record) = state.records.get(&key) else {
            return Ok(false);
        };
        let mut doomed = Vec::new();
        match (key.group.as_str(), key.kind.as_str()) {
            ("", "Namespace") => {
                if SYSTEM_NAMESPACES.contains(&key.name.as_str()) {
                    return Err(TargetError::Invalid(format!(
                        "namespaces {:?} is forbidden: this namespace may not be deleted",
                        key.name
                    )));
                }
                doomed.extend(state.records.keys().filter(|k| k.namespace == key.name).cloned());
            }
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                // Deleting a CRD deletes its custom resources.
                let spec = record.object.spec();
                let group = spec.and_then(|s| s.get("group")).and_then(Value::as_str).unwrap_or("");
                let kind = spec.and_then(|s| s.pointer("/names/kind")).and_then(Value::as_str).unwrap_or("");
                doomed.extend(state.records.keys().filter(|k| k.group == group && k.kind == kind).cloned());
            }
            _ => {}
        }
        // Dependents first, so a crash midway leaves the owner to delete again.
        doomed.push(key);
        self.store.write_resource_version(state.resource_version)?;
        for key in doomed {
            self.store.remove(&key)?;
            state.records.remove(&key);
        }
        Ok(true)
    }

    fn get(&self, id: &ResourceId) -> Option<Object> {
        let state = self.lock();
        state.records.get(&key_of(id)).map(|r| live_view(r, self.config.nodes, SystemTime::now()))
    }

    fn report(&self, with_namespaces: bool) -> HeartbeatReport {
        let state = self.lock();
        let config = &self.config;
        let capacity = config.cluster_capacity();
        let allocatable = config.cluster_allocatable();
        let mut requested: BTreeMap<String, Quantity> = BTreeMap::new();
        for record in state.records.values() {
            for (resource, q) in workload::workload_requests(&record.object, config.nodes).into_iter().flatten() {
                let sum = requested.entry(resource).or_default();
                *sum = sum.saturating_add(q);
            }
        }
        let mut properties = BTreeMap::new();
        properties.insert(NODE_COUNT_PROPERTY.to_string(), config.nodes.to_string());
        properties.insert(TARGET_PROPERTY.to_string(), TARGET_NAME.to_string());
        for (key, property) in [("per-cpu-core", CPU_COST_PROPERTY), ("per-gb-memory", MEMORY_COST_PROPERTY)] {
            if let Some(cost) = config.cost.get(key) {
                properties.insert(property.to_string(), cost.clone());
            }
        }
        let mut report = HeartbeatReport {
            properties,
            resource_usage: resource_usage(&capacity, &allocatable, &requested, SystemTime::now()),
            conditions: Vec::new(),
            namespaces: None,
        };
        if !with_namespaces {
            return report;
        }
        let seen = state.records.iter().filter(|(key, _)| key.group.is_empty() && key.kind == "Namespace").map(
            |(key, record)| super::namespaces::SeenNamespace {
                name: &key.name,
                owner: record.object.metadata.annotations.get(OWNER_ANNOTATION).map(String::as_str),
                terminating: record.object.metadata.deletion_timestamp.is_some(),
            },
        );
        let (namespaces, namespaces_condition) = super::namespaces::report(seen);
        report.conditions.push(namespaces_condition);
        report.namespaces = Some(namespaces);
        report
    }
}

/// An object as a JSON map.
fn object_map(object: &Object) -> Result<Map<String, Value>, TargetError> {
    match serde_json::to_value(object).map_err(|e| internal("encode", e))? {
        Value::Object(map) => Ok(map),
        _ => Err(internal("encode", "an object is not a JSON object")),
    }
}

/// The fields a manifest asks for: without server-set metadata, `status` and
/// `resourceVersion`; when Fleet applies it (`applied_by`: the owning Work
/// and the apply mode), with the owner annotation and, for
/// [`ApplyMode::ClientSide`], the record of the configuration that a real
/// cluster gets too ([`last_applied`](super::last_applied)).
fn desired_fields(manifest: &Object, applied_by: Option<(&str, ApplyMode)>) -> Result<Map<String, Value>, TargetError> {
    let mut manifest = manifest.clone();
    manifest.strip_server_fields();
    manifest.metadata.resource_version.clear();
    if manifest.metadata.namespace.as_deref() == Some("") {
        manifest.metadata.namespace = None;
    }
    if let Some((owner, mode)) = applied_by {
        manifest.metadata.annotations.insert(OWNER_ANNOTATION.to_string(), owner.to_string());
        if mode == ApplyMode::ClientSide {
            super::last_applied::record(&mut manifest);
        }
    }
    match serde_json::to_value(&manifest).map_err(|e| internal("encode", e))? {
        Value::Object(map) => Ok(map),
        _ => Err(internal("encode", "a manifest is not a JSON object")),
    }
}

/// The usage a heartbeat reports, for either kind of cluster: capacity,
/// allocatable, and what `requested` leaves of allocatable (never below
/// zero), observed at `at`.
pub(crate) fn resource_usage(
    capacity: &BTreeMap<String, Quantity>,
    allocatable: &BTreeMap<String, Quantity>,
    requested: &BTreeMap<String, Quantity>,
    at: SystemTime,
) -> ResourceUsage {
    let zero = Quantity::default();
    let available: BTreeMap<String, Quantity> = allocatable
        .iter()
        .map(|(k, a)| (k.clone(), a.saturating_sub(requested.get(k).copied().unwrap_or(zero)).max(zero)))
        .collect();
    ResourceUsage {
        capacity: render(capacity),
        allocatable: render(allocatable),
        available: render(&available),
        observation_time: fleet_api::time::rfc3339_of(at),
    }
}

/// Quantities as strings: CPU in cores or millicores, memory with the
/// largest binary suffix that keeps it exact (`48Gi`, `49024Mi`).
fn render(quantities: &BTreeMap<String, Quantity>) -> BTreeMap<String, String> {
    quantities.iter().map(|(k, q)| (k.clone(), if k == "memory" { format_memory(*q) } else { q.to_string() })).collect()
}

/// `48Gi`, `49024Mi`, `1000` (bytes), or the plain exact form.
pub(crate) fn format_memory(q: Quantity) -> String {
    const NANO: i128 = 1_000_000_000;
    if q.nanos() <= 0 || q.nanos() % NANO != 0 {
        return q.to_string();
    }
    let bytes = q.nanos() / NANO;
    for (suffix, shift) in [("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
        if bytes % (1i128 << shift) == 0 {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TargetError> + Send + 'static,
) -> Result<T, TargetError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| internal("worker", e))?
}

impl Target for EmbeddedTarget {
    fn name(&self) -> &'static str {
        TARGET_NAME
    }

    async fn apply(&self, request: ApplyRequest<'_>) -> Result<Applied, TargetError> {
        let inner = self.inner.clone();
        let manifest = request.manifest.clone();
        let (mode, owner, take_over) = (request.mode, request.owner.to_string(), request.take_over);
        blocking(move || inner.apply(&manifest, mode, &owner, take_over)).await
    }

    async fn get(&self, id: &ResourceId) -> Result<Option<Object>, TargetError> {
        Ok(self.inner.get(id))
    }

    async fn access(&self, request: AccessRequest<'_>) -> Result<Access, TargetError> {
        Ok(access::decide(&self.inner.lock(), &request))
    }

    async fn delete(&self, id: &ResourceId) -> Result<bool, TargetError> {
        let inner = self.inner.clone();
        let id = id.clone();
        blocking(move || inner.delete(&id)).await
    }

    async fn report(&self, with_namespaces: bool) -> Result<HeartbeatReport, TargetError> {
        Ok(self.inner.report(with_namespaces))
    }
}
