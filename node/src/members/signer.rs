//! Signing member certificates with the member CA, on the leader, outside
//! the state machine. The subject is decided here
//! (`system:fleet:member:<cluster>`), whatever the CSR asked for; only its
//! public key is used. The member CA (`member-ca.pem`, `member-ca-key.pem`)
//! is an intermediate under the root (`ca.pem`) that can sign no CA, and
//! whose other names the hub ignores: a node holds no key that can make an
//! admin, viewer or node certificate. A PKI made before the split (its root
//! key in `ca-key.pem`) still works: the root then signs members.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fleet_proto::tls::{read_file, PkiDir, MEMBER_CN_PREFIX};
use rcgen::{
    CertificateSigningRequestParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber,
};

use crate::error::{Error, RequestError};

/// A certificate issued to a member.
#[derive(Debug, Clone)]
pub struct Issued {
    pub certificate_pem: String,
    pub serial: String,
    pub expires_at: String,
}

/// The member CA, able to sign member certificates.
pub struct Signer {
    /// The root certificate, PEM: what agents trust.
    ca_pem: String,
    /// The member CA's certificate, PEM, sent after each member certificate
    /// so the chain reaches the root (empty when the root signs).
    chain_pem: String,
    issuer: Issuer<'static, KeyPair>,
    validity: Duration,
}

impl Signer {
    /// Loads the member CA from the PKI dir (or the root's key of a PKI
    /// made before the split); `None` when this node has neither key (then
    /// members cannot join through it).
    pub fn load(pki: &PkiDir, validity: Duration) -> Result<Option<Signer>, Error> {
        let (cert_path, key_path) = if pki.member_ca_key().exists() {
            (pki.member_ca_cert(), pki.member_ca_key())
        } else if pki.legacy_ca_key().exists() {
            (pki.ca_cert(), pki.legacy_ca_key())
        } else {
            return Ok(None);
        };
        let text = |path: &std::path::Path| -> Result<String, Error> {
            Ok(String::from_utf8_lossy(&read_file(path)?).to_string())
        };
        let ca_pem = text(&pki.ca_cert())?;
        let issuer_pem = text(&cert_path)?;
        let key = KeyPair::from_pem(&text(&key_path)?)
            .map_err(|e| Error::Config(format!("{}: not a usable CA key: {e}", key_path.display())))?;
        let issuer = Issuer::from_ca_cert_pem(&issuer_pem, key)
            .map_err(|e| Error::Config(format!("{}: not a usable CA certificate: {e}", cert_path.display())))?;
        let chain_pem = if cert_path == pki.ca_cert() { String::new() } else { issuer_pem };
        Ok(Some(Signer { ca_pem, chain_pem, issuer, validity }))
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Signs `csr_pem` as the certificate of member `cluster`.
    pub fn sign(&self, csr_pem: &str, cluster: &str) -> Result<Issued, RequestError> {
        let mut csr = CertificateSigningRequestParams::from_pem(csr_pem)
            .map_err(|e| RequestError::invalid(format!("csr_pem: not a valid PEM certificate signing request: {e}")))?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, format!("{MEMBER_CN_PREFIX}{cluster}"));
        dn.push(DnType::OrganizationName, "system:fleet:members");
        let params = &mut csr.params;
        params.distinguished_name = dn;
        params.subject_alt_names = Vec::new();
        params.is_ca = rcgen::IsCa::NoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let mut serial = *uuid::Uuid::new_v4().as_bytes();
        // Positive and with a non-zero first byte, so DER keeps all 16 bytes
        // and the serial read back from the certificate is exactly this.
        serial[0] = (serial[0] & 0x3f) | 0x40;
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let epoch = rcgen::date_time_ymd(1970, 1, 1);
        params.not_before = epoch + now.saturating_sub(Duration::from_secs(300));
        params.not_after = epoch + now + self.validity;
        let cert = csr.signed_by(&self.issuer).map_err(|e| RequestError::internal(format!("signing failed: {e}")))?;
        let expires_at = fleet_api::time::rfc3339_of(SystemTime::now() + self.validity);
        let certificate_pem = format!("{}{}", cert.pem(), self.chain_pem);
        Ok(Issued { certificate_pem, serial: hex::encode(serial), expires_at })
    }
}
