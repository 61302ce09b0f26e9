//! CEL expressions as OCM uses them (with the `cel` crate, cel-rust): a
//! ManifestWork's `CEL` condition rules (over `object`, the applied object;
//! all must be true; an optional `messageExpression` over `object` and
//! `result`) and a Placement's `celSelector` (over `managedCluster`), each
//! in its OCM environment ([`Library`]): CEL's standard library and strings
//! extension, Kubernetes' quantity, semver and regex libraries, and OCM's
//! own functions (`scores` and `parseJSON` for placements, `hasConditions`
//! for condition rules).
//!
//! Bounded, because the hub evaluates them on every fold of a
//! ManifestWork's status and every scheduling pass: at most
//! [`MAX_EXPRESSIONS`] expressions of at most [`MAX_EXPRESSION_BYTES`]
//! each, and at most [`MAX_COMPREHENSIONS`] comprehension macros (`all`,
//! `exists`, `exists_one`, `map`, `filter`) in each, so an expression walks
//! the object's lists a bounded number of times. Kubernetes' URL, IP, CIDR,
//! format and list libraries are not there: an expression calling one of
//! their functions is refused.

mod library;
mod quantity;
mod semver;

use std::sync::Arc;

use cel::extractors::This;
use cel::objects::KeyRef;
use cel::{Context, ExecutionError, Program, Value as CelValue};
use serde_json::Value;

pub use library::Library;

/// The most expressions a rule holds.
pub const MAX_EXPRESSIONS: usize = 8;
/// The longest expression.
pub const MAX_EXPRESSION_BYTES: usize = 1024;
/// The most comprehension macros in one expression.
pub const MAX_COMPREHENSIONS: usize = 2;

/// Reason of a rule whose expression failed to compile or evaluate.
pub const REASON_EXPRESSION_ERROR: &str = "ConditionRuleExpressionError";

/// Functions of Kubernetes' CEL libraries that OCM's environments hold and
/// Fleet does not provide (URLs, IPs, CIDRs, formats, list aggregates).
const NOT_PROVIDED: &[&str] = &[
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "ip",
    "isIP",
    "isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    "format.named",
    "isSorted",
    "sum",
];

/// Reads one cluster's AddOnPlacementScore by name, for `scores`: its
/// scores as (name, value), `None` when the cluster has none of that name.
pub type ScoreReader = Arc<dyn Fn(&str, &str) -> Option<Vec<(String, i64)>> + Send + Sync>;

/// Why `source` is not an acceptable expression of `library`, if it is not.
pub fn check(source: &str, library: Library) -> Option<String> {
    if source.len() > MAX_EXPRESSION_BYTES {
        return Some(format!("longer than {MAX_EXPRESSION_BYTES} bytes"));
    }
    let comprehensions = [".all(", ".exists(", ".exists_one(", ".map(", ".filter("]
        .iter()
        .map(|m| source.matches(m).count())
        .sum::<usize>();
    if comprehensions > MAX_COMPREHENSIONS {
        return Some(format!("more than {MAX_COMPREHENSIONS} comprehensions (all, exists, exists_one, map, filter)"));
    }
    let program = match compile(source, library) {
        Ok(program) => program,
        Err(e) => return Some(e),
    };
    let references = program.references();
    let refused: Vec<&str> = NOT_PROVIDED
        .iter()
        .chain(library.foreign_functions())
        .copied()
        .filter(|f| references.has_function(f))
        .collect();
    (!refused.is_empty()).then(|| format!("calls {}, which this environment does not provide", refused.join(", ")))
}

fn compile(source: &str, library: Library) -> Result<Program, String> {
    library.env()?.compile(source).map_err(|e| format!("does not compile: {e}"))
}

/// A context of `library`'s environment.
fn context(library: Library) -> Result<Context<'static, 'static>, String> {
    Ok(Context::with_env(library.env()?))
}

fn bind(context: &mut Context<'_, '_>, variable: &str, object: &Value) -> Result<(), String> {
    context.add_variable_from_value(variable, cel::to_value(object).map_err(|e| e.to_string())?);
    Ok(())
}

/// Whether a result is true, false, or not a boolean.
fn truth(result: CelValue) -> Result<bool, String> {
    match result {
        CelValue::Bool(b) => Ok(b),
        other => Err(format!("expected a bool result, got {other:?}")),
    }
}

