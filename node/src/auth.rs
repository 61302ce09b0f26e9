//! Who may call what. The caller is the subject of its client certificate
//! (verified against the fleet CA by TLS); every RPC checks it here.

use fleet_proto::tls::Identity;
use tonic::{Request, Status};

/// What an RPC needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Get, list, watch, cluster status.
    Read,
    /// Apply, delete, status writes, membership changes.
    Write,
}

/// The caller's identity, from its verified client certificate.
pub fn caller<T>(request: &Request<T>) -> Result<Identity, Status> {
    let certs = request.peer_certs().ok_or_else(|| {
        Status::unauthenticated("a client certificate signed by the fleet CA is required (see fleetctl --tls-dir)")
    })?;
    let cert = certs
        .first()
        .ok_or_else(|| Status::unauthenticated("a client certificate signed by the fleet CA is required"))?;
    Identity::from_der(cert.as_ref()).map_err(|e| Status::unauthenticated(e.to_string()))
}

/// Checks that the caller may perform `rpc` with `access`; returns who it is.
pub fn authorize<T>(request: &Request<T>, rpc: &str, access: Access) -> Result<Identity, Status> {
    let identity = caller(request)?;
    let allowed = matches!((&identity, access), (Identity::Admin, _) | (Identity::Viewer, Access::Read));
    if allowed {
        Ok(identity)
    } else {
        let why = match (&identity, access) {
            (Identity::Viewer, Access::Write) => "viewer may only read".to_string(),
            (Identity::Node(_), _) => "hub node certificates are for peer traffic only".to_string(),
            (Identity::Member(_), _) => "member agents may not call this".to_string(),
            _ => "this certificate names no Fleet role (admin, viewer)".to_string(),
        };
        Err(Status::permission_denied(format!(
            "{identity:?} may not call {rpc}: {why}",
            identity = identity.to_string()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_without_a_certificate_are_unauthenticated() {
        let req = Request::new(());
        let err = authorize(&req, "Get", Access::Read).unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
    }
}
