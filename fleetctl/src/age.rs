//! Ages like kubectl prints them: shared with the hub, in `fleet_api::age`.

pub use fleet_api::age::*;
