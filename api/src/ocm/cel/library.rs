//! The two CEL environments OCM evaluates expressions in, built once:
//! both hold CEL's standard library, its strings extension, Kubernetes'
//! quantity, semver and regex (`find`, `findAll`) libraries; a Placement's
//! adds `parseJSON` (and, per cluster, `scores`), a ManifestWork's condition
//! rules add `hasConditions`.

use std::sync::{Arc, LazyLock};

use cel::common::types::{CelBool, CelList, CelString, DYN_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value as CelValue};
use serde_json::Value;

use super::{quantity, semver};

/// Which of OCM's CEL environments an expression is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    /// A Placement's `celSelector`: `managedCluster`, with `scores` and
    /// `parseJSON`.
    Placement,
    /// A ManifestWork's condition rules: `object` (and `result` in a
    /// message), with `hasConditions`.
    Conditions,
}

impl Library {
    /// The functions of OCM's other environment, which this one lacks.
    pub(super) fn foreign_functions(self) -> &'static [&'static str] {
        match self {
            Library::Placement => &["hasConditions"],
            Library::Conditions => &["scores", "parseJSON"],
        }
    }

    /// The environment, or why it could not be built.
    pub(super) fn env(self) -> Result<Arc<Env>, String> {
        let built = match self {
            Library::Placement => &*PLACEMENT,
            Library::Conditions => &*CONDITIONS,
        };
        built.clone().map_err(|e| format!("the CEL environment is unavailable: {e:?}"))
    }
}

static PLACEMENT: LazyLock<Result<Arc<Env>, DeclarationError>> = LazyLock::new(|| {
    let mut env = base()?;
    env.add_member_overload("parseJSON", "string.parseJSON()", STRING_TYPE, vec![], parse_json)?;
    Ok(Arc::new(env))
});

static CONDITIONS: LazyLock<Result<Arc<Env>, DeclarationError>> = LazyLock::new(|| {
    let mut env = base()?;
    env.add_overload("hasConditions", "hasConditions(dyn)", vec![DYN_TYPE], has_conditions)?;
    Ok(Arc::new(env))
});

/// What both environments hold.
fn base() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)?;
    env.add_type(quantity::QUANTITY_TYPE.to_owned())?;
    env.add_extension(quantity::extension)?;
    env.add_type(semver::SEMVER_TYPE.to_owned())?;
    env.add_extension(semver::extension)?;
    cel::add_member_overload!(env, fn find: (CelString, CelString) -> Result<CelString>)?;
    cel::add_member_overload!(env, fn find_all: (CelString, CelString) -> Result<CelList>)?;
    cel::add_member_overload!(env, fn find_all_n: (CelString, CelString, cel::common::types::CelInt) -> Result<CelList>,
        name = "findAll")?;
    Ok(env)
}

fn regex(function: &str, pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

/// The first match of a regular expression, or "" when none.
fn find(this: &CelString<'_>, pattern: &CelString<'_>) -> Result<CelString<'static>, ExecutionError> {
    let found = regex("find", pattern.inner())?.find(this.inner()).map(|m| m.as_str().to_string());
    Ok(found.unwrap_or_default().into())
}

fn find_all(this: &CelString<'_>, pattern: &CelString<'_>) -> Result<CelList<'static>, ExecutionError> {
    find_all_n(this, pattern, &(-1).into())
}

/// At most `limit` matches (all of them when negative).
fn find_all_n(
    this: &CelString<'_>,
    pattern: &CelString<'_>,
    limit: &cel::common::types::CelInt,
) -> Result<CelList<'static>, ExecutionError> {
    let limit = usize::try_from(*limit.inner()).unwrap_or(usize::MAX);
    let matches: Vec<Box<dyn Val>> = regex("findAll", pattern.inner())?
        .find_iter(this.inner())
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_string())) as Box<dyn Val>)
        .collect();
    Ok(CelList::from(matches))
}

/// `'<json>'.parseJSON()`: the document as CEL values. Numbers become
/// doubles, as Go's JSON decoding (which OCM uses) makes them.
fn parse_json<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [text] = args.as_slice() else {
        return Err(ExecutionError::invalid_argument_count(1, args.len()));
    };
    let text = text
        .downcast_ref::<CelString>()
        .ok_or_else(|| ExecutionError::function_error("parseJSON", "argument must be a string"))?;
    let document: Value = serde_json::from_str(text.inner())
        .map_err(|e| ExecutionError::function_error("parseJSON", format!("failed to parse json: {e}")))?;
    let value = cel::to_value(numbers_as_doubles(document))
        .map_err(|e| ExecutionError::function_error("parseJSON", e.to_string()))?;
    let boxed: Box<dyn Val> = value.try_into()?;
    Ok(CowVal::Owned(boxed))
}

fn numbers_as_doubles(value: Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().and_then(serde_json::Number::from_f64).map(Value::Number).unwrap_or(Value::Null),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_doubles).collect()),
        Value::Object(fields) => Value::Object(fields.into_iter().map(|(k, v)| (k, numbers_as_doubles(v))).collect()),
        other => other,
    }
}

/// `hasConditions(object.status)`: whether a status holds a non-empty
/// `conditions` list.
fn has_conditions<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [status] = args.as_slice() else {
        return Err(ExecutionError::invalid_argument_count(1, args.len()));
    };
    let present = match CelValue::try_from(status.as_ref()) {
        Ok(CelValue::Map(map)) => {
            matches!(map.get(&cel::objects::KeyRef::String("conditions")), Some(CelValue::List(l)) if !l.is_empty())
        }
        _ => false,
    };
    Ok(CowVal::owned(CelBool::from(present)))
}
