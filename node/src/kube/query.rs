//! The query string of a request: `labelSelector`, `fieldSelector`,
//! `resourceVersion`, `watch`, `dryRun`, `fieldManager`, ... decoded once.

use std::collections::BTreeMap;

/// Decoded query parameters (the last value wins when one repeats, except
/// `dryRun`, where any `All` counts).
#[derive(Debug, Clone, Default)]
pub struct Query {
    params: BTreeMap<String, String>,
    dry_run: bool,
}

impl Query {
    /// Parses `a=b&c=d` (form-encoded: `+` is a space, `%XX` a byte).
    pub fn parse(text: Option<&str>) -> Query {
        let mut query = Query::default();
        for (key, value) in form_urlencoded::parse(text.unwrap_or_default().as_bytes()) {
            if key == "dryRun" && value == "All" {
                query.dry_run = true;
            }
            query.params.insert(key.into_owned(), value.into_owned());
        }
        query
    }

    /// The value of `key`, if given and not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// Whether `key` is `true` or `1`.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    /// `dryRun=All`.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }
}

/// Percent-decodes one URL path segment (`+` stays a plus, as in any
/// path); invalid escapes stay as written.
pub fn decode_segment(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_selectors_and_flags() {
        let q = Query::parse(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=1&dryRun=All&limit=500"));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert!(q.flag("watch"));
        assert!(q.dry_run());
        assert_eq!(q.get("missing"), None);
        assert_eq!(decode_segment("100%"), "100%");
        assert_eq!(decode_segment("%zz"), "%zz");
        assert_eq!(decode_segment("a%2Fb+c"), "a/b+c");
    }
}
