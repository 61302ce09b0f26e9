//! What landed on member clusters, watched from outside: a sampler that
//! polls each cluster's embedded target with `fleet-agent inspect` and
//! records when a ConfigMap first held a given value there, so tests can
//! check the order in which a rollout reached the clusters.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::hub::binary;
use crate::Hub;

/// A ConfigMap's `data.<key>` on a cluster, if the cluster holds it.
pub fn configmap_value(hub: &Hub, cluster: &str, namespace: &str, name: &str, key: &str) -> Option<String> {
    read_value(&binary("fleet-agent"), &hub.agent_dir(cluster), namespace, name, key)
}

fn read_value(agent: &PathBuf, dir: &PathBuf, namespace: &str, name: &str, key: &str) -> Option<String> {
    let out = Command::new(agent)
        .args(["inspect", "--data-dir"])
        .arg(dir)
        .args(["configmap", name, "-n", namespace, "-o", "json"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    value.pointer(&format!("/data/{key}")).and_then(|v| v.as_str()).map(str::to_string)
}

/// Records, per cluster, when a ConfigMap first held `want` there (one
/// polling thread per cluster, so the order of arrivals a few hundred
/// milliseconds apart is seen).
pub struct Arrivals {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<String, Instant>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Arrivals {
    /// Starts polling each of `clusters` (every ~20 ms) for ConfigMap
    /// `namespace/name` with `data.<key>` = `want`.
    pub fn start(hub: &Hub, clusters: &[&str], namespace: &str, name: &str, key: &str, want: &str) -> Arrivals {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let agent = binary("fleet-agent");
        let threads = clusters
            .iter()
            .map(|cluster| {
                let (cluster, dir) = (cluster.to_string(), hub.agent_dir(cluster));
                let (agent, stop, record) = (agent.clone(), stop.clone(), seen.clone());
                let (namespace, name, key, want) =
                    (namespace.to_string(), name.to_string(), key.to_string(), want.to_string());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        if read_value(&agent, &dir, &namespace, &name, &key).as_deref() == Some(want.as_str()) {
                            let now = Instant::now();
                            if let Ok(mut s) = record.lock() {
                                s.insert(cluster, now);
                            }
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            })
            .collect();
        Arrivals { stop, seen, threads }
    }

    /// When each cluster was first seen holding the value, so far.
    pub fn seen(&self) -> BTreeMap<String, Instant> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// When `cluster` was first seen holding it, if it was.
    pub fn at(&self, cluster: &str) -> Option<Instant> {
        self.seen().get(cluster).copied()
    }

    /// Stops polling and returns the record.
    pub fn finish(mut self) -> BTreeMap<String, Instant> {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        self.seen()
    }
}

impl Drop for Arrivals {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
