//! Discovery: which resource (plural) serves a group/version/kind, and its
//! scope. One API resource list is read per group-version and cached; a kind
//! the cache does not know re-reads its group-version, so kinds of
//! CustomResourceDefinitions created after the agent started become
//! appliable as soon as the API server serves them.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;

use super::errors::{is_not_found, map_error};
use crate::targets::TargetError;

/// Where objects of one kind live on the API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiResource {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    /// The resource name in URLs (`deployments`).
    pub plural: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
}

impl ApiResource {
    /// `/api/v1` or `/apis/<group>/<version>`.
    fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The collection URL, in `namespace` for namespaced resources.
    pub fn collection_path(&self, namespace: &str) -> String {
        if self.namespaced {
            format!("{}/namespaces/{namespace}/{}", self.group_version_path(), self.plural)
        } else {
            format!("{}/{}", self.group_version_path(), self.plural)
        }
    }
}

/// Kinds of one group-version: kind → resource.
type Kinds = HashMap<String, ApiResource>;

/// The discovery cache, keyed by `apiVersion` (`v1`, `apps/v1`).
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    cache: Mutex<HashMap<String, Kinds>>,
}

/// `v1` or `<group>/<version>`.
fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

impl Discovery {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Kinds>> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Forgets what is known of `group`/`version` (its resources may have
    /// changed: a CRD deleted or redefined); the next lookup reads it again.
    pub fn forget(&self, group: &str, version: &str) {
        self.lock().remove(&api_version(group, version));
    }

    /// The resource serving `kind` in `group`/`version`; `None` when the API
    /// server does not serve it (unknown group-version, or no such kind).
    pub async fn resolve(
        &self,
        client: &kube::Client,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Option<ApiResource>, TargetError> {
        let key = api_version(group, version);
        if let Some(found) = self.lock().get(&key).and_then(|kinds| kinds.get(kind)) {
            return Ok(Some(found.clone()));
        }
        // A miss: read the group-version again (a CRD may have been created since).
        let listed = if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client.list_api_group_resources(&key).await
        };
        let list = match listed {
            Ok(list) => list,
            Err(e) if is_not_found(&e) => {
                self.lock().remove(&key);
                return Ok(None);
            }
            Err(e) => return Err(map_error(&format!("cannot discover the resources of {key}"), e)),
        };
        let kinds = kinds_of(group, version, &list);
        let found = kinds.get(kind).cloned();
        self.lock().insert(key, kinds);
        Ok(found)
    }
}

/// The kinds an API resource list serves; subresources (`deployments/status`) are skipped.
fn kinds_of(group: &str, version: &str, list: &APIResourceList) -> Kinds {
    list.resources
        .iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| {
            let resource = ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                plural: r.name.clone(),
                namespaced: r.namespaced,
            };
            (r.kind.clone(), resource)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_lists_become_kinds_and_paths() {
        let list: APIResourceList = serde_json::from_value(serde_json::json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
            "resources": [
                {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
                 "verbs": ["get", "patch", "delete"]},
                {"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment",
                 "verbs": ["get", "patch"]},
            ]
        }))
        .unwrap();
        let kinds = kinds_of("apps", "v1", &list);
        assert_eq!(kinds.len(), 1);
        let deployments = &kinds["Deployment"];
        assert_eq!(deployments.collection_path("demo"), "/apis/apps/v1/namespaces/demo/deployments");
        let namespaces =
            ApiResource { group: "".into(), version: "v1".into(), plural: "namespaces".into(), namespaced: false };
        assert_eq!(namespaces.collection_path(""), "/api/v1/namespaces");
    }
}
