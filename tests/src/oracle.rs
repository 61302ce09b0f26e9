//! OCM's placement controller as an oracle: the Go program of
//! `conformance/ocm-placement/` (OCM's own controller, pinned in its
//! go.mod, run in-process against a real kube-apiserver, plus the scenario
//! generator and comparator), built on first use with its `build.sh` into
//! `target/ocm-placement/` under a file lock, as realkube is.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::realkube::repository;

/// The oracle's source directory (`conformance/ocm-placement/`).
pub fn oracle_source() -> PathBuf {
    repository().join("conformance").join("ocm-placement")
}

/// The built oracle binary (OCM's CRD files beside it, in `crds/`),
/// building it if this test process has not yet.
pub fn oracle_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_oracle).clone()
}

fn build_oracle() -> PathBuf {
    crate::realkube::build_with_go("ocm-placement", "conformance/ocm-placement/build.sh").join("ocm-placement")
}

/// One pool cluster as the oracle prints it: its name and the
/// `fleet-agent` flags of its embedded cluster.
#[derive(Debug, Clone)]
pub struct PoolCluster {
    /// The cluster's name.
    pub name: String,
    /// `--sim-*` flags.
    pub flags: Vec<String>,
}

/// The oracle's pool of clusters (`ocm-placement --pool`).
pub fn pool() -> Vec<PoolCluster> {
    let out = Command::new(oracle_binary()).arg("--pool").stdin(Stdio::null()).output().expect("ocm-placement --pool");
    assert!(out.status.success(), "ocm-placement --pool: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace().map(str::to_string);
            Some(PoolCluster { name: words.next()?, flags: words.collect() })
        })
        .collect()
}

/// The oracle's summary line: (scenarios, differences, written down).
pub fn summary(output: &str) -> Option<(u64, u64, u64)> {
    let line = output.lines().rev().find(|l| l.starts_with("ocm-placement: ") && l.contains(" scenarios, "))?;
    let numbers: Vec<u64> = line
        .trim_start_matches("ocm-placement: ")
        .split(", ")
        .filter_map(|part| part.split_whitespace().next()?.parse().ok())
        .collect();
    match numbers[..] {
        [s, d, w] => Some((s, d, w)),
        _ => None,
    }
}
