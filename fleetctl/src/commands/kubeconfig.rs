//! `fleetctl kubeconfig [--user admin|viewer]`: a kubeconfig for kubectl
//! with one cluster and context per hub node that serves the
//! Kubernetes-compatible API (`fleet-node --kube-listen`, recorded by each
//! node in the store), the fleet CA, and the chosen client certificate.

use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use fleet_api::Object;
use serde_json::{json, Value};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::io::Io;
use crate::kind::KindArg;
use crate::types::ListQuery;

/// The record kind and apiVersion each node writes (see the node's `kube::advertise`).
const ENDPOINT_KIND: &str = "NodeEndpoint";
const ENDPOINT_API_VERSION: &str = "fleet.internal/v1";

/// One node's API address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeEndpoint {
    pub node: u64,
    pub address: String,
}

/// The addresses the records name, by node id.
pub fn endpoints_of(records: &[Object]) -> Vec<KubeEndpoint> {
    let mut found: Vec<KubeEndpoint> = records
        .iter()
        .filter_map(|o| {
            let spec = o.spec()?;
            Some(KubeEndpoint {
                node: spec.get("nodeId").and_then(Value::as_u64)?,
                address: spec.get("kubeAddress").and_then(Value::as_str)?.to_string(),
            })
        })
        .collect();
    found.sort_by_key(|e| e.node);
    found
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// The kubeconfig (YAML) for `endpoints`, with the CA and `user`'s certificate from `tls_dir`.
pub fn render(endpoints: &[KubeEndpoint], tls_dir: &Path, user: &str) -> Result<String> {
    let ca = STANDARD.encode(read(&tls_dir.join("ca.pem"))?);
    let cert = STANDARD.encode(read(&tls_dir.join(format!("{user}.pem")))?);
    let key = STANDARD.encode(read(&tls_dir.join(format!("{user}-key.pem")))?);
    let user_name = format!("fleet-{user}");
    let clusters: Vec<Value> = endpoints
        .iter()
        .map(|e| {
            json!({"name": format!("fleet-node-{}", e.node),
                   "cluster": {"server": format!("https://{}", e.address), "certificate-authority-data": ca}})
        })
        .collect();
    let contexts: Vec<Value> = endpoints
        .iter()
        .map(|e| {
            let name = format!("fleet-node-{}", e.node);
            json!({"name": name, "context": {"cluster": name, "user": user_name}})
        })
        .collect();
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": clusters,
        "users": [{"name": user_name, "user": {"client-certificate-data": cert, "client-key-data": key}}],
        "contexts": contexts,
        "current-context": endpoints.first().map(|e| format!("fleet-node-{}", e.node)).unwrap_or_default(),
    });
    serde_yaml_ng::to_string(&config).map_err(|e| Error::Render(e.to_string()))
}

/// Prints the kubeconfig.
pub async fn run(client: &Client, tls_dir: &Path, user: &str, io: &mut Io) -> Result<()> {
    let kind = KindArg { name: ENDPOINT_KIND.into(), api_version: ENDPOINT_API_VERSION.into(), info: None };
    let query = ListQuery {
        kind,
        namespace: String::new(),
        all_namespaces: true,
        label_selector: String::new(),
        consistent: true,
    };
    let endpoints = endpoints_of(&client.list(&query).await?.items);
    if endpoints.is_empty() {
        return Err(Error::Usage(
            "no hub node serves the Kubernetes-compatible API: start fleet-node with --kube-listen ADDR".into(),
        ));
    }
    io.out(&render(&endpoints, tls_dir, user)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_context_per_node_with_the_users_certificate() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["ca.pem", "viewer.pem", "viewer-key.pem"] {
            std::fs::write(dir.path().join(f), f).unwrap();
        }
        let records: Vec<Object> = [(2, "127.0.0.1:6444"), (1, "127.0.0.1:6443")]
            .iter()
            .map(|(id, a)| {
                Object::from_json(
                    json!({"apiVersion": ENDPOINT_API_VERSION, "kind": ENDPOINT_KIND, "metadata": {"name": format!("node-{id}")},
                           "spec": {"nodeId": id, "kubeAddress": a}})
                    .to_string()
                    .as_bytes(),
                )
                .unwrap()
            })
            .collect();
        let endpoints = endpoints_of(&records);
        assert_eq!(endpoints[0], KubeEndpoint { node: 1, address: "127.0.0.1:6443".into() });
        let text = render(&endpoints, dir.path(), "viewer").unwrap();
        let config: Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(config["current-context"], "fleet-node-1");
        assert_eq!(config["clusters"][1]["cluster"]["server"], "https://127.0.0.1:6444");
        assert_eq!(config["users"][0]["user"]["client-key-data"], STANDARD.encode("viewer-key.pem"));
        assert!(render(&endpoints, dir.path(), "nobody").is_err(), "a missing certificate is named");
    }
}
