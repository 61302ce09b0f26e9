use std::sync::Arc;

use fleet_proto::tls::{common_name as cn_of, Identity};
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::*;

fn hosts() -> Vec<String> {
    parse_hosts("127.0.0.1,localhost")
}

fn der(path: &Path) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(path).unwrap()
}

fn identity(path: &Path) -> Identity {
    Identity::from_der(&der(path)).unwrap()
}

fn sans(path: &Path) -> Vec<String> {
    let der = der(path);
    let (_, cert) = X509Certificate::from_der(&der).unwrap();
    let mut names = Vec::new();
    for ext in cert.extensions() {
        if let ParsedExtension::SubjectAlternativeName(san) = ext.parsed_extension() {
            for name in &san.general_names {
                match name {
                    GeneralName::DNSName(d) => names.push(d.to_string()),
                    GeneralName::IPAddress(ip) => names.push(format!("ip:{ip:?}")),
                    other => names.push(format!("{other:?}")),
                }
            }
        }
    }
    names
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(pki: &PkiDir) -> Arc<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(&pki.ca_cert())).unwrap();
    Arc::new(roots)
}

/// Verifies `cert` as a TLS server certificate for `name` under the PKI's CA.
fn verify_server(pki: &PkiDir, cert: &Path, name: &str) -> Result<(), rustls::Error> {
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(roots(pki), provider()).build().unwrap();
    let server_name = ServerName::try_from(name.to_string()).unwrap();
    verifier.verify_server_cert(&der(cert), &[], &server_name, &[], UnixTime::now()).map(|_| ())
}

/// Verifies `cert` as a TLS client certificate under the PKI's CA.
fn verify_client(pki: &PkiDir, cert: &Path) -> Result<(), rustls::Error> {
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(roots(pki), provider()).build().unwrap();
    verifier.verify_client_cert(&der(cert), &[], UnixTime::now()).map(|_| ())
}

#[test]
fn init_makes_every_file_with_the_right_identities() {
    let dir = tempfile::tempdir().unwrap();
    let written = init(dir.path(), None, 3, &hosts(), false).unwrap();
    assert_eq!(written.len(), 4 + 3 * 2 + 2 * 2);
    let pki = PkiDir::new(dir.path());
    assert_eq!(cn_of(&der(&pki.ca_cert())).unwrap(), CA_CN);
    assert_eq!(cn_of(&der(&pki.member_ca_cert())).unwrap(), MEMBER_CA_CN);
    // The root key is in root/, not among the files a node reads.
    assert!(pki.root_key().exists() && pki.root_key().parent() != Some(dir.path()));
    assert!(!pki.legacy_ca_key().exists());
    for id in 1..=3 {
        assert_eq!(identity(&pki.node_cert(id)), Identity::Node(id));
        assert!(pki.node_key(id).exists());
    }
    assert_eq!(identity(&pki.client_cert("admin")), Identity::Admin);
    assert_eq!(identity(&pki.client_cert("viewer")), Identity::Viewer);
    assert!(KeyPair::from_pem(&fs::read_to_string(pki.client_key("admin")).unwrap()).is_ok());
}

#[test]
fn node_certs_carry_their_names_and_verify_for_both_roles() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 2, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    let names = sans(&pki.node_cert(2));
    assert_eq!(names, vec!["node-2.fleet".to_string(), "ip:[127, 0, 0, 1]".to_string(), "localhost".to_string()]);
    verify_server(&pki, &pki.node_cert(2), "node-2.fleet").unwrap();
    verify_server(&pki, &pki.node_cert(2), "127.0.0.1").unwrap();
    verify_server(&pki, &pki.node_cert(2), "localhost").unwrap();
    assert!(verify_server(&pki, &pki.node_cert(2), "node-1.fleet").is_err());
    verify_client(&pki, &pki.node_cert(1)).unwrap();
    verify_client(&pki, &pki.client_cert("admin")).unwrap();
    assert!(verify_server(&pki, &pki.client_cert("admin"), "localhost").is_err());
}

