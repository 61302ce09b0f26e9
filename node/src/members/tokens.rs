//! Bootstrap tokens: `<id>.<secret>`, single-use, expiring, bound to one
//! cluster name, stored only as a hash of the secret.

use std::time::{Duration, SystemTime};

use fleet_api::Object;
use sha2::{Digest, Sha256};

use super::internal::{self, TokenSpec, TokenStatus};
use crate::error::RequestError;

/// A token just made: what to show the admin once, and what to store.
pub struct NewToken {
    pub token: String,
    pub expires_at: String,
    pub object: Object,
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The longest a bootstrap token may be valid: it is a credential that
/// anyone holding it can use to join.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// Refuses a token lifetime of zero or over [`MAX_TTL`].
pub fn check_ttl(ttl: Duration) -> Result<(), RequestError> {
    if ttl.is_zero() || ttl > MAX_TTL {
        return Err(RequestError::invalid(format!(
            "ttl: Invalid value: {}: a bootstrap token lives at least 1s and at most {}",
            humantime::format_duration(ttl),
            humantime::format_duration(MAX_TTL)
        )));
    }
    Ok(())
}

/// Makes a token for `cluster` valid for `ttl` (at most [`MAX_TTL`]).
pub fn new_token(cluster: &str, ttl: Duration) -> Result<NewToken, RequestError> {
    check_ttl(ttl)?;
    let id = uuid::Uuid::new_v4().simple().to_string()[..10].to_string();
    let secret = uuid::Uuid::new_v4().simple().to_string();
    let expiry = SystemTime::now()
        .checked_add(ttl)
        .ok_or_else(|| RequestError::invalid("ttl: Invalid value: too far in the future"))?;
    let expires_at = fleet_api::time::rfc3339_of(expiry);
    let spec = TokenSpec { cluster: cluster.to_string(), secret_hash: hash(&secret), expires_at: expires_at.clone() };
    let object = internal::token_object(&id, &spec, uuid::Uuid::new_v4().to_string());
    Ok(NewToken { token: format!("{id}.{secret}"), expires_at, object })
}

/// Whether a stored token can never be used again (already used, expired at
/// `now`, or unreadable), so it can be deleted.
pub fn is_dead(object: &Object, now: SystemTime) -> bool {
    if object.status().is_some_and(|s| !s.is_null()) {
        return true;
    }
    match internal::spec::<TokenSpec>(object).map(|spec| fleet_api::time::system_time(&spec.expires_at)) {
        Some(Some(expiry)) => now >= expiry,
        _ => true,
    }
}

/// Splits a token into id and secret.
pub fn parse(token: &str) -> Result<(&str, &str), RequestError> {
    match token.trim().split_once('.') {
        Some((id, secret)) if !id.is_empty() && !secret.is_empty() => Ok((id, secret)),
        _ => Err(RequestError::unauthenticated("token: Invalid value: not a bootstrap token (expected <id>.<secret>)")),
    }
}

/// Checks a stored token against what a joining agent presented.
pub fn check(
    stored: Option<&Object>,
    id: &str,
    secret: &str,
    cluster: &str,
    now: SystemTime,
) -> Result<(), RequestError> {
    let refuse = |why: String| Err(RequestError::forbidden(format!("bootstrap token {id}: {why}")));
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
    match fleet_api::time::system_time(&spec.expires_at) {
        Some(expiry) if now < expiry => Ok(()),
        Some(_) => refuse(format!("expired at {}", spec.expires_at)),
        None => refuse("has an unreadable expiry".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_bound_to_its_cluster_secret_and_lifetime() {
        let t = new_token("east", Duration::from_secs(60)).unwrap();
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
        assert!(!is_dead(&t.object, now));
        assert!(is_dead(&t.object, later), "expired");
        assert!(is_dead(&used, now), "used");
    }

    #[test]
    fn a_token_lives_at_most_a_day() {
        assert!(new_token("east", MAX_TTL).is_ok());
        for ttl in [Duration::ZERO, MAX_TTL + Duration::from_secs(1), Duration::from_secs(u64::MAX)] {
            let err = new_token("east", ttl).err().expect("refused");
            assert!(matches!(err, RequestError::Invalid(_)), "{err}");
            assert!(err.message().contains("ttl") && err.message().contains("at most 1day"), "{}", err.message());
        }
    }
}
