//! Placements cannot reach past their author: a ClusterResourcePlacement,
//! ResourcePlacement, ClusterResourceOverride or ResourceOverride is
//! admitted only if the user writing it may read what it selects — `list`
//! of the kind for a selector by kind or label, `get` of the object for a
//! selector by name, and `get` of every object the placement selects at
//! that moment (a namespace placed with its contents brings in objects no
//! selector names). Checked at every create and update, as the writer:
//! whoever changes a placement must be able to read what it then selects.
//!
//! Envelopes need no check of their own: a ResourceEnvelope wraps objects
//! of its own namespace only (admission refuses others; one of the wrong
//! scope stops Work generation, EN-8), written by its
//! author, and a placement that selects an envelope is checked like any
//! selection.

use std::collections::BTreeMap;
use std::sync::Arc;

use fleet_api::kinds::{Scope, FLEET_PLACEMENT_GROUP};
use fleet_api::overrides::{OverrideSpec, CLUSTER_RESOURCE_OVERRIDE, RESOURCE_OVERRIDE};
use fleet_api::placement::{PlacementSpec, CLUSTER_RESOURCE_PLACEMENT, RESOURCE_PLACEMENT};
use fleet_api::{Object, ObjectMeta};
use fleet_placement::selection::{is_fleet_kind, select_resources};
use fleet_rbac::bootstrap::MASTERS_GROUP;
use fleet_rbac::{Attributes, UserInfo};
use fleet_statemachine::Store;

use crate::admission::{resolve_document, ResolvedKind};
use crate::auth::Caller;
use crate::blocking::blocking;
use crate::controllers::view::StoreSource;
use crate::error::RequestError;
use crate::rbac::{user_of, Authorizer};

/// One read a placement needs of its author, and why.
#[derive(Debug, Clone)]
struct Need {
    attributes: Attributes,
    /// What needs it: what `spec.resourceSelectors[0]` selects, or an
    /// object the placement selects.
    because: String,
}

/// Checks that `caller` may read what `object` (a placement or an
/// override; other objects pass) selects.
pub async fn check(
    authorizer: &Arc<Authorizer>,
    store: Arc<Store>,
    caller: &Caller,
    object: &Object,
) -> Result<(), RequestError> {
    let Some(user) = user_of(&caller.identity) else { return Ok(()) };
    // system:masters may read everything (the built-in cluster-admin
    // binding, which cannot be weakened): no selection to compute.
    if user.groups.iter().any(|g| g == MASTERS_GROUP) {
        return Ok(());
    }
    if object.group() != FLEET_PLACEMENT_GROUP
        || !matches!(
            object.kind.as_str(),
            CLUSTER_RESOURCE_PLACEMENT | RESOURCE_PLACEMENT | CLUSTER_RESOURCE_OVERRIDE | RESOURCE_OVERRIDE
        )
    {
        return Ok(());
    }
    let policy = authorizer.policy().await?;
    let object = object.clone();
    let needs = blocking(move || needs(&store, &object).map(|n| (n, object))).await?;
    let (needs, object) = needs;
    refuse_unread(&policy, &user, &object, &needs)
}

/// The first need `user` does not hold, as a refusal naming the
/// placement, the field or object that needs it, and RBAC's reason.
fn refuse_unread(
    policy: &fleet_rbac::Policy,
    user: &UserInfo,
    object: &Object,
    needs: &[Need],
) -> Result<(), RequestError> {
    for need in needs {
        let decision = policy.authorize(user, &need.attributes);
        if decision.allowed {
            continue;
        }
        let place = match object.metadata.namespace.as_deref().filter(|n| !n.is_empty()) {
            Some(ns) => format!(" in namespace {ns:?}"),
            None => String::new(),
        };
        let message = format!(
            "{} {:?}{place} is forbidden: its author may not read {}: {}",
            object.kind, object.metadata.name, need.because, decision.reason
        );
        crate::audit::note_refusal(&message);
        return Err(RequestError::forbidden(message));
    }
    Ok(())
}

/// Resolves kinds once per group and kind.
struct Kinds<'a> {
    store: &'a Store,
    seen: BTreeMap<(String, String), ResolvedKind>,
}

impl Kinds<'_> {
    fn resolve(&mut self, group: &str, version: &str, kind: &str) -> Result<ResolvedKind, RequestError> {
        let key = (group.to_string(), kind.to_string());
        if let Some(found) = self.seen.get(&key) {
            return Ok(found.clone());
        }
        let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        let stub =
            Object { api_version, kind: kind.to_string(), metadata: ObjectMeta::default(), rest: Default::default() };
        let resolved = resolve_document(self.store, &stub)?;
        self.seen.insert(key, resolved.clone());
        Ok(resolved)
    }
}

