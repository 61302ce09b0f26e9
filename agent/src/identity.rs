//! The agent's identity: a key generated here (it never leaves the data
//! dir), a certificate for `system:fleet:member:<cluster>` obtained by joining
//! with a bootstrap token, kept in `DIR/tls/`, and renewed before it expires.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::JoinRequest;
use fleet_proto::tls::fingerprint_der;
use rcgen::{CertificateParams, KeyPair};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::config::AgentConfig;
use crate::durable::write_atomic;
use crate::AgentError;

/// The agent's credentials.
#[derive(Debug, Clone)]
pub struct Identity {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub not_before: SystemTime,
    pub not_after: SystemTime,
}

/// `DIR/tls`.
pub fn tls_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("tls")
}

fn paths(data_dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let dir = tls_dir(data_dir);
    (dir.join("ca.pem"), dir.join("agent.pem"), dir.join("agent-key.pem"))
}

impl Identity {
    fn new(ca_pem: String, cert_pem: String, key_pem: String) -> Result<Identity, AgentError> {
        let der = pem::parse(&cert_pem).map_err(|e| AgentError::Identity(format!("certificate is not PEM: {e}")))?;
        let (_, cert) = X509Certificate::from_der(der.contents())
            .map_err(|e| AgentError::Identity(format!("certificate cannot be parsed: {e}")))?;
        let at = |t: i64| SystemTime::UNIX_EPOCH + Duration::from_secs(t.max(0) as u64);
        Ok(Identity {
            not_before: at(cert.validity().not_before.timestamp()),
            not_after: at(cert.validity().not_after.timestamp()),
            ca_pem,
            cert_pem,
            key_pem,
        })
    }

    /// Whether two thirds of the certificate's lifetime have passed.
    pub fn needs_renewal(&self, now: SystemTime) -> bool {
        let life = self.not_after.duration_since(self.not_before).unwrap_or_default();
        now >= self.not_before + life * 2 / 3
    }

    /// When renewal is due.
    pub fn renewal_due(&self) -> SystemTime {
        let life = self.not_after.duration_since(self.not_before).unwrap_or_default();
        self.not_before + life * 2 / 3
    }

    /// TLS settings presenting this identity and trusting the fleet CA.
    pub fn tls(&self) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca_pem))
            .identity(tonic::transport::Identity::from_pem(&self.cert_pem, &self.key_pem))
    }
}

/// The identity stored in the data dir, if any.
pub fn load(data_dir: &Path) -> Result<Option<Identity>, AgentError> {
    let (ca, cert, key) = paths(data_dir);
    if !cert.exists() {
        return Ok(None);
    }
    let read = |p: &Path| fs::read_to_string(p).map_err(|e| AgentError::io(p, e));
    Identity::new(read(&ca)?, read(&cert)?, read(&key)?).map(Some)
}

/// Stores the identity in `DIR/tls/` (key first, certificate last, so a
/// crash never leaves a certificate without its key).
pub fn save(data_dir: &Path, identity: &Identity) -> Result<(), AgentError> {
    let dir = tls_dir(data_dir);
    fs::create_dir_all(&dir).map_err(|e| AgentError::io(&dir, e))?;
    let (ca, cert, key) = paths(data_dir);
    write_atomic(&ca, identity.ca_pem.as_bytes(), false)?;
    write_atomic(&key, identity.key_pem.as_bytes(), true)?;
    write_atomic(&cert, identity.cert_pem.as_bytes(), false)
}

/// A fresh key and a CSR for it (the subject is decided by the hub).
pub fn new_key_and_csr() -> Result<(String, String), AgentError> {
    let key = KeyPair::generate().map_err(|e| AgentError::Identity(format!("key generation failed: {e}")))?;
    let csr = CertificateParams::new(Vec::<String>::new())
        .and_then(|p| p.serialize_request(&key))
        .and_then(|r| r.pem())
        .map_err(|e| AgentError::Identity(format!("CSR creation failed: {e}")))?;
    Ok((key.serialize_pem(), csr))
}

