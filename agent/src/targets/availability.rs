//! Whether a live object is available, following the table of
//! docs/spec/rollout.md ("Availability"). A pure function of the object as a
//! Kubernetes API server reports it (`metadata.generation`, `status`), shared
//! by every target.

use fleet_api::Object;
use serde_json::Value;

/// What the availability table says about one live object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// Ready for use.
    Available,
    /// Not available yet, and why (e.g. `1 of 3 replicas available`).
    NotYetAvailable(String),
    /// A kind whose availability cannot be judged (Jobs, custom resources...).
    NotTrackable,
}

impl Availability {
    /// Whether this is [`Availability::Available`].
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available)
    }
}

/// Kinds (group, Kind) available as soon as they exist.
const AVAILABLE_AT_ONCE: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "ServiceAccount"),
    ("", "LimitRange"),
    ("", "ResourceQuota"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "IngressClass"),
    ("storage.k8s.io", "StorageClass"),
    ("scheduling.k8s.io", "PriorityClass"),
];

/// Judges a live object by the availability table of docs/spec/rollout.md.
pub fn availability(live: &Object) -> Availability {
    match (live.group(), live.kind.as_str()) {
        ("apps", "Deployment") => deployment(live),
        ("apps", "StatefulSet") => stateful_set(live),
        ("apps", "DaemonSet") => daemon_set(live),
        ("", "Service") => service(live),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(live),
        (group, kind) if AVAILABLE_AT_ONCE.contains(&(group, kind)) => Availability::Available,
        _ => Availability::NotTrackable,
    }
}

/// The integer at `path` under `field` (`spec`/`status`), if any.
fn int_at(object: &Object, field: &str, path: &[&str]) -> Option<i64> {
    let mut value = object.rest.get(field)?;
    for part in path {
        value = value.get(part)?;
    }
    value.as_i64()
}

/// A `status` count, 0 when absent (Kubernetes omits zero counts).
fn status_count(object: &Object, name: &str) -> i64 {
    int_at(object, "status", &[name]).unwrap_or(0)
}

/// `Some(reason)` when the controller has not yet observed the latest generation.
fn generation_behind(object: &Object) -> Option<String> {
    let generation = object.metadata.generation;
    let observed = int_at(object, "status", &["observedGeneration"]).unwrap_or(0);
    if observed >= generation {
        None
    } else {
        Some(format!("the controller has observed generation {observed}, not yet the current generation {generation}"))
    }
}

/// Desired replicas: `spec.replicas`, 1 when absent (the API server's default).
fn desired_replicas(object: &Object) -> i64 {
    int_at(object, "spec", &["replicas"]).unwrap_or(1)
}

fn not_yet(reasons: Vec<String>) -> Availability {
    if reasons.is_empty() {
        Availability::Available
    } else {
        Availability::NotYetAvailable(reasons.join("; "))
    }
}

/// Observed generation current; updated = available = desired; none unavailable.
fn deployment(live: &Object) -> Availability {
    if let Some(reason) = generation_behind(live) {
        return Availability::NotYetAvailable(reason);
    }
    let desired = desired_replicas(live);
    let updated = status_count(live, "updatedReplicas");
    let available = status_count(live, "availableReplicas");
    let unavailable = status_count(live, "unavailableReplicas");
    let mut reasons = Vec::new();
    if available != desired {
        reasons.push(format!("{available} of {desired} replicas available"));
    }
    if updated != desired {
        reasons.push(format!("{updated} of {desired} replicas updated"));
    }
    if unavailable != 0 {
        reasons.push(format!("{unavailable} replicas unavailable"));
    }
    not_yet(reasons)
}

/// Observed generation current; available = current = updated = desired.
fn stateful_set(live: &Object) -> Availability {
    if let Some(reason) = generation_behind(live) {
        return Availability::NotYetAvailable(reason);
    }
    let desired = desired_replicas(live);
    let mut reasons = Vec::new();
    for (field, word) in
        [("availableReplicas", "available"), ("currentReplicas", "current"), ("updatedReplicas", "updated")]
    {
        let n = status_count(live, field);
        if n != desired {
            reasons.push(format!("{n} of {desired} replicas {word}"));
        }
    }
    not_yet(reasons)
}

