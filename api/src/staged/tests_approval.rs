//! Approval requests: validation, immutable spec, approve and accept (SU-9).

use serde_json::json;

use super::approval::{accept, approve};
use super::*;
use crate::testing::{err, has, object};

#[test]
fn su_9_request_fields_required_and_immutable() {
    let e = err(object(CLUSTER_APPROVAL_REQUEST, "r", json!({})));
    has(&e, "spec.parentStageRollout: Required value");
    has(&e, "spec.targetStage: Required value");
    has(
        &err(object(CLUSTER_APPROVAL_REQUEST, "r", json!({"parentStageRollout": "a", "targetStage": "b", "x": 1}))),
        "unknown field `x`",
    );
    let mut old =
        object(CLUSTER_APPROVAL_REQUEST, "r", json!({"parentStageRollout": "app-v1", "targetStage": "canary"}));
    crate::typed::prepare(&mut old).unwrap();
    crate::typed::check_update(&old, &old.clone()).unwrap();
    let new = object(CLUSTER_APPROVAL_REQUEST, "r", json!({"parentStageRollout": "app-v1", "targetStage": "prod"}));
    has(&crate::typed::check_update(&old, &new).unwrap_err().to_string(), "spec: Invalid value: {\"parentStageRollout\":\"app-v1\",\"targetStage\":\"prod\"}: The spec field is immutable");
}

#[test]
fn su_9_approve_then_accept_at_the_request_generation() {
    let mut status = ApprovalRequestStatus::default();
    assert!(!status.is_approved(1));
    assert!(approve(&mut status, CLUSTER_APPROVAL_REQUEST, 1, "t1"));
    assert!(!approve(&mut status, CLUSTER_APPROVAL_REQUEST, 1, "t2"), "approving twice changes nothing");
    assert!(status.is_approved(1));
    assert!(!status.is_approved(2), "an approval of an older generation does not count");
    assert_eq!(status.conditions[0].reason, REASON_CLUSTER_REQUEST_APPROVED);
    assert!(accept(&mut status, 1, "t3"));
    assert!(status.is_accepted(1));
    let accepted = conditions::find(&status.conditions, APPROVAL_ACCEPTED).unwrap();
    assert_eq!(accepted.message, "The approval request has been approved and cannot be reverted");
    let mut namespaced = ApprovalRequestStatus::default();
    approve(&mut namespaced, APPROVAL_REQUEST, 3, "t");
    assert_eq!(namespaced.conditions[0].reason, REASON_NAMESPACED_REQUEST_APPROVED);
}

use crate::conditions;
