//! Unit tests of the strategy decisions.

use serde_json::json;

use super::*;

const OWNER: &str = "fleet-member-a/w";

fn object(v: Value) -> Object {
    serde_json::from_value(v).unwrap()
}

fn manifest() -> Object {
    object(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"a": "1"}}),
    )
}

/// The live object: `data`, the owner annotation if any, owner references if any.
fn live(data: Value, owner: Option<&str>, owned: bool) -> Object {
    let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "3"}, "data": data});
    if let Some(o) = owner {
        v["metadata"]["annotations"] = json!({OWNER_ANNOTATION: o});
    }
    if owned {
        v["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "x"}]);
    }
    object(v)
}

fn strategy(v: Value) -> Strategy {
    Strategy::of(Some(&serde_json::from_value(v).unwrap()))
}

fn reason(d: &Decision) -> &'static str {
    match d {
        Decision::Apply { .. } => "Apply",
        Decision::Refuse { reason, .. } => reason,
    }
}

#[test]
fn defaults_and_parsing() {
    let s = Strategy::of(None);
    assert_eq!(
        s,
        Strategy {
            report_diff: false,
            mode: ApplyMode::ClientSide,
            comparison: Comparison::Partial,
            if_not_drifted: false,
            take_over: TakeOver::Always,
            allow_co_ownership: false,
        }
    );
    let s = strategy(json!({"type": "ServerSideApply", "serverSideApplyConfig": {"force": true},
        "comparisonOption": "FullComparison", "whenToApply": "IfNotDrifted", "whenToTakeOver": "IfNoDiff",
        "allowCoOwnership": true}));
    assert_eq!(s.mode, ApplyMode::ServerSide { force: true });
    assert_eq!(
        (s.comparison, s.if_not_drifted, s.take_over, s.allow_co_ownership),
        (Comparison::Full, true, TakeOver::IfNoDiff, true)
    );
    assert!(strategy(json!({"type": "ReportDiff"})).report_diff);
    assert_eq!(strategy(json!({"whenToTakeOver": "Never"})).take_over, TakeOver::Never);
}

#[test]
fn a_missing_object_is_created_and_our_own_is_applied() {
    let s = Strategy::of(None);
    assert_eq!(decide(&s, &manifest(), None, OWNER, None), apply(false));
    let ours = live(json!({"a": "changed"}), Some(OWNER), false);
    assert_eq!(decide(&s, &manifest(), Some(&ours), OWNER, None), apply(false));
}

#[test]
fn another_work_s_object_is_never_taken_over_whatever_the_strategy() {
    let theirs = live(json!({"a": "1"}), Some("fleet-member-a/other"), false);
    for s in [
        Strategy::of(None),
        strategy(json!({"whenToTakeOver": "Always", "allowCoOwnership": true})),
        strategy(json!({"whenToTakeOver": "IfNoDiff"})),
    ] {
        let d = decide(&s, &manifest(), Some(&theirs), OWNER, None);
        assert_eq!(reason(&d), REASON_FAILED_TO_TAKE_OVER);
        assert!(matches!(&d, Decision::Refuse { message, .. } if message.contains("fleet-member-a/other")), "{d:?}");
    }
    let never = strategy(json!({"whenToTakeOver": "Never"}));
    assert_eq!(reason(&decide(&never, &manifest(), Some(&theirs), OWNER, None)), REASON_NOT_TAKEN_OVER);
}

