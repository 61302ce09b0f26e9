//! The fleet's PKI, in the file layout of [`fleet_proto::tls::PkiDir`]: a
//! root CA that signs node, admin and viewer certificates (its key in
//! `root/`, kept off the nodes), and the member CA, an intermediate the
//! nodes hold that can only sign member certificates: path length 0, client
//! authentication only, and name constraints that exclude every DNS name
//! and IP address, so a certificate it signs can never pass for a node's
//! server certificate (member certificates carry no names), and the hub
//! gives any other subject it signs no role.

use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fleet_proto::tls::{
    node_server_name, PkiDir, ADMIN_CN, MEMBER_CA_CN, NODE_CN_PREFIX, RESERVED_CN_PREFIX, VIEWER_CN,
};
use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
    GeneralSubtree, IsCa, Issuer, KeyPair, KeyUsagePurpose, NameConstraints, SanType,
};

use crate::error::{Error, Result};

/// The CA's subject CN.
pub const CA_CN: &str = "fleet-ca";
/// The `--hosts` default: what a local fleet dials.
pub const DEFAULT_HOSTS: &[&str] = &["127.0.0.1", "localhost"];

const DAY: Duration = Duration::from_secs(24 * 3600);
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
const LEAF_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);
/// Certificates start this long before now, to tolerate clock skew.
const BACKDATE: Duration = Duration::from_secs(3600);

/// Where the root CA's key is: `root_dir/ca-key.pem` when given (an
/// operator keeps the root key away from the PKI directory that is copied
/// to nodes), else `root/ca-key.pem` in the PKI directory.
fn root_key_path(pki: &PkiDir, root_dir: Option<&Path>) -> PathBuf {
    root_dir.map_or_else(|| pki.root_key(), |d| d.join("ca-key.pem"))
}

/// Makes a new PKI in `dir`: the root CA (`ca.pem`, key in
/// `root/ca-key.pem` or `root_dir/ca-key.pem`), the member CA
/// (`member-ca.pem`, `member-ca-key.pem`), node certificates `1..=nodes`
/// (each with `node-<i>.fleet` and every `hosts` entry as SANs), and the
/// `admin` and `viewer` client certificates. Refuses to replace an
/// existing `ca.pem` unless `force`. Returns the files written.
pub fn init(dir: &Path, root_dir: Option<&Path>, nodes: u64, hosts: &[String], force: bool) -> Result<Vec<PathBuf>> {
    if nodes == 0 {
        return Err(Error::Usage("--nodes must be at least 1".to_string()));
    }
    validate_hosts(hosts)?;
    let pki = PkiDir::new(dir);
    if !force && pki.ca_cert().exists() {
        return Err(Error::Exists { path: pki.ca_cert() });
    }
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;

    let ca_key = KeyPair::generate()?;
    let root_params = ca_params(CA_CN, BasicConstraints::Unconstrained)?;
    let ca_cert = root_params.self_signed(&ca_key)?;
    let mut written = Vec::new();
    written.push(write_public(&pki.ca_cert(), &ca_cert.pem())?);
    written.push(write_root_key(&pki, root_dir, &ca_key.serialize_pem())?);
    // A PKI made before the split kept the root key here, where nodes read it.
    match fs::remove_file(pki.legacy_ca_key()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(pki.legacy_ca_key(), e)),
    }

    let issuer = Issuer::new(root_params, ca_key);
    written.extend(write_member_ca(&pki, &issuer)?);
    for id in 1..=nodes {
        written.extend(write_node(&pki, &issuer, id, hosts)?);
    }
    for name in [ADMIN_CN, VIEWER_CN] {
        written.extend(write_client(&pki, &issuer, name)?);
    }
    Ok(written)
}

/// Signs a certificate for node `id` with the CA in `dir` (how an operator
/// adds a node). Refuses to replace existing files unless `force`.
pub fn issue_node(dir: &Path, root_dir: Option<&Path>, id: u64, hosts: &[String], force: bool) -> Result<Vec<PathBuf>> {
    if id == 0 {
        return Err(Error::Usage("node ids start at 1".to_string()));
    }
    validate_hosts(hosts)?;
    let pki = PkiDir::new(dir);
    if !force {
        refuse_existing(&[pki.node_cert(id), pki.node_key(id)])?;
    }
    let issuer = load_issuer(&pki, root_dir)?;
    write_node(&pki, &issuer, id, hosts)
}

/// Signs a client certificate with subject CN `name` (any name: `admin`,
/// `viewer`, `system:fleet:member:<cluster>`, or a role the server does not
/// know) with the CA in `dir`, written as `<name>.pem` and `<name>-key.pem`.
pub fn issue_client(dir: &Path, root_dir: Option<&Path>, name: &str, force: bool) -> Result<Vec<PathBuf>> {
    validate_client_name(name)?;
    let pki = PkiDir::new(dir);
    if !force {
        refuse_existing(&[pki.client_cert(name), pki.client_key(name)])?;
    }
    let issuer = load_issuer(&pki, root_dir)?;
    write_client(&pki, &issuer, name)
}

