//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`:
//! the bytes `k8s\0`, then a `runtime.Unknown` naming the object's
//! apiVersion and kind and wrapping its bytes), read as the JSON object they
//! encode. Typed Go clients send built-in kinds this way (controller-runtime
//! always, kubectl's imperative commands too), and expect JSON answers when
//! they also accept `*/*`, so only requests are decoded.
//!
//! The message layouts are the Kubernetes API's own: `kubernetes-api.protoset`
//! is the FileDescriptorSet `realkube/cmd/kubeproto` compiles from the
//! generated.proto files of the pinned Kubernetes modules (a test checks it
//! is current). The JSON follows Kubernetes' encoding of the types that are
//! not plain messages: times, quantities, int-or-strings, raw JSON and
//! bytes. A field the body leaves out, or sets to an empty string or the
//! zero time, is left out of the JSON. Go writes its non-pointer scalars to
//! protobuf even when zero, so protobuf cannot tell an `omitempty` field
//! left at zero from a pointer set to zero: `kubernetes-api-omitempty.txt`
//! (written by `realkube/cmd/kubezero` from the same modules' Go types, a
//! test checks it is current) lists the former, whose zero values are
//! left out as Go's JSON leaves them out; other zero values are kept.

use std::collections::HashSet;
use std::sync::OnceLock;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value as Field};
use serde_json::{Map, Number, Value};

use super::errors::KubeError;

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// `runtime.Unknown`: the envelope of every protobuf body.
#[derive(Clone, PartialEq, prost::Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", tag = "2")]
    raw: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TypeMeta {
    #[prost(string, tag = "1")]
    api_version: String,
    #[prost(string, tag = "2")]
    kind: String,
}

/// A protobuf body as the JSON object it encodes, with its `apiVersion` and `kind`.
pub fn to_json(body: &[u8]) -> Result<Value, KubeError> {
    use prost::Message;
    let invalid = |why: String| KubeError::bad_request(format!("the protobuf request body is unreadable: {why}"));
    let wrapped = body.strip_prefix(MAGIC).ok_or_else(|| invalid("it does not start with k8s\\0".into()))?;
    let unknown = Unknown::decode(wrapped).map_err(|e| invalid(e.to_string()))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let descriptor = message_of(&type_meta.api_version, &type_meta.kind).ok_or_else(|| {
        KubeError::unsupported_media_type(format!(
            "the hub reads protobuf bodies of the built-in Kubernetes kinds; {} {:?} has no protobuf form \
             here: send it as JSON (application/json)",
            type_meta.kind, type_meta.api_version
        ))
    })?;
    let message = DynamicMessage::decode(descriptor, unknown.raw.as_slice())
        .map_err(|e| invalid(format!("{} {}: {e}", type_meta.api_version, type_meta.kind)))?;
    let mut object = match message_json(&message) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    object.insert("apiVersion".into(), Value::String(type_meta.api_version));
    object.insert("kind".into(), Value::String(type_meta.kind));
    Ok(Value::Object(object))
}

/// The Kubernetes API's descriptors, decoded once.
fn pool() -> Option<&'static DescriptorPool> {
    static POOL: OnceLock<Option<DescriptorPool>> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(include_bytes!("kubernetes-api.protoset").as_slice()).ok()).as_ref()
}

/// The descriptor of `kind` in `api_version`; option kinds such as
/// DeleteOptions are meta/v1's whatever group the request is for.
fn message_of(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = if matches!(kind, "DeleteOptions" | "CreateOptions" | "UpdateOptions" | "PatchOptions") {
        META.to_string()
    } else {
        package_of(group, version)?
    };
    pool()?.get_message_by_name(&format!("{package}.{kind}"))
}

/// The protobuf package of one API group version.
fn package_of(group: &str, version: &str) -> Option<String> {
    let path = match group {
        "" => "core",
        "apiextensions.k8s.io" => {
            return Some(format!("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.{version}"))
        }
        "rbac.authorization.k8s.io" => "rbac",
        g => g.strip_suffix(".k8s.io").unwrap_or(g),
    };
    Some(format!("k8s.io.api.{path}.{version}"))
}

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// One message as Kubernetes' JSON encodes its Go type.
fn message_json(message: &DynamicMessage) -> Value {
    let descriptor = message.descriptor();
    match descriptor.full_name() {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => time_json(message, false),
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => time_json(message, true),
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => go_duration(int_field(message, "duration")),
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => string_field(message, "string").into(),
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => match int_field(message, "type") {
            1 => string_field(message, "strVal").into(),
            _ => Value::from(int_field(message, "intVal")),
        },
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => raw_json(message, "raw"),
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => raw_json(message, "Raw"),
        n if n.ends_with("apiextensions.v1.JSON") => raw_json(message, "raw"),
        n if n.ends_with("apiextensions.v1.JSONSchemaPropsOrArray") => {
            either(message, "schema", "JSONSchemas").unwrap_or(Value::Null)
        }
        n if n.ends_with("apiextensions.v1.JSONSchemaPropsOrBool") => {
            either(message, "schema", "").unwrap_or_else(|| Value::Bool(bool_field(message, "allows")))
        }
        n if n.ends_with("apiextensions.v1.JSONSchemaPropsOrStringArray") => {
            either(message, "schema", "property").unwrap_or(Value::Null)
        }
        _ => fields_json(message, &descriptor),
    }
}

/// The scalar fields Go's JSON leaves out when zero (`omitempty`, not a
/// pointer), as `message field` lines.
const OMITEMPTY: &str = include_str!("kubernetes-api-omitempty.txt");

