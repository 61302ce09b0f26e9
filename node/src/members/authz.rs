//! What a member agent may touch: only the Work of its own namespace
//! (`fleet-member-<cluster>`) and the AddOnPlacementScores of the namespace
//! named after its cluster (OCM's convention; it may write their status),
//! only while its MemberCluster exists and the certificate it presents is
//! one the hub issued to it.

use fleet_api::member::member_namespace;
use fleet_api::ObjectKey;
use fleet_statemachine::Store;

use super::internal::{self, CredentialSpec};
use crate::admission::ResolvedKind;
use crate::error::RequestError;

/// Checks that the member's MemberCluster still exists and `serial` is one of
/// its current certificates. A deleted cluster has left the fleet.
pub fn check_credential(store: &Store, cluster: &str, serial: &str) -> Result<(), RequestError> {
    let mc_key = ObjectKey::new(fleet_api::kinds::FLEET_CLUSTER_GROUP, "MemberCluster", "", cluster);
    let (mc, _) = store.get(&mc_key).map_err(crate::error::storage_error)?;
    if mc.is_none() {
        return Err(RequestError::forbidden(format!(
            "member cluster {cluster:?} has left the fleet (its MemberCluster was deleted): credentials revoked"
        )));
    }
    let (cred, _) = store.get(&internal::credential_key(cluster)).map_err(crate::error::storage_error)?;
    let serials = cred.as_ref().and_then(internal::spec::<CredentialSpec>).map(|c| c.serials).unwrap_or_default();
    if serials.iter().any(|s| s == serial) {
        Ok(())
    } else {
        Err(RequestError::forbidden(format!(
            "this certificate (serial {serial}) is not a current credential of member cluster {cluster:?}: join again with a new token"
        )))
    }
}

/// Checks that a member reads or writes the status of Work in its own namespace.
pub fn check_scope(cluster: &str, kind: &ResolvedKind, namespace: &str, rpc: &str) -> Result<(), RequestError> {
    let own = member_namespace(cluster);
    let is_work = kind.group == fleet_api::kinds::FLEET_PLACEMENT_GROUP && kind.kind == "Work";
    // OCM's convention: a cluster's add-on scores live in the namespace named after it.
    let is_score = kind.group == fleet_api::ocm::CLUSTER_GROUP && kind.kind == fleet_api::ocm::addon_score::KIND;
    if (is_work && namespace == own) || (is_score && namespace == cluster) {
        Ok(())
    } else {
        let what = if namespace.is_empty() {
            kind.plural.clone()
        } else {
            format!("{} in namespace {namespace:?}", kind.plural)
        };
        Err(RequestError::forbidden(format!(
            "system:fleet:member:{cluster} may not call {rpc} on {what}: a member may only read the Work of namespace {own:?} and write its status (and the AddOnPlacementScores of namespace {cluster:?})"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::Scope;

    fn kind(group: &str, kind: &str) -> ResolvedKind {
        ResolvedKind {
            group: group.into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
            scope: Scope::Namespaced,
        }
    }

    #[test]
    fn members_see_only_their_own_work() {
        let work = kind("placement.kubernetes-fleet.io", "Work");
        assert!(check_scope("a", &work, "fleet-member-a", "List").is_ok());
        assert!(check_scope("a", &work, "fleet-member-b", "List").is_err());
        assert!(check_scope("a", &work, "", "List").is_err(), "all namespaces is not its own");
        let err = check_scope("a", &kind("", "ConfigMap"), "fleet-member-a", "Get").unwrap_err();
        assert!(err.message().contains("may only read the Work"), "{err}");
        let score = kind("cluster.open-cluster-management.io", "AddOnPlacementScore");
        assert!(check_scope("a", &score, "a", "UpdateStatus").is_ok());
        assert!(check_scope("a", &score, "b", "UpdateStatus").is_err());
    }
}
