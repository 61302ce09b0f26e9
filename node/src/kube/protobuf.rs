//! The one protobuf body the API reads: kubectl's typed clients send
//! built-in kinds as Kubernetes protobuf (`application/vnd.kubernetes.protobuf`:
//! the bytes `k8s\0`, then a `runtime.Unknown` wrapping the object), and
//! `kubectl auth can-i` has no JSON fallback. Only the fields the access
//! review reads are declared; prost skips the rest.

use serde_json::{json, Value};

use super::errors::KubeError;

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// `runtime.Unknown`: the envelope of every protobuf body.
#[derive(Clone, PartialEq, prost::Message)]
struct Unknown {
    #[prost(bytes = "vec", tag = "2")]
    raw: Vec<u8>,
}

/// `authorization/v1.SelfSubjectAccessReview` (spec only).
#[derive(Clone, PartialEq, prost::Message)]
struct Review {
    #[prost(message, optional, tag = "2")]
    spec: Option<ReviewSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ReviewSpec {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    non_resource_attributes: Option<NonResourceAttributes>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ResourceAttributes {
    #[prost(string, tag = "1")]
    namespace: String,
    #[prost(string, tag = "2")]
    verb: String,
    #[prost(string, tag = "3")]
    group: String,
    #[prost(string, tag = "4")]
    version: String,
    #[prost(string, tag = "5")]
    resource: String,
    #[prost(string, tag = "6")]
    subresource: String,
    #[prost(string, tag = "7")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct NonResourceAttributes {
    #[prost(string, tag = "1")]
    path: String,
    #[prost(string, tag = "2")]
    verb: String,
}

/// A protobuf SelfSubjectAccessReview as the JSON object it stands for.
pub fn access_review(body: &[u8]) -> Result<Value, KubeError> {
    use prost::Message;
    let invalid =
        |why: String| KubeError::bad_request(format!("the protobuf SelfSubjectAccessReview is unreadable: {why}"));
    let wrapped = body.strip_prefix(MAGIC).ok_or_else(|| invalid("it does not start with k8s\\0".into()))?;
    let unknown = Unknown::decode(wrapped).map_err(|e| invalid(e.to_string()))?;
    let review = Review::decode(unknown.raw.as_slice()).map_err(|e| invalid(e.to_string()))?;
    let mut spec = json!({});
    if let Some(a) = review.spec.as_ref().and_then(|s| s.resource_attributes.as_ref()) {
        spec["resourceAttributes"] = json!({"namespace": a.namespace, "verb": a.verb, "group": a.group,
            "version": a.version, "resource": a.resource, "subresource": a.subresource, "name": a.name});
    }
    if let Some(a) = review.spec.as_ref().and_then(|s| s.non_resource_attributes.as_ref()) {
        spec["nonResourceAttributes"] = json!({"path": a.path, "verb": a.verb});
    }
    Ok(json!({"spec": spec}))
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn reads_the_resource_attributes_of_a_wrapped_review() {
        let attributes = ResourceAttributes {
            namespace: "team".into(),
            verb: "create".into(),
            group: "placement.kubernetes-fleet.io".into(),
            resource: "clusterresourceplacements".into(),
            ..Default::default()
        };
        let review =
            Review { spec: Some(ReviewSpec { resource_attributes: Some(attributes), non_resource_attributes: None }) };
        let mut body = MAGIC.to_vec();
        body.extend(Unknown { raw: review.encode_to_vec() }.encode_to_vec());
        let spec = &access_review(&body).expect("decodes")["spec"]["resourceAttributes"];
        assert_eq!(
            (spec["verb"].as_str(), spec["resource"].as_str()),
            (Some("create"), Some("clusterresourceplacements"))
        );
        assert_eq!(access_review(b"{}").unwrap_err().code, 400);
    }
}
