//! Discovery: `/api`, `/apis`, `/apis/G`, `/api/v1`, `/apis/G/V` in the
//! legacy shapes, and the aggregated `APIGroupDiscoveryList` (v2 and
//! v2beta1) when the client's Accept asks for it.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::errors::KubeError;
use super::resources::{self, Resource, VERBS};
use super::respond;

/// The aggregated discovery version the client accepts, if any (v2 first).
pub fn aggregated_version(accept: &str) -> Option<&'static str> {
    let wants = |v: &str| {
        accept.split(',').any(|part| part.contains("g=apidiscovery.k8s.io") && part.contains(&format!("v={v};")))
            || accept.split(',').any(|part| part.contains("g=apidiscovery.k8s.io") && part.ends_with(&format!("v={v}")))
    };
    ["v2", "v2beta1"].into_iter().find(|v| wants(v))
}

fn aggregated(items: Vec<Value>, version: &str) -> Response {
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    });
    let content_type = format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    respond::json_as(StatusCode::OK, &body, &content_type)
}

fn aggregated_resource(r: &Resource, version: &str) -> Value {
    let response_kind = json!({"group": r.group, "version": version, "kind": r.kind});
    let mut resource = json!({
        "resource": r.plural,
        "singularResource": r.singular,
        "scope": if r.namespaced() { "Namespaced" } else { "Cluster" },
        "responseKind": response_kind,
        "verbs": VERBS,
    });
    if !r.short_names.is_empty() {
        resource["shortNames"] = json!(r.short_names);
    }
    if r.fleet {
        resource["categories"] = json!(["fleet"]);
    }
    if r.status {
        resource["subresources"] =
            json!([{"subresource": "status", "responseKind": response_kind, "verbs": ["get", "patch", "update"]}]);
    }
    resource
}

fn aggregated_group(all: &[Resource], group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let served: Vec<Value> =
                resources::in_group_version(all, group, v).into_iter().map(|r| aggregated_resource(r, v)).collect();
            json!({"version": v, "resources": served, "freshness": "Current"})
        })
        .collect();
    if group.is_empty() {
        json!({"metadata": {}, "versions": versions})
    } else {
        json!({"metadata": {"name": group}, "versions": versions})
    }
}

/// `/api`.
pub fn core_versions(all: &[Resource], accept: &str, server: &str) -> Response {
    if let Some(version) = aggregated_version(accept) {
        return aggregated(vec![aggregated_group(all, "", &["v1".to_string()])], version);
    }
    respond::ok(&json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
    }))
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let listed: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"name": group, "versions": listed, "preferredVersion": listed.first().cloned().unwrap_or(Value::Null)})
}

/// `/apis`.
pub fn groups(all: &[Resource], accept: &str) -> Response {
    let groups = resources::groups(all);
    if let Some(version) = aggregated_version(accept) {
        return aggregated(groups.iter().map(|(g, vs)| aggregated_group(all, g, vs)).collect(), version);
    }
    let listed: Vec<Value> = groups.iter().map(|(g, vs)| group_entry(g, vs)).collect();
    respond::ok(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}))
}

/// `/apis/G`.
pub fn group(all: &[Resource], group: &str) -> Result<Response, KubeError> {
    let groups = resources::groups(all);
    let (_, versions) =
        groups.iter().find(|(g, _)| g == group).ok_or_else(|| KubeError::no_route(&format!("/apis/{group}")))?;
    let mut entry = group_entry(group, versions);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Ok(respond::ok(&entry))
}

/// `/api/v1` or `/apis/G/V`.
pub fn group_version(all: &[Resource], group: &str, version: &str) -> Result<Response, KubeError> {
    let served = resources::in_group_version(all, group, version);
    if served.is_empty() {
        return Err(KubeError::no_route(&format!("/apis/{group}/{version}")));
    }
    let mut listed = Vec::new();
    for r in served {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced(),
            "kind": r.kind,
            "verbs": VERBS,
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if r.fleet {
            entry["categories"] = json!(["fleet"]);
        }
        listed.push(entry);
        if r.status {
            listed.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced(),
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Ok(respond::ok(&json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": listed,
    })))
}

/// `/version`: a Kubernetes version kubectl 1.32 is happy with, and Fleet's own.
pub fn version() -> Response {
    respond::ok(&json!({
        "major": "1",
        "minor": "32",
        "gitVersion": format!("v1.32.0+fleet-{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_discovery_is_sent_only_when_accepted() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_version(kubectl), Some("v2"));
        let old = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_version(old), Some("v2beta1"));
        assert_eq!(aggregated_version("application/json, */*"), None);
    }
}
