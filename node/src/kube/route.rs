//! What a request path addresses: discovery, OpenAPI, or a resource
//! (`/api/v1/...`, `/apis/G/V/...`, optionally namespaced, named, with a
//! subresource).

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/G`.
    Group(String),
    /// `/api/v1` or `/apis/G/V`.
    GroupVersion { group: String, version: String },
    /// `/openapi/v3`.
    OpenApiIndex,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/G/V`.
    OpenApi { group: String, version: String },
    /// A collection, an object, or an object's subresource.
    Resource(ResourcePath),
    /// Anything else.
    Unknown,
}

/// The resource part of a path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    /// From `namespaces/<ns>/...`.
    pub namespace: Option<String>,
    pub plural: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parses a request path.
pub fn parse(path: &str) -> Route {
    let segments: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(super::query::decode_segment).collect();
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz"] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["api", version] => Route::GroupVersion { group: String::new(), version: version.to_string() },
        ["apis", group, version] => Route::GroupVersion { group: group.to_string(), version: version.to_string() },
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["openapi", "v3", "api", version] => Route::OpenApi { group: String::new(), version: version.to_string() },
        ["openapi", "v3", "apis", group, version] => {
            Route::OpenApi { group: group.to_string(), version: version.to_string() }
        }
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::Unknown,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let base = ResourcePath { group: group.to_string(), version: version.to_string(), ..ResourcePath::default() };
    let named = |namespace: Option<&str>, parts: &[&str]| -> Route {
        let mut path = base.clone();
        path.namespace = namespace.map(str::to_string);
        match parts {
            [plural] => path.plural = plural.to_string(),
            [plural, name] => {
                path.plural = plural.to_string();
                path.name = Some(name.to_string());
            }
            [plural, name, sub] => {
                path.plural = plural.to_string();
                path.name = Some(name.to_string());
                path.subresource = Some(sub.to_string());
            }
            _ => return Route::Unknown,
        }
        Route::Resource(path)
    };
    match rest {
        // A namespace's own subresource (`namespaces/x/status`).
        ["namespaces", _, "status" | "finalize"] if group.is_empty() => named(None, rest),
        ["namespaces", namespace, tail @ ..] if !tail.is_empty() => named(Some(namespace), tail),
        _ => named(None, rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_paths_kubectl_uses() {
        assert_eq!(parse("/apis"), Route::Groups);
        assert_eq!(parse("/api/v1"), Route::GroupVersion { group: String::new(), version: "v1".into() });
        let Route::Resource(r) = parse("/apis/placement.kubernetes-fleet.io/v1beta1/clusterresourceplacements/web")
        else {
            panic!("not a resource")
        };
        assert_eq!(
            (r.plural.as_str(), r.name.as_deref(), r.namespace),
            ("clusterresourceplacements", Some("web"), None)
        );
        let Route::Resource(r) = parse("/api/v1/namespaces/team-a/configmaps/app/status") else { panic!() };
        assert_eq!(r.namespace.as_deref(), Some("team-a"));
        assert_eq!(r.subresource.as_deref(), Some("status"));
        let Route::Resource(r) = parse("/api/v1/namespaces/team-a") else { panic!() };
        assert_eq!((r.plural.as_str(), r.name.as_deref()), ("namespaces", Some("team-a")));
        let Route::Resource(r) = parse("/api/v1/namespaces") else { panic!() };
        assert_eq!(r.plural, "namespaces");
        assert_eq!(parse("/openapi/v3/apis/apps/v1"), Route::OpenApi { group: "apps".into(), version: "v1".into() });
        assert_eq!(parse("/nothing/here"), Route::Unknown);
    }
}
