//! The placement oracles: Go programs under `conformance/` that run another
//! project's own controller (pinned in their go.mod) in-process against a
//! real kube-apiserver, generate random but valid scenarios from a seed,
//! apply each to that controller and to Fleet, and compare what both
//! decide. Each is built on first use with its `build.sh` into
//! `target/<name>/` under a file lock, as realkube is, prints its pool of
//! member clusters with `--pool`, and ends with the line
//! `<name>: S scenarios, D differences, W written down`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crate::fleet::apply_yaml;
use crate::kube::KubeHub;
use crate::realkube::{repository, ClusterOptions, RealCluster};

/// OCM's placement controller as an oracle (`conformance/ocm-placement/`).
pub const OCM: Oracle = Oracle { name: "ocm-placement" };

/// KubeFleet's hub agent and scheduler as an oracle
/// (`conformance/kubefleet-scheduler/`).
pub const KUBEFLEET: Oracle = Oracle { name: "kubefleet-scheduler" };

/// One oracle program, by its directory under `conformance/` (also its
/// binary's name and its summary line's prefix).
#[derive(Debug, Clone, Copy)]
pub struct Oracle {
    /// The program's name.
    pub name: &'static str,
}

impl Oracle {
    /// The oracle's source directory (`conformance/<name>/`).
    pub fn source(&self) -> PathBuf {
        repository().join("conformance").join(self.name)
    }

    /// The built oracle binary (the other project's CRD files beside it,
    /// in `crds/`), building it if this test process has not yet.
    pub fn binary(&self) -> PathBuf {
        static BUILT: OnceLock<Mutex<Vec<(&'static str, PathBuf)>>> = OnceLock::new();
        let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
        let mut built = built.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, path)) = built.iter().find(|(name, _)| *name == self.name) {
            return path.clone();
        }
        let script = format!("conformance/{}/build.sh", self.name);
        let path = crate::realkube::build_with_go(self.name, &script).join(self.name);
        built.push((self.name, path.clone()));
        path
    }

    /// The oracle's pool of clusters (`<name> --pool`).
    pub fn pool(&self) -> Vec<PoolCluster> {
        let out = Command::new(self.binary())
            .arg("--pool")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{} --pool: {e}", self.name));
        assert!(out.status.success(), "{} --pool: {}", self.name, String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace().map(str::to_string);
                Some(PoolCluster { name: words.next()?, flags: words.collect() })
            })
            .collect()
    }

    /// The oracle's summary line: (scenarios, differences, written down).
    pub fn summary(&self, output: &str) -> Option<(u64, u64, u64)> {
        let prefix = format!("{}: ", self.name);
        let line = output.lines().rev().find(|l| l.starts_with(&prefix) && l.contains(" scenarios, "))?;
        let numbers: Vec<u64> = line
            .trim_start_matches(&prefix)
            .split(", ")
            .filter_map(|part| part.split_whitespace().next()?.parse().ok())
            .collect();
        match numbers[..] {
            [s, d, w] => Some((s, d, w)),
            _ => None,
        }
    }

    /// The numbers of the oracle's line that starts with `<name>: <word>`
    /// (e.g. `compared`), in order; empty when there is none.
    pub fn numbers(&self, output: &str, word: &str) -> Vec<u64> {
        let prefix = format!("{}: {word} ", self.name);
        let line = output.lines().find(|l| l.starts_with(&prefix)).unwrap_or_default();
        line.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect()
    }
}

/// One pool cluster as an oracle prints it: its name and the
/// `fleet-agent` flags of its embedded cluster.
#[derive(Debug, Clone)]
pub struct PoolCluster {
    /// The cluster's name.
    pub name: String,
    /// `--sim-*` flags.
    pub flags: Vec<String>,
}

/// Both sides of an oracle run: the other project's real API server and a
/// Fleet trio with its Kubernetes API and one agent per pool cluster.
pub struct Sides {
    /// The real kube-apiserver the other project's controller runs against.
    pub other: RealCluster,
    /// Fleet, with its agents.
    pub fleet: KubeHub,
}

impl Oracle {
    /// Starts both sides (the real API server, named `other`, while Fleet
    /// starts): Fleet gets a MemberCluster heartbeating every second and a
    /// `fleet-agent` on an embedded simulated cluster for each cluster of
    /// the oracle's pool.
    pub async fn start_sides(&self, other: &'static str) -> Sides {
        let started = Instant::now();
        let pool = self.pool();
        assert!(pool.len() >= 4, "the oracle's pool: {pool:?}");
        let real = std::thread::spawn(move || {
            RealCluster::start_with(other, &ClusterOptions { nodes: 0, ..Default::default() })
        });
        let mut kube = KubeHub::start().await;
        for cluster in &pool {
            apply_yaml(
                &kube.hub,
                &format!(
                    "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {{name: {}}}\nspec: {{heartbeatPeriodSeconds: 1}}\n",
                    cluster.name
                ),
            );
            let flags: Vec<&str> = cluster.flags.iter().map(String::as_str).collect();
            kube.hub.start_agent(&cluster.name, &flags);
        }
        let real = real.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        eprintln!("{other}'s API server, Fleet and {} agents up in {:.1?}", pool.len(), started.elapsed());
        Sides { other: real, fleet: kube }
    }

    /// Runs the oracle against both sides with its written-down list, a
    /// seed and a scenario count (`--<other>-kubeconfig` names the other
    /// side's kubeconfig flag), and answers (success, stdout, stderr).
    pub fn run(&self, sides: &Sides, other_flag: &str, seed: u64, scenarios: u64) -> (bool, String, String) {
        let out = Command::new(self.binary())
            .arg(other_flag)
            .arg(&sides.other.kubeconfig)
            .arg("--fleet-kubeconfig")
            .arg(&sides.fleet.admin)
            .arg("--written-down")
            .arg(self.source().join("written-down.json"))
            .args(["--seed", &seed.to_string(), "--scenarios", &scenarios.to_string()])
            // For an oracle that runs fleetctl and fleet-agent itself.
            .env("FLEET_BIN", crate::hub::binary("fleet-agent").parent().unwrap_or(Path::new(".")))
            .env("FLEET_ENDPOINTS", sides.fleet.hub.endpoints())
            .env("FLEET_TLS_DIR", sides.fleet.hub.pki_dir())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.name));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.success(), stdout, stderr)
    }
}
