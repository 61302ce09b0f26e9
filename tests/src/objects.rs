//! Test objects and small client helpers.

use fleet_api::Object;
use fleet_proto::fleet::fleet_client::FleetClient;
use fleet_proto::fleet::{ApplyRequest, GetRequest, KindRef, ListRequest, ReadOptions};
use serde_json::json;
use tonic::transport::Channel;

/// A ConfigMap document as JSON bytes.
pub fn configmap(namespace: &str, name: &str, value: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "test"}},
        "data": {"value": value},
    }))
    .unwrap_or_default()
}

/// A kind reference by name.
pub fn kind(name: &str) -> Option<KindRef> {
    Some(KindRef { kind: name.to_string(), api_version: String::new() })
}

/// Applies documents; returns the write's resourceVersion.
pub async fn apply(client: &mut FleetClient<Channel>, documents: Vec<Vec<u8>>) -> Result<u64, tonic::Status> {
    let reply = client.apply(ApplyRequest { documents, sources: vec![] }).await?;
    Ok(reply.into_inner().resource_version)
}

/// Reads one ConfigMap, at least as new as `min_rv`.
pub async fn get_configmap(
    client: &mut FleetClient<Channel>,
    namespace: &str,
    name: &str,
    min_rv: u64,
) -> Result<Object, tonic::Status> {
    let reply = client
        .get(GetRequest {
            kind: kind("cm"),
            namespace: namespace.into(),
            name: name.into(),
            read: Some(ReadOptions { min_resource_version: min_rv, consistent: false }),
        })
        .await?;
    Object::from_json(&reply.into_inner().object).map_err(|e| tonic::Status::internal(e.to_string()))
}

/// Lists the ConfigMaps of a namespace, at least as new as `min_rv`.
pub async fn list_configmaps(
    client: &mut FleetClient<Channel>,
    namespace: &str,
    min_rv: u64,
) -> Result<Vec<Object>, tonic::Status> {
    let reply = client
        .list(ListRequest {
            kind: kind("cm"),
            namespace: namespace.into(),
            all_namespaces: false,
            label_selector: String::new(),
            read: Some(ReadOptions { min_resource_version: min_rv, consistent: false }),
        })
        .await?;
    reply
        .into_inner()
        .items
        .iter()
        .map(|b| Object::from_json(b).map_err(|e| tonic::Status::internal(e.to_string())))
        .collect()
}

/// Reads any object by kind name.
pub async fn get(
    client: &mut FleetClient<Channel>,
    kind_name: &str,
    namespace: &str,
    name: &str,
) -> Result<Object, tonic::Status> {
    let reply = client
        .get(GetRequest {
            kind: kind(kind_name),
            namespace: namespace.into(),
            name: name.into(),
            read: Some(ReadOptions::default()),
        })
        .await?;
    Object::from_json(&reply.into_inner().object).map_err(|e| tonic::Status::internal(e.to_string()))
}

/// A Work for `cluster` holding `manifests`.
pub fn work(cluster: &str, name: &str, manifests: Vec<serde_json::Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "placement.kubernetes-fleet.io/v1beta1",
        "kind": "Work",
        "metadata": {"name": name, "namespace": format!("fleet-member-{cluster}")},
        "spec": {"workload": {"manifests": manifests}},
    }))
    .unwrap_or_default()
}

/// The status of condition `type_` of an object's `status.conditions`, with its reason.
pub fn condition(object: &Object, type_: &str) -> Option<(String, String, i64)> {
    let conditions = object.status()?.get("conditions")?.as_array()?;
    let c = conditions.iter().find(|c| c["type"] == type_)?;
    Some((
        c["status"].as_str().unwrap_or_default().to_string(),
        c["reason"].as_str().unwrap_or_default().to_string(),
        c["observedGeneration"].as_i64().unwrap_or(0),
    ))
}

/// Lists objects of a kind (by name) in every namespace, with a `-l` selector.
pub async fn list_all(
    client: &mut FleetClient<Channel>,
    kind_name: &str,
    selector: &str,
) -> Result<Vec<Object>, String> {
    let reply = client
        .list(ListRequest {
            kind: kind(kind_name),
            namespace: String::new(),
            all_namespaces: true,
            label_selector: selector.into(),
            read: Some(ReadOptions::default()),
        })
        .await
        .map_err(|e| e.to_string())?;
    reply.into_inner().items.iter().map(|b| Object::from_json(b).map_err(|e| e.to_string())).collect()
}
