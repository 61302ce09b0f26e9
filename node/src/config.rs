//! Command-line flags of `fleet-node` (docs/reference/interfaces.md) and the validated
//! configuration they make.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use fleet_raft::RaftTuning;

use crate::error::Error;

/// `fleet-node` flags.
#[derive(Debug, Parser)]
#[command(name = "fleet-node", about = "A Fleet hub node (run three or five of them)", version)]
pub struct Args {
    /// This node's id (a positive integer, unique in the cluster).
    #[arg(long)]
    pub id: u64,
    /// Address to serve the API and peer traffic on.
    #[arg(long)]
    pub listen: SocketAddr,
    /// Where this node keeps its Raft log, state machine and snapshots.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Directory with ca.pem, node-<id>.pem and node-<id>-key.pem.
    #[arg(long)]
    pub tls_dir: PathBuf,
    /// Initial members, `id=host:port,...` (used by --init).
    #[arg(long, default_value = "")]
    pub peers: String,
    /// This node's own addresses for some peers, `id=host:port,...`, dialed
    /// instead of the addresses in the membership (which all nodes share).
    /// For a proxy on each link (fault tests) or peers behind NAT.
    #[arg(long, default_value = "")]
    pub peer_dial: String,
    /// On a brand-new cluster, initialize membership with every --peers entry.
    /// Harmless on later starts.
    #[arg(long)]
    pub init: bool,
    /// Serve /healthz, /readyz and /metrics over plain HTTP on this address.
    #[arg(long)]
    pub http_listen: Option<SocketAddr>,
    /// Serve the Kubernetes-compatible API (HTTPS, fleet CA and client
    /// certificates) on this address; recorded so `fleetctl kubeconfig` finds it.
    #[arg(long)]
    pub kube_listen: Option<SocketAddr>,
    /// Raft heartbeat interval in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub heartbeat_ms: u64,
    /// Minimum election timeout in milliseconds (the maximum is twice this).
    /// A follower of a live leader stands only after the maximum (openraft's
    /// leader lease) plus its own timeout without a heartbeat: 0.9-1.2 s at
    /// the default.
    #[arg(long, default_value_t = 300)]
    pub election_timeout_ms: u64,
    /// Build a snapshot (and purge the log behind it) every this many entries.
    #[arg(long, default_value_t = 10_000)]
    pub snapshot_logs: u64,
    /// Log entries kept behind a snapshot for slightly lagging followers.
    #[arg(long, default_value_t = 1_000)]
    pub keep_logs: u64,
    /// Validity of member agent certificates (agents renew at two thirds).
    #[arg(long, default_value = "30d", value_parser = humantime::parse_duration)]
    pub member_cert_validity: std::time::Duration,
    /// Record every write and every refused request, as Kubernetes audit
    /// Events (`audit.k8s.io/v1`, one JSON object a line), to this file.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// How much an audit Event holds: None (nothing is recorded), Metadata
    /// (who, what, when, which node, the outcome) or Request (and the
    /// object written; a Secret's contents never).
    #[arg(long, value_enum, default_value_t = crate::audit::Level::Metadata)]
    pub audit_level: crate::audit::Level,
    /// Rotate the audit log when it would grow past this many megabytes
    /// (0: never).
    #[arg(long, default_value_t = 100)]
    pub audit_log_maxsize: u64,
    /// Rotated audit logs kept (FILE.1 the newest).
    #[arg(long, default_value_t = 10)]
    pub audit_log_maxbackup: u32,
    /// Requests of one user handled at once (system:masters, member agents
    /// and nodes are not limited).
    #[arg(long, default_value_t = 8)]
    pub max_requests_per_user: usize,
    /// Requests of one user waiting for one of its seats, at most; more are
    /// refused at once with 429 Too Many Requests.
    #[arg(long, default_value_t = 32)]
    pub max_queued_per_user: usize,
    /// Longest a request waits for a seat before it is refused with 429.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub max_queue_wait: std::time::Duration,
    /// Watches one user may keep open at once on this node; more are
    /// refused with 429.
    #[arg(long, default_value_t = 100)]
    pub max_watches_per_user: usize,
}

/// The audit log's configuration.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    pub file: crate::audit::file::FileOptions,
    pub level: crate::audit::Level,
}

/// A validated node configuration.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub id: u64,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub tls_dir: PathBuf,
    pub peers: BTreeMap<u64, String>,
    /// Addresses this node dials for some peers instead of their membership ones.
    pub peer_dial: BTreeMap<u64, String>,
    pub init: bool,
    pub http_listen: Option<SocketAddr>,
    pub kube_listen: Option<SocketAddr>,
    pub tuning: RaftTuning,
    pub member_cert_validity: std::time::Duration,
    /// `None` without `--audit-log`.
    pub audit: Option<AuditConfig>,
    /// Each user's share of the node.
    pub limits: crate::fairness::Limits,
}

