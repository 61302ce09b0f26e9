//! Small builders shared by the placement controller's steps.

use fleet_api::kinds::FLEET_PLACEMENT_GROUP;
use fleet_api::{Object, ObjectKey};
use fleet_statemachine::Op;

/// A check that `object` is still at the version read.
pub fn check(object: &Object) -> Op {
    Op::Check { key: ObjectKey::of(object), resource_version: object.metadata.resource_version_number().unwrap_or(0) }
}

/// A check that `object`'s spec is still at the generation read (its
/// status may have moved: for objects others write the status of often).
pub fn check_spec(object: &Object) -> Op {
    Op::CheckGeneration { key: ObjectKey::of(object), generation: object.metadata.generation }
}

/// A delete conditional on the version read.
pub fn delete(object: &Object) -> Op {
    Op::Delete { key: ObjectKey::of(object), resource_version: object.metadata.resource_version_number() }
}

/// Gives a new object the uid the proposer decides.
pub fn with_uid(mut object: Object) -> Object {
    if object.metadata.uid.is_empty() {
        object.metadata.uid = uuid::Uuid::new_v4().to_string();
    }
    object
}

/// The key of a Fleet placement-group object.
pub fn placement_group_key(kind: &str, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(FLEET_PLACEMENT_GROUP, kind, namespace, name)
}
