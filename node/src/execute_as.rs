//! Who may name an `executor`: a ManifestWork applied on its member as a
//! service account is admitted only if its writer may `execute-as` that
//! service account, as OCM's webhook decides — RBAC's verb `execute-as`
//! on `manifestworks` of `work.open-cluster-management.io` in the
//! ManifestWork's namespace, with the name
//! `system:serviceaccount:<namespace>:<name>`. Checked at create, and at an
//! update that changes the executor; a ManifestWork without one is not
//! checked (OCM's default). Member agents and hub nodes are not users and
//! pass.

use std::sync::Arc;

use fleet_api::ocm::manifestwork::{spec_of, KIND};
use fleet_api::ocm::WORK_GROUP;
use fleet_api::{Object, ObjectKey};
use fleet_rbac::Attributes;
use fleet_statemachine::Store;

use crate::auth::Caller;
use crate::blocking::blocking;
use crate::error::{storage_error, RequestError};
use crate::rbac::{user_of, Authorizer};

/// The verb OCM's webhook asks RBAC about.
pub const EXECUTE_AS: &str = "execute-as";

/// Checks that `caller` may write `object` when it is a ManifestWork whose
/// executor is new or changed; other objects pass.
pub async fn check(
    authorizer: &Arc<Authorizer>,
    store: Arc<Store>,
    caller: &Caller,
    object: &Object,
) -> Result<(), RequestError> {
    if object.group() != WORK_GROUP || object.kind != KIND {
        return Ok(());
    }
    let Some(user) = user_of(&caller.identity) else { return Ok(()) };
    let Some(executor) = spec_of(object).executor else { return Ok(()) };
    let key = ObjectKey::of(object);
    let existing = blocking(move || Ok(store.get(&key).map_err(storage_error)?.0)).await?;
    if existing.is_some_and(|old| spec_of(&old).executor.as_ref() == Some(&executor)) {
        return Ok(());
    }
    let Some(account) = executor.subject.service_account else { return Ok(()) };
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let attributes = Attributes::resource(EXECUTE_AS, WORK_GROUP, "manifestworks", &namespace, &account.user_name());
    if authorizer.policy().await?.authorize(&user, &attributes).allowed {
        return Ok(());
    }
    Err(RequestError::forbidden(format!(
        "user {} cannot manipulate the Manifestwork with executor {}/{} in namespace {namespace}",
        user.name, account.namespace, account.name
    )))
}
