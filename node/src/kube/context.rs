//! One resource request, resolved: who asks, which served resource at which
//! version, which namespace and object, and how the answer is wanted.

use std::sync::Arc;

use fleet_api::{Object, ObjectKey};
use serde_json::Value;

use super::errors::{KubeError, Subject};
use super::query::Query;
use super::resources::Resource;
use super::KubeApi;
use crate::admission::ResolvedKind;
use crate::auth::Caller;
use crate::objects::{read_view, View};

/// A resolved resource request.
pub struct Ctx {
    pub api: Arc<KubeApi>,
    pub caller: Caller,
    pub resource: Resource,
    /// The version the path names (responses carry it in `apiVersion`).
    pub version: String,
    /// The path's namespace (namespaced resources only).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub query: Query,
    /// The request's Accept header.
    pub accept: String,
    /// The request's Content-Type header, without parameters.
    pub content_type: String,
}

impl Ctx {
    /// `G/V` of the path.
    pub fn group_version(&self) -> String {
        self.resource.group_version(&self.version)
    }

    /// What errors about the named object say.
    pub fn subject(&self) -> Subject {
        self.resource.subject(self.name.as_deref().unwrap_or_default())
    }

    /// Maps a refusal of the shared operations to a Kubernetes error.
    pub fn fail(&self, error: crate::error::RequestError) -> KubeError {
        KubeError::from_request(&error, &self.subject())
    }

    /// The kind to read (and delete) and the view reads go through.
    pub fn read_kind(&self) -> (ResolvedKind, Option<View>) {
        read_view(self.resource.resolved())
    }

    /// The key of object `name` in the path's namespace.
    pub fn key(&self, name: &str) -> ObjectKey {
        let (kind, _) = self.read_kind();
        kind.key(self.namespace.as_deref().unwrap_or_default(), name)
    }

    /// The object as this path's version shows it.
    pub fn present(&self, object: &Object) -> Value {
        let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
        value["apiVersion"] = Value::String(self.group_version());
        value["kind"] = Value::String(self.resource.kind.clone());
        value
    }

    /// Whether the client asked for a Table (`kubectl get`'s human output).
    pub fn wants_table(&self) -> bool {
        self.accept.split(',').next().is_some_and(|first| first.contains("as=Table"))
    }
}
