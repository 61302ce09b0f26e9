//! Whether one rule allows one request, and whether a set of rules covers
//! another rule (the escalation check).

use crate::types::PolicyRule;

/// What a request is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// An API object or collection.
    Resource {
        /// The API group (`""` for the core group).
        group: String,
        /// The plural, e.g. `configmaps`.
        resource: String,
        /// The subresource (`status`), `""` when none.
        subresource: String,
        /// The object's name, `""` for collections and creates.
        name: String,
        /// The namespace, `""` for cluster-scoped objects and requests
        /// across all namespaces.
        namespace: String,
    },
    /// A path that names no object (`/healthz`, `/api`).
    NonResource {
        /// The request path.
        path: String,
    },
}

/// A request to decide: a verb on a target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, or a special verb (`bind`, `escalate`).
    pub verb: String,
    /// What it is about.
    pub target: Target,
}

impl Attributes {
    /// A resource request.
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.to_string(),
            target: Target::Resource {
                group: group.to_string(),
                resource: resource.to_string(),
                subresource: String::new(),
                name: name.to_string(),
                namespace: namespace.to_string(),
            },
        }
    }

    /// The same request on `subresource`.
    pub fn on_subresource(mut self, sub: &str) -> Attributes {
        if let Target::Resource { subresource, .. } = &mut self.target {
            *subresource = sub.to_string();
        }
        self
    }

    /// A non-resource request.
    pub fn path(verb: &str, path: &str) -> Attributes {
        Attributes { verb: verb.to_string(), target: Target::NonResource { path: path.to_string() } }
    }

    /// The namespace of a resource request (`""` otherwise).
    pub fn namespace(&self) -> &str {
        match &self.target {
            Target::Resource { namespace, .. } => namespace,
            Target::NonResource { .. } => "",
        }
    }
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|item| item == "*" || item == value)
}

/// Whether a rule's `resources` match `resource` with `subresource`:
/// `*`, the exact `resource[/subresource]`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    let combined = if subresource.is_empty() { resource.to_string() } else { format!("{resource}/{subresource}") };
    rule.resources
        .iter()
        .any(|r| r == "*" || *r == combined || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource)))
}

/// Whether a rule's `nonResourceURLs` match `path`: `*`, the exact path,
/// or a prefix ending in `*`.
fn url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| match u.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => u == path,
    })
}

/// Whether `rule` allows the request `attributes` (its namespace is the
/// binding's business, not the rule's).
pub fn matches_request(rule: &PolicyRule, attributes: &Attributes) -> bool {
    if !has(&rule.verbs, &attributes.verb) {
        return false;
    }
    match &attributes.target {
        Target::Resource { group, resource, subresource, name, .. } => {
            has(&rule.api_groups, group)
                && resource_matches(rule, resource, subresource)
                && (rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name))
        }
        Target::NonResource { path } => url_matches(rule, path),
    }
}

/// The parts of `requested` that no rule of `owner` covers, each as a rule
/// of one verb on one group, resource and name (or one verb on one URL);
/// empty when `owner` covers it all. Coverage is literal, as in
/// Kubernetes: a requested `*` is covered only by an owner's `*`.
pub fn covers(owner: &[PolicyRule], requested: &PolicyRule) -> Vec<PolicyRule> {
    let mut uncovered = Vec::new();
    for verb in &requested.verbs {
        for url in &requested.non_resource_urls {
            let covered = owner.iter().any(|o| {
                has(&o.verbs, verb)
                    && o.non_resource_urls.iter().any(|u| match u.strip_suffix('*') {
                        Some(prefix) => url.starts_with(prefix),
                        None => u == url,
                    })
            });
            if !covered {
                uncovered.push(PolicyRule::non_resource(&[verb], &[url]));
            }
        }
        for group in &requested.api_groups {
            for resource in &requested.resources {
                let names: Vec<Option<&String>> = if requested.resource_names.is_empty() {
                    vec![None]
                } else {
                    requested.resource_names.iter().map(Some).collect()
                };
                for name in names {
                    let covered = owner.iter().any(|o| {
                        has(&o.verbs, verb)
                            && has(&o.api_groups, group)
                            && resource_covered(o, resource)
                            && (o.resource_names.is_empty() || name.is_some_and(|n| o.resource_names.contains(n)))
                    });
                    if !covered {
                        let mut rule = PolicyRule::resource(&[verb], &[group], &[resource]);
                        rule.resource_names = name.into_iter().cloned().collect();
                        uncovered.push(rule);
                    }
                }
            }
        }
    }
    uncovered
}

