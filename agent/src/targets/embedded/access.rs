//! The simulated cluster's RBAC: a Work executor's permissions decided by
//! the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings placed on
//! it, evaluated with [`fleet_rbac`] as a Kubernetes API server decides.
//! The simulated cluster has no built-in roles: a role is granted only by
//! what was placed (an executor with no binding may do nothing).

use fleet_api::Object;
use fleet_rbac::escalation::{check_binding, check_role};
use fleet_rbac::{Attributes, Binding, BindingKind, Policy, Role, RoleKind, UserInfo};
use serde_json::Value;

use super::State;
use crate::targets::access::{Access, AccessRequest, RBAC_GROUP};

/// The resource (plural) of `object`'s kind: the built-in kinds' own, a
/// stored CustomResourceDefinition's `spec.names.plural`, else the kind in
/// lower case with an `s` (as the API server's guess for a kind it does not
/// know yet).
fn plural_of(state: &State, object: &Object) -> String {
    let (group, kind) = (object.group(), object.kind.as_str());
    if let Some(info) = fleet_api::kinds::lookup_group_kind(group, kind) {
        return info.plural.to_string();
    }
    let from_crd = state.records.values().find_map(|r| {
        let o = &r.object;
        let spec = o.spec()?;
        let is_crd = o.group() == "apiextensions.k8s.io" && o.kind == "CustomResourceDefinition";
        let matches = spec.get("group")?.as_str()? == group && spec.pointer("/names/kind")?.as_str()? == kind;
        (is_crd && matches).then(|| spec.pointer("/names/plural").and_then(Value::as_str).map(str::to_string))?
    });
    from_crd.unwrap_or_else(|| format!("{}s", kind.to_ascii_lowercase()))
}

/// The roles and bindings stored on the cluster. One that does not read
/// as RBAC grants nothing (a real API server would not have stored it).
fn policy_of(state: &State) -> Policy {
    let mut roles = Vec::new();
    let mut bindings = Vec::new();
    for record in state.records.values() {
        let object = &record.object;
        if object.group() != RBAC_GROUP {
            continue;
        }
        let Ok(json) = serde_json::to_value(object) else { continue };
        match object.kind.as_str() {
            "Role" => roles.extend(Role::from_json(RoleKind::Role, &json).ok()),
            "ClusterRole" => roles.extend(Role::from_json(RoleKind::ClusterRole, &json).ok()),
            "RoleBinding" => bindings.extend(Binding::from_json(BindingKind::RoleBinding, &json).ok()),
            "ClusterRoleBinding" => bindings.extend(Binding::from_json(BindingKind::ClusterRoleBinding, &json).ok()),
            _ => {}
        }
    }
    Policy::new(roles, bindings)
}

/// Decides `request` on the cluster whose objects `state` holds.
pub(super) fn decide(state: &State, request: &AccessRequest<'_>) -> Access {
    let object = request.manifest;
    let resource = plural_of(state, object);
    let policy = policy_of(state);
    let sa = request.subject;
    let groups = sa.groups();
    let user = UserInfo { name: sa.user_name(), groups };
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    for verb in request.verbs {
        let attributes = Attributes::resource(verb, object.group(), &resource, &namespace, &object.metadata.name);
        let decision = policy.authorize(&user, &attributes);
        if !decision.allowed {
            return Access::Refused { resource, escalation: false, why: decision.reason };
        }
    }
    if request.is_rbac() {
        let Ok(json) = serde_json::to_value(object) else {
            return Access::Refused { resource, escalation: true, why: "the manifest does not read as JSON".into() };
        };
        let checked = match object.kind.as_str() {
            "Role" | "ClusterRole" => {
                let kind = if object.kind == "Role" { RoleKind::Role } else { RoleKind::ClusterRole };
                Role::from_json(kind, &json)
                    .map_err(|e| e.to_string())
                    .and_then(|role| check_role(&policy, &user, &role).map_err(|e| e.message))
            }
            _ => {
                let kind = if object.kind == "RoleBinding" {
                    BindingKind::RoleBinding
                } else {
                    BindingKind::ClusterRoleBinding
                };
                Binding::from_json(kind, &json)
                    .map_err(|e| e.to_string())
                    .and_then(|binding| check_binding(&policy, &user, &binding).map_err(|e| e.message))
            }
        };
        if let Err(why) = checked {
            return Access::Refused { resource, escalation: true, why };
        }
    }
    Access::Allowed
}
