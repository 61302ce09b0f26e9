//! The roles and bindings of a hub, indexed for decisions.
//!
//! Bindings are indexed by subject (user or group, and namespace for
//! RoleBindings), so a decision reads only the bindings naming the user or
//! one of its groups, whatever the number of objects. Aggregated
//! ClusterRoles are resolved once, when the policy is built: the policy is
//! rebuilt whenever an RBAC object changes, and decisions far outnumber
//! such changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;

use crate::rule::{matches_request, Attributes, Target};
use crate::types::{Binding, BindingKind, PolicyRule, Role, RoleKind, UserInfo};

/// Who a binding grants to, as the index keys it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum SubjectKey {
    User(String),
    Group(String),
}

/// The prefix of a service account's user name.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// An allow or a refusal, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// The binding and role that allow it, or what was asked and refused.
    pub reason: String,
}

/// What a user may do in one namespace (SelfSubjectRulesReview).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RulesReview {
    /// Rules about resources.
    pub resource_rules: Vec<PolicyRule>,
    /// Rules about non-resource URLs.
    pub non_resource_rules: Vec<PolicyRule>,
}

/// Roles and bindings, indexed.
#[derive(Debug, Default)]
pub struct Policy {
    /// ClusterRoles by name, aggregation resolved.
    cluster_roles: HashMap<String, Arc<Vec<PolicyRule>>>,
    /// Roles by (namespace, name).
    roles: HashMap<(String, String), Arc<Vec<PolicyRule>>>,
    bindings: Vec<Binding>,
    /// ClusterRoleBindings naming each subject.
    cluster_index: SubjectIndex,
    /// RoleBindings naming each subject, by namespace.
    namespace_index: HashMap<String, SubjectIndex>,
}

/// Bindings (positions in [`Policy::bindings`]) by the users and groups
/// they name, looked up by `&str` (a decision allocates no keys).
#[derive(Debug, Default)]
struct SubjectIndex {
    users: HashMap<String, Vec<usize>>,
    groups: HashMap<String, Vec<usize>>,
}

impl SubjectIndex {
    fn insert(&mut self, key: SubjectKey, at: usize) {
        match key {
            SubjectKey::User(name) => self.users.entry(name).or_default().push(at),
            SubjectKey::Group(name) => self.groups.entry(name).or_default().push(at),
        }
    }

    /// The bindings naming `user` or one of its groups.
    fn of<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = usize> + 'a {
        let users = self.users.get(&user.name).into_iter().flatten();
        let groups = user.groups.iter().filter_map(|g| self.groups.get(g)).flatten();
        users.chain(groups).copied()
    }
}

impl Policy {
    /// Indexes `roles` and `bindings` (of either kind). A later object with
    /// the name of an earlier one is ignored: callers pass the built-in
    /// policy first so it cannot be replaced.
    pub fn new(roles: Vec<Role>, bindings: Vec<Binding>) -> Policy {
        let mut policy = Policy::default();
        let mut cluster_roles: BTreeMap<String, Role> = BTreeMap::new();
        for role in roles {
            match role.kind {
                RoleKind::ClusterRole => {
                    cluster_roles.entry(role.name.clone()).or_insert(role);
                }
                RoleKind::Role => {
                    policy.roles.entry((role.namespace.clone(), role.name.clone())).or_insert(Arc::new(role.rules));
                }
            }
        }
        for name in cluster_roles.keys() {
            let rules = effective_rules(&cluster_roles, name, &mut BTreeSet::new());
            policy.cluster_roles.insert(name.clone(), Arc::new(rules));
        }
        let mut seen = BTreeSet::new();
        for binding in bindings {
            if !seen.insert((binding.kind, binding.namespace.clone(), binding.name.clone())) {
                continue;
            }
            let at = policy.bindings.len();
            for subject in &binding.subjects {
                let Some(key) = subject_key(subject, &binding.namespace) else { continue };
                match binding.kind {
                    BindingKind::ClusterRoleBinding => policy.cluster_index.insert(key, at),
                    BindingKind::RoleBinding => {
                        policy.namespace_index.entry(binding.namespace.clone()).or_default().insert(key, at)
                    }
                }
            }
            policy.bindings.push(binding);
        }
        policy
    }

    /// The rules of the ClusterRole `name` (aggregation resolved), if it exists.
    pub fn cluster_role_rules(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_roles.get(name).map(|r| r.as_slice())
    }

    /// The rules a binding's `roleRef` grants (none when the role is missing,
    /// as in Kubernetes: a binding to a missing role grants nothing).
    pub fn role_ref_rules(&self, binding_namespace: &str, kind: &str, name: &str) -> Option<&[PolicyRule]> {
        match kind {
            "ClusterRole" => self.cluster_role_rules(name),
            "Role" => self.roles.get(&(binding_namespace.to_string(), name.to_string())).map(|r| r.as_slice()),
            _ => None,
        }
    }

