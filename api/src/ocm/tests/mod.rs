//! Tests of the OCM kinds other than Placement: the example manifests of
//! docs/spec/ocm.md (and OCM-style manifests of each kind) pass unchanged, and
//! every rule refuses bad input with path, value and what is allowed.

use crate::parse::parse_documents;
use crate::Object;

mod examples;
mod sets;
mod work;

/// Parses one YAML document and runs admission's typed step on it.
pub(in crate::ocm) fn prepare_yaml(text: &str) -> Result<Object, String> {
    let mut objects = parse_documents("test.yaml", text).map_err(|e| e.to_string())?;
    assert_eq!(objects.len(), 1, "one document expected");
    let mut object = objects.remove(0);
    crate::typed::prepare(&mut object).map_err(|e| e.to_string())?;
    Ok(object)
}

/// The object, or a panic naming every problem.
pub(in crate::ocm) fn ok(text: &str) -> Object {
    prepare_yaml(text).unwrap_or_else(|e| panic!("{e}"))
}

/// The validation message; panics if the document was accepted.
pub(in crate::ocm) fn refused(text: &str) -> String {
    match prepare_yaml(text) {
        Ok(o) => panic!("accepted: {o:?}"),
        Err(e) => e,
    }
}

/// Asserts `message` contains every `want`.
pub(in crate::ocm) fn has(message: &str, wants: &[&str]) {
    for want in wants {
        assert!(message.contains(want), "missing {want:?} in:\n{message}");
    }
}