#[cfg(unix)]
#[test]
fn key_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    for key in [pki.root_key(), pki.member_ca_key(), pki.node_key(1), pki.client_key("admin"), pki.client_key("viewer")]
    {
        let mode = fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", key.display());
    }
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    let before = fs::read(pki.ca_cert()).unwrap();
    assert!(matches!(init(dir.path(), None, 1, &hosts(), false), Err(Error::Exists { .. })));
    assert_eq!(fs::read(pki.ca_cert()).unwrap(), before);
    init(dir.path(), None, 1, &hosts(), true).unwrap();
    assert_ne!(fs::read(pki.ca_cert()).unwrap(), before);
}

#[test]
fn issue_node_signs_with_the_existing_ca() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 3, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    issue_node(dir.path(), None, 4, &parse_hosts("10.0.0.4,node4.example"), false).unwrap();
    assert_eq!(identity(&pki.node_cert(4)), Identity::Node(4));
    assert_eq!(sans(&pki.node_cert(4))[0], "node-4.fleet");
    verify_server(&pki, &pki.node_cert(4), "node-4.fleet").unwrap();
    verify_server(&pki, &pki.node_cert(4), "node4.example").unwrap();
    verify_client(&pki, &pki.node_cert(4)).unwrap();
    assert!(matches!(issue_node(dir.path(), None, 4, &hosts(), false), Err(Error::Exists { .. })));
    issue_node(dir.path(), None, 4, &hosts(), true).unwrap();
}

#[test]
fn issue_client_makes_any_identity() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    issue_client(dir.path(), None, "intruder", false).unwrap();
    assert_eq!(identity(&pki.client_cert("intruder")), Identity::User { name: "intruder".into(), groups: vec![] });
    verify_client(&pki, &pki.client_cert("intruder")).unwrap();
    issue_client(dir.path(), None, "system:fleet:member:east", false).unwrap();
    assert_eq!(identity(&pki.client_cert("system:fleet:member:east")), Identity::Member("east".into()));
    for bad in ["", "ca", "../x", ".hidden"] {
        assert!(matches!(issue_client(dir.path(), None, bad, false), Err(Error::Usage(_))), "{bad:?}");
    }
    assert!(matches!(issue_client(dir.path(), None, "admin", false), Err(Error::Exists { .. })));
}

#[test]
fn issue_user_names_the_user_and_its_groups() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    let groups = vec!["team-a".to_string(), "team-b".to_string()];
    let day = Duration::from_secs(24 * 3600);
    issue_user(dir.path(), None, "alice", &groups, day, false).unwrap();
    assert_eq!(identity(&pki.client_cert("alice")), Identity::User { name: "alice".into(), groups: groups.clone() });
    verify_client(&pki, &pki.client_cert("alice")).unwrap();
    let der = der(&pki.client_cert("alice"));
    let (_, cert) = X509Certificate::from_der(&der).unwrap();
    let lifetime = cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp();
    assert_eq!(lifetime, (day + BACKDATE).as_secs() as i64);
    assert!(matches!(issue_user(dir.path(), None, "alice", &groups, day, false), Err(Error::Exists { .. })));
    for bad in ["admin", "viewer", "system:fleet:node:1", "../x"] {
        assert!(matches!(issue_user(dir.path(), None, bad, &[], day, false), Err(Error::Usage(_))), "{bad:?}");
    }
    let err = issue_user(dir.path(), None, "bob", &[" ".into()], day, false).unwrap_err();
    assert!(err.to_string().contains("--group"), "{err}");
}

#[test]
fn issuing_without_a_ca_names_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = issue_client(dir.path(), None, "x", false).unwrap_err();
    assert!(err.to_string().contains("ca.pem"), "{err}");
}

/// Signs a client certificate named `cn` with the member CA (what a thief
/// of a node's files could do).
fn sign_with_member_ca(pki: &PkiDir, cn: &str) -> CertificateDer<'static> {
    let member_pem = fs::read_to_string(pki.member_ca_cert()).unwrap();
    let key = KeyPair::from_pem(&fs::read_to_string(pki.member_ca_key()).unwrap()).unwrap();
    let issuer = Issuer::from_ca_cert_pem(&member_pem, key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let cert = client_params(cn).unwrap().signed_by(&leaf_key, &issuer).unwrap();
    cert.der().clone()
}

