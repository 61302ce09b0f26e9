//! Kubernetes' CEL quantity library, as OCM's environments include it:
//! `quantity(s)`, `isQuantity(s)`, and on a quantity `sign()`,
//! `isGreaterThan`, `isLessThan`, `compareTo`, `asApproximateFloat()`,
//! `asInteger()`, `isInteger()`, `add` and `sub` (of a quantity or an int).
//! Values are Fleet's exact [`Quantity`], so comparisons never round.

use std::any::Any;
use std::cmp::Ordering;

use cel::common::types::{CelBool, CelDouble, CelInt, CelString, Type};
use cel::common::value::{StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use crate::quantity::Quantity;

/// The CEL type of a quantity, named as Kubernetes names it.
pub(super) static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// A quantity as a CEL value.
#[derive(Debug, Clone, Copy)]
pub(super) struct QuantityVal(pub(super) Quantity);

impl Val for QuantityVal {
    fn get_type(&self) -> &Type {
        <Self as Val>::cel_type()
    }

    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other.downcast_ref::<QuantityVal>().is_some_and(|o| o.0 == self.0)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for QuantityVal {}

/// Registers the library's overloads on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    cel::add_overload!(env, fn quantity: (CelString) -> Result<QuantityVal>)?;
    cel::add_overload!(env, fn is_quantity: (CelString) -> CelBool)?;
    cel::add_member_overload!(env, fn sign: (QuantityVal) -> CelInt)?;
    cel::add_member_overload!(env, fn is_greater_than: (QuantityVal, QuantityVal) -> CelBool)?;
    cel::add_member_overload!(env, fn is_less_than: (QuantityVal, QuantityVal) -> CelBool)?;
    cel::add_member_overload!(env, fn compare_to: (QuantityVal, QuantityVal) -> CelInt)?;
    cel::add_member_overload!(env, fn as_approximate_float: (QuantityVal) -> CelDouble)?;
    cel::add_member_overload!(env, fn as_integer: (QuantityVal) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn is_integer: (QuantityVal) -> CelBool)?;
    cel::add_member_overload!(env, fn add: (QuantityVal, QuantityVal) -> QuantityVal)?;
    cel::add_member_overload!(env, fn add_int: (QuantityVal, CelInt) -> QuantityVal, name = "add")?;
    cel::add_member_overload!(env, fn sub: (QuantityVal, QuantityVal) -> QuantityVal)?;
    cel::add_member_overload!(env, fn sub_int: (QuantityVal, CelInt) -> QuantityVal, name = "sub")?;
    Ok(())
}

fn quantity(text: &CelString<'_>) -> Result<QuantityVal, ExecutionError> {
    Quantity::parse(text.inner()).map(QuantityVal).map_err(|e| ExecutionError::function_error("quantity", e))
}

fn is_quantity(text: &CelString<'_>) -> CelBool {
    Quantity::parse(text.inner()).is_ok().into()
}

fn ordering(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

fn sign(this: &QuantityVal) -> CelInt {
    ordering(this.0.nanos().cmp(&0)).into()
}

fn is_greater_than(this: &QuantityVal, other: &QuantityVal) -> CelBool {
    (this.0 > other.0).into()
}

fn is_less_than(this: &QuantityVal, other: &QuantityVal) -> CelBool {
    (this.0 < other.0).into()
}

fn compare_to(this: &QuantityVal, other: &QuantityVal) -> CelInt {
    ordering(this.0.cmp(&other.0)).into()
}

fn as_approximate_float(this: &QuantityVal) -> CelDouble {
    this.0.as_f64().into()
}

/// The whole value, when the quantity is a whole number that fits an int.
fn whole(q: Quantity) -> Option<i64> {
    const NANO: i128 = 1_000_000_000;
    (q.nanos() % NANO == 0).then(|| i64::try_from(q.nanos() / NANO).ok()).flatten()
}

fn as_integer(this: &QuantityVal) -> Result<CelInt, ExecutionError> {
    whole(this.0)
        .map(CelInt::from)
        .ok_or_else(|| ExecutionError::function_error("asInteger", "cannot convert value to integer"))
}

fn is_integer(this: &QuantityVal) -> CelBool {
    whole(this.0).is_some().into()
}

fn add(this: &QuantityVal, other: &QuantityVal) -> QuantityVal {
    QuantityVal(this.0.saturating_add(other.0))
}

fn add_int(this: &QuantityVal, other: &CelInt) -> QuantityVal {
    QuantityVal(this.0.saturating_add(Quantity::from_units(*other.inner())))
}

fn sub(this: &QuantityVal, other: &QuantityVal) -> QuantityVal {
    QuantityVal(this.0.saturating_sub(other.0))
}

fn sub_int(this: &QuantityVal, other: &CelInt) -> QuantityVal {
    QuantityVal(this.0.saturating_sub(Quantity::from_units(*other.inner())))
}
