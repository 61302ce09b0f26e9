//! Validation errors (placeholder; completed by the api work).
