//! Who is calling: the identity rules of Fleet's certificates, shared by the
//! node (which checks them), fleetctl (which issues them) and the agent.
//!
//! | certificate subject CN         | identity                          |
//! |--------------------------------|-----------------------------------|
//! | `admin`                        | [`Identity::Admin`]: everything   |
//! | `viewer`                       | [`Identity::Viewer`]: reads only  |
//! | `system:fleet:node:<id>`       | [`Identity::Node`]: a hub peer    |
//! | `system:fleet:member:<cluster>`| [`Identity::Member`]: an agent    |
//! | any other CN (O = groups)      | [`Identity::User`]: a user        |
//!
//! Users are named the way Kubernetes reads client certificates: the
//! subject CN is the user name and each subject O one of its groups. What
//! a user (and `admin` and `viewer`, which the hub treats as users in
//! fixed groups) may do is decided by RBAC; CNs under the reserved
//! `system:fleet:` prefix that name no node or member name no user.
//!
//! Node certificates also carry the DNS name [`node_server_name`] so a node
//! dialing peer `<id>` verifies that the server it reached *is* node `<id>`.
//!
//! Two CAs: the root (`ca.pem`, the one trust anchor; its key stays off the
//! nodes, in `root/ca-key.pem`) signs node, admin and viewer certificates and
//! the member CA (`member-ca.pem`, subject CN [`MEMBER_CA_CN`], path length
//! 0, so it can sign no other CA). The member CA's key is on the nodes,
//! which sign member certificates with it. A certificate it issued names a
//! member or nothing: with any other CN it is [`Identity::Other`], so a
//! stolen node's member CA key cannot mint an admin, viewer or node.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

/// Errors reading or interpreting certificates.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A PEM file held no certificate.
    #[error("{what}: no PEM certificate found")]
    NoCertificate { what: String },
    /// A certificate's DER could not be parsed.
    #[error("certificate cannot be parsed: {0}")]
    Parse(String),
    /// A certificate has no subject common name.
    #[error("certificate has no subject common name")]
    NoCommonName,
}

/// The CN prefix of hub node certificates.
pub const NODE_CN_PREFIX: &str = "system:fleet:node:";
/// The CN prefix of member agent certificates.
pub const MEMBER_CN_PREFIX: &str = "system:fleet:member:";
/// The subject CN of the member CA (the intermediate the nodes hold).
pub const MEMBER_CA_CN: &str = "fleet-member-ca";
/// The CN of the admin client certificate.
pub const ADMIN_CN: &str = "admin";
/// The CN of the read-only client certificate.
pub const VIEWER_CN: &str = "viewer";
/// CNs under this prefix name hub nodes and member agents, never users.
pub const RESERVED_CN_PREFIX: &str = "system:fleet:";

/// The caller of an RPC, from its client certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// May do everything.
    Admin,
    /// May only read.
    Viewer,
    /// A hub node (peer traffic).
    Node(u64),
    /// The agent of one member cluster.
    Member(String),
    /// A user, with the groups its certificate names.
    User {
        /// The subject CN.
        name: String,
        /// The subject O values.
        groups: Vec<String>,
    },
    /// A certificate signed by the fleet CA that names nobody the hub
    /// knows (a reserved CN, or one the member CA signed for a non-member).
    Other(String),
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identity::Admin => f.write_str(ADMIN_CN),
            Identity::Viewer => f.write_str(VIEWER_CN),
            Identity::Node(id) => write!(f, "{NODE_CN_PREFIX}{id}"),
            Identity::Member(c) => write!(f, "{MEMBER_CN_PREFIX}{c}"),
            Identity::User { name, .. } => f.write_str(name),
            Identity::Other(cn) => f.write_str(cn),
        }
    }
}

impl Identity {
    /// Interprets a subject common name (a user then has no groups).
    pub fn from_common_name(cn: &str) -> Identity {
        Identity::from_subject(cn, &[])
    }

    /// Interprets a subject: its common name and organizations.
    pub fn from_subject(cn: &str, organizations: &[String]) -> Identity {
        if cn == ADMIN_CN {
            Identity::Admin
        } else if cn == VIEWER_CN {
            Identity::Viewer
        } else if let Some(id) = cn.strip_prefix(NODE_CN_PREFIX).and_then(|s| s.parse().ok()) {
            Identity::Node(id)
        } else if let Some(cluster) = cn.strip_prefix(MEMBER_CN_PREFIX).filter(|c| !c.is_empty()) {
            Identity::Member(cluster.to_string())
        } else if cn.starts_with(RESERVED_CN_PREFIX) || cn.is_empty() {
            Identity::Other(cn.to_string())
        } else {
            Identity::User { name: cn.to_string(), groups: organizations.to_vec() }
        }
    }

    /// The identity named by a DER certificate's subject (CN and O).
    pub fn from_der(der: &[u8]) -> Result<Identity, TlsError> {
        let (_, cert) = X509Certificate::from_der(der).map_err(|e| TlsError::Parse(e.to_string()))?;
        Ok(Identity::from_subject(&subject_common_name(&cert)?, &organizations(&cert)))
    }
}

/// Most certificates [`presented`] remembers; past that it starts over.
const PRESENTED_MAX: usize = 4096;

/// Certificates already read by [`presented`], by their DER bytes.
static PRESENTED: LazyLock<Mutex<HashMap<Vec<u8>, Presented>>> = LazyLock::new(Default::default);

/// What the hub needs of a client certificate: who it names, and its serial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub identity: Identity,
    /// The serial number as lowercase hex: how the hub recognises which of
    /// a member's certificates is presented.
    pub serial: String,
}