#[test]
fn the_member_ca_can_sign_members_only_and_no_ca() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    let member_ca = der(&pki.member_ca_cert());
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots(&pki), provider()).build().unwrap();
    // A member certificate from the member CA chains to the root.
    let member = sign_with_member_ca(&pki, "system:fleet:member:east");
    verifier.verify_client_cert(&member, std::slice::from_ref(&member_ca), UnixTime::now()).unwrap();
    let presented = fleet_proto::tls::presented(&member).unwrap();
    assert_eq!(presented.identity, Identity::Member("east".into()));
    // An "admin" or a node from it chains too, but names no role.
    for cn in ["admin", "viewer", "system:fleet:node:1"] {
        let forged = sign_with_member_ca(&pki, cn);
        verifier.verify_client_cert(&forged, std::slice::from_ref(&member_ca), UnixTime::now()).unwrap();
        let identity = fleet_proto::tls::presented(&forged).unwrap().identity;
        assert!(matches!(identity, Identity::Other(_)), "{cn}: {identity:?}");
    }
    // A CA made with the member CA's key is not accepted as an issuer.
    let member_pem = fs::read_to_string(pki.member_ca_cert()).unwrap();
    let key = KeyPair::from_pem(&fs::read_to_string(pki.member_ca_key()).unwrap()).unwrap();
    let issuer = Issuer::from_ca_cert_pem(&member_pem, key).unwrap();
    let sub_key = KeyPair::generate().unwrap();
    let sub_params = ca_params("sub-ca", BasicConstraints::Unconstrained).unwrap();
    let sub = sub_params.signed_by(&sub_key, &issuer).unwrap();
    let sub_issuer = Issuer::new(ca_params("sub-ca", BasicConstraints::Unconstrained).unwrap(), sub_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = client_params("admin").unwrap().signed_by(&leaf_key, &sub_issuer).unwrap();
    let chain = [sub.der().clone(), member_ca];
    assert!(verifier.verify_client_cert(leaf.der(), &chain, UnixTime::now()).is_err(), "path length 0 is enforced");
}

#[test]
fn zero_nodes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(init(dir.path(), None, 0, &hosts(), false), Err(Error::Usage(_))));
}

/// A server certificate for `names` signed with the member CA's key.
fn server_cert_from_member_ca(pki: &PkiDir, names: &[&str]) -> CertificateDer<'static> {
    let member_pem = fs::read_to_string(pki.member_ca_cert()).unwrap();
    let key = KeyPair::from_pem(&fs::read_to_string(pki.member_ca_key()).unwrap()).unwrap();
    let issuer = Issuer::from_ca_cert_pem(&member_pem, key).unwrap();
    let mut params = node_params(1, &[]).unwrap();
    params.subject_alt_names = names.iter().map(|n| san(n).unwrap()).collect();
    let leaf_key = KeyPair::generate().unwrap();
    params.signed_by(&leaf_key, &issuer).unwrap().der().clone()
}

/// Whether a server certificate for `names` signed with the member CA's
/// key (presented with the member CA) verifies when dialling `dial`.
fn member_ca_server_verifies(pki: &PkiDir, names: &[&str], dial: &str) -> bool {
    let member_ca = der(&pki.member_ca_cert());
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(roots(pki), provider()).build().unwrap();
    let forged = server_cert_from_member_ca(pki, names);
    let server_name = ServerName::try_from(dial.to_string()).unwrap();
    verifier.verify_server_cert(&forged, std::slice::from_ref(&member_ca), &server_name, &[], UnixTime::now()).is_ok()
}

#[test]
fn the_member_ca_cannot_make_a_server_certificate_for_a_node_or_an_address() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    for (names, dial) in [
        (&["node-1.fleet"][..], "node-1.fleet"),
        (&["127.0.0.1"][..], "127.0.0.1"),
        (&["localhost", "::1"][..], "localhost"),
        (&["hub.example.com"][..], "hub.example.com"),
    ] {
        let verified = member_ca_server_verifies(&pki, names, dial);
        assert!(!verified, "a member-CA server certificate for {names:?} was accepted for {dial}");
    }
    // The node's own certificate (from the root) still verifies.
    verify_server(&pki, &pki.node_cert(1), "node-1.fleet").unwrap();
}

