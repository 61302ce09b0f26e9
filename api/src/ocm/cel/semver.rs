//! Kubernetes' CEL semver library, as OCM's environments include it:
//! `semver(s)`, `isSemver(s)`, and on a version `major()`, `minor()`,
//! `patch()`, `isGreaterThan`, `isLessThan` and `compareTo`. Parsing is
//! strict SemVer 2.0 (`1.2.3`, `1.2.3-rc.1+build`; no `v`, no missing
//! parts), and versions are ordered by precedence: build metadata does not
//! count, as in the Go library Kubernetes uses.

use std::any::Any;
use std::cmp::Ordering;

use cel::common::types::{CelBool, CelInt, CelString, Type};
use cel::common::value::{StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use semver::Version;

/// The CEL type of a version, named as Kubernetes names it.
pub(super) static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A version as a CEL value.
#[derive(Debug, Clone)]
pub(super) struct SemverVal(Version);

impl Val for SemverVal {
    fn get_type(&self) -> &Type {
        <Self as Val>::cel_type()
    }

    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other.downcast_ref::<SemverVal>().is_some_and(|o| o.0.cmp_precedence(&self.0) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for SemverVal {}

/// Registers the library's overloads on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    cel::add_overload!(env, fn semver: (CelString) -> Result<SemverVal>)?;
    cel::add_overload!(env, fn is_semver: (CelString) -> CelBool)?;
    cel::add_member_overload!(env, fn major: (SemverVal) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn minor: (SemverVal) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn patch: (SemverVal) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn semver_is_greater_than: (SemverVal, SemverVal) -> CelBool,
        name = "isGreaterThan")?;
    cel::add_member_overload!(env, fn semver_is_less_than: (SemverVal, SemverVal) -> CelBool,
        name = "isLessThan")?;
    cel::add_member_overload!(env, fn semver_compare_to: (SemverVal, SemverVal) -> CelInt,
        name = "compareTo")?;
    Ok(())
}

fn semver(text: &CelString<'_>) -> Result<SemverVal, ExecutionError> {
    Version::parse(text.inner()).map(SemverVal).map_err(|e| ExecutionError::function_error("semver", e))
}

fn is_semver(text: &CelString<'_>) -> CelBool {
    Version::parse(text.inner()).is_ok().into()
}

fn part(function: &str, value: u64) -> Result<CelInt, ExecutionError> {
    i64::try_from(value)
        .map(CelInt::from)
        .map_err(|_| ExecutionError::function_error(function, format!("{value} does not fit an int")))
}

fn major(this: &SemverVal) -> Result<CelInt, ExecutionError> {
    part("major", this.0.major)
}

fn minor(this: &SemverVal) -> Result<CelInt, ExecutionError> {
    part("minor", this.0.minor)
}

fn patch(this: &SemverVal) -> Result<CelInt, ExecutionError> {
    part("patch", this.0.patch)
}

fn semver_is_greater_than(this: &SemverVal, other: &SemverVal) -> CelBool {
    (this.0.cmp_precedence(&other.0) == Ordering::Greater).into()
}

fn semver_is_less_than(this: &SemverVal, other: &SemverVal) -> CelBool {
    (this.0.cmp_precedence(&other.0) == Ordering::Less).into()
}

fn semver_compare_to(this: &SemverVal, other: &SemverVal) -> CelInt {
    match this.0.cmp_precedence(&other.0) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
    .into()
}