    /// Calls `visit` with each binding that applies to `user` in
    /// `namespace` (ClusterRoleBindings always; RoleBindings of that
    /// namespace) and the rules it grants, until `visit` returns true.
    fn visit(&self, user: &UserInfo, namespace: &str, mut visit: impl FnMut(&Binding, &[PolicyRule]) -> bool) -> bool {
        let mut cluster: Vec<usize> = self.cluster_index.of(user).collect();
        let mut local: Vec<usize> = match self.namespace_index.get(namespace) {
            Some(index) if !namespace.is_empty() => index.of(user).collect(),
            _ => Vec::new(),
        };
        // A binding naming the user and one of its groups is visited once,
        // in a stable order (the reason names the first that allows).
        cluster.sort_unstable();
        cluster.dedup();
        local.sort_unstable();
        local.dedup();
        for at in cluster.into_iter().chain(local) {
            let binding = &self.bindings[at];
            let rules = self.role_ref_rules(&binding.namespace, &binding.role_ref.kind, &binding.role_ref.name);
            if visit(binding, rules.unwrap_or_default()) {
                return true;
            }
        }
        false
    }

    /// Decides `attributes` for `user`.
    pub fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let mut reason = String::new();
        // A non-resource request has no namespace: only ClusterRoleBindings apply.
        let allowed = self.visit(user, attributes.namespace(), |binding, rules| {
            if binding.kind == BindingKind::RoleBinding && matches!(attributes.target, Target::NonResource { .. }) {
                return false;
            }
            let hit = rules.iter().any(|rule| matches_request(rule, attributes));
            if hit {
                reason = format!(
                    "RBAC: allowed by {} {:?} of {} {:?} to {}",
                    binding.kind.as_str(),
                    qualified(&binding.namespace, &binding.name),
                    binding.role_ref.kind,
                    binding.role_ref.name,
                    subject_text(user),
                );
            }
            hit
        });
        if !allowed {
            reason = refusal(user, attributes);
        }
        Decision { allowed, reason }
    }

    /// Every rule `user` holds in `namespace` (cluster-wide ones only when
    /// `namespace` is empty), as SelfSubjectRulesReview reports them and
    /// the escalation check compares against. Duplicates are dropped.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesReview {
        let mut review = RulesReview::default();
        let mut seen = BTreeSet::new();
        self.visit(user, namespace, |binding, rules| {
            for rule in rules {
                let non_resource = !rule.non_resource_urls.is_empty();
                // A RoleBinding grants no URLs (they have no namespace).
                if non_resource && binding.kind == BindingKind::RoleBinding {
                    continue;
                }
                if !seen.insert(rule.clone()) {
                    continue;
                }
                if non_resource {
                    review.non_resource_rules.push(rule.clone());
                } else {
                    review.resource_rules.push(rule.clone());
                }
            }
            false
        });
        review
    }

    /// How many bindings the policy holds.
    pub fn binding_count(&self) -> usize {
        self.bindings.len()
    }
}

/// The rules of ClusterRole `name`: its own, or, when it aggregates, the
/// union of those of the ClusterRoles its selectors pick (transitively;
/// a role in a cycle contributes its own rules once).
fn effective_rules(roles: &BTreeMap<String, Role>, name: &str, visiting: &mut BTreeSet<String>) -> Vec<PolicyRule> {
    let Some(role) = roles.get(name) else { return Vec::new() };
    let Some(aggregation) = &role.aggregation else { return role.rules.clone() };
    if !visiting.insert(name.to_string()) {
        return Vec::new();
    }
    let mut rules: Vec<PolicyRule> = Vec::new();
    for (other, candidate) in roles {
        if other == name || !aggregation.cluster_role_selectors.iter().any(|s| s.matches(&candidate.labels)) {
            continue;
        }
        for rule in effective_rules(roles, other, visiting) {
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
    }
    visiting.remove(name);
    rules
}

/// The index key of a subject; `binding_namespace` is the default
/// namespace of a ServiceAccount subject of a RoleBinding.
fn subject_key(subject: &crate::types::Subject, binding_namespace: &str) -> Option<SubjectKey> {
    match subject.kind.as_str() {
        "User" => Some(SubjectKey::User(subject.name.clone())),
        "Group" => Some(SubjectKey::Group(subject.name.clone())),
        "ServiceAccount" => {
            let namespace = if subject.namespace.is_empty() { binding_namespace } else { &subject.namespace };
            (!namespace.is_empty())
                .then(|| SubjectKey::User(format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{}", subject.name)))
        }
        _ => None,
    }
}

fn qualified(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

fn subject_text(user: &UserInfo) -> String {
    if user.groups.is_empty() {
        format!("user {:?}", user.name)
    } else {
        format!("user {:?} (groups {:?})", user.name, user.groups)
    }
}

/// The refusal text of Kubernetes' RBAC, naming user, verb and target.
fn refusal(user: &UserInfo, attributes: &Attributes) -> String {
    let verb = &attributes.verb;
    match &attributes.target {
        Target::NonResource { path } => {
            format!("{} cannot {verb} path {path:?}", subject_text(user))
        }
        Target::Resource { group, resource, subresource, name, namespace } => {
            let what = if subresource.is_empty() { resource.clone() } else { format!("{resource}/{subresource}") };
            let named = if name.is_empty() { String::new() } else { format!(" {name:?}") };
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {namespace:?}")
            };
            format!("{} cannot {verb} resource {what:?}{named} in API group {group:?} {scope}", subject_text(user))
        }
    }
}