/// Joins the hub with the bootstrap token: trusts the CA given by file or
/// fingerprint, sends token + CSR to any reachable node, and stores the result.
pub async fn join(config: &AgentConfig) -> Result<Identity, AgentError> {
    let token = config.token.as_deref().ok_or_else(|| {
        AgentError::Config(format!(
            "no identity in {} and no --token: create one with `fleetctl token create --cluster {}`",
            tls_dir(&config.data_dir).display(),
            config.cluster
        ))
    })?;
    let ca_pem = match (&config.ca_file, &config.ca_fingerprint) {
        (Some(path), _) => fs::read_to_string(path).map_err(|e| AgentError::io(path, e))?,
        (None, Some(fp)) => fetch_ca(&config.hub, fp).await?,
        (None, None) => {
            return Err(AgentError::Config("joining needs --ca-file or --ca-fingerprint to trust the hub".into()))
        }
    };
    let (key_pem, csr_pem) = new_key_and_csr()?;
    let mut problems = Vec::new();
    for endpoint in &config.hub {
        let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&ca_pem));
        let channel = match Endpoint::from_shared(format!("https://{endpoint}")).and_then(|e| e.tls_config(tls)) {
            Ok(e) => e.connect_timeout(Duration::from_secs(3)).timeout(Duration::from_secs(30)).connect_lazy(),
            Err(e) => {
                problems.push(format!("{endpoint}: {e}"));
                continue;
            }
        };
        let request =
            JoinRequest { cluster: config.cluster.clone(), token: token.to_string(), csr_pem: csr_pem.clone() };
        match FleetClient::new(channel).join(request).await {
            Ok(reply) => {
                let reply = reply.into_inner();
                let identity = Identity::new(reply.ca_pem, reply.certificate_pem, key_pem)?;
                save(&config.data_dir, &identity)?;
                tracing::info!(cluster = %config.cluster, expires = %reply.expires_at, "joined the fleet");
                return Ok(identity);
            }
            Err(s) if s.code() == tonic::Code::Unavailable => problems.push(format!("{endpoint}: {}", s.message())),
            Err(s) => return Err(AgentError::Identity(format!("join refused by {endpoint}: {}", s.message()))),
        }
    }
    Err(AgentError::Hub(format!("no hub node reachable to join: {}", problems.join("; "))))
}

/// Replaces the identity with a renewed one (new key, new certificate).
pub async fn renew(data_dir: &Path, hub: &crate::hub::Hub) -> Result<Identity, AgentError> {
    let current = load(data_dir)?.ok_or_else(|| AgentError::Identity("no identity to renew".into()))?;
    let (key_pem, csr_pem) = new_key_and_csr()?;
    let reply = hub
        .call(move |mut c| {
            let csr_pem = csr_pem.clone();
            async move { c.renew_certificate(fleet_proto::fleet::RenewCertificateRequest { csr_pem }).await }
        })
        .await?;
    let identity = Identity::new(current.ca_pem, reply.certificate_pem, key_pem)?;
    save(data_dir, &identity)?;
    tracing::info!(expires = %reply.expires_at, "certificate renewed");
    Ok(identity)
}

/// Learns the CA certificate from a hub node's TLS chain and keeps it only if
/// its fingerprint is the pinned one. Nothing is sent before the CA is known:
/// the join itself then runs over a fully verified connection.
async fn fetch_ca(endpoints: &[String], fingerprint: &str) -> Result<String, AgentError> {
    let mut problems = Vec::new();
    for endpoint in endpoints {
        match chain_of(endpoint).await {
            Ok(chain) => match chain.iter().find(|der| fingerprint_der(der) == fingerprint) {
                Some(der) => return Ok(pem::encode(&pem::Pem::new("CERTIFICATE", der.clone()))),
                None => problems.push(format!("{endpoint}: no certificate in its chain has fingerprint {fingerprint}")),
            },
            Err(e) => problems.push(format!("{endpoint}: {e}")),
        }
    }
    Err(AgentError::Identity(format!("could not learn the pinned CA: {}", problems.join("; "))))
}

/// Accepts any chain for the sole purpose of reading it (the caller pins by
/// fingerprint and verifies properly afterwards); signatures are still checked.
#[derive(Debug)]
struct ChainRecorder {
    chain: Mutex<Vec<Vec<u8>>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for ChainRecorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let mut chain = self.chain.lock().unwrap_or_else(|p| p.into_inner());
        chain.push(end_entity.to_vec());
        chain.extend(intermediates.iter().map(|c| c.to_vec()));
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

async fn chain_of(endpoint: &str) -> Result<Vec<Vec<u8>>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let recorder = Arc::new(ChainRecorder { chain: Mutex::new(Vec::new()), provider: provider.clone() });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone())
        .with_no_client_auth();
    let host = endpoint.rsplit_once(':').map(|(h, _)| h).unwrap_or(endpoint).trim_matches(['[', ']']);
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let tcp = tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(endpoint))
        .await
        .map_err(|_| "connect timed out".to_string())?
        .map_err(|e| e.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tls = tokio::time::timeout(Duration::from_secs(3), connector.connect(name, tcp))
        .await
        .map_err(|_| "TLS handshake timed out".to_string())?
        .map_err(|e| e.to_string())?;
    drop(tls);
    let chain = recorder.chain.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csr_carries_a_fresh_key() {
        let (key, csr) = new_key_and_csr().unwrap();
        assert!(key.contains("PRIVATE KEY") && csr.contains("CERTIFICATE REQUEST"));
        let (key2, _) = new_key_and_csr().unwrap();
        assert_ne!(key, key2);
    }
}
