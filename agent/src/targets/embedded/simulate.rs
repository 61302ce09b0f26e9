//! The simulated controllers: what the API server defaults and allocates
//! when an object is written ([`server_defaults`]), and the `status` the
//! controllers would report when it is read ([`live_view`]). Status is
//! computed from the stored object, the time its generation becomes ready
//! and the node count, so every reader (the agent, `fleet-agent inspect`)
//! sees the same thing without anything running in the background.

use std::collections::BTreeSet;
use std::time::SystemTime;

use fleet_api::Object;
use serde_json::{json, Map, Value};

use super::store::Record;
use super::workload::{field, pod_count, Workload};
use crate::targets::TargetError;

/// Cluster IPs and node ports already taken by other Services.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allocated {
    /// `spec.clusterIP` of every Service.
    pub cluster_ips: BTreeSet<String>,
    /// Every `spec.ports[].nodePort`.
    pub node_ports: BTreeSet<i64>,
}

impl Allocated {
    /// What a stored object holds.
    pub fn add(&mut self, object: &Object) {
        if !object.group().is_empty() || object.kind != "Service" {
            return;
        }
        if let Some(ip) = field(object, &["spec", "clusterIP"]).and_then(Value::as_str) {
            self.cluster_ips.insert(ip.to_string());
        }
        for port in field(object, &["spec", "ports"]).and_then(Value::as_array).into_iter().flatten() {
            if let Some(n) = port.get("nodePort").and_then(Value::as_i64) {
                self.node_ports.insert(n);
            }
        }
    }
}

/// FNV-1a, for deterministic starting points of allocations.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The object's `spec`, made an (empty) object first if it is absent or not one.
fn spec_mut(object: &mut Object) -> Option<&mut Map<String, Value>> {
    let spec = object.rest.entry("spec").or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    spec.as_object_mut()
}

