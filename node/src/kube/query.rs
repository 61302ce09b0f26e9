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
        for pair in text.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (key, value) = (decode(key), decode(value));
            if key == "dryRun" && value == "All" {
                query.dry_run = true;
            }
            query.params.insert(key, value);
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

/// Percent-decodes a form-encoded component; invalid escapes stay as written.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
    }
}
