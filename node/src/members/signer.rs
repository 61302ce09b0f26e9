//! Signing member certificates with the fleet CA, on the leader, outside the
//! state machine. The subject is decided here (`system:fleet:member:<cluster>`),
//! whatever the CSR asked for; only its public key is used.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fleet_proto::tls::{read_file, PkiDir, MEMBER_CN_PREFIX};
use rcgen::{
    CertificateSigningRequestParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber,
};
use tonic::Status;

use crate::error::Error;

/// A certificate issued to a member.
#[derive(Debug, Clone)]
pub struct Issued {
    pub certificate_pem: String,
    pub serial: String,
    pub expires_at: String,
}

/// The fleet CA, able to sign member certificates.
pub struct Signer {
    ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
    validity: Duration,
}

impl Signer {
    /// Loads the CA from the PKI dir; `None` when this node has no CA key
    /// (then members cannot join through it).
    pub fn load(pki: &PkiDir, validity: Duration) -> Result<Option<Signer>, Error> {
        if !pki.ca_key().exists() {
            return Ok(None);
        }
        let ca_pem = String::from_utf8_lossy(&read_file(&pki.ca_cert())?).to_string();
        let key_pem = String::from_utf8_lossy(&read_file(&pki.ca_key())?).to_string();
        let key = KeyPair::from_pem(&key_pem)
            .map_err(|e| Error::Config(format!("{}: not a usable CA key: {e}", pki.ca_key().display())))?;
        let issuer = Issuer::from_ca_cert_pem(&ca_pem, key)
            .map_err(|e| Error::Config(format!("{}: not a usable CA certificate: {e}", pki.ca_cert().display())))?;
        Ok(Some(Signer { ca_pem, issuer, validity }))
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Signs `csr_pem` as the certificate of member `cluster`.
    pub fn sign(&self, csr_pem: &str, cluster: &str) -> Result<Issued, Status> {
        let mut csr = CertificateSigningRequestParams::from_pem(csr_pem).map_err(|e| {
            Status::invalid_argument(format!("csr_pem: not a valid PEM certificate signing request: {e}"))
        })?;
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
        let cert = csr.signed_by(&self.issuer).map_err(|e| Status::internal(format!("signing failed: {e}")))?;
        let expires_at = humantime::format_rfc3339_seconds(SystemTime::now() + self.validity).to_string();
        Ok(Issued { certificate_pem: cert.pem(), serial: hex::encode(serial), expires_at })
    }
}
