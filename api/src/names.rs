//! Syntax checks for names, namespaces, label keys and label values, with the
//! same rules and wording as Kubernetes so every crate reports them alike.

/// Longest DNS-1123 subdomain (object names, label-key prefixes).
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
/// Longest DNS-1123 label (namespaces).
pub const DNS1123_LABEL_MAX: usize = 63;
/// Longest label value and label-key name part.
pub const LABEL_VALUE_MAX: usize = 63;

const SUBDOMAIN_FORMAT: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_FORMAT: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_FORMAT: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_FORMAT: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Whether `s` is one RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, any length.
fn is_label_syntax(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-'),
        _ => false,
    }
}

/// Whether `s` matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, any length.
fn is_qualified_syntax(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Whether `s` is a DNS-1123 subdomain (object names): dot-separated RFC 1123
/// labels, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= DNS1123_SUBDOMAIN_MAX && s.split('.').all(is_label_syntax)
}

/// Whether `s` is a DNS-1123 label (namespaces): at most 63 characters.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= DNS1123_LABEL_MAX && is_label_syntax(s)
}

/// Why `s` is not a DNS-1123 subdomain, or `None` when it is one.
pub fn dns1123_subdomain_error(s: &str) -> Option<String> {
    let mut problems = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        problems.push(format!("must be no more than {DNS1123_SUBDOMAIN_MAX} characters"));
    }
    if !s.split('.').all(is_label_syntax) {
        problems.push(SUBDOMAIN_FORMAT.to_string());
    }
    join(problems)
}

/// Why `s` is not a DNS-1123 label, or `None` when it is one.
pub fn dns1123_label_error(s: &str) -> Option<String> {
    let mut problems = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        problems.push(format!("must be no more than {DNS1123_LABEL_MAX} characters"));
    }
    if !is_label_syntax(s) {
        problems.push(LABEL_FORMAT.to_string());
    }
    join(problems)
}

/// Why `key` is not a valid label (or annotation) key, or `None` when it is:
/// an optional DNS-1123 subdomain prefix and `/`, then a name of at most 63
/// alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
pub fn validate_label_key(key: &str) -> Option<String> {
    let mut problems = Vec::new();
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            problems.push("prefix part must be non-empty".to_string());
        } else if let Some(detail) = dns1123_subdomain_error(prefix) {
            problems.push(format!("prefix part {detail}"));
        }
    }
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else {
        if name.len() > LABEL_VALUE_MAX {
            problems.push(format!("name part must be no more than {LABEL_VALUE_MAX} characters"));
        }
        if !is_qualified_syntax(name) {
            problems.push(QUALIFIED_NAME_FORMAT.to_string());
        }
    }
    join(problems)
}

/// Why `value` is not a valid label value, or `None` when it is: empty, or at
/// most 63 alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
pub fn validate_label_value(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    let mut problems = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        problems.push(format!("must be no more than {LABEL_VALUE_MAX} characters"));
    }
    if !is_qualified_syntax(value) {
        problems.push(LABEL_VALUE_FORMAT.to_string());
    }
    join(problems)
}

fn join(problems: Vec<String>) -> Option<String> {
    if problems.is_empty() {
        None
    } else {
        Some(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains() {
        for ok in ["a", "web", "web-1", "a.b.c", "0", "my.app-1.example.com"] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
            assert_eq!(dns1123_subdomain_error(ok), None, "{ok}");
        }
        for bad in ["", "Web", "web_1", "-a", "a-", "a..b", ".a", "a.", "a.-b", "a b"] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
            assert!(dns1123_subdomain_error(bad).is_some(), "{bad}");
        }
        assert!(is_dns1123_subdomain(&"a".repeat(253)));
        assert!(!is_dns1123_subdomain(&"a".repeat(254)));
        assert_eq!(dns1123_subdomain_error(&"a".repeat(254)).as_deref(), Some("must be no more than 253 characters"));
    }

    #[test]
    fn labels() {
        assert!(is_dns1123_label("kube-system"));
        assert!(!is_dns1123_label("a.b"));
        assert!(is_dns1123_label(&"a".repeat(63)));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(dns1123_label_error("A").unwrap().starts_with("a lowercase RFC 1123 label"));
    }

    #[test]
    fn label_keys() {
        for ok in ["app", "App.Name_1", "example.com/app", "kubernetes-fleet.io/x-y", "a"] {
            assert_eq!(validate_label_key(ok), None, "{ok}");
        }
        assert_eq!(validate_label_key("").as_deref(), Some("name part must be non-empty"));
        assert_eq!(validate_label_key("/app").as_deref(), Some("prefix part must be non-empty"));
        assert!(validate_label_key("Example.com/app")
            .unwrap()
            .starts_with("prefix part a lowercase RFC 1123 subdomain"));
        assert!(validate_label_key("a/b/c").unwrap().starts_with("name part must consist"));
        assert!(validate_label_key("-app").unwrap().starts_with("name part must consist"));
        assert_eq!(
            validate_label_key(&"a".repeat(64)).as_deref(),
            Some("name part must be no more than 63 characters")
        );
    }

    #[test]
    fn label_values() {
        for ok in ["", "v1", "My_Value.2", &"a".repeat(63)] {
            assert_eq!(validate_label_value(ok), None, "{ok}");
        }
        for bad in ["-a", "a b", "a/b", "é"] {
            assert!(validate_label_value(bad).unwrap().starts_with("a valid label"), "{bad}");
        }
        assert_eq!(validate_label_value(&"a".repeat(64)).as_deref(), Some("must be no more than 63 characters"));
    }
}

/// Why `s` is not a valid path-segment name (the rule of RBAC object names):
/// not empty, not `.` or `..`, and free of `/` and `%`.
pub fn path_segment_error(s: &str) -> Option<String> {
    if s.is_empty() {
        Some("name must not be empty".to_string())
    } else if s == "." || s == ".." {
        Some(format!("may not be '{s}'"))
    } else if s.contains('/') || s.contains('%') {
        Some("may not contain '/' or '%'".to_string())
    } else {
        None
    }
}

#[cfg(test)]
mod path_segment_tests {
    use super::path_segment_error;

    #[test]
    fn rbac_style_names_are_path_segments() {
        assert_eq!(path_segment_error("system:aggregate-to-view"), None);
        assert!(path_segment_error("a/b").is_some());
        assert!(path_segment_error("..").is_some());
        assert!(path_segment_error("").is_some());
    }
}
