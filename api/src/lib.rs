//! Fleet's resource model.
//!
//! Everything here is pure (no tokio, no I/O) so it can be tested exhaustively:
//! the generic [`Object`] with typed metadata, the [`kinds`] registry, label
//! [`selector`]s, multi-document [`parse`]ing, field-path [`validation`] and
//! the name and label syntax rules in [`names`]; Fleet's typed kinds and
//! Open Cluster Management's ([`ocm`]); RFC 3339 [`time`]s.

pub mod age;
pub mod binding;
pub mod cluster_profile;
pub mod columns;
pub mod conditions;
pub mod defaults;
pub mod envelope;
pub mod eviction;
pub mod ignore_paths;
pub mod kinds;
pub mod member;
pub mod names;
pub mod object;
pub mod ocm;
pub mod overrides;
pub mod parse;
pub mod placement;
pub mod quantity;
pub mod schema;
pub mod selector;
pub mod snapshot;
pub mod staged;
#[cfg(test)]
mod testing;
pub mod time;
pub mod typed;
pub mod validation;
pub mod work;

pub use kinds::{KindInfo, Scope};
pub use object::{Object, ObjectKey, ObjectMeta, OwnerReference};
pub use selector::LabelSelector;
pub use validation::{FieldError, ValidationError};
