//! Objects only the hub writes, in the reserved group `fleet.internal`:
//! bootstrap tokens (stored as hashes) and each member's issued certificate
//! serials (owned by its MemberCluster, so deleting the cluster revokes them).

use fleet_api::{Object, ObjectKey, ObjectMeta, OwnerReference};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The reserved API group; users cannot apply objects of it.
pub const INTERNAL_GROUP: &str = "fleet.internal";
/// Namespace of bootstrap tokens.
pub const SYSTEM_NAMESPACE: &str = "fleet-system";
/// Kind of a bootstrap token.
pub const TOKEN_KIND: &str = "BootstrapToken";
/// Kind of a member's credential record.
pub const CREDENTIAL_KIND: &str = "MemberCredential";

/// `spec` of a bootstrap token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenSpec {
    pub cluster: String,
    /// sha256 of the secret part, hex.
    pub secret_hash: String,
    /// RFC 3339.
    pub expires_at: String,
}

/// `status` of a used token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenStatus {
    pub used_at: String,
    pub certificate_serial: String,
}

/// `spec` of a member's credential record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialSpec {
    /// Serials (hex) of the certificates that currently identify the member.
    pub serials: Vec<String>,
}

/// The key of token `id`.
pub fn token_key(id: &str) -> ObjectKey {
    ObjectKey::new(INTERNAL_GROUP, TOKEN_KIND, SYSTEM_NAMESPACE, id)
}

/// The key of a member's credential record.
pub fn credential_key(cluster: &str) -> ObjectKey {
    ObjectKey::new(INTERNAL_GROUP, CREDENTIAL_KIND, "", cluster)
}

fn internal_object(kind: &str, namespace: Option<&str>, name: &str, spec: Value) -> Object {
    let mut object = Object {
        api_version: format!("{INTERNAL_GROUP}/v1"),
        kind: kind.to_string(),
        metadata: ObjectMeta { name: name.to_string(), namespace: namespace.map(str::to_string), ..Default::default() },
        rest: Default::default(),
    };
    object.rest.insert("spec".into(), spec);
    object
}

/// A new token object.
pub fn token_object(id: &str, spec: &TokenSpec, uid: String) -> Object {
    let mut o = internal_object(TOKEN_KIND, Some(SYSTEM_NAMESPACE), id, fleet_api::typed::encode(spec));
    o.metadata.uid = uid;
    o
}

/// A credential record owned by the MemberCluster with `owner_uid`.
pub fn credential_object(cluster: &str, spec: &CredentialSpec, owner_uid: &str) -> Object {
    let mut o = internal_object(CREDENTIAL_KIND, None, cluster, fleet_api::typed::encode(spec));
    o.metadata.owner_references = vec![OwnerReference {
        api_version: format!("{}/v1beta1", fleet_api::kinds::FLEET_CLUSTER_GROUP),
        kind: "MemberCluster".into(),
        name: cluster.to_string(),
        uid: owner_uid.to_string(),
        controller: Some(true),
        block_owner_deletion: None,
    }];
    o
}

/// Decodes the spec of an internal object.
pub fn spec<T: serde::de::DeserializeOwned>(object: &Object) -> Option<T> {
    object.spec().and_then(|s| serde_json::from_value(s.clone()).ok())
}