#[test]
fn the_root_key_can_be_kept_in_a_directory_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let written = init(dir.path(), Some(root.path()), 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    assert!(written.contains(&root.path().join("ca-key.pem")), "{written:?}");
    assert!(!pki.root_key().exists() && !pki.legacy_ca_key().exists(), "no root key in the PKI directory");
    // Issuing needs the root directory; without it the missing key is named.
    let err = issue_node(dir.path(), None, 2, &hosts(), false).unwrap_err().to_string();
    assert!(err.contains("ca-key.pem"), "{err}");
    issue_node(dir.path(), Some(root.path()), 2, &hosts(), false).unwrap();
    verify_server(&pki, &pki.node_cert(2), "node-2.fleet").unwrap();
    issue_client(dir.path(), Some(root.path()), "ops", false).unwrap();
    verify_client(&pki, &pki.client_cert("ops")).unwrap();
}

/// Whether a server certificate the member CA signs for `node-1.fleet` verifies.
fn member_ca_can_make_a_server(pki: &PkiDir) -> bool {
    member_ca_server_verifies(pki, &["node-1.fleet"], "node-1.fleet")
}

#[test]
fn issue_member_ca_replaces_an_unconstrained_member_ca_and_keeps_issued_members_valid() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    // The member CA of a PKI made before it was constrained.
    let issuer = load_issuer(&pki, None).unwrap();
    let old_key = KeyPair::generate().unwrap();
    let old = ca_params(MEMBER_CA_CN, BasicConstraints::Constrained(0)).unwrap().signed_by(&old_key, &issuer).unwrap();
    fs::write(pki.member_ca_cert(), old.pem()).unwrap();
    fs::write(pki.member_ca_key(), old_key.serialize_pem()).unwrap();
    assert!(member_ca_can_make_a_server(&pki), "the old member CA is unconstrained");
    let issued = sign_with_member_ca(&pki, "system:fleet:member:east");

    let written = issue_member_ca(dir.path(), None).unwrap();
    assert_eq!(written, vec![pki.member_ca_cert(), pki.member_ca_key()]);
    assert!(!member_ca_can_make_a_server(&pki), "the new member CA is constrained");
    assert_ne!(der(&pki.member_ca_cert()), *old.der());
    // A member certificate of the old member CA still chains to the root.
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots(&pki), provider()).build().unwrap();
    verifier.verify_client_cert(&issued, std::slice::from_ref(old.der()), UnixTime::now()).unwrap();
    let fresh = sign_with_member_ca(&pki, "system:fleet:member:west");
    verifier.verify_client_cert(&fresh, &[der(&pki.member_ca_cert())], UnixTime::now()).unwrap();
}

#[test]
fn issue_member_ca_moves_the_root_key_of_a_pki_made_before_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    init(dir.path(), None, 1, &hosts(), false).unwrap();
    let pki = PkiDir::new(dir.path());
    // Before the split: one key, in ca-key.pem next to the node files.
    fs::rename(pki.root_key(), pki.legacy_ca_key()).unwrap();
    fs::remove_file(pki.member_ca_cert()).unwrap();
    fs::remove_file(pki.member_ca_key()).unwrap();

    let written = issue_member_ca(dir.path(), Some(root.path())).unwrap();
    assert!(written.contains(&root.path().join("ca-key.pem")), "{written:?}");
    assert!(!pki.legacy_ca_key().exists(), "no root key is left where nodes read");
    assert!(pki.member_ca_key().exists());
    assert!(!member_ca_can_make_a_server(&pki));
    // The moved key still signs as the root.
    issue_node(dir.path(), Some(root.path()), 2, &hosts(), false).unwrap();
    verify_server(&pki, &pki.node_cert(2), "node-2.fleet").unwrap();
}