/// Observed generation current; available = updated = desired scheduled.
fn daemon_set(live: &Object) -> Availability {
    if let Some(reason) = generation_behind(live) {
        return Availability::NotYetAvailable(reason);
    }
    let desired = status_count(live, "desiredNumberScheduled");
    let mut reasons = Vec::new();
    for (field, word) in [("numberAvailable", "available"), ("updatedNumberScheduled", "updated")] {
        let n = status_count(live, field);
        if n != desired {
            reasons.push(format!("{n} of {desired} scheduled pods {word}"));
        }
    }
    not_yet(reasons)
}

/// ClusterIP/NodePort: has a cluster IP; LoadBalancer: has an ingress
/// address; ExternalName (no cluster IP by design): not trackable.
fn service(live: &Object) -> Availability {
    let spec = live.spec();
    let kind = spec.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("ClusterIP");
    match kind {
        "ClusterIP" | "NodePort" => {
            let ip = spec.and_then(|s| s.get("clusterIP")).and_then(Value::as_str).unwrap_or("");
            let first_of_ips =
                spec.and_then(|s| s.get("clusterIPs")).and_then(|ips| ips.get(0)).and_then(Value::as_str).unwrap_or("");
            if ip.is_empty() && first_of_ips.is_empty() {
                Availability::NotYetAvailable("no cluster IP assigned yet".to_string())
            } else {
                Availability::Available
            }
        }
        "LoadBalancer" => {
            let has_address =
                live.status().and_then(|s| s.pointer("/loadBalancer/ingress")).and_then(Value::as_array).is_some_and(
                    |ingress| {
                        ingress.iter().any(|i| {
                            ["ip", "hostname"]
                                .iter()
                                .any(|f| i.get(f).and_then(Value::as_str).is_some_and(|s| !s.is_empty()))
                        })
                    },
                );
            if has_address {
                Availability::Available
            } else {
                Availability::NotYetAvailable("the load balancer has no ingress address yet".to_string())
            }
        }
        _ => Availability::NotTrackable,
    }
}

