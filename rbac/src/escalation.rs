//! Escalation prevention: a user may create or update a role only with
//! rules it already holds where the role applies, and a binding only to a
//! role whose rules it holds where the binding applies — unless it may
//! `escalate` the role, or `bind` the role the binding refers to.

use crate::policy::Policy;
use crate::rule::{covers, Attributes};
use crate::types::{Binding, PolicyRule, Role, RoleKind, UserInfo, GROUP};

/// Why a role or binding would grant more than its author holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// The rules the author does not hold (one verb on one thing each).
    pub missing: Vec<PolicyRule>,
    /// The whole message.
    pub message: String,
}

fn plural(kind: &str) -> &'static str {
    if kind == "ClusterRole" {
        "clusterroles"
    } else {
        "roles"
    }
}

/// Every rule `user` holds in `namespace`, resource and URL rules alike.
fn held(policy: &Policy, user: &UserInfo, namespace: &str) -> Vec<PolicyRule> {
    let review = policy.rules_for(user, namespace);
    review.resource_rules.into_iter().chain(review.non_resource_rules).collect()
}

fn missing(owner: &[PolicyRule], granted: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut missing: Vec<PolicyRule> = Vec::new();
    for rule in granted {
        for part in covers(owner, rule) {
            if !missing.contains(&part) {
                missing.push(part);
            }
        }
    }
    missing
}

fn describe(rules: &[PolicyRule]) -> String {
    rules
        .iter()
        .map(|r| {
            if r.non_resource_urls.is_empty() {
                let names =
                    if r.resource_names.is_empty() { String::new() } else { format!(" names {:?}", r.resource_names) };
                format!("{{verbs {:?} apiGroups {:?} resources {:?}{names}}}", r.verbs, r.api_groups, r.resources)
            } else {
                format!("{{verbs {:?} nonResourceURLs {:?}}}", r.verbs, r.non_resource_urls)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn user_text(user: &UserInfo) -> String {
    format!("user {:?} (groups {:?})", user.name, user.groups)
}

/// Checks that `user` may write `role` (create or update).
pub fn check_role(policy: &Policy, user: &UserInfo, role: &Role) -> Result<(), Escalation> {
    let resource = plural(role.kind.as_str());
    let escalate = Attributes::resource("escalate", GROUP, resource, &role.namespace, &role.name);
    if policy.authorize(user, &escalate).allowed {
        return Ok(());
    }
    if role.kind == RoleKind::ClusterRole && role.aggregation.is_some() {
        return Err(Escalation {
            missing: Vec::new(),
            message: format!(
                "ClusterRole {:?}: aggregationRule: Forbidden: {} may not escalate clusterroles, which an \
                 aggregationRule needs (its rules are whatever the selected roles grant)",
                role.name,
                user_text(user)
            ),
        });
    }
    let missing = missing(&held(policy, user, &role.namespace), &role.rules);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Escalation {
        message: format!(
            "{} {:?} is forbidden: {} is attempting to grant RBAC permissions not currently held: {}",
            role.kind.as_str(),
            role.name,
            user_text(user),
            describe(&missing)
        ),
        missing,
    })
}

/// Checks that `user` may write `binding` (create or update).
pub fn check_binding(policy: &Policy, user: &UserInfo, binding: &Binding) -> Result<(), Escalation> {
    let role_ref = &binding.role_ref;
    let bind = Attributes::resource("bind", GROUP, plural(&role_ref.kind), &binding.namespace, &role_ref.name);
    if policy.authorize(user, &bind).allowed {
        return Ok(());
    }
    let Some(granted) = policy.role_ref_rules(&binding.namespace, &role_ref.kind, &role_ref.name) else {
        return Err(Escalation {
            missing: Vec::new(),
            message: format!(
                "{} {:?}: roleRef: Not found: {} {:?}, and {} may not bind it without knowing what it grants",
                binding.kind.as_str(),
                binding.name,
                role_ref.kind,
                role_ref.name,
                user_text(user)
            ),
        });
    };
    let missing = missing(&held(policy, user, &binding.namespace), granted);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Escalation {
        message: format!(
            "{} {:?} is forbidden: {} is attempting to grant RBAC permissions not currently held (through {} {:?}): {}",
            binding.kind.as_str(),
            binding.name,
            user_text(user),
            role_ref.kind,
            role_ref.name,
            describe(&missing)
        ),
        missing,
    })
}
