//! Keeps one Cluster Inventory ClusterProfile per MemberCluster
//! (`fleet_api::cluster_profile`): created with the member, rewritten when
//! what it mirrors changes, deleted with the member (its owner reference)
//! or, for a profile whose member is gone, here.

use fleet_api::cluster_profile::{
    control_plane_healthy, profile_of, CLUSTER_INVENTORY_GROUP, CLUSTER_PROFILE, PROFILE_NAMESPACE,
};
use fleet_api::conditions::{set_condition, Condition};
use fleet_api::kinds::FLEET_CLUSTER_GROUP;
use fleet_api::member::status_of as member_status_of;
use fleet_api::{Object, ObjectKey};
use fleet_statemachine::{Op, Store};
use serde_json::Value;

use super::placement::objects::{check, with_uid};
use super::placement::{Next, Step};
use super::ControllerError;

/// The profile key of a member cluster.
pub fn profile_key(member: &str) -> ObjectKey {
    ObjectKey::new(CLUSTER_INVENTORY_GROUP, CLUSTER_PROFILE, PROFILE_NAMESPACE, member)
}

/// Whether a queue key is a profile's.
pub fn is_profile_key(key: &ObjectKey) -> bool {
    key.group == CLUSTER_INVENTORY_GROUP && key.kind == CLUSTER_PROFILE
}

/// The next write that brings the profile `key` in line with its member.
pub fn next_step(store: &Store, key: &ObjectKey, now: &str) -> Result<Next, ControllerError> {
    let member_key = ObjectKey::new(FLEET_CLUSTER_GROUP, "MemberCluster", "", &key.name);
    let member = store.get(&member_key)?.0.filter(|m| m.metadata.deletion_timestamp.is_none());
    let existing = store.get(key)?.0;
    let (ops, subject) = match (member, existing) {
        (None, None) => return Ok(Next::Done { recheck_after: None }),
        (None, Some(profile)) => {
            let version = profile.metadata.resource_version_number();
            (vec![Op::Delete { key: key.clone(), resource_version: version }], profile)
        }
        (Some(member), existing) => match writes(&member, existing.as_ref(), now) {
            Some(ops) => (ops, member),
            None => return Ok(Next::Done { recheck_after: None }),
        },
    };
    Ok(Next::Write(Box::new(Step { ops, events: Vec::new(), placement: subject })))
}

/// The ops that make `existing` the profile of `member`, if any change.
fn writes(member: &Object, existing: Option<&Object>, now: &str) -> Option<Vec<Op>> {
    let mut desired = profile_of(member);
    let old_conditions: Vec<Condition> = existing
        .and_then(|p| p.status())
        .and_then(|s| s.get("conditions"))
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let mut conditions = old_conditions;
    set_condition(&mut conditions, control_plane_healthy(&member_status_of(member)), now);
    if let Some(Value::Object(status)) = desired.rest.get_mut("status") {
        status.insert("conditions".into(), fleet_api::typed::encode(&conditions));
    }
    let Some(existing) = existing else {
        return Some(vec![check(member), Op::Create { object: with_uid(desired) }]);
    };
    let mut ops = vec![check(member)];
    let same_meta = existing.metadata.labels == desired.metadata.labels
        && existing.metadata.owner_references == desired.metadata.owner_references
        && existing.rest.get("spec") == desired.rest.get("spec");
    let mut base = existing.clone();
    if !same_meta {
        let mut updated = existing.clone();
        updated.metadata.labels = desired.metadata.labels.clone();
        updated.metadata.owner_references = desired.metadata.owner_references.clone();
        updated.rest.insert("spec".into(), desired.rest.get("spec").cloned().unwrap_or(Value::Null));
        ops.push(Op::Update { object: updated.clone() });
        // The status write follows in the same command: its precondition
        // is the version before this one, so it goes unconditioned.
        base = updated;
        base.metadata.resource_version.clear();
    }
    if existing.rest.get("status") != desired.rest.get("status") {
        let mut updated = base;
        updated.rest.insert("status".into(), desired.rest.get("status").cloned().unwrap_or(Value::Null));
        ops.push(Op::UpdateStatus { object: updated });
    }
    (ops.len() > 1).then_some(ops)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn member(version: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
            "metadata": {"name": "east", "uid": "u-1", "resourceVersion": "4"}, "spec": {},
            "status": {
                "conditions": [{"type": "Healthy", "status": "True", "reason": "Healthy", "message": "", "lastTransitionTime": "t0"}],
                "agentStatus": [{"type": "MemberAgent", "conditions": []}],
                "properties": {"k8s.io/k8s-version": {"value": version}}
            }
        }))
        .unwrap()
    }

    /// The profile a write creates, as stored.
    fn created(ops: &[Op]) -> Object {
        ops.iter()
            .find_map(|op| match op {
                Op::Create { object } => Some(object.clone()),
                _ => None,
            })
            .expect("a create")
    }

    #[test]
    fn a_profile_is_created_then_left_alone_until_its_member_changes() {
        let ops = writes(&member("v1.36.3"), None, "t1").expect("created");
        let mut stored = created(&ops);
        assert!(!stored.metadata.uid.is_empty());
        assert_eq!(stored.rest["status"]["conditions"][0]["lastTransitionTime"], json!("t1"));
        stored.metadata.resource_version = "9".into();
        assert!(writes(&member("v1.36.3"), Some(&stored), "t2").is_none(), "nothing changed, nothing written");
        let ops = writes(&member("v1.37.0"), Some(&stored), "t3").expect("a new version is written");
        assert!(matches!(&ops[..], [Op::Check { .. }, Op::UpdateStatus { object }]
            if object.rest["status"]["version"]["kubernetes"] == json!("v1.37.0")
                && object.rest["status"]["conditions"][0]["lastTransitionTime"] == json!("t1")));
    }

    #[test]
    fn a_profile_someone_relabelled_is_put_back() {
        let ops = writes(&member("v1"), None, "t1").expect("created");
        let mut stored = created(&ops);
        stored.metadata.resource_version = "9".into();
        stored.metadata.labels.clear();
        let ops = writes(&member("v1"), Some(&stored), "t2").expect("relabelled");
        assert!(matches!(&ops[..], [Op::Check { .. }, Op::Update { object }]
            if object.metadata.labels.get("x-k8s.io/cluster-manager").map(String::as_str) == Some("KubeFleet")));
    }
}
