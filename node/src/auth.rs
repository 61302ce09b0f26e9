//! Who may call what. The caller is the subject of its client certificate
//! (verified against the fleet CA by TLS); every RPC checks it here first.
//! Member agents pass this gate only for the RPCs they use, and are then
//! confined to their own Work by [`crate::members::authz`]. Users (`admin`
//! and `viewer` included) pass it for every RPC but the members' own, and
//! each RPC then asks RBAC ([`crate::rbac`]) about what it does.

use fleet_proto::tls::{presented, Identity};
use tonic::Request;

use crate::error::RequestError;

/// What an RPC needs of this gate (RBAC decides users' requests after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Get, list, watch, cluster status.
    Read,
    /// Apply, delete, status writes, membership changes, tokens.
    Write,
    /// Heartbeats and certificate renewal: member agents only.
    MemberOnly,
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub identity: Identity,
    /// Serial (hex) of the certificate presented.
    pub serial: String,
}

/// The caller's identity, from its verified client certificate.
pub fn caller<T>(request: &Request<T>) -> Result<Caller, RequestError> {
    let certs = request.peer_certs().ok_or_else(|| {
        RequestError::unauthenticated(
            "a client certificate signed by the fleet CA is required (see fleetctl --tls-dir)",
        )
    })?;
    let cert = certs
        .first()
        .ok_or_else(|| RequestError::unauthenticated("a client certificate signed by the fleet CA is required"))?;
    caller_of_certificate(cert.as_ref())
}

/// Checks that the caller may perform `rpc`; `members` says whether member
/// agents may call it at all (their scope is checked afterwards).
pub fn authorize<T>(request: &Request<T>, rpc: &str, access: Access, members: bool) -> Result<Caller, RequestError> {
    permit(caller(request)?, rpc, access, members)
}

/// The caller's identity, from the first certificate of a verified chain.
pub fn caller_of_certificate(der: &[u8]) -> Result<Caller, RequestError> {
    let parsed = presented(der).map_err(|e| RequestError::unauthenticated(e.to_string()))?;
    Ok(Caller { identity: parsed.identity, serial: parsed.serial })
}

/// Checks that an authenticated caller may perform `rpc` (every wire format
/// asks this one function).
pub fn permit(caller: Caller, rpc: &str, access: Access, members: bool) -> Result<Caller, RequestError> {
    let allowed = match (&caller.identity, access) {
        (Identity::Member(_), _) => members,
        (_, Access::MemberOnly) => false,
        (Identity::Admin | Identity::Viewer | Identity::User { .. }, _) => true,
        _ => false,
    };
    if allowed {
        return Ok(caller);
    }
    let why = match (&caller.identity, access) {
        (_, Access::MemberOnly) => "only member agents call this".to_string(),
        (Identity::Node(_), _) => "hub node certificates are for peer traffic only".to_string(),
        (Identity::Member(c), _) => {
            format!(
                "a member may only read the Work of namespace \"fleet-member-{c}\", write its status, and heartbeat"
            )
        }
        _ => "this certificate names no user of the hub".to_string(),
    };
    Err(RequestError::forbidden(format!("{:?} may not call {rpc}: {why}", caller.identity.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_without_a_certificate_are_unauthenticated() {
        let req = Request::new(());
        let err = authorize(&req, "Get", Access::Read, false).unwrap_err();
        assert!(matches!(err, RequestError::Unauthenticated(_)), "{err}");
    }
}
