//! Parsing the `--endpoints` list.

use crate::error::{Error, Result};

/// Splits a comma-separated `host:port[,host:port...]` list into endpoints.
///
/// Blank entries are skipped; an `https://` prefix and a trailing `/` are
/// accepted and dropped; `http://` is refused (Fleet always speaks TLS).
/// IPv6 addresses are written in brackets (`[::1]:7001`).
pub fn parse_endpoints(list: &str) -> Result<Vec<String>> {
    let mut endpoints = Vec::new();
    for raw in list.split(',') {
        let entry = raw.trim();
        if entry.is_empty() {
            continue;
        }
        let endpoint = normalize(entry)?;
        if !endpoints.contains(&endpoint) {
            endpoints.push(endpoint);
        }
    }
    if endpoints.is_empty() {
        return Err(Error::NoEndpoints);
    }
    Ok(endpoints)
}

/// The `https://` URI tonic dials for an endpoint.
pub fn endpoint_uri(endpoint: &str) -> String {
    format!("https://{endpoint}")
}

fn normalize(entry: &str) -> Result<String> {
    let invalid = |reason: &str| Error::InvalidEndpoint { endpoint: entry.to_string(), reason: reason.to_string() };
    if entry.starts_with("http://") {
        return Err(invalid("fleet nodes only speak TLS; drop the http:// prefix"));
    }
    let hostport = entry.strip_prefix("https://").unwrap_or(entry);
    let hostport = hostport.strip_suffix('/').unwrap_or(hostport);
    if hostport.contains('/') || hostport.contains(char::is_whitespace) {
        return Err(invalid("expected host:port"));
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some(parts) => parts,
        None => return Err(invalid("missing :port")),
    };
    if host.is_empty() {
        return Err(invalid("missing host"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(invalid("write IPv6 addresses in brackets, e.g. [::1]:7001"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(hostport.to_string()),
        _ => Err(invalid("the port must be a number from 1 to 65535")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_trims() {
        assert_eq!(
            parse_endpoints("127.0.0.1:7001, 127.0.0.1:7002,,localhost:7003 ").unwrap(),
            vec!["127.0.0.1:7001", "127.0.0.1:7002", "localhost:7003"]
        );
    }

    #[test]
    fn accepts_https_prefix_and_ipv6() {
        assert_eq!(parse_endpoints("https://node-1.fleet:7001/").unwrap(), vec!["node-1.fleet:7001"]);
        assert_eq!(parse_endpoints("[::1]:7001").unwrap(), vec!["[::1]:7001"]);
    }

    #[test]
    fn drops_duplicates() {
        assert_eq!(parse_endpoints("a:1,a:1,b:2").unwrap(), vec!["a:1", "b:2"]);
    }

    #[test]
    fn refuses_bad_entries() {
        assert!(matches!(parse_endpoints(""), Err(Error::NoEndpoints)));
        assert!(matches!(parse_endpoints(" , "), Err(Error::NoEndpoints)));
        for bad in ["localhost", "http://a:1", "a:0", "a:x", ":7001", "::1:7001", "a:1/x", "a:70000"] {
            assert!(matches!(parse_endpoints(bad), Err(Error::InvalidEndpoint { .. })), "{bad}");
        }
    }

    #[test]
    fn uri_is_https() {
        assert_eq!(endpoint_uri("127.0.0.1:7001"), "https://127.0.0.1:7001");
    }
}