/// Signs a certificate for user `name` in `groups` (subject CN and O, as
/// Kubernetes reads them) valid for `ttl`, written as `<name>.pem` and
/// `<name>-key.pem` so `fleetctl --user <name>` and `fleetctl kubeconfig
/// --user <name>` use it. The names of the built-in certificates and the
/// hub's reserved `system:fleet:` prefix are refused: they are not users.
pub fn issue_user(
    dir: &Path,
    root_dir: Option<&Path>,
    name: &str,
    groups: &[String],
    ttl: Duration,
    force: bool,
) -> Result<Vec<PathBuf>> {
    validate_client_name(name)?;
    if [ADMIN_CN, VIEWER_CN].contains(&name) || name.starts_with(RESERVED_CN_PREFIX) {
        return Err(Error::Usage(format!(
            "invalid --name {name:?}: {ADMIN_CN:?}, {VIEWER_CN:?} and names starting with {RESERVED_CN_PREFIX:?} \
             are not users (see pki init and issue-client)"
        )));
    }
    for group in groups {
        if group.trim().is_empty() || group.chars().any(char::is_control) {
            return Err(Error::Usage(format!(
                "invalid --group {group:?} for user {name:?}: a group is a non-empty name without control characters"
            )));
        }
    }
    let pki = PkiDir::new(dir);
    if !force {
        refuse_existing(&[pki.client_cert(name), pki.client_key(name)])?;
    }
    let (issuer, ca_key) = (load_issuer(&pki, root_dir)?, load_root_key(&pki, root_dir)?);
    let mut params = client_params(name)?;
    set_validity_exactly(&mut params, ttl);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    let pem = subject::with_subject(cert.der(), &subject::subject(name, groups), &ca_key)?;
    Ok(vec![write_public(&pki.client_cert(name), &pem)?, write_private(&pki.client_key(name), &key.serialize_pem())?])
}

/// Replaces the member CA of the PKI in `dir` with a new one signed by the
/// root: how a PKI made before the member CA was constrained (or before the
/// CA split, when nodes signed members with the root key) gets the member
/// CA of [`init`] without a new root. Member certificates already issued
/// still chain to the root (the hub also checks their serials); agents get
/// certificates of the new member CA at their next renewal. When the root
/// key is found where nodes read it (`ca-key.pem` of a PKI before the
/// split), it moves to `root/` (or `root_dir`).
pub fn issue_member_ca(dir: &Path, root_dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let pki = PkiDir::new(dir);
    let mut written = Vec::new();
    if !root_key_path(&pki, root_dir).exists() && pki.legacy_ca_key().exists() {
        written.push(write_root_key(&pki, root_dir, &read_text(&pki.legacy_ca_key())?)?);
        fs::remove_file(pki.legacy_ca_key()).map_err(|e| Error::io(pki.legacy_ca_key(), e))?;
    }
    let issuer = load_issuer(&pki, root_dir)?;
    written.extend(write_member_ca(&pki, &issuer)?);
    Ok(written)
}

/// Writes the root CA's key where [`root_key_path`] says, making its
/// directory if needed.
fn write_root_key(pki: &PkiDir, root_dir: Option<&Path>, key_pem: &str) -> Result<PathBuf> {
    let root_key = root_key_path(pki, root_dir);
    let key_dir = root_key.parent().map(Path::to_path_buf).unwrap_or_else(|| pki.dir.clone());
    fs::create_dir_all(&key_dir).map_err(|e| Error::io(&key_dir, e))?;
    write_private(&root_key, key_pem)
}

/// Writes a new member CA signed by `issuer` (the root): path length 0,
/// client authentication only, every DNS name and IP address excluded.
fn write_member_ca(pki: &PkiDir, issuer: &Issuer<'_, KeyPair>) -> Result<Vec<PathBuf>> {
    let member_key = KeyPair::generate()?;
    let mut member_params = ca_params(MEMBER_CA_CN, BasicConstraints::Constrained(0))?;
    member_params.use_authority_key_identifier_extension = true;
    member_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    member_params.name_constraints = Some(NameConstraints {
        permitted_subtrees: Vec::new(),
        excluded_subtrees: vec![
            GeneralSubtree::DnsName(String::new()),
            GeneralSubtree::IpAddress(CidrSubnet::V4([0; 4], [0; 4])),
            GeneralSubtree::IpAddress(CidrSubnet::V6([0; 16], [0; 16])),
        ],
    });
    let member_cert = member_params.signed_by(&member_key, issuer)?;
    Ok(vec![
        write_public(&pki.member_ca_cert(), &member_cert.pem())?,
        write_private(&pki.member_ca_key(), &member_key.serialize_pem())?,
    ])
}

/// A CA named `cn`; `constraints` bounds the CAs below it.
fn ca_params(cn: &str, constraints: BasicConstraints) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = common_name(cn);
    params.is_ca = IsCa::Ca(constraints);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    set_validity(&mut params, CA_VALIDITY);
    Ok(params)
}

