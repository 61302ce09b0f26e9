//! Kubernetes RBAC as the hub evaluates it: the four kinds of
//! `rbac.authorization.k8s.io/v1` (Role, ClusterRole, RoleBinding,
//! ClusterRoleBinding), decided the way a Kubernetes API server decides
//! them, from their documented semantics:
//!
//! - a request is allowed when any rule of any role bound to the user (or
//!   one of its groups) allows it; there are no deny rules;
//! - a ClusterRoleBinding grants its ClusterRole everywhere; a RoleBinding
//!   grants its Role, or a ClusterRole, in its own namespace only;
//! - an aggregated ClusterRole's rules are the union of the rules of the
//!   ClusterRoles its selectors pick (its own `rules` are ignored, as the
//!   Kubernetes controller overwrites them);
//! - creating or updating a role or binding that grants more than the
//!   author holds is refused unless the author may `escalate` (roles) or
//!   `bind` (bindings) — see [`escalation`].
//!
//! [`Policy`] indexes the objects by subject so one decision reads only the
//! bindings of the user and its groups. [`bootstrap`] holds the built-in
//! default roles and bindings.

pub mod bootstrap;
pub mod escalation;
mod policy;
mod rule;
mod selector;
mod types;

pub use policy::{Decision, Policy, RulesReview};
pub use rule::{covers, matches_request, Attributes, Target};
pub use selector::LabelSelector;
pub use types::{AggregationRule, Binding, BindingKind, PolicyRule, Role, RoleKind, RoleRef, Subject, UserInfo, GROUP};

/// Errors reading RBAC objects.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RbacError {
    /// A field has the wrong shape or value.
    #[error("{kind} {name:?}: {field}: Invalid value: {detail}")]
    Invalid {
        /// The object's kind.
        kind: String,
        /// The object's name (`namespace/name` when namespaced).
        name: String,
        /// The field path, e.g. `rules[0].verbs`.
        field: String,
        /// What is wrong.
        detail: String,
    },
    /// A required field is missing.
    #[error("{kind} {name:?}: {field}: Required value")]
    Required {
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The field path.
        field: String,
    },
}
