//! Kubernetes RBAC for the hub's users: every request of a user (and of the
//! `admin` and `viewer` certificates, users in fixed groups) is decided by
//! [`fleet_rbac`] over the Roles and bindings in the state machine plus the
//! built-in policy ([`fleet_rbac::bootstrap`]). Member agents and hub nodes
//! keep their own, narrower rules ([`crate::auth`], [`crate::members::authz`]).
//!
//! The indexed policy is cached. The cache holds a receiver of the store's
//! watch events and drains it (without waiting) at each decision: an event
//! of an RBAC kind, a state reset or a lagged receiver drops the cache, and
//! the next decision rebuilds it from the store. Events are published before
//! a write is acknowledged, so a request sent after a binding was written is
//! decided with it.

use std::sync::{Arc, Mutex, MutexGuard};

use fleet_api::{Object, ObjectKey};
use fleet_proto::tls::Identity;
use fleet_rbac::bootstrap::{AUTHENTICATED_GROUP, MASTERS_GROUP, VIEWERS_GROUP};
use fleet_rbac::{Attributes, Binding, BindingKind, Policy, Role, RoleKind, UserInfo, GROUP};
use fleet_statemachine::{Ended, ListQuery, LiveEvents, Store};

use crate::auth::Caller;
use crate::blocking::blocking;
use crate::error::{storage_error, RequestError};

/// The user `identity` is to RBAC: `None` for member agents and nodes,
/// which RBAC does not govern, and for certificates naming nobody.
pub fn user_of(identity: &Identity) -> Option<UserInfo> {
    let (name, mut groups) = match identity {
        Identity::Admin => (identity.to_string(), vec![MASTERS_GROUP.to_string()]),
        Identity::Viewer => (identity.to_string(), vec![VIEWERS_GROUP.to_string()]),
        Identity::User { name, groups } => (name.clone(), groups.clone()),
        Identity::Member(_) | Identity::Node(_) | Identity::Other(_) => return None,
    };
    if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_string());
    }
    Some(UserInfo { name, groups })
}

/// Who `identity` is in the audit log: the RBAC user, or (for member
/// agents and nodes) the certificate's name in no group.
pub fn audit_user(identity: &Identity) -> UserInfo {
    user_of(identity).unwrap_or_else(|| UserInfo { name: identity.to_string(), groups: Vec::new() })
}

/// Whether `identity` is in the superuser group (reads the hub's internal kinds).
pub fn is_master(identity: &Identity) -> bool {
    user_of(identity).is_some_and(|u| u.groups.iter().any(|g| g == MASTERS_GROUP))
}

struct Cache {
    receiver: LiveEvents,
    policy: Option<Arc<Policy>>,
    /// Bumped by every change seen: a rebuild that started before a change
    /// does not install its (possibly older) policy.
    generation: u64,
}

/// Decides users' requests from the stored RBAC objects.
pub struct Authorizer {
    store: Arc<Store>,
    cache: Mutex<Cache>,
}

impl Authorizer {
    /// An authorizer over `store`'s RBAC objects.
    pub fn new(store: Arc<Store>) -> Authorizer {
        // No history wanted: only the RBAC events applied from now on (a
        // subscription from the end of the history is never expired).
        let receiver = match store.hub().subscribe_where(u64::MAX, |key| key.group == GROUP) {
            Ok(subscription) => subscription.receiver,
            // A receiver that has ended: every decision then rebuilds the policy, correct if slow.
            Err(_) => LiveEvents::ended(),
        };
        Authorizer { store, cache: Mutex::new(Cache { receiver, policy: None, generation: 0 }) }
    }

    fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached policy, after draining the changes seen since; `None`
    /// (and the generation to rebuild at) when it must be rebuilt.
    fn cached(&self) -> Result<Arc<Policy>, u64> {
        let mut cache = self.lock();
        let mut changed = false;
        loop {
            match cache.receiver.try_recv() {
                // The subscription carries only RBAC events (and resets).
                Ok(Some(_)) | Err(Ended::Lagged) => changed = true,
                Ok(None) => break,
                Err(Ended::Closed) => {
                    changed = true;
                    break;
                }
            }
        }
        if changed {
            cache.policy = None;
            cache.generation += 1;
        }
        cache.policy.clone().ok_or(cache.generation)
    }

    /// The current policy (blocking: may read the store).
    fn policy_blocking(&self) -> Result<Arc<Policy>, RequestError> {
        let generation = match self.cached() {
            Ok(policy) => return Ok(policy),
            Err(generation) => generation,
        };
        let policy = Arc::new(build(&self.store)?);
        let mut cache = self.lock();
        if cache.generation == generation {
            cache.policy = Some(policy.clone());
        }
        Ok(policy)
    }

