//! Whether a Work's executor may act on an object: the question a Work with
//! an `executor` (mirrored from a ManifestWork) asks its target before
//! applying each manifest, as OCM's work agent asks the member's API server.
//!
//! The target answers with the member's own RBAC: the Kubernetes target by
//! SubjectAccessReviews and, for RBAC kinds, a dry-run create made as the
//! service account; the embedded target by evaluating the Roles,
//! ClusterRoles and their bindings placed on it with [`fleet_rbac`].

use fleet_api::ocm::manifestwork::ServiceAccountRef;
use fleet_api::Object;

/// The RBAC API group, whose roles and bindings also need the escalation check.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The RBAC kinds whose creation the escalation check covers.
pub const RBAC_KINDS: &[&str] = &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"];

/// What an executor asks to do to one object.
#[derive(Debug, Clone, Copy)]
pub struct AccessRequest<'a> {
    /// The service account the agent acts as.
    pub subject: &'a ServiceAccountRef,
    /// The manifest to be applied.
    pub manifest: &'a Object,
    /// Every verb it must be allowed (OCM's `create`, `update`, `patch`,
    /// `get`, and `delete` when the Work deletes its objects).
    pub verbs: &'a [&'static str],
}

impl AccessRequest<'_> {
    /// Whether the manifest is a role or binding, which may not grant more
    /// than the subject holds.
    pub fn is_rbac(&self) -> bool {
        self.manifest.group() == RBAC_GROUP && RBAC_KINDS.contains(&self.manifest.kind.as_str())
    }
}

/// The member's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Every verb is allowed (and a role or binding grants nothing more
    /// than the subject holds).
    Allowed,
    /// Some verb is refused, or a role or binding would escalate.
    Refused {
        /// The resource (plural) the object is, as RBAC names it.
        resource: String,
        /// Whether the refusal is the escalation check's.
        escalation: bool,
        /// What the member said (the verb refused, or what would escalate).
        why: String,
    },
}
