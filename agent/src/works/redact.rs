//! Keeping a Secret's values on the member cluster. Whatever the agent
//! sends to the hub lands in Work status and from there in the placement's
//! status, readable by anyone who may read placements; a Secret's data must
//! not travel that way (KubeFleet redacts it too).
//!
//! The rule, for an object of `apiVersion: v1`, `kind: Secret` (the core
//! group's; a Secret kind of another group is not Kubernetes' Secret):
//!
//! - **Drifts and differences** ([`redact_differences`], applied by
//!   [`super::compare::differences`], the only place they are computed):
//!   every value at or under `/data` or `/stringData` is replaced by
//!   [`REDACTED`], KubeFleet's text; the path stays (KubeFleet shows the
//!   keys too). An absent side stays absent. Fleet goes one step further
//!   than KubeFleet where the data can hide elsewhere: the
//!   `kubectl.kubernetes.io/last-applied-configuration` annotation (a
//!   copy of the object as `kubectl apply` last wrote it on the member) and
//!   KubeFleet's `kubernetes-fleet.io/last-applied-configuration` (the
//!   same, as `ClientSideApply` records it, [`crate::targets::last_applied`])
//!   are redacted the same way, and a difference whose path is an *ancestor*
//!   of one of these (`/`, `/metadata`, `/metadata/annotations`: a whole
//!   map one side lacks) is reported with those parts redacted inside its
//!   value. Other fields (labels, annotations, `type`, `immutable`) are
//!   reported as for any object.
//! - **The whole object** missing on the member (ReportDiff's `/` with
//!   `(the whole object)`) carries no value, only KubeFleet's placeholder:
//!   reported as is.
//! - **Messages** ([`scrub_message`]): an error about a Secret (an apply
//!   refused by the API server) is reported as is unless it quotes one of
//!   the Secret's values (as written in the manifest, base64-decoded, or as
//!   on the member); then only the reason class remains.
//!
//! Checked and found not to carry a Secret's values: the agent's logs (no
//! manifest, live object or difference is ever logged; out-of-band edits
//! log kind, name and outcome only), the `failedPlacements` messages (the
//! hub copies them from the Work status scrubbed here), events (the agent
//! records none), and the other conditions' messages (counts and names
//! only).

use serde_json::Value;

use super::compare::Difference;

/// What stands for a Secret's value in a report (KubeFleet's exact text).
pub const REDACTED: &str = "(redacted for security reasons)";

/// The parts of a Secret whose values are never reported (JSON pointers).
const SECRET_PATHS: &[&str] = &[
    "/data",
    "/stringData",
    "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
    "/metadata/annotations/kubernetes-fleet.io~1last-applied-configuration",
];

/// Whether `object` is a Kubernetes Secret (core group).
pub fn is_secret(object: &Value) -> bool {
    object.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && object.get("kind").and_then(Value::as_str) == Some("Secret")
}