/// Whether an owner rule's `resources` cover a requested resource entry
/// (which may itself be `*`, `plural/sub` or `*/sub`).
fn resource_covered(owner: &PolicyRule, requested: &str) -> bool {
    owner.resources.iter().any(|r| {
        r == "*"
            || r == requested
            || requested.split_once('/').is_some_and(|(_, sub)| r.strip_prefix("*/") == Some(sub))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes::resource("get", "apps", resource, "ns", name).on_subresource(sub)
    }

    #[test]
    fn resources_and_subresources() {
        let rule = PolicyRule::resource(&["get"], &["apps"], &["deployments"]);
        assert!(matches_request(&rule, &get("deployments", "", "x")));
        assert!(!matches_request(&rule, &get("deployments", "status", "x")), "a subresource is its own resource");
        let status = PolicyRule::resource(&["get"], &["apps"], &["*/status"]);
        assert!(matches_request(&status, &get("deployments", "status", "x")));
        assert!(!matches_request(&status, &get("deployments", "", "x")));
        let all = PolicyRule::resource(&["*"], &["*"], &["*"]);
        assert!(matches_request(&all, &get("deployments", "scale", "x")));
        assert!(!matches_request(&PolicyRule::resource(&["get"], &[""], &["*"]), &get("deployments", "", "x")));
    }

    #[test]
    fn resource_names_limit_named_requests_only() {
        let rule = PolicyRule::resource(&["get", "list"], &["apps"], &["deployments"]).named(&["web"]);
        assert!(matches_request(&rule, &get("deployments", "", "web")));
        assert!(!matches_request(&rule, &get("deployments", "", "db")));
        let list = Attributes::resource("list", "apps", "deployments", "ns", "");
        assert!(!matches_request(&rule, &list), "a list names no object");
    }

    #[test]
    fn non_resource_urls_with_prefixes() {
        let rule = PolicyRule::non_resource(&["get"], &["/apis/*", "/healthz"]);
        assert!(matches_request(&rule, &Attributes::path("get", "/apis/apps/v1")));
        assert!(matches_request(&rule, &Attributes::path("get", "/healthz")));
        assert!(!matches_request(&rule, &Attributes::path("get", "/healthz/ping")));
        assert!(!matches_request(&rule, &Attributes::path("post", "/healthz")));
        assert!(!matches_request(&rule, &get("deployments", "", "")), "a URL rule grants no resource");
    }

    #[test]
    fn coverage_is_literal_about_stars() {
        let owner = vec![PolicyRule::resource(&["get", "list"], &[""], &["configmaps", "*/status"])];
        assert!(covers(&owner, &PolicyRule::resource(&["get"], &[""], &["configmaps"])).is_empty());
        assert!(covers(&owner, &PolicyRule::resource(&["get"], &[""], &["pods/status"])).is_empty());
        let uncovered = covers(&owner, &PolicyRule::resource(&["get", "delete"], &[""], &["configmaps"]));
        assert_eq!(uncovered, vec![PolicyRule::resource(&["delete"], &[""], &["configmaps"])]);
        assert!(!covers(&owner, &PolicyRule::resource(&["*"], &[""], &["configmaps"])).is_empty());
        let named = vec![PolicyRule::resource(&["get"], &[""], &["configmaps"]).named(&["a"])];
        assert!(covers(&named, &PolicyRule::resource(&["get"], &[""], &["configmaps"]).named(&["a"])).is_empty());
        assert!(!covers(&named, &PolicyRule::resource(&["get"], &[""], &["configmaps"])).is_empty());
        let urls = vec![PolicyRule::non_resource(&["get"], &["/api/*"])];
        assert!(covers(&urls, &PolicyRule::non_resource(&["get"], &["/api/v1"])).is_empty());
        assert!(!covers(&urls, &PolicyRule::non_resource(&["get"], &["/apis"])).is_empty());
    }
}