/// Reads the identity and serial of a (TLS-verified) client certificate.
///
/// Every RPC names its caller, and parsing X.509 on each one cost ~2% of a
/// busy hub's CPU: the answer is a pure function of the bytes, so it is
/// remembered (a few thousand certificates at most).
pub fn presented(der: &[u8]) -> Result<Presented, TlsError> {
    let lock = || PRESENTED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(hit) = lock().get(der) {
        return Ok(hit.clone());
    }
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| TlsError::Parse(e.to_string()))?;
    let cn = subject_common_name(&cert)?;
    let organizations = organizations(&cert);
    let by_member_ca = cert.issuer().iter_common_name().filter_map(|n| n.as_str().ok()).any(|n| n == MEMBER_CA_CN);
    let identity = match Identity::from_subject(&cn, &organizations) {
        member @ Identity::Member(_) => member,
        _ if by_member_ca => {
            Identity::Other(format!("{cn} (issued by the member CA, which issues member certificates only)"))
        }
        other => other,
    };
    let parsed = Presented { identity, serial: hex::encode(cert.raw_serial()) };
    let mut cache = lock();
    if cache.len() >= PRESENTED_MAX {
        cache.clear();
    }
    cache.insert(der.to_vec(), parsed.clone());
    Ok(parsed)
}

/// The subject O values: a user's groups.
fn organizations(cert: &X509Certificate) -> Vec<String> {
    cert.subject().iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_string).collect()
}

fn subject_common_name(cert: &X509Certificate) -> Result<String, TlsError> {
    Ok(cert
        .subject()
        .iter_common_name()
        .next()
        .ok_or(TlsError::NoCommonName)?
        .as_str()
        .map_err(|e| TlsError::Parse(e.to_string()))?
        .to_string())
}

/// The subject common name of a DER certificate.
pub fn common_name(der: &[u8]) -> Result<String, TlsError> {
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| TlsError::Parse(e.to_string()))?;
    subject_common_name(&cert)
}

/// The DNS name every certificate of node `id` carries, used as the TLS
/// server name when a peer dials it.
pub fn node_server_name(id: u64) -> String {
    format!("node-{id}.fleet")
}

/// `sha256:<hex>` of the first certificate in a PEM blob: how users pin the CA.
pub fn fingerprint_pem(pem: &[u8], what: &str) -> Result<String, TlsError> {
    let der = CertificateDer::from_pem_slice(pem).map_err(|_| TlsError::NoCertificate { what: what.to_string() })?;
    Ok(fingerprint_der(&der))
}

/// `sha256:<hex>` of a DER certificate.
pub fn fingerprint_der(der: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(der)))
}

/// The files of a PKI directory made by `fleetctl pki init`.
#[derive(Debug, Clone)]
pub struct PkiDir {
    /// The directory.
    pub dir: PathBuf,
}

impl PkiDir {
    /// A PKI directory at `dir`.
    pub fn new(dir: impl AsRef<Path>) -> PkiDir {
        PkiDir { dir: dir.as_ref().to_path_buf() }
    }
    /// `ca.pem`.
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
    /// `ca-key.pem`: where a PKI made before the CA split kept the (only)
    /// CA's key, on every node. Read only as a fallback.
    pub fn legacy_ca_key(&self) -> PathBuf {
        self.dir.join("ca-key.pem")
    }
    /// `root/ca-key.pem`: the root CA's key. `fleetctl pki` needs it to
    /// issue node and client certificates; no node reads it — keep `root/`
    /// off the nodes.
    pub fn root_key(&self) -> PathBuf {
        self.dir.join("root").join("ca-key.pem")
    }
    /// `member-ca.pem`: the member CA's certificate (signed by the root).
    pub fn member_ca_cert(&self) -> PathBuf {
        self.dir.join("member-ca.pem")
    }
    /// `member-ca-key.pem`: the member CA's key, on the nodes.
    pub fn member_ca_key(&self) -> PathBuf {
        self.dir.join("member-ca-key.pem")
    }
    /// `node-<id>.pem`.
    pub fn node_cert(&self, id: u64) -> PathBuf {
        self.dir.join(format!("node-{id}.pem"))
    }
    /// `node-<id>-key.pem`.
    pub fn node_key(&self, id: u64) -> PathBuf {
        self.dir.join(format!("node-{id}-key.pem"))
    }
    /// `<name>.pem` of a client (`admin`, `viewer`).
    pub fn client_cert(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pem"))
    }
    /// `<name>-key.pem` of a client.
    pub fn client_key(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}-key.pem"))
    }
}

/// Reads a file, naming it in the error.
pub fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_names_map_to_identities() {
        assert_eq!(Identity::from_common_name("admin"), Identity::Admin);
        assert_eq!(Identity::from_common_name("viewer"), Identity::Viewer);
        assert_eq!(Identity::from_common_name("system:fleet:node:3"), Identity::Node(3));
        assert_eq!(Identity::from_common_name("system:fleet:member:east-1"), Identity::Member("east-1".into()));
        assert_eq!(Identity::from_common_name("system:fleet:node:x"), Identity::Other("system:fleet:node:x".into()));
        assert_eq!(Identity::from_common_name("system:fleet:member:"), Identity::Other("system:fleet:member:".into()));
        assert_eq!(
            Identity::from_subject("alice", &["team-a".into()]),
            Identity::User { name: "alice".into(), groups: vec!["team-a".into()] }
        );
        assert_eq!(Identity::from_common_name("system:fleet:other"), Identity::Other("system:fleet:other".into()));
    }
}