impl Args {
    /// Validates the flags.
    pub fn into_config(self) -> Result<NodeConfig, Error> {
        if self.id == 0 {
            return Err(Error::Config("--id: Invalid value: 0: must be a positive integer".into()));
        }
        let peers = parse_peers(&self.peers)?;
        let peer_dial = parse_id_addresses("--peer-dial", &self.peer_dial)?;
        if self.init && !peers.contains_key(&self.id) {
            return Err(Error::Config(format!(
                "--peers: must include this node ({}) when --init is given, got {:?}",
                self.id, self.peers
            )));
        }
        if self.max_requests_per_user == 0 {
            return Err(Error::Config(
                "--max-requests-per-user: Invalid value: 0: must be at least 1 (a user needs a seat)".into(),
            ));
        }
        if self.election_timeout_ms <= self.heartbeat_ms {
            return Err(Error::Config(format!(
                "--election-timeout-ms: Invalid value: {}: must be greater than --heartbeat-ms ({})",
                self.election_timeout_ms, self.heartbeat_ms
            )));
        }
        Ok(NodeConfig {
            id: self.id,
            listen: self.listen,
            data_dir: self.data_dir,
            tls_dir: self.tls_dir,
            peers,
            peer_dial,
            init: self.init,
            http_listen: self.http_listen,
            kube_listen: self.kube_listen,
            member_cert_validity: self.member_cert_validity.max(std::time::Duration::from_secs(10)),
            audit: self.audit_log.map(|path| AuditConfig {
                file: crate::audit::file::FileOptions {
                    path,
                    max_bytes: self.audit_log_maxsize.saturating_mul(1024 * 1024),
                    max_backups: self.audit_log_maxbackup,
                },
                level: self.audit_level,
            }),
            limits: crate::fairness::Limits {
                seats: self.max_requests_per_user,
                queue: self.max_queued_per_user,
                wait: self.max_queue_wait,
                watches: self.max_watches_per_user,
            },
            tuning: RaftTuning {
                heartbeat_ms: self.heartbeat_ms,
                election_min_ms: self.election_timeout_ms,
                election_max_ms: self.election_timeout_ms * 2,
                snapshot_logs: self.snapshot_logs.max(1),
                keep_logs: self.keep_logs,
            },
        })
    }
}

/// Parses `1=127.0.0.1:7001,2=...`.
pub fn parse_peers(text: &str) -> Result<BTreeMap<u64, String>, Error> {
    parse_id_addresses("--peers", text)
}

/// Parses `1=127.0.0.1:7001,2=...` given as `flag`.
fn parse_id_addresses(flag: &str, text: &str) -> Result<BTreeMap<u64, String>, Error> {
    let mut peers = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (id, addr) = item
            .split_once('=')
            .ok_or_else(|| Error::Config(format!("{flag}: Invalid value: {item:?}: expected id=host:port")))?;
        let id: u64 = id.trim().parse().map_err(|_| {
            Error::Config(format!("{flag}: Invalid value: {item:?}: the id must be a positive integer"))
        })?;
        let addr = addr.trim();
        if id == 0 || addr.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).is_none() {
            return Err(Error::Config(format!("{flag}: Invalid value: {item:?}: expected id=host:port with id > 0")));
        }
        if peers.insert(id, addr.to_string()).is_some() {
            return Err(Error::Config(format!("{flag}: Duplicate value: node {id} is listed twice")));
        }
    }
    Ok(peers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_peer_lists_and_names_bad_items() {
        let peers = parse_peers("1=127.0.0.1:7001, 2=localhost:7002").unwrap();
        assert_eq!(peers.get(&2).map(String::as_str), Some("localhost:7002"));
        assert!(parse_peers("1=a:1,1=b:2").unwrap_err().to_string().contains("listed twice"));
        assert!(parse_peers("x=a:1").unwrap_err().to_string().contains("\"x=a:1\""));
        assert!(parse_peers("1=nohost").is_err());
        assert!(parse_peers("").unwrap().is_empty());
        let dial = parse_id_addresses("--peer-dial", "2=127.0.0.1:9002").unwrap();
        assert_eq!(dial.get(&2).map(String::as_str), Some("127.0.0.1:9002"));
        assert!(parse_id_addresses("--peer-dial", "2").unwrap_err().to_string().starts_with("--peer-dial:"));
    }
}
