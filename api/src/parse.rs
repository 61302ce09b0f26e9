//! Multi-document parsing (placeholder; completed by the api work).
