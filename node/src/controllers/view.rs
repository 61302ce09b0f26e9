//! The controllers' reads of the local store: a placement's snapshots and
//! bindings (found by name prefix, then by parent label), and hub
//! resources for selection (the clusters come from the feed's cache).

use std::cell::RefCell;

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::snapshot::PARENT_PLACEMENT_LABEL;
use fleet_api::Object;
use fleet_placement::selection::ResourceSource;
use fleet_statemachine::{ListQuery, Store};

use super::ControllerError;

/// The objects of `kind` (in the placement's namespace) that belong to
/// `placement`: named `<placement>-...`, labelled with it as parent, and
/// owned by this placement, not by a deleted one of the same name whose
/// children are still going (a binding waits for its member to remove
/// what it placed): a placement made again under the same name starts
/// with none of them, as KubeFleet's scheduler ignores bindings being
/// deleted.
pub fn children(store: &Store, placement: &Object, kind: &str) -> Result<Vec<Object>, ControllerError> {
    let namespace = placement.metadata.namespace.as_deref().unwrap_or("");
    let name = &placement.metadata.name;
    let (objects, _) = store.list_named_prefix(FLEET_PLACEMENT_GROUP, kind, namespace, &format!("{name}-"))?;
    Ok(objects
        .into_iter()
        .filter(|o| o.metadata.labels.get(PARENT_PLACEMENT_LABEL) == Some(name))
        .filter(|o| owned_by(o, placement))
        .collect())
}

/// Whether `child`'s controlling owner is `placement` (the same uid). A
/// child without one counts as the placement's unless it is being deleted:
/// deleting an owner removes its reference from the dependents that a
/// finalizer keeps.
fn owned_by(child: &Object, placement: &Object) -> bool {
    match child.metadata.owner_references.iter().find(|r| r.controller == Some(true)) {
        Some(owner) => owner.uid == placement.metadata.uid,
        None => child.metadata.deletion_timestamp.is_none(),
    }
}

/// Hub resources for selection, read from the store. The trait cannot fail,
/// so the first storage error is kept and must be checked with
/// [`StoreSource::finish`]: a selection made while reads failed is thrown
/// away, never snapshotted.
pub struct StoreSource<'a> {
    store: &'a Store,
    error: RefCell<Option<fleet_statemachine::Error>>,
}

impl<'a> StoreSource<'a> {
    /// A source over `store`.
    pub fn new(store: &'a Store) -> StoreSource<'a> {
        StoreSource { store, error: RefCell::new(None) }
    }

    /// The first read error, if any.
    pub fn finish(self) -> Result<(), ControllerError> {
        match self.error.into_inner() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    fn keep(&self, result: Result<(Vec<Object>, u64), fleet_statemachine::Error>) -> Vec<Object> {
        match result {
            Ok((objects, _)) => objects,
            Err(e) => {
                self.error.borrow_mut().get_or_insert(e);
                Vec::new()
            }
        }
    }
}

impl ResourceSource for StoreSource<'_> {
    fn list(&self, group: &str, kind: &str, namespace: Option<&str>) -> Vec<Object> {
        let query = ListQuery {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: namespace.map(str::to_string),
            selector: None,
        };
        self.keep(self.store.list(&query))
    }

    fn namespace_contents(&self, namespace: &str) -> Vec<Object> {
        self.keep(self.store.namespace_contents(namespace))
    }

    fn get(&self, group: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Object> {
        let key = fleet_api::ObjectKey::new(group, kind, namespace.unwrap_or(""), name);
        self.keep(self.store.get(&key).map(|(object, index)| (object.into_iter().collect(), index))).pop()
    }
}

#[cfg(test)]
mod tests {
    use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
    use serde_json::json;

    use super::*;
    use crate::controllers::testkit::Fixture;

    const NOW: &str = "2026-11-27T10:00:00Z";

    fn binding(fixture: &mut Fixture, name: &str, parent: Option<&str>) {
        let labels = parent.map_or(json!({}), |p| json!({PARENT_PLACEMENT_LABEL: p}));
        fixture.create(
            json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceBinding",
                   "metadata": {"name": name, "labels": labels}}),
            NOW,
        );
    }

    #[test]
    fn children_are_named_after_the_placement_and_labelled_with_it() {
        let mut fixture = Fixture::new();
        let web: Object = serde_json::from_value(json!({
            "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourcePlacement",
            "metadata": {"name": "web"}
        }))
        .unwrap();
        binding(&mut fixture, "web-east-1", Some("web"));
        // Named like a child of `web`, but another placement's (`web-api`).
        binding(&mut fixture, "web-api-east-1", Some("web-api"));
        // Labelled, but not named after it; and named, but not labelled.
        binding(&mut fixture, "other-east-1", Some("web"));
        binding(&mut fixture, "web-west-1", None);
        let found = children(&fixture.store, &web, "ClusterResourceBinding").unwrap();
        let names: Vec<&str> = found.iter().map(|o| o.metadata.name.as_str()).collect();
        assert_eq!(names, ["web-east-1"]);
    }

    #[test]
    fn a_store_source_reads_lists_objects_and_namespaces() {
        let mut fixture = Fixture::new();
        fixture.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}), NOW);
        fixture.create(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "app"}}),
            NOW,
        );
        let source = StoreSource::new(&fixture.store);
        assert_eq!(source.list("", "ConfigMap", Some("app")).len(), 1);
        assert_eq!(source.list("", "ConfigMap", Some("other")).len(), 0);
        assert!(source.get("", "ConfigMap", Some("app"), "cfg").is_some());
        assert!(source.get(FLEET_PLACEMENT_GROUP, "ClusterResourcePlacement", None, "cfg").is_none());
        assert_eq!(source.namespace_contents("app").len(), 1);
        assert!(source.finish().is_ok(), "no read failed");
    }
}