/// Whether `field` of `message` is left out of Go's JSON when zero.
fn omitted_when_zero(message: &str, field: &str) -> bool {
    static FIELDS: OnceLock<HashSet<(&'static str, &'static str)>> = OnceLock::new();
    FIELDS
        .get_or_init(|| OMITEMPTY.lines().filter_map(|line| line.split_once(' ')).collect())
        .contains(&(message, field))
}

/// Whether a JSON value is a scalar's zero (`0`, `0.0`, `false`).
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// A plain message: every field the body sets, by its JSON name.
fn fields_json(message: &DynamicMessage, descriptor: &MessageDescriptor) -> Value {
    let mut out = Map::new();
    for field in descriptor.fields() {
        if !message.has_field(&field) {
            continue;
        }
        if let Some(value) = value_json(&message.get_field(&field)) {
            if is_zero(&value) && omitted_when_zero(descriptor.full_name(), field.name()) {
                continue;
            }
            out.insert(field.name().to_string(), value);
        }
    }
    Value::Object(out)
}

/// One value; `None` for what Kubernetes' JSON leaves out.
fn value_json(value: &Field) -> Option<Value> {
    Some(match value {
        Field::U32(v) => Value::from(*v),
        Field::U64(v) => Value::from(*v),
        Field::I32(v) => Value::from(*v),
        Field::I64(v) => Value::from(*v),
        Field::F32(v) => Number::from_f64(f64::from(*v)).map(Value::Number)?,
        Field::F64(v) => Number::from_f64(*v).map(Value::Number)?,
        Field::Bool(v) => Value::Bool(*v),
        Field::String(s) if s.is_empty() => return None,
        Field::String(s) => Value::String(s.clone()),
        Field::Bytes(b) => Value::String(STANDARD.encode(b)),
        Field::EnumNumber(v) => Value::from(*v),
        Field::Message(m) => match message_json(m) {
            Value::Null => return None,
            other => other,
        },
        Field::List(items) => {
            if items.is_empty() {
                return None;
            }
            Value::Array(items.iter().map(element_json).collect())
        }
        Field::Map(entries) => {
            if entries.is_empty() {
                return None;
            }
            Value::Object(entries.iter().map(|(k, v)| (key_string(k), element_json(v))).collect())
        }
    })
}

/// An element of a list or a map's value: kept even when empty (`""` in
/// `apiGroups` is the core group; a ConfigMap key may hold `""`).
fn element_json(value: &Field) -> Value {
    match value {
        Field::String(s) => Value::String(s.clone()),
        other => value_json(other).unwrap_or(Value::Null),
    }
}

fn key_string(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(v) => v.to_string(),
        MapKey::I64(v) => v.to_string(),
        MapKey::U32(v) => v.to_string(),
        MapKey::U64(v) => v.to_string(),
    }
}

fn int_field(message: &DynamicMessage, name: &str) -> i64 {
    match message.get_field_by_name(name).as_deref() {
        Some(Field::I64(v)) => *v,
        Some(Field::I32(v)) => i64::from(*v),
        Some(Field::U32(v)) => i64::from(*v),
        Some(Field::U64(v)) => i64::try_from(*v).unwrap_or(i64::MAX),
        _ => 0,
    }
}

fn string_field(message: &DynamicMessage, name: &str) -> String {
    match message.get_field_by_name(name).as_deref() {
        Some(Field::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn bool_field(message: &DynamicMessage, name: &str) -> bool {
    matches!(message.get_field_by_name(name).as_deref(), Some(Field::Bool(true)))
}

/// `seconds`/`nanos` as RFC 3339 (UTC; microseconds for MicroTime); the
/// zero time is Go's `null`.
fn time_json(message: &DynamicMessage, micro: bool) -> Value {
    const GO_ZERO_TIME: i64 = -62_135_596_800;
    let seconds = int_field(message, "seconds");
    let nanos = int_field(message, "nanos");
    if (seconds == 0 || seconds == GO_ZERO_TIME) && nanos == 0 {
        return Value::Null;
    }
    let (Ok(seconds), Ok(nanos)) = (u64::try_from(seconds), u32::try_from(nanos)) else {
        return Value::Null;
    };
    let at = std::time::UNIX_EPOCH + std::time::Duration::new(seconds, nanos);
    let text = if micro { fleet_api::time::rfc3339_micros(at) } else { fleet_api::time::rfc3339_of(at) };
    Value::String(text)
}

/// Nanoseconds as Go prints a `time.Duration` (e.g. `1h2m3.5s`).
fn go_duration(nanos: i64) -> Value {
    if nanos == 0 {
        return Value::String("0s".into());
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let total = nanos.unsigned_abs();
    let (hours, rest) = (total / 3_600_000_000_000, total % 3_600_000_000_000);
    let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let seconds = rest as f64 / 1e9;
    let mut out = sign.to_string();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}s"));
    Value::String(out)
}

/// A bytes field holding JSON (RawExtension, FieldsV1, apiextensions' JSON).
fn raw_json(message: &DynamicMessage, name: &str) -> Value {
    match message.get_field_by_name(name).as_deref() {
        Some(Field::Bytes(b)) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// The one of a union message's fields that is set: a single message, or
/// (with `list`) a repeated field.
fn either(message: &DynamicMessage, single: &str, list: &str) -> Option<Value> {
    let set = |name: &str| {
        let field = message.descriptor().get_field_by_name(name)?;
        message.has_field(&field).then(|| value_json(&message.get_field(&field))).flatten()
    };
    set(single).or_else(|| set(list))
}

#[cfg(test)]
mod tests;