/// The parameters of node `id`'s certificate.
fn node_params(id: u64, hosts: &[String]) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = common_name(&format!("{NODE_CN_PREFIX}{id}"));
    let mut names = vec![node_server_name(id)];
    for host in hosts {
        if !names.contains(host) {
            names.push(host.clone());
        }
    }
    params.subject_alt_names = names.iter().map(|n| san(n)).collect::<Result<_>>()?;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_VALIDITY);
    Ok(params)
}

fn client_params(name: &str) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = common_name(name);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_VALIDITY);
    Ok(params)
}

fn write_node(pki: &PkiDir, issuer: &Issuer<'_, KeyPair>, id: u64, hosts: &[String]) -> Result<Vec<PathBuf>> {
    let key = KeyPair::generate()?;
    let cert = node_params(id, hosts)?.signed_by(&key, issuer)?;
    Ok(vec![write_public(&pki.node_cert(id), &cert.pem())?, write_private(&pki.node_key(id), &key.serialize_pem())?])
}

fn write_client(pki: &PkiDir, issuer: &Issuer<'_, KeyPair>, name: &str) -> Result<Vec<PathBuf>> {
    let key = KeyPair::generate()?;
    let cert = client_params(name)?.signed_by(&key, issuer)?;
    Ok(vec![
        write_public(&pki.client_cert(name), &cert.pem())?,
        write_private(&pki.client_key(name), &key.serialize_pem())?,
    ])
}

/// The root CA of an existing PKI directory, ready to sign: its key from
/// `root_dir/ca-key.pem` when given, else `root/ca-key.pem` (or
/// `ca-key.pem` of a PKI made before the CA split).
fn load_issuer(pki: &PkiDir, root_dir: Option<&Path>) -> Result<Issuer<'static, KeyPair>> {
    let ca_pem = read_text(&pki.ca_cert())?;
    Ok(Issuer::from_ca_cert_pem(&ca_pem, load_root_key(pki, root_dir)?)?)
}

/// The root CA's key: from `root_dir/ca-key.pem` when given, else
/// `root/ca-key.pem` (or `ca-key.pem` of a PKI made before the CA split).
fn load_root_key(pki: &PkiDir, root_dir: Option<&Path>) -> Result<KeyPair> {
    let key_path = match root_dir {
        Some(_) => root_key_path(pki, root_dir),
        None if pki.root_key().exists() || !pki.legacy_ca_key().exists() => pki.root_key(),
        None => pki.legacy_ca_key(),
    };
    Ok(KeyPair::from_pem(&read_text(&key_path)?)?)
}

fn common_name(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

/// An IP SAN for addresses, a DNS SAN otherwise.
fn san(name: &str) -> Result<SanType> {
    match name.parse::<IpAddr>() {
        Ok(ip) => Ok(SanType::IpAddress(ip)),
        Err(_) => Ok(SanType::DnsName(name.to_string().try_into()?)),
    }
}

fn validate_hosts(hosts: &[String]) -> Result<()> {
    for host in hosts {
        if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '/' || c == ',') {
            return Err(Error::Usage(format!("invalid --hosts entry {host:?}: expected an IP address or DNS name")));
        }
    }
    Ok(())
}

fn validate_client_name(name: &str) -> Result<()> {
    let bad = name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) || name == "ca";
    if bad {
        return Err(Error::Usage(format!(
            "invalid client name {name:?}: it names the certificate's CN and its file, so it must be non-empty, \
             not start with '.', contain no '/', and not be \"ca\""
        )));
    }
    Ok(())
}

/// Splits a `--hosts` list (`127.0.0.1,localhost`), dropping blanks.
pub fn parse_hosts(list: &str) -> Vec<String> {
    list.split(',').map(str::trim).filter(|h| !h.is_empty()).map(str::to_string).collect()
}

fn set_validity(params: &mut CertificateParams, validity: Duration) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    // rcgen takes `time::OffsetDateTime`; build it from the epoch so this
    // crate needs no direct `time` dependency.
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    let start = now.saturating_sub(BACKDATE);
    params.not_before = epoch + start;
    params.not_after = epoch + now + validity.max(DAY);
}

/// Valid from a little before now (clock skew) until `validity` from now.
fn set_validity_exactly(params: &mut CertificateParams, validity: Duration) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + now.saturating_sub(BACKDATE);
    params.not_after = epoch + now + validity;
}

fn refuse_existing(paths: &[PathBuf]) -> Result<()> {
    match paths.iter().find(|p| p.exists()) {
        Some(path) => Err(Error::Exists { path: path.clone() }),
        None => Ok(()),
    }
}

fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

fn write_public(path: &Path, contents: &str) -> Result<PathBuf> {
    fs::write(path, contents).map_err(|e| Error::io(path, e))?;
    Ok(path.to_path_buf())
}

/// Writes a private key readable by its owner only (mode 0600 on Unix).
fn write_private(path: &Path, contents: &str) -> Result<PathBuf> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| Error::io(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(0o600)).map_err(|e| Error::io(path, e))?;
    }
    file.write_all(contents.as_bytes()).map_err(|e| Error::io(path, e))?;
    Ok(path.to_path_buf())
}

mod subject;
#[cfg(test)]
mod tests;