/// Fills what the API server defaults or allocates: `spec.replicas` (1) of
/// Deployments, StatefulSets and ReplicaSets; a Service's `type`,
/// `clusterIP`/`clusterIPs` (from 10.96.0.0/16) and node ports (30000-32767),
/// kept across updates (`previous`) and refused if changed (immutable); a
/// Namespace's name label and `kubernetes` finalizer.
pub(crate) fn server_defaults(
    object: &mut Object,
    previous: Option<&Object>,
    allocated: &Allocated,
) -> Result<(), TargetError> {
    match (object.group(), object.kind.as_str()) {
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet") => {
            if let Some(spec) = spec_mut(object) {
                spec.entry("replicas").or_insert(json!(1));
            }
            Ok(())
        }
        ("", "Service") => service_defaults(object, previous, allocated),
        ("", "Namespace") => {
            fleet_api::defaults::apply(object);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn service_defaults(object: &mut Object, previous: Option<&Object>, allocated: &Allocated) -> Result<(), TargetError> {
    let seed = fnv(&format!("{}/{}", object.metadata.namespace.as_deref().unwrap_or(""), object.metadata.name));
    let name = object.metadata.name.clone();
    let previous_ip = previous
        .and_then(|p| field(p, &["spec", "clusterIP"]))
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .map(str::to_string);
    let previous_ports: Vec<Value> =
        previous.and_then(|p| field(p, &["spec", "ports"])).and_then(Value::as_array).cloned().unwrap_or_default();
    let Some(spec) = spec_mut(object) else {
        return Ok(());
    };
    let service_type = spec.entry("type").or_insert(json!("ClusterIP")).as_str().unwrap_or("ClusterIP").to_string();
    if service_type == "ExternalName" {
        return Ok(());
    }
    let ip = spec.get("clusterIP").and_then(Value::as_str).filter(|ip| !ip.is_empty()).map(str::to_string);
    let ip = match (ip, previous_ip) {
        (Some(ip), Some(old)) if ip != old => {
            return Err(TargetError::Invalid(format!(
                "Service {name:?} is invalid: spec.clusterIP: Invalid value: {ip:?}: field is immutable (it is {old:?})"
            )));
        }
        (Some(ip), _) => ip,
        (None, Some(old)) => old,
        (None, None) => allocate_ip(seed, &allocated.cluster_ips),
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    if service_type == "NodePort" || service_type == "LoadBalancer" {
        let mut taken = allocated.node_ports.clone();
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for port in ports.iter().filter_map(|p| p.get("nodePort")).filter_map(Value::as_i64) {
                taken.insert(port);
            }
            for (i, port) in ports.iter_mut().enumerate() {
                if port.get("nodePort").is_some() || !port.is_object() {
                    continue;
                }
                let same = |p: &&Value| p.get("port") == port.get("port") && p.get("protocol") == port.get("protocol");
                let reused = previous_ports.iter().find(same).and_then(|p| p.get("nodePort")).and_then(Value::as_i64);
                let node_port = reused.unwrap_or_else(|| allocate_node_port(seed.wrapping_add(i as u64), &taken));
                taken.insert(node_port);
                port["nodePort"] = json!(node_port);
            }
        }
    }
    Ok(())
}

/// A free address of 10.96.0.0/16 (never .0, .255, nor 10.96.0.1, the API server's).
fn allocate_ip(seed: u64, taken: &BTreeSet<String>) -> String {
    let span: u64 = 65536;
    (0..span)
        .map(|i| (seed.wrapping_add(i)) % span)
        .filter(|n| n % 256 != 0 && n % 256 != 255 && *n != 1)
        .map(|n| format!("10.96.{}.{}", n / 256, n % 256))
        .find(|ip| !taken.contains(ip))
        .unwrap_or_else(|| "10.96.255.254".to_string())
}

/// A free node port of 30000-32767.
fn allocate_node_port(seed: u64, taken: &BTreeSet<i64>) -> i64 {
    let span: i64 = 2768;
    let start = i64::try_from(seed % 2768).unwrap_or(0);
    (0..span).map(|i| 30000 + (start + i) % span).find(|p| !taken.contains(p)).unwrap_or(30000)
}

/// The object as a reader sees it at `now`: the stored object with the
/// `status` its controller would report.
pub(crate) fn live_view(record: &Record, nodes: u32, now: SystemTime) -> Object {
    let mut object = record.object.clone();
    let ready = now >= record.ready_time();
    let since =
        if ready { record.ready_at.clone() } else { object.metadata.creation_timestamp.clone().unwrap_or_default() };
    let status = match (object.group(), object.kind.as_str()) {
        ("", "Namespace") => Some(json!({"phase": "Active"})),
        ("", "Service") => service_status(&object, ready),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Some(crd_status(&object, &since)),
        _ => Workload::of(&object).map(|w| workload_status(&object, w, nodes, ready, &since)),
    };
    if let Some(status) = status {
        object.rest.insert("status".into(), status);
    }
    object
}

/// A status map from counts, leaving out zeros as Kubernetes does.
fn counts(observed_generation: i64, pairs: &[(&str, i64)]) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("observedGeneration".into(), json!(observed_generation));
    for (name, n) in pairs {
        if *n != 0 {
            map.insert(name.to_string(), json!(n));
        }
    }
    map
}

fn condition(type_: &str, status: bool, reason: &str, message: &str, since: &str) -> Value {
    json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": message, "lastTransitionTime": since, "lastUpdateTime": since})
}

fn workload_status(object: &Object, workload: Workload, nodes: u32, ready: bool, since: &str) -> Value {
    let generation = object.metadata.generation;
    let pods = pod_count(object, workload, nodes);
    let up = if ready { pods } else { 0 };
    let name = &object.metadata.name;
    let mut status = match workload {
        Workload::Deployment => {
            let mut s = counts(
                generation,
                &[
                    ("replicas", pods),
                    ("updatedReplicas", pods),
                    ("readyReplicas", up),
                    ("availableReplicas", up),
                    ("unavailableReplicas", pods - up),
                ],
            );
            let conditions = if ready {
                vec![
                    condition(
                        "Available",
                        true,
                        "MinimumReplicasAvailable",
                        "Deployment has minimum availability.",
                        since,
                    ),
                    condition(
                        "Progressing",
                        true,
                        "NewReplicaSetAvailable",
                        &format!("ReplicaSet {name:?} has successfully progressed."),
                        since,
                    ),
                ]
            } else {
                vec![
                    condition(
                        "Available",
                        false,
                        "MinimumReplicasUnavailable",
                        "Deployment does not have minimum availability.",
                        since,
                    ),
                    condition(
                        "Progressing",
                        true,
                        "ReplicaSetUpdated",
                        &format!("ReplicaSet {name:?} is progressing."),
                        since,
                    ),
                ]
            };
            s.insert("conditions".into(), json!(conditions));
            s
        }
        Workload::StatefulSet => counts(
            generation,
            &[
                ("replicas", pods),
                ("currentReplicas", pods),
                ("updatedReplicas", pods),
                ("readyReplicas", up),
                ("availableReplicas", up),
            ],
        ),
        Workload::ReplicaSet => counts(
            generation,
            &[("replicas", pods), ("fullyLabeledReplicas", pods), ("readyReplicas", up), ("availableReplicas", up)],
        ),
        Workload::DaemonSet => counts(
            generation,
            &[
                ("currentNumberScheduled", pods),
                ("desiredNumberScheduled", pods),
                ("updatedNumberScheduled", pods),
                ("numberReady", up),
                ("numberAvailable", up),
                ("numberUnavailable", pods - up),
            ],
        ),
        // A Job's pods run until the ready delay is over, then succeed:
        // the Job is complete, as Kubernetes' Job controller reports it.
        Workload::Job => {
            let mut s = if ready { counts(0, &[("succeeded", pods)]) } else { counts(0, &[("active", pods)]) };
            s.remove("observedGeneration");
            if let Some(t) = &object.metadata.creation_timestamp {
                s.insert("startTime".into(), json!(t));
            }
            if ready {
                s.insert("completionTime".into(), json!(since));
                let done = "Reached expected number of succeeded pods";
                s.insert(
                    "conditions".into(),
                    json!([
                        condition("SuccessCriteriaMet", true, "CompletionsReached", done, since),
                        condition("Complete", true, "CompletionsReached", done, since),
                    ]),
                );
            }
            s
        }
        Workload::Pod => {
            let mut s = Map::new();
            s.insert("phase".into(), json!(if ready { "Running" } else { "Pending" }));
            let reason = if ready { "" } else { "ContainersNotReady" };
            s.insert(
                "conditions".into(),
                json!([
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": if ready { "True" } else { "False" }, "reason": reason},
                ]),
            );
            s
        }
    };
    if workload == Workload::Pod || workload == Workload::Job {
        status.retain(|_, v| !v.as_str().is_some_and(str::is_empty));
    }
    Value::Object(status)
}

/// A cluster IP at once (in `spec`); a LoadBalancer gets its ingress
/// address (172.18.x.y, from its cluster IP) once ready.
fn service_status(object: &Object, ready: bool) -> Option<Value> {
    let service_type = field(object, &["spec", "type"]).and_then(Value::as_str).unwrap_or("ClusterIP");
    if service_type != "LoadBalancer" {
        return Some(json!({"loadBalancer": {}}));
    }
    let ip = field(object, &["spec", "clusterIP"]).and_then(Value::as_str).unwrap_or("10.96.0.2");
    let octets: Vec<&str> = ip.split('.').collect();
    let ingress_ip = match octets.as_slice() {
        [_, _, c, d] => format!("172.18.{c}.{d}"),
        _ => "172.18.0.2".to_string(),
    };
    if ready {
        Some(json!({"loadBalancer": {"ingress": [{"ip": ingress_ip, "ipMode": "VIP"}]}}))
    } else {
        Some(json!({"loadBalancer": {}}))
    }
}

/// NamesAccepted and Established at once, with the accepted names.
fn crd_status(object: &Object, since: &str) -> Value {
    let names = field(object, &["spec", "names"]).cloned().unwrap_or(json!({}));
    let stored: Vec<Value> = field(object, &["spec", "versions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").cloned())
        .collect();
    let since = object.metadata.creation_timestamp.as_deref().unwrap_or(since);
    json!({
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": since},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": since},
        ],
        "storedVersions": stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::availability::{availability, Availability};
    use crate::targets::embedded::store::format_time;
    use std::time::Duration;

    fn record(v: Value, ready_in: i64) -> (Record, SystemTime) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let ready = if ready_in >= 0 {
            now + Duration::from_secs(ready_in.unsigned_abs())
        } else {
            now - Duration::from_secs(ready_in.unsigned_abs())
        };
        (Record { object: serde_json::from_value(v).unwrap(), last_applied: None, ready_at: format_time(ready) }, now)
    }

    fn workload(kind: &str, spec: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": "n", "generation": 2}, "spec": spec})
    }

    #[test]
    fn workloads_become_available_at_their_ready_time() {
        for (kind, spec) in [
            ("Deployment", json!({"replicas": 3})),
            ("StatefulSet", json!({"replicas": 2})),
            ("DaemonSet", json!({})),
            ("Deployment", json!({"replicas": 0})),
        ] {
            let (r, now) = record(workload(kind, spec.clone()), 5);
            let zero = spec.get("replicas") == Some(&json!(0));
            let before = availability(&live_view(&r, 3, now));
            assert_eq!(before.is_available(), zero, "{kind} {spec} before: {before:?}");
            let after = live_view(&r, 3, now + Duration::from_secs(5));
            assert_eq!(availability(&after), Availability::Available, "{kind} after: {:?}", after.status());
        }
        let (r, now) = record(workload("Deployment", json!({"replicas": 3})), 5);
        match availability(&live_view(&r, 3, now)) {
            Availability::NotYetAvailable(why) => assert!(why.contains("0 of 3 replicas available"), "{why}"),
            other => panic!("{other:?}"),
        }
        let (r, now) = record(workload("DaemonSet", json!({})), -1);
        assert_eq!(live_view(&r, 4, now).status().unwrap()["numberAvailable"], 4);
    }

    #[test]
    fn services_get_ips_and_load_balancers_an_ingress_once_ready() {
        let mut svc: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "n"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}}))
        .unwrap();
        server_defaults(&mut svc, None, &Allocated::default()).unwrap();
        let ip = field(&svc, &["spec", "clusterIP"]).and_then(Value::as_str).unwrap().to_string();
        assert!(ip.starts_with("10.96."), "{ip}");
        let ports = field(&svc, &["spec", "ports"]).unwrap().as_array().unwrap();
        let (a, b) = (ports[0]["nodePort"].as_i64().unwrap(), ports[1]["nodePort"].as_i64().unwrap());
        assert!((30000..=32767).contains(&a) && a != b);
        // Re-applying without the allocated fields keeps them; changing the IP is refused.
        let mut again = svc.clone();
        spec_mut(&mut again).unwrap().remove("clusterIP");
        again.rest["spec"]["ports"] = json!([{"port": 80}, {"port": 443}]);
        server_defaults(&mut again, Some(&svc), &Allocated::default()).unwrap();
        assert_eq!(again, svc);
        let mut changed = svc.clone();
        changed.rest["spec"]["clusterIP"] = json!("10.96.9.9");
        let e = server_defaults(&mut changed, Some(&svc), &Allocated::default()).unwrap_err();
        assert!(e.to_string().contains("field is immutable"), "{e}");
        // A taken address is skipped.
        let mut taken = Allocated::default();
        taken.add(&svc);
        let mut other = svc.clone();
        spec_mut(&mut other).unwrap().remove("clusterIP");
        other.rest["spec"]["ports"] = json!([{"port": 80}]);
        server_defaults(&mut other, None, &taken).unwrap();
        assert_ne!(field(&other, &["spec", "clusterIP"]), Some(&json!(ip)));
        assert_ne!(other.rest["spec"]["ports"][0]["nodePort"], json!(a));

        let (r, now) = record(serde_json::to_value(&svc).unwrap(), 1);
        assert!(!availability(&live_view(&r, 3, now)).is_available());
        let ready = live_view(&r, 3, now + Duration::from_secs(1));
        assert!(availability(&ready).is_available(), "{:?}", ready.status());
    }

    #[test]
    fn crds_are_established_at_once_and_namespaces_active() {
        let (r, now) = record(
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
                         "versions": [{"name": "v1", "served": true, "storage": true}]}}),
            100,
        );
        let live = live_view(&r, 3, now);
        assert!(availability(&live).is_available());
        assert_eq!(live.status().unwrap()["storedVersions"], json!(["v1"]));
        let (r, now) = record(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}), 100);
        assert_eq!(live_view(&r, 3, now).status().unwrap()["phase"], "Active");
    }
}