    /// The current policy.
    pub async fn policy(self: &Arc<Self>) -> Result<Arc<Policy>, RequestError> {
        if let Ok(policy) = self.cached() {
            return Ok(policy);
        }
        let this = self.clone();
        blocking(move || this.policy_blocking()).await
    }

    /// Checks that `caller` may do `attributes`. Member agents pass (their
    /// scope is checked by [`crate::members::authz`]); nodes and unknown
    /// certificates do not.
    pub async fn check(self: &Arc<Self>, caller: &Caller, attributes: &Attributes) -> Result<(), RequestError> {
        let decided = self.decide(caller, attributes).await;
        crate::audit::note_decision(attributes, decided.as_ref().err().map(RequestError::message));
        decided
    }

    async fn decide(self: &Arc<Self>, caller: &Caller, attributes: &Attributes) -> Result<(), RequestError> {
        let Some(user) = user_of(&caller.identity) else {
            return match caller.identity {
                Identity::Member(_) => Ok(()),
                _ => {
                    Err(RequestError::forbidden(format!("{:?} is not a user of the hub", caller.identity.to_string())))
                }
            };
        };
        let decision = self.policy().await?.authorize(&user, attributes);
        if decision.allowed {
            Ok(())
        } else {
            Err(RequestError::forbidden(decision.reason))
        }
    }

    /// Checks that `caller` may write `object` when it is a Role or binding:
    /// that it is well-formed, and grants nothing its author does not hold
    /// (unless the author may `escalate` or `bind`). Other objects pass.
    pub async fn check_rbac_write(self: &Arc<Self>, caller: &Caller, object: &Object) -> Result<(), RequestError> {
        if object.group() != GROUP {
            return Ok(());
        }
        let json =
            serde_json::to_value(object).map_err(|e| RequestError::internal(format!("encoding the object: {e}")))?;
        let invalid = |e: fleet_rbac::RbacError| RequestError::invalid(invalid_text(&e));
        enum Parsed {
            Role(Role),
            Binding(Binding),
        }
        let parsed = match object.kind.as_str() {
            "Role" => Parsed::Role(Role::from_json(RoleKind::Role, &json).map_err(invalid)?),
            "ClusterRole" => Parsed::Role(Role::from_json(RoleKind::ClusterRole, &json).map_err(invalid)?),
            "RoleBinding" => Parsed::Binding(Binding::from_json(BindingKind::RoleBinding, &json).map_err(invalid)?),
            "ClusterRoleBinding" => {
                Parsed::Binding(Binding::from_json(BindingKind::ClusterRoleBinding, &json).map_err(invalid)?)
            }
            _ => return Ok(()),
        };
        if let Parsed::Binding(binding) = &parsed {
            self.check_role_ref_unchanged(object, binding).await?;
        }
        let Some(user) = user_of(&caller.identity) else { return Ok(()) };
        let policy = self.policy().await?;
        let result = match &parsed {
            Parsed::Role(role) => fleet_rbac::escalation::check_role(&policy, &user, role),
            Parsed::Binding(binding) => fleet_rbac::escalation::check_binding(&policy, &user, binding),
        };
        result.map_err(|e| RequestError::forbidden(e.message))
    }
}

impl Authorizer {
    /// Refuses an update of a binding that changes its `roleRef`, which is
    /// immutable in Kubernetes (delete and recreate the binding instead).
    async fn check_role_ref_unchanged(&self, object: &Object, binding: &Binding) -> Result<(), RequestError> {
        let store = self.store.clone();
        let key = ObjectKey::of(object);
        let existing = blocking(move || Ok(store.get(&key).map_err(storage_error)?.0)).await?;
        let Some(existing) = existing else { return Ok(()) };
        let before = existing.rest.get("roleRef").cloned().unwrap_or_default();
        let after = serde_json::to_value(&binding.role_ref).unwrap_or_default();
        if before.is_null() || before == after {
            return Ok(());
        }
        Err(RequestError::invalid(format!(
            "{} {:?} is invalid:\n  roleRef: Invalid value: {after}: cannot change roleRef (it is {before})",
            binding.kind.as_str(),
            binding.name
        )))
    }
}

/// An RBAC object's error as admission words its errors (`Kind "name" is
/// invalid:` then one `field: detail` line), which the Kubernetes API
/// turns into field causes.
fn invalid_text(error: &fleet_rbac::RbacError) -> String {
    use fleet_rbac::RbacError;
    match error {
        RbacError::Invalid { kind, name, field, detail } => {
            format!("{kind} {name:?} is invalid:\n  {field}: Invalid value: {detail}")
        }
        RbacError::Required { kind, name, field } => format!("{kind} {name:?} is invalid:\n  {field}: Required value"),
    }
}

