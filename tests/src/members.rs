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

/// When a value reached one cluster, as far as polling can tell: it was
/// there by `present_from` (the end of the first poll that saw it) and not
/// yet at `absent_until` (the start of the last poll that did not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// Certainly absent at this instant (`None`: present from the first poll).
    pub absent_until: Option<Instant>,
    /// Certainly present at this instant.
    pub present_from: Instant,
}

impl Arrival {
    /// Whether polling proves `self` arrived before `other` did: `self`
    /// was seen present while `other` was still absent afterwards. A slow
    /// poller may fail to prove an order, never prove a false one.
    pub fn proven_before(&self, other: &Arrival) -> bool {
        other.absent_until.is_some_and(|absent| self.present_from < absent)
    }

    /// The least time that certainly passed between `earlier`'s arrival and
    /// this one's (zero when polling cannot tell).
    pub fn at_least_after(&self, earlier: &Arrival) -> Duration {
        self.absent_until.map_or(Duration::ZERO, |absent| absent.saturating_duration_since(earlier.present_from))
    }

    /// The most time that may have passed between `earlier`'s arrival and
    /// this one's.
    pub fn at_most_after(&self, earlier: &Arrival) -> Duration {
        match earlier.absent_until {
            Some(absent) => self.present_from.saturating_duration_since(absent),
            None => Duration::MAX,
        }
    }
}

/// Records, per cluster, when a ConfigMap came to hold `want` there (one
/// polling thread per cluster, so arrivals a few hundred milliseconds apart
/// are told apart).
pub struct Arrivals {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<String, Arrival>>>,
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
                    let mut absent_until = None;
                    while !stop.load(Ordering::SeqCst) {
                        let started = Instant::now();
                        if read_value(&agent, &dir, &namespace, &name, &key).as_deref() == Some(want.as_str()) {
                            let arrival = Arrival { absent_until, present_from: Instant::now() };
                            if let Ok(mut s) = record.lock() {
                                s.insert(cluster, arrival);
                            }
                            return;
                        }
                        absent_until = Some(started);
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            })
            .collect();
        Arrivals { stop, seen, threads }
    }

    /// Each cluster's arrival, so far.
    pub fn seen(&self) -> BTreeMap<String, Arrival> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// `cluster`'s arrival, if it was seen.
    pub fn at(&self, cluster: &str) -> Option<Arrival> {
        self.seen().get(cluster).copied()
    }

    /// Stops polling and returns the record.
    pub fn finish(mut self) -> BTreeMap<String, Arrival> {
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
