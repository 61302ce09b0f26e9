//! Kubernetes' finalizer rules, applied by the state machine: deleting an
//! object that has finalizers only marks it (`deletionTimestamp`, and a new
//! generation), and the write that removes its last finalizer deletes it.
//! While it is being deleted no finalizer may be added. The time comes from
//! the command (the proposer's clock), never from a clock read here.

use fleet_api::{Object, ObjectKey};

use crate::command::StoreError;

/// Marks `object` as being deleted at `now`, unless it already is.
pub(crate) fn mark_deleting(object: &mut Object, now: &str) {
    if object.metadata.deletion_timestamp.is_none() {
        object.metadata.deletion_timestamp = Some(now.to_string());
        object.metadata.generation += 1;
    }
}

/// Whether `object` was being deleted and has no finalizer left.
pub(crate) fn is_released(object: &Object) -> bool {
    object.metadata.deletion_timestamp.is_some() && object.metadata.finalizers.is_empty()
}

/// Refuses a write that adds finalizers to an object being deleted.
pub(crate) fn check_no_new_finalizers(existing: &Object, desired: &Object) -> Result<(), StoreError> {
    if existing.metadata.deletion_timestamp.is_none() {
        return Ok(());
    }
    let added: Vec<&String> =
        desired.metadata.finalizers.iter().filter(|f| !existing.metadata.finalizers.contains(f)).collect();
    if added.is_empty() {
        return Ok(());
    }
    Err(StoreError::Invalid(format!(
        "{}: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, \
         found new finalizers {added:?}",
        ObjectKey::of(existing)
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(finalizers: &[&str], deleting: bool) -> Object {
        let mut o: Object = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "generation": 1, "finalizers": finalizers}
        }))
        .expect("object");
        if deleting {
            o.metadata.deletion_timestamp = Some("t0".into());
        }
        o
    }

    #[test]
    fn marking_sets_the_time_and_a_new_generation_once() {
        let mut o = object(&["a"], false);
        mark_deleting(&mut o, "t1");
        assert_eq!((o.metadata.deletion_timestamp.as_deref(), o.metadata.generation), (Some("t1"), 2));
        mark_deleting(&mut o, "t2");
        assert_eq!((o.metadata.deletion_timestamp.as_deref(), o.metadata.generation), (Some("t1"), 2));
    }

    #[test]
    fn released_only_when_deleting_without_finalizers() {
        assert!(!is_released(&object(&[], false)));
        assert!(!is_released(&object(&["a"], true)));
        assert!(is_released(&object(&[], true)));
    }

    #[test]
    fn finalizers_may_be_removed_but_not_added_while_deleting() {
        let deleting = object(&["a", "b"], true);
        assert!(check_no_new_finalizers(&deleting, &object(&["a"], false)).is_ok());
        let err = check_no_new_finalizers(&deleting, &object(&["a", "c"], false)).unwrap_err().to_string();
        assert!(err.contains("no new finalizers can be added") && err.contains("\"c\""), "{err}");
        assert!(check_no_new_finalizers(&object(&["a"], false), &object(&["a", "c"], false)).is_ok());
    }
}