/// Whether JSON pointer `path` is `prefix` or under it (`/`, the whole
/// object, is over everything).
fn at_or_under(path: &str, prefix: &str) -> bool {
    prefix == "/" || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// Redacts the differences between `hub` and `member` (the objects they were
/// computed from, as compared) when either is a Secret (see the module doc).
pub fn redact_differences(diffs: &mut [Difference], hub: &Value, member: &Value) {
    if !is_secret(hub) && !is_secret(member) {
        return;
    }
    for d in diffs {
        if SECRET_PATHS.iter().any(|s| at_or_under(&d.path, s)) {
            for value in [&mut d.value_in_hub, &mut d.value_in_member].into_iter().flatten() {
                *value = REDACTED.to_string();
            }
        } else if SECRET_PATHS.iter().any(|s| at_or_under(s, &d.path)) {
            // A whole map one side lacks: re-render it from the object with
            // the sensitive parts inside replaced.
            let pointer = if d.path == "/" { "" } else { d.path.as_str() };
            for (value, object) in [(&mut d.value_in_hub, hub), (&mut d.value_in_member, member)] {
                if let Some(value) = value {
                    *value = match object.pointer(pointer) {
                        Some(v) => super::compare::render(&scrubbed(v, pointer)),
                        // Cannot happen (the difference came from this object);
                        // saying nothing is the safe answer.
                        None => REDACTED.to_string(),
                    };
                }
            }
        }
    }
}

/// `value`, found at `at` in a Secret, with what lies under [`SECRET_PATHS`] redacted.
fn scrubbed(value: &Value, at: &str) -> Value {
    let mut v = value.clone();
    for s in SECRET_PATHS {
        if let Some(inner) = s.strip_prefix(at).filter(|rest| rest.starts_with('/')) {
            if let Some(found) = v.pointer_mut(inner) {
                *found = Value::String(REDACTED.to_string());
            }
        }
    }
    v
}

/// The values of a Secret's `data` (as written and base64-decoded) and
/// `stringData`: what a message about it must not quote.
fn secret_values(object: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for field in ["data", "stringData"] {
        for v in object.get(field).and_then(Value::as_object).into_iter().flat_map(|m| m.values()) {
            let Some(text) = v.as_str().filter(|t| !t.is_empty()) else { continue };
            out.push(text.to_string());
            if field == "data" {
                if let Some(decoded) = decode_base64(text).and_then(|b| String::from_utf8(b).ok()) {
                    out.extend(Some(decoded).filter(|d| !d.trim().is_empty()));
                }
            }
        }
    }
    out
}

/// `message`, about `objects` (the manifest, and the live object if read):
/// as is unless one of them is a Secret and the message quotes one of its
/// values; then `reason` with a note that the rest is withheld.
pub fn scrub_message(message: String, reason: &str, objects: &[&Value]) -> String {
    let quoted =
        objects.iter().filter(|o| is_secret(o)).flat_map(|o| secret_values(o)).any(|secret| message.contains(&secret));
    if quoted {
        format!("{reason}: the message is withheld as it quotes the Secret's data")
    } else {
        message
    }
}

/// Standard base64 (with or without padding); `None` if `text` is not that.
/// (The data of a Secret is base64; an error may quote it decoded.)
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = text.trim_end_matches('=');
    if body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= sextet(*c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::works::compare::{differences, Comparison};
    use crate::works::strategy::report_diff;
    use fleet_api::Object;
    use serde_json::json;

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, "data": data})
    }

    fn d(path: &str, hub: Option<&str>, member: Option<&str>) -> Difference {
        Difference { path: path.into(), value_in_hub: hub.map(Into::into), value_in_member: member.map(Into::into) }
    }

    #[test]
    fn secret_data_is_redacted_in_drifts_and_diffs_keys_and_absent_sides_kept() {
        let hub = secret(json!({"password": "aHViLXZhbHVl", "same": "eA=="}));
        let member = secret(json!({"password": "bWVtYmVyLXZhbHVl", "same": "eA==", "extra": "eQ=="}));
        for c in [Comparison::Partial, Comparison::Full] {
            let found = differences(&hub, &member, c);
            assert_eq!(found[0], d("/data/password", Some(REDACTED), Some(REDACTED)));
            if c == Comparison::Full {
                assert_eq!(
                    found,
                    vec![d("/data/password", Some(REDACTED), Some(REDACTED)), d("/data/extra", None, Some(REDACTED))]
                );
            }
        }
        // The member lost its whole data map: `/data` itself.
        let bare = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}});
        assert_eq!(differences(&hub, &bare, Comparison::Partial), vec![d("/data", Some(REDACTED), None)]);
    }

    #[test]
    fn string_data_is_redacted_and_other_fields_of_a_secret_are_reported() {
        let mut hub = secret(json!({}));
        hub["stringData"] = json!({"token": "hub-token"});
        hub["type"] = json!("Opaque");
        hub["metadata"]["labels"] = json!({"tier": "gold"});
        let mut member = secret(json!({}));
        member["stringData"] = json!({"token": "member-token"});
        member["type"] = json!("kubernetes.io/basic-auth");
        member["metadata"]["labels"] = json!({"tier": "silver"});
        assert_eq!(
            differences(&hub, &member, Comparison::Partial),
            vec![
                d("/metadata/labels/tier", Some("gold"), Some("silver")),
                d("/stringData/token", Some(REDACTED), Some(REDACTED)),
                d("/type", Some("Opaque"), Some("kubernetes.io/basic-auth")),
            ]
        );
    }

    #[test]
    fn the_last_applied_annotation_never_shows_a_secrets_values() {
        // kubectl's and KubeFleet's annotations carry a copy of the data;
        // as `kubernetes.io/` keys they are not compared at all.
        let hub = secret(json!({"k": "aHVi"}));
        let mut member = hub.clone();
        let copy = r#"{"data":{"k":"bWVtYmVy"}}"#;
        member["metadata"]["annotations"] = json!({
            "kubectl.kubernetes.io/last-applied-configuration": copy,
            "kubernetes-fleet.io/last-applied-configuration": copy,
            "a": "b",
        });
        let found = differences(&hub, &member, Comparison::Full);
        assert_eq!(found, vec![d("/metadata/annotations/a", None, Some("b"))]);
    }

    #[test]
    fn a_whole_secret_reported_at_the_root_shows_no_data() {
        // The live side unreadable as an object: the difference is at `/`.
        let hub = secret(json!({"k": "aHVi"}));
        let found = differences(&hub, &Value::Null, Comparison::Partial);
        assert_eq!(found.len(), 1);
        let shown = found[0].value_in_hub.clone().unwrap_or_default();
        assert_eq!(found[0].path, "/");
        assert!(
            !shown.contains("aHVi") && shown.contains(REDACTED) && shown.contains("\"kind\":\"Secret\""),
            "{shown}"
        );

        // ReportDiff of a Secret missing on the member: KubeFleet's placeholder, no value.
        let manifest: Object = serde_json::from_value(hub).unwrap();
        assert_eq!(report_diff(&manifest, None, Comparison::Partial), vec![d("/", Some("(the whole object)"), None)]);
    }

    #[test]
    fn other_kinds_keep_their_values() {
        let cm =
            |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": v}});
        assert_eq!(differences(&cm("a"), &cm("b"), Comparison::Partial), vec![d("/data/k", Some("a"), Some("b"))]);
        // A kind named Secret in another group is not Kubernetes' Secret.
        let other = |v: &str| json!({"apiVersion": "example.com/v1", "kind": "Secret", "data": {"k": v}});
        assert_eq!(
            differences(&other("a"), &other("b"), Comparison::Partial),
            vec![d("/data/k", Some("a"), Some("b"))]
        );
    }

    #[test]
    fn messages_quoting_a_secret_value_are_withheld() {
        let s = secret(json!({"k": "czNjcjN0LXZhbHVl"}));
        let plain = "namespaces \"n\" not found".to_string();
        assert_eq!(scrub_message(plain.clone(), "ManifestApplyFailed", &[&s]), plain);
        for leak in ["Invalid value: \"czNjcjN0LXZhbHVl\"", "bad value s3cr3t-value here"] {
            let out = scrub_message(leak.to_string(), "ManifestApplyFailed", &[&s]);
            assert!(!out.contains("czNjcjN0LXZhbHVl") && !out.contains("s3cr3t-value"), "{out}");
            assert!(out.starts_with("ManifestApplyFailed"), "{out}");
        }
        let mut cm = s.clone();
        cm["kind"] = json!("ConfigMap");
        assert_eq!(scrub_message("x czNjcjN0LXZhbHVl".into(), "r", &[&cm]), "x czNjcjN0LXZhbHVl");
    }

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(decode_base64("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(decode_base64("aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode_base64("not base64!"), None);
    }
}
