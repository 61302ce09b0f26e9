//! Which kind a command is about, and how kinds and objects are named in output.

use fleet_api::kinds::{self, KindInfo, Scope};
use fleet_api::object::group_of;
use fleet_api::Object;
use fleet_proto::fleet::KindRef;

/// The namespace used for namespaced kinds when `-n` is not given.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A kind as named by the user (command line or document), resolved against
/// the kind registry when Fleet knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindArg {
    /// The name sent to the server: the canonical Kind when known, otherwise
    /// exactly what the user wrote (the server may know it from a CRD).
    pub name: String,
    /// The `apiVersion`, when known from a document (empty otherwise).
    pub api_version: String,
    /// What the registry knows about the kind, if anything.
    pub info: Option<&'static KindInfo>,
}

impl KindArg {
    /// Resolves a command-line name (Kind, plural or short name).
    pub fn resolve(name: &str) -> KindArg {
        match kinds::lookup(name) {
            Some(info) => KindArg { name: info.kind.to_string(), api_version: String::new(), info: Some(info) },
            None => KindArg { name: name.to_string(), api_version: String::new(), info: None },
        }
    }

    /// The kind of a document, by its own `apiVersion` and `kind`.
    pub fn of_object(object: &Object) -> KindArg {
        KindArg {
            name: object.kind.clone(),
            api_version: object.api_version.clone(),
            info: kinds::lookup_group_kind(object.group(), &object.kind),
        }
    }

    /// The request field naming this kind.
    pub fn to_proto(&self) -> KindRef {
        KindRef { kind: self.name.clone(), api_version: self.api_version.clone() }
    }

    /// Whether objects of this kind live in namespaces; `None` when unknown.
    pub fn namespaced(&self) -> Option<bool> {
        self.info.map(|i| i.scope == Scope::Namespaced)
    }

    /// The namespace for a request about one object: the one given, else
    /// `default` for namespaced kinds, else empty (cluster-scoped, or unknown
    /// scope: the server decides).
    pub fn namespace_for(&self, given: Option<&str>) -> String {
        match (given, self.namespaced()) {
            (Some(_), Some(false)) => String::new(),
            (Some(ns), _) => ns.to_string(),
            (None, Some(true)) => DEFAULT_NAMESPACE.to_string(),
            (None, _) => String::new(),
        }
    }

    /// The Kind as objects spell it (canonical when known).
    pub fn kind(&self) -> &str {
        self.info.map(|i| i.kind).unwrap_or(&self.name)
    }

    /// The API group, when known.
    pub fn group(&self) -> Option<&str> {
        match self.info {
            Some(info) => Some(info.group),
            None if !self.api_version.is_empty() => Some(group_of(&self.api_version)),
            None => None,
        }
    }

    /// `kind.group` in lowercase as kubectl prints it (`deployment.apps`,
    /// `configmap`); for an unknown kind, the name as given in lowercase.
    pub fn qualified(&self) -> String {
        match self.group() {
            Some(group) => qualified_kind(self.kind(), group),
            None => self.name.to_ascii_lowercase(),
        }
    }

    /// The lowercase plural (`configmaps`) used in messages, when known.
    pub fn plural(&self) -> String {
        match self.info {
            Some(info) => info.plural.to_string(),
            None => self.name.to_ascii_lowercase(),
        }
    }
}

/// `kind.group` in lowercase, or just `kind` for the core group.
pub fn qualified_kind(kind: &str, group: &str) -> String {
    let kind = kind.to_ascii_lowercase();
    if group.is_empty() {
        kind
    } else {
        format!("{kind}.{group}")
    }
}

/// `kind.group/name` as `-o name` and `apply` print it (`configmap/x`,
/// `clusterresourceplacement.placement.kubernetes-fleet.io/web`).
pub fn resource_name(object: &Object) -> String {
    format!("{}/{}", qualified_kind(&object.kind, object.group()), object.metadata.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(api_version: &str, kind: &str, name: &str) -> Object {
        serde_json::from_value(serde_json::json!({
            "apiVersion": api_version, "kind": kind, "metadata": {"name": name}
        }))
        .unwrap()
    }

    #[test]
    fn names_core_and_grouped_objects_like_kubectl() {
        assert_eq!(resource_name(&obj("v1", "ConfigMap", "x")), "configmap/x");
        assert_eq!(resource_name(&obj("apps/v1", "Deployment", "web")), "deployment.apps/web");
        assert_eq!(
            resource_name(&obj("placement.kubernetes-fleet.io/v1beta1", "ClusterResourcePlacement", "crp-1")),
            "clusterresourceplacement.placement.kubernetes-fleet.io/crp-1"
        );
    }

    #[test]
    fn resolves_short_names_and_passes_unknown_through() {
        let crp = KindArg::resolve("crp");
        assert_eq!(crp.name, "ClusterResourcePlacement");
        assert_eq!(crp.namespaced(), Some(false));
        assert_eq!(crp.qualified(), "clusterresourceplacement.placement.kubernetes-fleet.io");
        let unknown = KindArg::resolve("widgets.example.com");
        assert_eq!(unknown.name, "widgets.example.com");
        assert_eq!(unknown.namespaced(), None);
        assert_eq!(unknown.to_proto().kind, "widgets.example.com");
    }

    #[test]
    fn namespace_defaults() {
        assert_eq!(KindArg::resolve("cm").namespace_for(None), "default");
        assert_eq!(KindArg::resolve("cm").namespace_for(Some("app")), "app");
        assert_eq!(KindArg::resolve("ns").namespace_for(None), "");
        assert_eq!(KindArg::resolve("ns").namespace_for(Some("app")), "");
        assert_eq!(KindArg::resolve("Widget").namespace_for(None), "");
        assert_eq!(KindArg::resolve("Widget").namespace_for(Some("x")), "x");
    }

    #[test]
    fn document_kinds_use_their_group() {
        let k = KindArg::of_object(&obj("example.com/v1", "Widget", "w"));
        assert_eq!(k.qualified(), "widget.example.com");
        assert_eq!(k.to_proto().api_version, "example.com/v1");
        assert_eq!(KindArg::of_object(&obj("apps/v1", "Deployment", "d")).namespaced(), Some(true));
    }
}
