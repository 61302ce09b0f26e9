//! Time as the pure code sees it (unix seconds in, RFC 3339 strings out):
//! the functions live in `fleet_api::time`, since admission checks
//! timestamps too; placement code reaches them here.

pub use fleet_api::time::{rfc3339, unix_seconds};
