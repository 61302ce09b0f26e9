//! Bootstrap tokens: `<id>.<secret>`, single-use, expiring, bound to one
//! cluster name, stored only as a hash of the secret.

use std::time::{Duration, SystemTime};

use fleet_api::Object;
use sha2::{Digest, Sha256};
use tonic::Status;

use super::internal::{self, TokenSpec, TokenStatus};

/// A token just made: what to show the admin once, and what to store.
pub struct NewToken {
    pub token: String,
    pub expires_at: String,
    pub object: Object,
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Makes a token for `cluster` valid for `ttl`.
pub fn new_token(cluster: &str, ttl: Duration) -> NewToken {
    let id = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
    let secret = uuid::Uuid::new_v4().simple().to_string();
    let expires_at = humantime::format_rfc3339_seconds(SystemTime::now() + ttl).to_string();
    let spec = TokenSpec { cluster: cluster.to_string(), secret_hash: hash(&secret), expires_at: expires_at.clone() };
    let object = internal::token_object(&id, &spec, uuid::Uuid::new_v4().to_string());
    NewToken { token: format!("{id}.{secret}"), expires_at, object }
}

/// Splits a token into id and secret.
pub fn parse(token: &str) -> Result<(&str, &str), Status> {
    match token.trim().split_once('.') {
        Some((id, secret)) if !id.is_empty() && !secret.is_empty() => Ok((id, secret)),
        _ => Err(Status::unauthenticated("token: Invalid value: not a bootstrap token (expected <id>.<secret>)")),
    }
}

/// Checks a stored token against what a joining agent presented.
pub fn check(stored: Option<&Object>, id: &str, secret: &str, cluster: &str, now: SystemTime) -> Result<(), Status> {
    let refuse = |why: String| Err(Status::permission_denied(format!("bootstrap token {id}: {why}")));
    let Some(object) = stored else {
        return refuse("not found (tokens are single-use and expire; create one with fleetctl token create)".into());
    };
    let Some(spec) = internal::spec::<TokenSpec>(object) else {
        return refuse("unreadable".into());
    };
    if spec.secret_hash != hash(secret) {
        return refuse("wrong secret".into());
    }
    if spec.cluster != cluster {
        return refuse(format!("was issued for cluster {:?}, not {cluster:?}", spec.cluster));
    }
    if let Some(status) = object.status().and_then(|s| serde_json::from_value::<TokenStatus>(s.clone()).ok()) {
        return refuse(format!("was already used at {}", status.used_at));
    }
    match humantime::parse_rfc3339(&spec.expires_at) {
        Ok(expiry) if now < expiry => Ok(()),
        Ok(_) => refuse(format!("expired at {}", spec.expires_at)),
        Err(_) => refuse("has an unreadable expiry".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_bound_to_its_cluster_secret_and_lifetime() {
        let t = new_token("east", Duration::from_secs(60));
        let (id, secret) = parse(&t.token).unwrap();
        let now = SystemTime::now();
        assert!(check(Some(&t.object), id, secret, "east", now).is_ok());
        assert!(check(Some(&t.object), id, secret, "west", now).unwrap_err().message().contains("not \"west\""));
        assert!(check(Some(&t.object), id, "nope", "east", now).unwrap_err().message().contains("wrong secret"));
        let later = now + Duration::from_secs(120);
        assert!(check(Some(&t.object), id, secret, "east", later).unwrap_err().message().contains("expired"));
        let mut used = t.object.clone();
        used.rest.insert("status".into(), serde_json::json!({"usedAt": "t", "certificateSerial": "ab"}));
        assert!(check(Some(&used), id, secret, "east", now).unwrap_err().message().contains("already used"));
        assert!(check(None, id, secret, "east", now).is_err());
        assert!(parse("nodot").is_err());
    }
}