/// The policy of the stored RBAC objects and the built-in ones. A stored
/// object that does not parse grants nothing (and is logged): writes are
/// checked, but objects restored from older backups are not.
fn build(store: &Store) -> Result<Policy, RequestError> {
    let list = |kind: &str| -> Result<Vec<Object>, RequestError> {
        let query = ListQuery { group: GROUP.into(), kind: kind.into(), namespace: None, selector: None };
        Ok(store.list(&query).map_err(storage_error)?.0)
    };
    let mut roles = Vec::new();
    let mut bindings = Vec::new();
    let skip = |object: &Object, error: fleet_rbac::RbacError| {
        let key = ObjectKey::of(object);
        tracing::warn!(%error, key = %key.storage_key(), "an RBAC object grants nothing: it does not parse");
    };
    for (kind, role_kind) in [("Role", RoleKind::Role), ("ClusterRole", RoleKind::ClusterRole)] {
        for object in list(kind)? {
            let json = serde_json::to_value(&object).map_err(|e| RequestError::internal(e.to_string()))?;
            match Role::from_json(role_kind, &json) {
                Ok(role) => roles.push(role),
                Err(e) => skip(&object, e),
            }
        }
    }
    for (kind, binding_kind) in
        [("RoleBinding", BindingKind::RoleBinding), ("ClusterRoleBinding", BindingKind::ClusterRoleBinding)]
    {
        for object in list(kind)? {
            let json = serde_json::to_value(&object).map_err(|e| RequestError::internal(e.to_string()))?;
            match Binding::from_json(binding_kind, &json) {
                Ok(binding) => bindings.push(binding),
                Err(e) => skip(&object, e),
            }
        }
    }
    Ok(fleet_rbac::bootstrap::policy(roles, bindings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_statemachine::{Command, Op, Proposal};
    use openraft::{CommittedLeaderId, EntryPayload, LogId};

    /// Applies `objects` to `store` as entry `index`.
    fn apply(store: &Store, index: u64, objects: Vec<serde_json::Value>) {
        let ops = objects
            .into_iter()
            .enumerate()
            .map(|(i, v)| Op::Apply { object: serde_json::from_value(v).unwrap(), uid: format!("uid-{index}-{i}") })
            .collect();
        let command = Command { now: "2026-11-27T00:00:00Z".into(), ops };
        let entry = openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Proposal::new(vec![command]).unwrap()),
        };
        store.apply_entries(vec![entry], false).unwrap();
    }

    fn alice_may_list(authorizer: &Authorizer) -> bool {
        let user = user_of(&Identity::User { name: "alice".into(), groups: vec!["team-a".into()] }).unwrap();
        let list = Attributes::resource("list", "", "configmaps", "team-a", "");
        authorizer.policy_blocking().unwrap().authorize(&user, &list).allowed
    }

    #[test]
    fn the_cached_policy_follows_rbac_writes_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("sm.redb")).unwrap();
        let authorizer = Authorizer::new(store.clone());
        assert!(!alice_may_list(&authorizer));
        let first = authorizer.policy_blocking().unwrap();
        // An unrelated write keeps the cached policy.
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "team-a"}});
        apply(&store, 1, vec![cm]);
        assert!(Arc::ptr_eq(&first, &authorizer.policy_blocking().unwrap()));
        // A binding is seen by the very next decision.
        let binding = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "view", "namespace": "team-a"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": "team-a"}],
        });
        apply(&store, 2, vec![binding]);
        assert!(alice_may_list(&authorizer));
        // A malformed stored object grants nothing and breaks nothing.
        let broken = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "broken"}, "roleRef": {"kind": "Nothing"},
        });
        apply(&store, 3, vec![broken]);
        assert!(alice_may_list(&authorizer));
    }

    #[test]
    fn the_built_in_certificates_are_users_in_fixed_groups() {
        let admin = user_of(&Identity::Admin).unwrap();
        assert_eq!(admin.groups, vec![MASTERS_GROUP, AUTHENTICATED_GROUP]);
        assert!(is_master(&Identity::Admin));
        assert_eq!(user_of(&Identity::Viewer).unwrap().groups, vec![VIEWERS_GROUP, AUTHENTICATED_GROUP]);
        let alice = user_of(&Identity::User { name: "alice".into(), groups: vec!["team-a".into()] }).unwrap();
        assert_eq!((alice.name.as_str(), alice.groups.len()), ("alice", 2));
        assert!(user_of(&Identity::Member("a".into())).is_none());
        assert!(user_of(&Identity::Node(1)).is_none());
    }
}
