//! CEL expressions as OCM uses them (with the `cel` crate, cel-rust): a
//! ManifestWork's `CEL` condition rules (over `object`, the applied object;
//! all must be true; an optional `messageExpression` over `object` and
//! `result`) and a Placement's `celSelector` (over `managedCluster`).
//!
//! Bounded, because the hub evaluates them on every fold of a
//! ManifestWork's status and every scheduling pass: at most
//! [`MAX_EXPRESSIONS`] expressions of at most [`MAX_EXPRESSION_BYTES`]
//! each, and at most [`MAX_COMPREHENSIONS`] comprehension macros (`all`,
//! `exists`, `exists_one`, `map`, `filter`) in each, so an expression walks
//! the object's lists a bounded number of times. OCM's own extension
//! functions (`scores`, `parseJSON`, the semver and quantity libraries)
//! are not there: an expression calling one is refused.

use std::sync::Arc;

use cel::{Context, Program, Value as CelValue};
use serde_json::Value;

/// The most expressions a rule holds.
pub const MAX_EXPRESSIONS: usize = 8;
/// The longest expression.
pub const MAX_EXPRESSION_BYTES: usize = 1024;
/// The most comprehension macros in one expression.
pub const MAX_COMPREHENSIONS: usize = 2;

/// Reason of a rule whose expression failed to compile or evaluate.
pub const REASON_EXPRESSION_ERROR: &str = "ConditionRuleExpressionError";

/// OCM's extension functions, which Fleet does not provide.
const UNSUPPORTED_FUNCTIONS: &[&str] = &[
    "scores",
    "parseJSON",
    "versionIsGreaterThan",
    "quantityIsGreaterThan",
    "semver",
    "quantity",
    "isSemver",
    "isQuantity",
];

/// Why `source` is not an acceptable expression, if it is not.
pub fn check(source: &str) -> Option<String> {
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
    let program = match Program::compile(source) {
        Ok(program) => program,
        Err(e) => return Some(format!("does not compile: {e}")),
    };
    let references = program.references();
    let unsupported: Vec<&str> = UNSUPPORTED_FUNCTIONS.iter().copied().filter(|f| references.has_function(f)).collect();
    (!unsupported.is_empty()).then(|| format!("calls {}, which Fleet does not provide", unsupported.join(", ")))
}

/// Evaluates one expression with `object` bound (as `variable`), and
/// `result` for a message expression.
fn run(source: &str, variable: &str, object: &Value, result: Option<bool>) -> Result<CelValue, String> {
    let program = Program::compile(source).map_err(|e| format!("does not compile: {e}"))?;
    let mut context = Context::default();
    let object = cel::to_value(object).map_err(|e| e.to_string())?;
    context.add_variable_from_value(variable, object);
    if let Some(result) = result {
        context.add_variable_from_value("result", result);
    }
    program.execute(&context).map_err(|e| e.to_string())
}

/// What the expressions say about `object` (bound as `variable`):
/// `Ok(true)` when all are true, `Ok(false)` at the first false one, `Err`
/// when one fails to evaluate or is not a boolean.
pub fn evaluate(expressions: &[String], variable: &str, object: &Value) -> Result<bool, String> {
    for source in expressions {
        match run(source, variable, object, None)? {
            CelValue::Bool(true) => {}
            CelValue::Bool(false) => return Ok(false),
            other => return Err(format!("{source}: expected a bool result, got {other:?}")),
        }
    }
    Ok(true)
}

/// Expressions compiled once, to test many objects (a scheduling pass's
/// clusters) against them.
#[derive(Debug, Clone)]
pub struct Compiled(Arc<Vec<Program>>);

impl Compiled {
    /// Compiles `expressions` (admission checked them).
    pub fn new(expressions: &[String]) -> Result<Compiled, String> {
        let programs: Result<Vec<Program>, String> = expressions
            .iter()
            .map(|e| Program::compile(e).map_err(|why| format!("{e}: does not compile: {why}")))
            .collect();
        Ok(Compiled(Arc::new(programs?)))
    }

    /// Whether every expression is true for `object`, bound as `variable`;
    /// `Err` when one fails or is not a boolean.
    pub fn matches(&self, variable: &str, object: &Value) -> Result<bool, String> {
        let mut context = Context::default();
        context.add_variable_from_value(variable, cel::to_value(object).map_err(|e| e.to_string())?);
        for program in self.0.iter() {
            match program.execute(&context).map_err(|e| e.to_string())? {
                CelValue::Bool(true) => {}
                CelValue::Bool(false) => return Ok(false),
                other => return Err(format!("expected a bool result, got {other:?}")),
            }
        }
        Ok(true)
    }
}

/// The message a `messageExpression` gives for `object` and `result`.
pub fn message(source: &str, object: &Value, result: bool) -> Result<String, String> {
    match run(source, "object", object, Some(result))? {
        CelValue::String(s) => Ok(s.to_string()),
        other => Err(format!("expected the message expression to give a string, got {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(active: i64) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "status": {"active": active, "conditions": [{"type": "Complete", "status": "True"}]}})
    }

    #[test]
    fn expressions_are_all_true_or_say_why_not() {
        let one = vec!["object.status.active == 1".to_string()];
        assert_eq!(evaluate(&one, "object", &job(1)), Ok(true));
        assert_eq!(evaluate(&one, "object", &job(3)), Ok(false));
        let both = vec![
            "object.metadata.name == 'j'".to_string(),
            "object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')".to_string(),
        ];
        assert_eq!(evaluate(&both, "object", &job(0)), Ok(true));
        assert!(evaluate(&["object.status.active".to_string()], "object", &job(1))
            .unwrap_err()
            .contains("expected a bool"));
        assert!(evaluate(&["object.status.missing == 1".to_string()], "object", &job(1)).is_err());
        assert_eq!(
            message("result ? 'One pod is active' : 'There is not only one pod active'", &job(1), true),
            Ok("One pod is active".into())
        );
        assert!(message("1 + 1", &job(1), true).is_err());
    }

    #[test]
    fn what_is_checked_before_it_is_stored() {
        assert_eq!(check("object.status.active == 1"), None);
        assert!(check("object.status.active ==").unwrap().contains("does not compile"));
        assert!(check(&"a".repeat(2000)).unwrap().contains("longer than"));
        let nested = "object.a.all(x, x.b.all(y, y.c.exists(z, z)))";
        assert!(check(nested).unwrap().contains("more than 2 comprehensions"));
        assert!(check("managedCluster.scores('x').size() > 0")
            .unwrap()
            .contains("scores, which Fleet does not provide"));
    }
}
