use prost::Message as _;
use serde_json::json;

use super::*;

/// `value` (protobuf's JSON form of a `kind` in `api_version`), encoded and
/// wrapped the way client-go sends it.
fn body(api_version: &str, kind: &str, value: Value) -> Vec<u8> {
    let descriptor = message_of(api_version, kind).expect("a known kind");
    let message = DynamicMessage::deserialize(descriptor, value).expect("protobuf JSON");
    let type_meta = Some(TypeMeta { api_version: api_version.into(), kind: kind.into() });
    let mut out = MAGIC.to_vec();
    out.extend(Unknown { type_meta, raw: message.encode_to_vec() }.encode_to_vec());
    out
}

/// Go writes its non-pointer fields always: empty strings and the zero time.
fn metadata(name: &str, namespace: &str) -> Value {
    json!({"name": name, "namespace": namespace, "generateName": "", "labels": {"app": "web"},
           "creationTimestamp": {"seconds": -62_135_596_800_i64, "nanos": 0}})
}

#[test]
fn the_embedded_descriptors_decode() {
    assert!(pool().is_some_and(|p| p.get_message_by_name("k8s.io.api.core.v1.ConfigMap").is_some()));
}

#[test]
fn a_config_map_and_a_secret_read_as_their_json() {
    let cm = json!({"metadata": metadata("settings", "team"), "data": {"k": "v", "empty": ""}, "immutable": false});
    assert_eq!(
        to_json(&body("v1", "ConfigMap", cm)).expect("decodes"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "immutable": false, "data": {"k": "v", "empty": ""},
               "metadata": {"name": "settings", "namespace": "team", "labels": {"app": "web"}}})
    );
    let secret = json!({"metadata": metadata("token", "team"), "data": {"t": STANDARD.encode(b"s3cr3t")}});
    let json = to_json(&body("v1", "Secret", secret)).expect("decodes");
    assert_eq!(json["data"]["t"], "czNjcjN0", "bytes are base64, as in Kubernetes' JSON");
}

#[test]
fn quantities_int_or_strings_and_times_follow_kubernetes_json() {
    let mut meta = metadata("web", "team");
    meta["creationTimestamp"] = json!({"seconds": 1_764_000_000, "nanos": 0});
    let deployment = json!({
        "metadata": meta,
        "spec": {
            "replicas": 0,
            "strategy": {"rollingUpdate": {"maxSurge": {"type": 1, "strVal": "25%"},
                                           "maxUnavailable": {"type": 0, "intVal": 0}}},
            "template": {"spec": {"containers": [
                {"name": "web", "resources": {"requests": {"cpu": {"string": "250m"}}}}
            ]}}
        }
    });
    let json = to_json(&body("apps/v1", "Deployment", deployment)).expect("decodes");
    assert_eq!(json["spec"]["replicas"], 0, "a zero replica count is kept");
    assert_eq!(json["spec"]["strategy"]["rollingUpdate"], json!({"maxSurge": "25%", "maxUnavailable": 0}));
    assert_eq!(json["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "250m");
    assert_eq!(json["metadata"]["creationTimestamp"], "2025-11-24T16:00:00Z");
}

#[test]
fn a_cluster_role_and_delete_options_of_any_group_read_back() {
    let role =
        json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    let json = to_json(&body("rbac.authorization.k8s.io/v1", "ClusterRole", role)).expect("decodes");
    assert_eq!(
        json["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
        "the core group's empty name is kept in a list"
    );
    let options = json!({"propagationPolicy": "Foreground", "preconditions": {"resourceVersion": "42"}});
    let json = to_json(&body("apps/v1", "DeleteOptions", options)).expect("decodes");
    assert_eq!(json["propagationPolicy"], "Foreground");
    assert_eq!(json["preconditions"]["resourceVersion"], "42");
}

#[test]
fn an_access_review_reads_its_resource_attributes() {
    let review = json!({"spec": {"resourceAttributes": {"verb": "create", "resource": "clusterresourceplacements"}}});
    let json = to_json(&body("authorization.k8s.io/v1", "SelfSubjectAccessReview", review)).expect("decodes");
    assert_eq!(json["spec"]["resourceAttributes"], json!({"verb": "create", "resource": "clusterresourceplacements"}));
}

#[test]
fn unreadable_or_unknown_bodies_are_refused_with_what_to_send() {
    assert_eq!(to_json(b"{}").unwrap_err().code, 400);
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: "placement.kubernetes-fleet.io/v1".into(),
            kind: "ClusterResourcePlacement".into(),
        }),
        raw: Vec::new(),
    };
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    let err = to_json(&body).unwrap_err();
    assert_eq!(err.code, 415);
    assert!(err.message.contains("send it as JSON"), "{}", err.message);
}

/// Go writes a Deployment's non-pointer zeros too; its JSON leaves the
/// `omitempty` ones out but keeps a pointer set to zero (`replicas: 0`).
#[test]
fn zero_scalars_read_as_go_s_json_writes_them() {
    let mut meta = metadata("web", "team");
    meta["generation"] = json!(0);
    let deployment = json!({
        "metadata": meta,
        "spec": {"replicas": 0, "minReadySeconds": 0, "paused": false, "revisionHistoryLimit": 0,
                 "template": {"spec": {"hostNetwork": false, "terminationGracePeriodSeconds": 0,
                                       "containers": [{"name": "app", "image": "nginx", "tty": false, "stdin": false}]}}}
    });
    let json = to_json(&body("apps/v1", "Deployment", deployment)).expect("decodes");
    assert_eq!(
        json["spec"],
        json!({"replicas": 0, "revisionHistoryLimit": 0, "template": {"spec": {
            "terminationGracePeriodSeconds": 0, "containers": [{"name": "app", "image": "nginx"}]}}})
    );
    assert!(json["metadata"].get("generation").is_none(), "{json}");
}
