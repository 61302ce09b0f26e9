//! Connections: validated endpoints, the admin's TLS identity, and HTTP/2
//! channels spread round-robin over the endpoints.

use std::path::Path;
use std::time::Duration;

use fleet_proto::fleet::fleet_client::FleetClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::cli::{ConnectArgs, Target};
use crate::error::Error;

/// How long dialling one endpoint may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One open channel and the endpoint it goes to.
#[derive(Debug, Clone)]
pub struct Connection {
    /// `host:port`.
    pub endpoint: String,
    /// The HTTP/2 channel (cheap to clone; clones share the connection).
    pub channel: Channel,
}

/// Checks an endpoint list: each item `host:port`, at least one.
pub fn parse_endpoints(list: &[String]) -> Result<Vec<String>, Error> {
    let endpoints: Vec<String> = list.iter().map(|e| e.trim().to_string()).filter(|e| !e.is_empty()).collect();
    if endpoints.is_empty() {
        return Err(Error::Invalid {
            flag: "--endpoints",
            value: list.join(","),
            reason: "at least one host:port is required".into(),
        });
    }
    for e in &endpoints {
        let port_ok = e.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !port_ok || e.contains("://") {
            return Err(Error::Invalid {
                flag: "--endpoints",
                value: e.clone(),
                reason: "expected host:port, e.g. 127.0.0.1:7001".into(),
            });
        }
    }
    Ok(endpoints)
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, Error> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| Error::ReadFile { path, source })
}

/// The admin's client identity and the fleet CA from a PKI dir.
pub fn fleet_tls(dir: &Path) -> Result<ClientTlsConfig, Error> {
    Ok(ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(dir, "ca.pem")?))
        .identity(Identity::from_pem(read(dir, "admin.pem")?, read(dir, "admin-key.pem")?)))
}

/// The TLS configuration for `args`: always for the hub, for etcd only
/// with `--etcd-tls`; both need the PKI dir.
pub fn tls_of(args: &ConnectArgs) -> Result<Option<ClientTlsConfig>, Error> {
    match (args.target, args.etcd_tls) {
        (Target::Etcd, false) => Ok(None),
        (Target::Fleet, _) | (Target::Etcd, true) => {
            Ok(Some(fleet_tls(args.tls_dir.as_deref().ok_or(Error::TlsDirMissing)?)?))
        }
    }
}

/// Renders an error with its sources (tonic's transport errors say little on their own).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Opens `args.connections` channels (0 = one per endpoint), the i-th to
/// endpoint `i % endpoints`, each connected before it is returned so that
/// handshakes never count as request latency.
pub async fn connect(args: &ConnectArgs) -> Result<Vec<Connection>, Error> {
    let endpoints = parse_endpoints(&args.endpoints)?;
    let tls = tls_of(args)?;
    let count = if args.connections == 0 { endpoints.len() } else { args.connections };
    let timeout = Duration::from_secs(args.request_timeout_seconds.max(1));
    let mut connections = Vec::with_capacity(count);
    for i in 0..count {
        let endpoint = endpoints[i % endpoints.len()].clone();
        let channel = open(&endpoint, tls.clone(), timeout).await?;
        connections.push(Connection { endpoint, channel });
    }
    Ok(connections)
}

/// A Fleet client on the first of `args.endpoints` that takes a connection, with the admin's TLS
/// identity from `args.tls_dir` (the latency commands talk to one node).
pub async fn fleet_client(args: &ConnectArgs) -> Result<FleetClient<Channel>, Error> {
    let endpoints = parse_endpoints(&args.endpoints)?;
    let tls = fleet_tls(args.tls_dir.as_deref().ok_or(Error::TlsDirMissing)?)?;
    let timeout = Duration::from_secs(args.request_timeout_seconds.max(1));
    // The first endpoint that takes a connection (a node may be down, or
    // still starting after a restart).
    let mut failure = None;
    for endpoint in &endpoints {
        match open(endpoint, Some(tls.clone()), timeout).await {
            Ok(channel) => return Ok(FleetClient::new(channel).max_decoding_message_size(MAX_MESSAGE)),
            Err(e) => failure = Some(e),
        }
    }
    Err(failure.unwrap_or(Error::Invalid {
        flag: "--endpoints",
        value: args.endpoints.join(","),
        reason: "no endpoint given".into(),
    }))
}

/// The largest answer a client takes (a list of a thousand placements with
/// their status is more than gRPC's default 4 MiB).
pub const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// Dials one endpoint: `https` with `tls`, plaintext `http` without.
pub async fn open(endpoint: &str, tls: Option<ClientTlsConfig>, timeout: Duration) -> Result<Channel, Error> {
    let failed = |e: &(dyn std::error::Error + 'static)| Error::Connect {
        endpoint: endpoint.to_string(),
        detail: error_chain(e),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut builder = Endpoint::from_shared(format!("{scheme}://{endpoint}"))
        .map_err(|e| failed(&e))?
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(timeout)
        .tcp_nodelay(true);
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).map_err(|e| failed(&e))?;
    }
    builder.connect().await.map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn connect_args(target: Target, etcd_tls: bool, tls_dir: Option<&str>) -> ConnectArgs {
        ConnectArgs {
            target,
            endpoints: vec!["127.0.0.1:2379".into()],
            tls_dir: tls_dir.map(PathBuf::from),
            etcd_tls,
            connections: 0,
            request_timeout_seconds: 1,
        }
    }

    #[test]
    fn etcd_is_plaintext_unless_asked_and_tls_always_needs_the_pki_dir() {
        assert!(tls_of(&connect_args(Target::Etcd, false, Some("/nonexistent-pki"))).unwrap().is_none());
        for args in [connect_args(Target::Etcd, true, None), connect_args(Target::Fleet, false, None)] {
            let err = tls_of(&args).unwrap_err().to_string();
            assert!(err.contains("--tls-dir: Required value"), "{err}");
        }
        let err = tls_of(&connect_args(Target::Etcd, true, Some("/nonexistent-pki"))).unwrap_err().to_string();
        assert!(err.contains("/nonexistent-pki/ca.pem"), "{err}");
    }

    #[test]
    fn endpoints_must_be_host_port() {
        let ok = parse_endpoints(&["127.0.0.1:7001".into(), " localhost:2379 ".into()]).unwrap();
        assert_eq!(ok, vec!["127.0.0.1:7001".to_string(), "localhost:2379".to_string()]);
        for bad in ["127.0.0.1", ":7001", "https://127.0.0.1:7001", "host:port"] {
            let err = parse_endpoints(&[bad.to_string()]).unwrap_err().to_string();
            assert!(err.contains("--endpoints"), "{bad}: {err}");
        }
        assert!(parse_endpoints(&[]).is_err());
    }

    #[test]
    fn a_missing_pki_file_is_named() {
        let err = fleet_tls(Path::new("/nonexistent-pki")).unwrap_err().to_string();
        assert!(err.contains("/nonexistent-pki/ca.pem"), "{err}");
    }
}
