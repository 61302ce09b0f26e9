//! Who may name an `executor`: a ManifestWork applied on its member as a
//! service account is admitted only if its writer may `execute-as` that
//! service account, as OCM's webhook decides — RBAC's verb `execute-as`
//! on `manifestworks` of `work.open-cluster-management.io` in the
//! ManifestWork's namespace, with the name
//! `system:serviceaccount:<namespace>:<name>`. Checked at create, and at an
//! update that changes the executor; a ManifestWork without one is not
//! checked (OCM's default). Member agents and hub nodes are not users and
//! pass.
//!
//! A ManifestWorkReplicaSet's template executor is checked the same way,
//! in the replica set's namespace: the hub's controller writes its
//! ManifestWorks, and OCM, whose controller may execute as anyone, does not
//! check it, which would let anyone who may write a replica set name any
//! executor.

use std::sync::Arc;

use fleet_api::ocm::manifestwork::{self, ManifestWorkExecutor};
use fleet_api::ocm::{replicaset, WORK_GROUP};
use fleet_api::{Object, ObjectKey};
use fleet_rbac::Attributes;
use fleet_statemachine::Store;

use crate::auth::Caller;
use crate::blocking::blocking;
use crate::error::{storage_error, RequestError};
use crate::rbac::{user_of, Authorizer};

/// The verb OCM's webhook asks RBAC about.
pub const EXECUTE_AS: &str = "execute-as";

/// The executor `object` names, when it is a ManifestWork or a
/// ManifestWorkReplicaSet (its template's).
fn executor_of(object: &Object) -> Option<ManifestWorkExecutor> {
    if object.group() != WORK_GROUP {
        return None;
    }
    match object.kind.as_str() {
        manifestwork::KIND => manifestwork::spec_of(object).executor,
        replicaset::KIND => replicaset::spec_of(object).manifest_work_template.executor,
        _ => None,
    }
}

/// Checks that `caller` may write `object` when it is a ManifestWork (or
/// ManifestWorkReplicaSet) whose executor is new or changed; other objects
/// pass.
pub async fn check(
    authorizer: &Arc<Authorizer>,
    store: Arc<Store>,
    caller: &Caller,
    object: &Object,
) -> Result<(), RequestError> {
    let Some(executor) = executor_of(object) else { return Ok(()) };
    let Some(user) = user_of(&caller.identity) else { return Ok(()) };
    let key = ObjectKey::of(object);
    let existing = blocking(move || Ok(store.get(&key).map_err(storage_error)?.0)).await?;
    if existing.is_some_and(|old| executor_of(&old).as_ref() == Some(&executor)) {
        return Ok(());
    }
    let Some(account) = executor.subject.service_account else { return Ok(()) };
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let attributes = Attributes::resource(EXECUTE_AS, WORK_GROUP, "manifestworks", &namespace, &account.user_name());
    if authorizer.policy().await?.authorize(&user, &attributes).allowed {
        return Ok(());
    }
    // OCM's words for a ManifestWork.
    let what = if object.kind == manifestwork::KIND { "Manifestwork" } else { replicaset::KIND };
    Err(RequestError::forbidden(format!(
        "user {} cannot manipulate the {what} with executor {}/{} in namespace {namespace}",
        user.name, account.namespace, account.name
    )))
}
