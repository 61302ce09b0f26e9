//! [`Object`]'s `Deserialize`: one pass over the document's map, with
//! `apiVersion`, `kind` and `metadata` read as typed fields and every other
//! field kept as JSON in `rest`, in document order. It accepts and refuses
//! exactly what the derived form did (a missing field is its default; a
//! repeated one is an error), without buffering the document first.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Object, ObjectMeta};

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Object, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

/// Sets a typed field once; a second occurrence is an error, as with the derive.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    slot: &mut Option<T>,
    name: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object with apiVersion, kind and metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
        let mut api_version: Option<String> = None;
        let mut kind: Option<String> = None;
        let mut metadata: Option<ObjectMeta> = None;
        let mut rest = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => once(&mut api_version, "apiVersion", &mut map)?,
                "kind" => once(&mut kind, "kind", &mut map)?,
                "metadata" => once(&mut metadata, "metadata", &mut map)?,
                _ => {
                    let value: Value = map.next_value()?;
                    rest.insert(key, value);
                }
            }
        }
        Ok(Object {
            api_version: api_version.unwrap_or_default(),
            kind: kind.unwrap_or_default(),
            metadata: metadata.unwrap_or_default(),
            rest,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The derived form this replaces, kept to check that both agree.
    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Derived {
        #[serde(default)]
        api_version: String,
        #[serde(default)]
        kind: String,
        #[serde(default)]
        metadata: ObjectMeta,
        #[serde(flatten)]
        rest: Map<String, Value>,
    }

    fn documents() -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n",
                "labels": {"x": "y"}, "resourceVersion": "7", "generation": 2}, "data": {"k": "v"}}),
            json!({"kind": "Namespace", "metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"}, "zz": 1, "aa": [null, true, 1.5]}),
            json!({"spec": {"nested": {"deep": {"x": 1}}}}),
            json!({}),
        ]
    }

    #[test]
    fn reads_json_exactly_like_the_derived_form() {
        for doc in documents() {
            let text = serde_json::to_string(&doc).unwrap();
            let ours: Object = serde_json::from_str(&text).unwrap();
            let derived: Derived = serde_json::from_str(&text).unwrap();
            assert_eq!(ours.api_version, derived.api_version);
            assert_eq!(ours.kind, derived.kind);
            assert_eq!(ours.metadata, derived.metadata);
            assert_eq!(ours.rest, derived.rest);
            // And it reads back what it writes.
            let written = serde_json::to_string(&ours).unwrap();
            assert_eq!(serde_json::from_str::<Object>(&written).unwrap(), ours);
        }
    }

    #[test]
    fn reads_messagepack_maps_like_json() {
        for doc in documents() {
            let object: Object = serde_json::from_value(doc).unwrap();
            let bytes = rmp_serde::to_vec_named(&object).unwrap();
            let back: Object = rmp_serde::from_slice(&bytes).unwrap();
            assert_eq!(back, object);
        }
    }

    #[test]
    fn refuses_what_the_derived_form_refuses() {
        for text in [
            r#"{"kind": "A", "kind": "B"}"#,
            r#"{"metadata": {}, "metadata": {}}"#,
            r#"{"apiVersion": 1}"#,
            r#"{"metadata": "name"}"#,
            r#"{"metadata": null}"#,
            r#"["v1", "ConfigMap"]"#,
            r#""text""#,
        ] {
            assert!(serde_json::from_str::<Object>(text).is_err(), "{text} was accepted");
            assert!(serde_json::from_str::<Derived>(text).is_err(), "{text}: the derive accepted it");
        }
    }
}
