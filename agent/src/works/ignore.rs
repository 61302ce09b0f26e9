//! A Work's `ignoreFields` (a ManifestWork's, mirrored): fields the agent
//! leaves as the member cluster has them. Pure: the manifest to write is
//! computed from the manifest, the live object and the manifest this Work
//! last applied; the same fields are taken out of drift comparison, so a
//! field left to the member is never a drift either.
//!
//! Per field (a JSON pointer), once the object exists on the member:
//! - `OnSpokePresent`: always the member's value (absent if it has none);
//! - `OnSpokeChange`: the member's value while it differs from the value
//!   this Work last applied and the Work still asks that same value; when
//!   the Work asks a new value, that value is written.
//!
//! Before the object exists (or before this Work applied it), the manifest
//! is written as it is.

use fleet_api::ignore_paths::{self, Tokens};
use fleet_api::work::{IgnoreFields, IGNORE_ON_SPOKE_PRESENT};
use fleet_api::Object;
use serde_json::Value;

/// The manifest to write, and the fields that took the member's value.
pub struct Effective {
    /// The manifest with the member's values in the ignored fields.
    pub manifest: Object,
    /// The fields left as the member has them.
    pub kept: Vec<Tokens>,
}

/// The manifest to write for `manifest` given the `live` object and the
/// manifest this Work last applied (`last`, as written in the ledger).
pub fn effective(manifest: &Object, live: Option<&Object>, last: Option<&Value>, rules: &[IgnoreFields]) -> Effective {
    let unchanged = || Effective { manifest: manifest.clone(), kept: Vec::new() };
    let Some(live) = live else { return unchanged() };
    if rules.is_empty() {
        return unchanged();
    }
    let (Ok(mut wanted), Ok(live)) = (serde_json::to_value(manifest), serde_json::to_value(live)) else {
        return unchanged();
    };
    let mut kept = Vec::new();
    for rule in rules {
        for pointer in &rule.json_pointers {
            // Admission refused pointers that do not parse.
            let Ok(tokens) = ignore_paths::parse_pointer(pointer) else { continue };
            let member = ignore_paths::get(&live, &tokens).cloned();
            let keep = if rule.condition == IGNORE_ON_SPOKE_PRESENT {
                true
            } else {
                let Some(last) = last else { continue };
                let asked = ignore_paths::get(&wanted, &tokens);
                let asked_before = ignore_paths::get(last, &tokens);
                asked == asked_before && member.as_ref() != asked_before
            };
            if !keep {
                continue;
            }
            match member {
                Some(value) => {
                    if !ignore_paths::set(&mut wanted, &tokens, value) {
                        continue;
                    }
                }
                None => ignore_paths::remove(&mut wanted, &tokens),
            }
            kept.push(tokens);
        }
    }
    match serde_json::from_value(wanted) {
        Ok(manifest) => Effective { manifest, kept },
        Err(_) => unchanged(),
    }
}

/// `baseline` with the `kept` fields as the `live` object has them, so
/// that comparing it with the live object finds no drift there.
pub fn aligned(baseline: &Value, live: Option<&Object>, kept: &[Tokens]) -> Value {
    let mut out = baseline.clone();
    let Some(live) = live.and_then(|l| serde_json::to_value(l).ok()) else { return out };
    for tokens in kept {
        match ignore_paths::get(&live, tokens) {
            Some(value) => {
                ignore_paths::set(&mut out, tokens, value.clone());
            }
            None => ignore_paths::remove(&mut out, tokens),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::work::IGNORE_ON_SPOKE_CHANGE;
    use serde_json::json;

    fn cm(data: Value) -> Object {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n"}, "data": data}))
        .unwrap()
    }

    fn rule(condition: &str, pointers: &[&str]) -> Vec<IgnoreFields> {
        vec![IgnoreFields {
            condition: condition.into(),
            json_pointers: pointers.iter().map(|p| p.to_string()).collect(),
        }]
    }

    fn data(o: &Object) -> Value {
        o.rest["data"].clone()
    }

    #[test]
    fn on_spoke_present_keeps_the_members_value_once_the_object_exists() {
        let rules = rule(IGNORE_ON_SPOKE_PRESENT, &["/data/size", "/data/gone"]);
        let manifest = cm(json!({"size": "1", "gone": "x", "other": "hub"}));
        let created = effective(&manifest, None, None, &rules);
        assert_eq!(data(&created.manifest), json!({"size": "1", "gone": "x", "other": "hub"}), "created as asked");
        let live = cm(json!({"size": "5", "other": "member"}));
        let e = effective(&manifest, Some(&live), None, &rules);
        assert_eq!(data(&e.manifest), json!({"size": "5", "other": "hub"}), "size kept, gone stays absent");
        assert_eq!(e.kept.len(), 2);
        let baseline = serde_json::to_value(cm(json!({"size": "1", "gone": "x", "other": "hub"}))).unwrap();
        let b = aligned(&baseline, Some(&live), &e.kept);
        assert_eq!(b["data"], json!({"size": "5", "other": "hub"}), "no drift on kept fields; others still compared");
    }

    #[test]
    fn on_spoke_change_keeps_a_member_edit_until_the_work_asks_a_new_value() {
        let rules = rule(IGNORE_ON_SPOKE_CHANGE, &["/data/size"]);
        let last = serde_json::to_value(cm(json!({"size": "1"}))).unwrap();
        let manifest = cm(json!({"size": "1"}));
        let untouched = effective(&manifest, Some(&cm(json!({"size": "1"}))), Some(&last), &rules);
        assert!(untouched.kept.is_empty());
        let edited = effective(&manifest, Some(&cm(json!({"size": "7"}))), Some(&last), &rules);
        assert_eq!(data(&edited.manifest), json!({"size": "7"}), "the member's edit stays");
        let asked_anew = effective(&cm(json!({"size": "2"})), Some(&cm(json!({"size": "7"}))), Some(&last), &rules);
        assert_eq!(data(&asked_anew.manifest), json!({"size": "2"}), "a new value from the hub is written");
        assert!(asked_anew.kept.is_empty());
        let never_applied = effective(&manifest, Some(&cm(json!({"size": "7"}))), None, &rules);
        assert_eq!(data(&never_applied.manifest), json!({"size": "1"}), "nothing applied before: as asked");
    }
}