/// The reads `object` needs of its author.
fn needs(store: &Store, object: &Object) -> Result<Vec<Need>, RequestError> {
    let mut kinds = Kinds { store, seen: BTreeMap::new() };
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let invalid = |e: fleet_api::validation::ValidationError| RequestError::invalid(e.to_string());
    let mut needs = Vec::new();
    let mut selector_need = |kind: &ResolvedKind, namespace: &str, name: &str, because: String| {
        let verb = if name.is_empty() { "list" } else { "get" };
        needs
            .push(Need { attributes: Attributes::resource(verb, &kind.group, &kind.plural, namespace, name), because });
    };
    match object.kind.as_str() {
        CLUSTER_RESOURCE_PLACEMENT | RESOURCE_PLACEMENT => {
            let spec: PlacementSpec = fleet_api::typed::decode_spec(object).map_err(invalid)?;
            let in_namespace = spec.namespace_with_resource_selectors().filter(|n| !n.is_empty()).map(str::to_string);
            for (i, selector) in spec.resource_selectors.iter().enumerate() {
                if is_fleet_kind(&selector.group, &selector.kind) {
                    continue;
                }
                let kind = kinds.resolve(&selector.group, &selector.version, &selector.kind)?;
                // Where the selector picks: a ResourcePlacement's namespace;
                // for a ClusterResourcePlacement, cluster-scoped kinds, and
                // namespaced ones in its NamespaceWithResourceSelectors namespace.
                let scope = match (object.kind.as_str(), kind.scope) {
                    (RESOURCE_PLACEMENT, Scope::Cluster) => continue,
                    (RESOURCE_PLACEMENT, _) => namespace.clone(),
                    (_, Scope::Cluster) => String::new(),
                    (_, _) => match &in_namespace {
                        Some(ns) => ns.clone(),
                        None => continue,
                    },
                };
                let name = selector.name.clone().unwrap_or_default();
                selector_need(&kind, &scope, &name, format!("what spec.resourceSelectors[{i}] selects"));
            }
            let source = StoreSource::new(store);
            let selected = select_resources(&object.kind, Some(namespace.as_str()), &spec, &source);
            source
                .finish()
                .map_err(|e| RequestError::unavailable(format!("reading what the placement selects: {e}")))?;
            for picked in selected {
                let version = picked.api_version.rsplit('/').next().unwrap_or_default();
                let kind = kinds.resolve(picked.group(), version, &picked.kind)?;
                let ns = picked.metadata.namespace.clone().unwrap_or_default();
                let because = match ns.as_str() {
                    "" => format!("the {} {:?} it selects", picked.kind, picked.metadata.name),
                    ns => format!("the {} {ns}/{} it selects", picked.kind, picked.metadata.name),
                };
                needs.push(Need {
                    attributes: Attributes::resource("get", &kind.group, &kind.plural, &ns, &picked.metadata.name),
                    because,
                });
            }
        }
        _ => {
            let spec: OverrideSpec = fleet_api::typed::decode_spec(object).map_err(invalid)?;
            let field = if object.kind == RESOURCE_OVERRIDE { "resourceSelectors" } else { "clusterResourceSelectors" };
            for (i, selector) in spec.selectors().iter().enumerate() {
                let kind = kinds.resolve(&selector.group, &selector.version, &selector.kind)?;
                let scope = if kind.scope == Scope::Cluster { String::new() } else { namespace.clone() };
                let name = if selector.label_selector.is_some() { "" } else { selector.name.as_str() };
                selector_need(&kind, &scope, name, format!("what spec.{field}[{i}] selects"));
            }
        }
    }
    Ok(needs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_statemachine::{Command, Op, Proposal};
    use openraft::{CommittedLeaderId, EntryPayload, LogId};
    use serde_json::json;

    fn store(objects: Vec<serde_json::Value>) -> (tempfile::TempDir, Arc<Store>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("sm.redb")).unwrap();
        let ops = objects
            .into_iter()
            .enumerate()
            .map(|(i, v)| Op::Apply { object: serde_json::from_value(v).unwrap(), uid: format!("uid-{i}") })
            .collect();
        let command = Command { now: "2026-11-27T00:00:00Z".into(), ops };
        let entry = openraft::Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), 1),
            payload: EntryPayload::Normal(Proposal::new(vec![command]).unwrap()),
        };
        store.apply_entries(vec![entry], false).unwrap();
        (dir, store)
    }

    fn asked(needs: &[Need]) -> Vec<String> {
        needs
            .iter()
            .map(|n| match &n.attributes.target {
                fleet_rbac::Target::Resource { resource, namespace, name, .. } => {
                    format!("{} {resource} {namespace}/{name}", n.attributes.verb)
                }
                fleet_rbac::Target::NonResource { path } => path.clone(),
            })
            .collect()
    }

    fn object(value: serde_json::Value) -> Object {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_placement_needs_what_its_selectors_and_selection_read() {
        let (_dir, store) = store(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "b"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": "a"}}),
        ]);
        // A ResourcePlacement: list by kind, get by name, in its namespace;
        // a cluster-scoped kind and the hub's own kinds select nothing there.
        let rp = object(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourcePlacement",
            "metadata": {"name": "web", "namespace": "a"},
            "spec": {"resourceSelectors": [
                {"group": "", "version": "v1", "kind": "ConfigMap"},
                {"group": "", "version": "v1", "kind": "Secret", "name": "s"},
                {"group": "", "version": "v1", "kind": "Namespace", "name": "b"},
                {"group": "placement.kubernetes-fleet.io", "version": "v1beta1", "kind": "ResourcePlacement"},
            ]},
        }));
        assert_eq!(
            asked(&needs(&store, &rp).unwrap()),
            ["list configmaps a/", "get secrets a/s", "get configmaps a/app"]
        );
        // A ClusterResourcePlacement of a namespace with its contents: the
        // namespace, then every object in it.
        let crp = object(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "b"},
            "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "b"}]},
        }));
        let crp_needs = asked(&needs(&store, &crp).unwrap());
        assert_eq!(crp_needs[0], "get namespaces /b");
        assert!(crp_needs.contains(&"get secrets b/db".to_string()), "{crp_needs:?}");
        // An override by label lists; by name gets.
        let ro = object(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1alpha1", "kind": "ResourceOverride",
            "metadata": {"name": "o", "namespace": "a"},
            "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Secret", "name": "s"}],
                     "policy": {"overrideRules": []}},
        }));
        assert_eq!(asked(&needs(&store, &ro).unwrap()), ["get secrets a/s"]);
    }
}