/// Established and NamesAccepted both True.
fn crd(live: &Object) -> Availability {
    let conditions = live.status().and_then(|s| s.get("conditions")).and_then(Value::as_array);
    let is_true = |type_: &str| {
        conditions.is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(type_)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
    };
    let missing: Vec<&str> = ["Established", "NamesAccepted"].into_iter().filter(|t| !is_true(t)).collect();
    if missing.is_empty() {
        Availability::Available
    } else {
        Availability::NotYetAvailable(format!("condition {} not True yet", missing.join(" and ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Object {
        serde_json::from_value(value).unwrap()
    }

    fn workload(kind: &str, generation: i64, spec: Value, status: Value) -> Object {
        object(json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "w", "namespace": "app", "generation": generation},
            "spec": spec, "status": status
        }))
    }

    fn reason(a: Availability) -> String {
        match a {
            Availability::NotYetAvailable(r) => r,
            other => panic!("expected not yet available, got {other:?}"),
        }
    }

    #[test]
    fn deployment_rows() {
        let ready = json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3});
        assert_eq!(
            availability(&workload("Deployment", 2, json!({"replicas": 3}), ready.clone())),
            Availability::Available
        );
        // Generation not observed yet.
        let r = reason(availability(&workload("Deployment", 3, json!({"replicas": 3}), ready)));
        assert!(r.contains("observed generation 2") && r.contains("generation 3"), "{r}");
        // Not all available.
        let status = json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 1, "unavailableReplicas": 2});
        let r = reason(availability(&workload("Deployment", 1, json!({"replicas": 3}), status)));
        assert!(r.contains("1 of 3 replicas available") && r.contains("2 replicas unavailable"), "{r}");
        // Not all updated.
        let status = json!({"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 2});
        let r = reason(availability(&workload("Deployment", 1, json!({"replicas": 2}), status)));
        assert_eq!(r, "1 of 2 replicas updated");
        // Replicas default to 1; no status at all is not available.
        let status = json!({"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 1});
        assert!(availability(&workload("Deployment", 1, json!({}), status)).is_available());
        assert!(matches!(
            availability(&workload("Deployment", 1, json!({}), json!({}))),
            Availability::NotYetAvailable(_)
        ));
        // Scaled to zero, observed: available.
        assert!(availability(&workload("Deployment", 1, json!({"replicas": 0}), json!({"observedGeneration": 1})))
            .is_available());
    }

    #[test]
    fn stateful_set_rows() {
        let spec = json!({"replicas": 2});
        let ok = json!({"observedGeneration": 1, "replicas": 2, "availableReplicas": 2, "currentReplicas": 2, "updatedReplicas": 2});
        assert!(availability(&workload("StatefulSet", 1, spec.clone(), ok.clone())).is_available());
        assert!(!availability(&workload("StatefulSet", 2, spec.clone(), ok)).is_available());
        let partial =
            json!({"observedGeneration": 1, "availableReplicas": 2, "currentReplicas": 1, "updatedReplicas": 2});
        assert_eq!(reason(availability(&workload("StatefulSet", 1, spec, partial))), "1 of 2 replicas current");
    }

    #[test]
    fn daemon_set_rows() {
        let ok = json!({"observedGeneration": 4, "desiredNumberScheduled": 3, "numberAvailable": 3, "updatedNumberScheduled": 3});
        assert!(availability(&workload("DaemonSet", 4, json!({}), ok.clone())).is_available());
        assert!(!availability(&workload("DaemonSet", 5, json!({}), ok)).is_available());
        let partial = json!({"observedGeneration": 4, "desiredNumberScheduled": 3, "numberAvailable": 0, "updatedNumberScheduled": 3});
        assert_eq!(
            reason(availability(&workload("DaemonSet", 4, json!({}), partial))),
            "0 of 3 scheduled pods available"
        );
    }

    fn svc(spec: Value, status: Value) -> Object {
        object(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "a"}, "spec": spec, "status": status}),
        )
    }

    #[test]
    fn service_rows() {
        assert!(availability(&svc(json!({"clusterIP": "10.96.0.10"}), json!({}))).is_available());
        assert!(availability(&svc(json!({"type": "NodePort", "clusterIPs": ["10.96.0.11"]}), json!({}))).is_available());
        assert!(availability(&svc(json!({"clusterIP": "None"}), json!({}))).is_available());
        assert!(!availability(&svc(json!({"ports": []}), json!({}))).is_available());
        let lb = json!({"type": "LoadBalancer", "clusterIP": "10.96.0.12"});
        assert!(!availability(&svc(lb.clone(), json!({"loadBalancer": {}}))).is_available());
        assert!(
            availability(&svc(lb.clone(), json!({"loadBalancer": {"ingress": [{"ip": "172.18.0.1"}]}}))).is_available()
        );
        assert!(
            availability(&svc(lb, json!({"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}))).is_available()
        );
        assert_eq!(availability(&svc(json!({"type": "ExternalName"}), json!({}))), Availability::NotTrackable);
    }

    #[test]
    fn crd_rows() {
        let crd = |conditions: Value| {
            object(json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"}, "status": {"conditions": conditions}
            }))
        };
        let both = json!([{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]);
        assert!(availability(&crd(both)).is_available());
        let one = json!([{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "False"}]);
        assert_eq!(reason(availability(&crd(one))), "condition Established not True yet");
    }

    #[test]
    fn kinds_available_at_once_and_the_rest_untrackable() {
        for (api_version, kind) in [
            ("v1", "Namespace"),
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "ServiceAccount"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            ("networking.k8s.io/v1", "NetworkPolicy"),
            ("storage.k8s.io/v1", "StorageClass"),
            ("scheduling.k8s.io/v1", "PriorityClass"),
            ("networking.k8s.io/v1", "IngressClass"),
            ("v1", "LimitRange"),
            ("v1", "ResourceQuota"),
        ] {
            let o = object(json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}));
            assert_eq!(availability(&o), Availability::Available, "{kind}");
        }
        for (api_version, kind) in [
            ("batch/v1", "Job"),
            ("example.com/v1", "Widget"),
            ("v1", "Pod"),
            ("apps/v1", "ReplicaSet"),
            ("example.com/v1", "ConfigMap"),
        ] {
            let o = object(json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}));
            assert_eq!(availability(&o), Availability::NotTrackable, "{kind}");
        }
    }
}
