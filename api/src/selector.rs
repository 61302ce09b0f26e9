//! Label selectors (placeholder; completed by the api work).
