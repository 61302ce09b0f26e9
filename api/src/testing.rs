//! Helpers shared by the typed kinds' tests.

use serde_json::{json, Value};

use crate::Object;

/// A cluster-scoped object of Fleet's placement group with `spec`.
pub(crate) fn object(kind: &str, name: &str, spec: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": kind,
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

/// The rendered admission error of `o`; panics if it is admitted.
pub(crate) fn err(mut o: Object) -> String {
    crate::typed::prepare(&mut o).unwrap_err().to_string()
}

/// Asserts `e` contains `want`.
pub(crate) fn has(e: &str, want: &str) {
    assert!(e.contains(want), "missing {want:?} in:\n{e}");
}