#[test]
fn take_over_always_if_no_diff_and_never() {
    let same = live(json!({"a": "1", "extra": "x"}), None, false);
    let different = live(json!({"a": "2"}), None, false);
    let always = Strategy::of(None);
    assert_eq!(decide(&always, &manifest(), Some(&different), OWNER, None), apply(true));

    let if_no_diff = strategy(json!({"whenToTakeOver": "IfNoDiff"}));
    assert_eq!(decide(&if_no_diff, &manifest(), Some(&same), OWNER, None), apply(true));
    match decide(&if_no_diff, &manifest(), Some(&different), OWNER, None) {
        Decision::Refuse { reason, diffs, drifts, .. } => {
            assert_eq!(reason, REASON_FAILED_TO_TAKE_OVER);
            assert!(drifts.is_empty());
            assert_eq!(diffs.len(), 1);
            assert_eq!(diffs[0].to_json(), json!({"path": "/data/a", "valueInHub": "1", "valueInMember": "2"}));
        }
        other => panic!("{other:?}"),
    }
    // Under full comparison, the member's extra field is a difference too.
    let full = strategy(json!({"whenToTakeOver": "IfNoDiff", "comparisonOption": "FullComparison"}));
    assert_eq!(reason(&decide(&full, &manifest(), Some(&same), OWNER, None)), REASON_FAILED_TO_TAKE_OVER);

    let never = strategy(json!({"whenToTakeOver": "Never"}));
    let d = decide(&never, &manifest(), Some(&same), OWNER, None);
    assert_eq!(reason(&d), REASON_NOT_TAKEN_OVER);
    assert!(matches!(&d, Decision::Refuse { message, .. } if message.contains("Never")), "{d:?}");
}

#[test]
fn co_owned_objects_need_allow_co_ownership() {
    let owned = live(json!({"a": "1"}), None, true);
    let d = decide(&Strategy::of(None), &manifest(), Some(&owned), OWNER, None);
    assert_eq!(reason(&d), REASON_FAILED_TO_TAKE_OVER, "a take-over that fails");
    let never = strategy(json!({"whenToTakeOver": "Never"}));
    assert_eq!(reason(&decide(&never, &manifest(), Some(&owned), OWNER, None)), REASON_NOT_TAKEN_OVER);
    let ours_owned = live(json!({"a": "1"}), Some(OWNER), true);
    assert_eq!(
        reason(&decide(&Strategy::of(None), &manifest(), Some(&ours_owned), OWNER, None)),
        REASON_APPLY_FAILED,
        "ours, since co-owned: a refused apply"
    );
    let allow = strategy(json!({"allowCoOwnership": true}));
    assert_eq!(decide(&allow, &manifest(), Some(&owned), OWNER, None), apply(true));
}

#[test]
fn if_not_drifted_compares_the_live_object_with_the_manifest_as_last_applied() {
    let last = serde_json::to_value(manifest()).unwrap();
    let s = strategy(json!({"whenToApply": "IfNotDrifted"}));
    let untouched = live(json!({"a": "1", "server": "x"}), Some(OWNER), false);
    assert_eq!(decide(&s, &manifest(), Some(&untouched), OWNER, Some(&last)), apply(false));
    let edited = live(json!({"a": "edited"}), Some(OWNER), false);
    match decide(&s, &manifest(), Some(&edited), OWNER, Some(&last)) {
        Decision::Refuse { reason, drifts, .. } => {
            assert_eq!(reason, REASON_DRIFTED);
            assert_eq!(drifts[0].to_json(), json!({"path": "/data/a", "valueInHub": "1", "valueInMember": "edited"}));
        }
        other => panic!("{other:?}"),
    }
    // Full comparison also counts fields added on the member.
    let full = strategy(json!({"whenToApply": "IfNotDrifted", "comparisonOption": "FullComparison"}));
    assert_eq!(reason(&decide(&full, &manifest(), Some(&untouched), OWNER, Some(&last))), REASON_DRIFTED);
    // Always overwrites, reporting the drifts; without a record nothing counts as drift.
    match decide(&Strategy::of(None), &manifest(), Some(&edited), OWNER, Some(&last)) {
        Decision::Apply { take_over: false, drifts } => {
            assert_eq!(drifts[0].to_json(), json!({"path": "/data/a", "valueInHub": "1", "valueInMember": "edited"}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(decide(&Strategy::of(None), &manifest(), Some(&untouched), OWNER, Some(&last)), apply(false));
    assert_eq!(decide(&s, &manifest(), Some(&edited), OWNER, None), apply(false));
}

#[test]
fn report_diff_of_a_missing_object_is_one_difference_at_the_root() {
    let out = report_diff(&manifest(), None, Comparison::Partial);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].path.as_str(), out[0].value_in_member.as_deref()), ("/", None));
    let same = live(json!({"a": "1"}), None, false);
    assert!(report_diff(&manifest(), Some(&same), Comparison::Partial).is_empty());
}