/// What a ManifestWork's condition-rule expressions say about `object`:
/// `Ok(true)` when all are true, `Ok(false)` at the first false one, `Err`
/// when one fails to evaluate or is not a boolean.
pub fn evaluate(expressions: &[String], object: &Value) -> Result<bool, String> {
    let mut context = context(Library::Conditions)?;
    bind(&mut context, "object", object)?;
    for source in expressions {
        let program = compile(source, Library::Conditions)?;
        let result = program.execute(&context).map_err(|e| e.to_string())?;
        if !truth(result).map_err(|why| format!("{source}: {why}"))? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The message a condition rule's `messageExpression` gives for `object`
/// and `result`.
pub fn message(source: &str, object: &Value, result: bool) -> Result<String, String> {
    let mut context = context(Library::Conditions)?;
    bind(&mut context, "object", object)?;
    context.add_variable_from_value("result", result);
    match compile(source, Library::Conditions)?.execute(&context).map_err(|e| e.to_string())? {
        CelValue::String(s) => Ok(s.to_string()),
        other => Err(format!("expected the message expression to give a string, got {other:?}")),
    }
}

/// Whether any of a Placement's `celSelector` expressions calls `scores`
/// (so that its pass must read the AddOnPlacementScores).
pub fn calls_scores(expressions: &[String]) -> bool {
    expressions
        .iter()
        .filter_map(|e| compile(e, Library::Placement).ok())
        .any(|p| p.references().has_function("scores"))
}

/// A Placement's `celSelector` expressions, compiled once to test many
/// clusters (a scheduling pass's) against them.
#[derive(Debug, Clone)]
pub struct Compiled {
    programs: Arc<Vec<Program>>,
    uses_scores: bool,
}

impl Compiled {
    /// Compiles `expressions` (admission checked them).
    pub fn new(expressions: &[String]) -> Result<Compiled, String> {
        let programs: Result<Vec<Program>, String> =
            expressions.iter().map(|e| compile(e, Library::Placement).map_err(|why| format!("{e}: {why}"))).collect();
        let programs = programs?;
        let uses_scores = programs.iter().any(|p| p.references().has_function("scores"));
        Ok(Compiled { programs: Arc::new(programs), uses_scores })
    }

    /// Whether an expression calls `scores`, so that evaluating needs a
    /// [`ScoreReader`].
    pub fn uses_scores(&self) -> bool {
        self.uses_scores
    }

    /// Whether every expression is true for `cluster` (bound as
    /// `managedCluster`); `Err` when one fails or is not a boolean. Without
    /// `scores`, a call to `scores` fails.
    pub fn matches(&self, cluster: &Value, scores: Option<&ScoreReader>) -> Result<bool, String> {
        let mut context = context(Library::Placement)?;
        bind(&mut context, "managedCluster", cluster)?;
        if let Some(reader) = scores.filter(|_| self.uses_scores) {
            let reader = reader.clone();
            context
                .add_function("scores", move |This(this): This<CelValue>, name: Arc<String>| {
                    read_scores(&reader, &this, &name)
                })
                .map_err(|e| format!("{e:?}"))?;
        }
        for program in self.programs.iter() {
            if !truth(program.execute(&context).map_err(|e| e.to_string())?)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// `cluster.scores(name)`: the scores of the AddOnPlacementScore `name` of
/// the cluster whose `metadata.name` the receiver holds, as a list of
/// `{name, value}`; an error when it has none.
fn read_scores(reader: &ScoreReader, cluster: &CelValue, name: &str) -> Result<CelValue, ExecutionError> {
    let cluster_name = match cluster {
        CelValue::Map(map) => match map.get(&KeyRef::String("metadata")) {
            Some(CelValue::Map(metadata)) => match metadata.get(&KeyRef::String("name")) {
                Some(CelValue::String(s)) => Some(s.to_string()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error("scores", "failed to get cluster name"))?;
    let scores = reader(&cluster_name, name).ok_or_else(|| {
        ExecutionError::function_error(
            "scores",
            format!("failed to get score: addonplacementscore {name:?} of cluster {cluster_name:?} not found"),
        )
    })?;
    let items: Vec<Value> =
        scores.into_iter().map(|(name, value)| serde_json::json!({"name": name, "value": value})).collect();
    cel::to_value(items).map_err(|e| ExecutionError::function_error("scores", e.to_string()))
}

#[cfg(test)]
mod tests;
